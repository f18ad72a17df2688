#include "db/sqlite.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>
#include <thread>

#include "core/error.hpp"
#include "db/file_kind.hpp"

namespace dgt::sql {

std::string sql_head(std::string_view sql) {
  size_t start = sql.find_first_not_of(" \n\t");
  if (start == std::string_view::npos) return {};
  sql = sql.substr(start);
  std::string head(sql.substr(0, std::min(sql.find('\n'), size_t(80))));
  return head.size() < sql.size() ? head + " ..." : head;
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (now == std::time_t(-1) || !gmtime_r(&now, &tm)) DGT_THROW(ErrorKind::kInternal, "cannot read the system clock");
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    DGT_THROW(ErrorKind::kInternal, "cannot format the current time");
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Connection

namespace {

/// True when the file's header says WAL mode (read and write versions 2, bytes 18 and 19).
bool header_says_wal(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char header[20] = {};
  if (!f.read(header, sizeof header)) return false;
  return header[18] == 2 && header[19] == 2;
}

/// SQLite's answer when it lacks write access to the file or folder (the -shm or -wal file of a WAL
/// database cannot be created): SQLITE_READONLY (8) and SQLITE_CANTOPEN (14) with their extended codes.
bool is_access_failure(int rc) { return (rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN; }

/// Bytes of the write-ahead log beside `path` when it holds at least one frame of the current log (the first
/// frame's salts equal the header's), else 0. Those frames are changes a reader must see: committed
/// transactions not yet copied into the database file.
uint64_t wal_bytes_with_frames(const std::string& path) {
  std::ifstream f(path + "-wal", std::ios::binary);
  if (!f) return 0;
  unsigned char header[32], frame[24];
  if (!f.read(reinterpret_cast<char*>(header), sizeof header) || !f.read(reinterpret_cast<char*>(frame), sizeof frame))
    return 0;
  auto be32 = [](const unsigned char* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
  };
  const uint32_t magic = be32(header);
  if (magic != 0x377f0682 && magic != 0x377f0683) return 0;
  if (be32(frame + 8) != be32(header + 16) || be32(frame + 12) != be32(header + 20)) return 0;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path + "-wal", ec);
  return ec ? 1 : static_cast<uint64_t>(size);
}

/// SQLite's result code in words: its symbolic name and what it means for a tuning DB's user.
std::string code_words(int rc) {
  switch (rc & 0xff) {
    case SQLITE_PERM: return "SQLITE_PERM: access permission denied";
    case SQLITE_BUSY:
      return "SQLITE_BUSY: another process held a lock on the file for longer than the busy timeout";
    case SQLITE_LOCKED: return "SQLITE_LOCKED: a table is locked by another statement of this process";
    case SQLITE_NOMEM: return "SQLITE_NOMEM: out of memory";
    case SQLITE_READONLY:
      return "SQLITE_READONLY: the file, its folder or a -wal/-shm file beside it is not writable by this process";
    case SQLITE_IOERR: return "SQLITE_IOERR: the operating system reported an I/O error on the file";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT: the file is damaged";
    case SQLITE_FULL: return "SQLITE_FULL: the disk or the file system's quota is full";
    case SQLITE_CANTOPEN:
      return "SQLITE_CANTOPEN: the file, or a -wal/-shm/-journal file beside it, cannot be opened or created (a "
             "missing folder, no permission, or something other than a file at the path)";
    case SQLITE_PROTOCOL: return "SQLITE_PROTOCOL: the file system does not support SQLite's locks";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT: a row breaks a constraint of the schema";
    case SQLITE_NOTADB: return "SQLITE_NOTADB: the file is not an SQLite database";
    default: return sqlite3_errstr(rc);
  }
}

}  // namespace

std::string code_text(int rc) { return fmt::format("SQLite code {}: {}", rc, code_words(rc)); }

std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (char ch : path) {
    if (ch == '%' || ch == '?' || ch == '#')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(ch));
    else
      uri += ch;
  }
  return uri + "?immutable=1";
}

Connection::Connection(std::string path, bool read_only) : path_(std::move(path)), read_only_(read_only) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const std::string kind = non_file_kind(path_); !kind.empty())
    DGT_THROW(ErrorKind::kIo, "cannot open tuning database {}: it is {}, not a database file", path_, kind);
  if (read_only) {
    // SQLite would say only "unable to open database file"; name the actual problem.
    bool exists = fs::exists(path_, ec);
    if (ec) DGT_THROW(ErrorKind::kIo, "cannot access tuning database {}: {}", path_, ec.message());
    if (!exists)
      DGT_THROW(ErrorKind::kIo, "tuning database {} does not exist (opened read-only, so it is not created)", path_);
    open_read_only();
  } else {
    fs::path parent = fs::path(path_).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec)) {
      fs::create_directories(parent, ec);
      if (ec)
        DGT_THROW(ErrorKind::kIo, "cannot create directory {} for tuning database {}: {}", parent.string(), path_,
                  ec.message());
    }
    int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
      try {
        fail(rc, "opening");
      } catch (...) {
        // sqlite3_open_v2 allocates a handle even when it fails.
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw;
      }
    }
    // SQLite opens a file it may not write read-only without saying so; the first read would then create
    // -wal/-shm files (owned by this user) before the first write fails. Refuse before anything is read.
    if (sqlite3_db_readonly(db_, "main") == 1) {
      sqlite3_close_v2(db_);
      db_ = nullptr;
      DGT_THROW(ErrorKind::kIo,
                "tuning database {} is not writable by this process ({}); a command that stores results needs write "
                "access to the file and its folder (nothing was written)",
                path_, std::strerror(EACCES));
    }
  }
  try {
    int rc = sqlite3_busy_timeout(db_, static_cast<int>(kBusyTimeout.count()));
    if (rc != SQLITE_OK) fail(rc, "setting the busy timeout");
    exec("PRAGMA foreign_keys = ON");
  } catch (...) {
    // The destructor does not run when the constructor throws.
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

int Connection::try_open(const std::string& name, int flags, const char* first_sql) {
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_busy_timeout(db_, static_cast<int>(kBusyTimeout.count()));
  if (rc == SQLITE_OK) rc = sqlite3_exec(db_, first_sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK && db_ && sqlite3_extended_errcode(db_) != SQLITE_OK) rc = sqlite3_extended_errcode(db_);
  return rc;
}

void Connection::open_read_only() {
  // The first statement reads the schema: that is where SQLite opens (and, for a WAL file, creates) the
  // -wal and -shm files, so a missing write access shows up here rather than in a later query.
  constexpr const char* kProbe = "SELECT count(*) FROM sqlite_master";
  auto close_handle = [this] {
    sqlite3_close_v2(db_);
    db_ = nullptr;
  };
  auto open_immutable = [&](std::string_view why) {
    // An immutable open ignores the write-ahead log: committed transactions still in it would be silently missing
    // (old winners, a merge without those rows). Reading part of the data is worse than refusing.
    if (const uint64_t bytes = wal_bytes_with_frames(path_))
      DGT_THROW(ErrorKind::kIo,
                "tuning database {}: {}, and its write-ahead log {}-wal ({} bytes) holds changes not yet in the file; "
                "this process cannot read them (SQLite needs to create or write {}-shm), and reading the file without "
                "them would show old data, so it is not opened. Let its owner (a user who can write the folder) run "
                "any dgtune command on it, e.g. `dgtune db check --db {}`, which folds the log into the file, or copy "
                "both files into a folder you can write",
                path_, why, path_, bytes, path_, path_);
    access_ = ReadAccess::kImmutable;
    const int rc = try_open(immutable_uri(path_), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, kProbe);
    if (rc != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      close_handle();
      fail_with(rc, "opening read-only as immutable", msg);
    }
    spdlog::info(
        "tuning database {}: {}; opened as immutable (SQLite immutable=1: no locks, no -wal/-shm files; changes "
        "made to the file while this process runs are not seen)",
        path_, why);
  };

  if (::access(path_.c_str(), W_OK) == 0) {
    // Writable: a read-write connection that refuses to write. Unlike SQLITE_OPEN_READONLY it can remove the
    // -wal/-shm files when it is the last connection to close (a read-only connection never can).
    access_ = ReadAccess::kQueryOnly;
    const int rc = try_open(path_, SQLITE_OPEN_READWRITE, "PRAGMA query_only = ON; SELECT count(*) FROM sqlite_master");
    if (rc == SQLITE_OK) return;
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    close_handle();
    if (!is_access_failure(rc)) fail_with(rc, "opening read-only", msg);
    return open_immutable(fmt::format("the folder is not writable ({}, SQLite code {})", msg, rc));
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool side_files = fs::exists(path_ + "-wal", ec) || fs::exists(path_ + "-shm", ec);
  if (header_says_wal(path_) && !side_files)
    // A plain read-only open would create -wal and -shm files (and leave them) or fail where the folder is
    // read-only; without a -wal file no writer is at work, so the file is read as it stands.
    return open_immutable("the file is not writable by this process and in WAL mode");
  access_ = ReadAccess::kReadOnly;
  const int rc = try_open(path_, SQLITE_OPEN_READONLY, kProbe);
  if (rc == SQLITE_OK) return;
  const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  close_handle();
  if (!is_access_failure(rc)) fail_with(rc, "opening read-only", msg);
  open_immutable(fmt::format("a read-only open failed ({}, SQLite code {})", msg, rc));
}

Connection::~Connection() {
  // Every statement is finalized by its RAII wrapper, so close only fails on misuse; a destructor
  // cannot throw, so report it.
  int rc = sqlite3_close_v2(db_);
  if (rc != SQLITE_OK)
    std::fprintf(stderr, "dgtune: closing tuning database %s failed: %s\n", path_.c_str(), sqlite3_errstr(rc));
}

void Connection::fail(int rc, std::string_view what, std::source_location loc) const {
  // db_ may be null (before sqlite3_open_v2 produced a handle); then only the code's generic text is available.
  fail_with(rc, what, db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc), loc);
}

void Connection::fail_with(int rc, std::string_view what, std::string_view msg, std::source_location loc) const {
  // A damaged file: say what to run next (the file itself is left as it is).
  const bool damaged = (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
  throw Error(ErrorKind::kSqlite,
              fmt::format("tuning database {}: {}: {} ({}){}", path_, what, msg, code_text(rc),
                          damaged ? fmt::format("; run `dgtune db check --db {}`", path_) : ""),
              loc.file_name(), static_cast<int>(loc.line()));
}

bool Connection::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

void Connection::exec(std::string_view sql) const {
  const std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, fmt::format("executing `{}`", sql_head(sql)));
}

void Connection::vacuum_into(const std::string& target) const {
  // query_only refuses VACUUM INTO although it writes only the target file.
  if (access_ == ReadAccess::kQueryOnly) exec("PRAGMA query_only = OFF");
  try {
    Statement s(*this, "VACUUM INTO :target");
    s.bind_text(":target", target);
    s.run();
  } catch (...) {
    if (access_ == ReadAccess::kQueryOnly) exec("PRAGMA query_only = ON");
    throw;
  }
  if (access_ == ReadAccess::kQueryOnly) exec("PRAGMA query_only = ON");
}

void Connection::enable_wal() const {
  auto deadline = std::chrono::steady_clock::now() + kBusyTimeout;
  std::string mode;
  while (true) {
    Statement wal(*this, "PRAGMA journal_mode = WAL");
    int rc = wal.step_allowing_busy();
    if (rc == SQLITE_ROW) {
      mode = wal.get_text("journal_mode");
      break;
    }
    if (rc == SQLITE_DONE) break;
    if (std::chrono::steady_clock::now() >= deadline) fail(rc, "switching to WAL journal mode");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (mode != "wal")
    DGT_THROW(ErrorKind::kSqlite, "tuning database {}: cannot switch to WAL journal mode (SQLite kept '{}')", path_,
              mode);
}

// ---------------------------------------------------------------------------------------------
// Statement

Statement::Statement(const Connection& c, std::string_view sql) : c_(c), sql_(sql) {
  int rc = sqlite3_prepare_v2(c_.handle(), sql_.c_str(), static_cast<int>(sql_.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);  // null-safe; the destructor does not run when the constructor throws
    stmt_ = nullptr;
    c_.fail(rc, fmt::format("preparing `{}`", sql_head(sql_)));
  }
  bound_.assign(static_cast<size_t>(sqlite3_bind_parameter_count(stmt_)) + 1, false);
  int ncol = sqlite3_column_count(stmt_);
  for (int i = 0; i < ncol; ++i) {
    const char* name = sqlite3_column_name(stmt_, i);
    if (!name) {
      sqlite3_finalize(stmt_);
      stmt_ = nullptr;
      c_.fail(SQLITE_NOMEM, "reading a column name");
    }
    columns_.emplace(name, i);
  }
}

// finalize returns the error of the last step, which step() has already reported.
Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::bind_int(const char* name, int64_t v) { check_bind(name, sqlite3_bind_int64(stmt_, index(name), v)); }
void Statement::bind_real(const char* name, double v) { check_bind(name, sqlite3_bind_double(stmt_, index(name), v)); }
void Statement::bind_text(const char* name, std::string_view v) {
  check_bind(name, sqlite3_bind_text64(stmt_, index(name), v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}
void Statement::bind_null(const char* name) { check_bind(name, sqlite3_bind_null(stmt_, index(name))); }
void Statement::bind_blob(const char* name, const std::vector<uint8_t>& v) {
  if (v.empty()) return bind_null(name);
  check_bind(name, sqlite3_bind_blob64(stmt_, index(name), v.data(), v.size(), SQLITE_TRANSIENT));
}

bool Statement::step() {
  if (!checked_bindings_) check_all_bound();
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  c_.fail(rc, fmt::format("running `{}`", sql_head(sql_)));
}

int Statement::step_allowing_busy() {
  if (!checked_bindings_) check_all_bound();
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE || rc == SQLITE_BUSY) return rc;
  c_.fail(rc, fmt::format("running `{}`", sql_head(sql_)));
}

void Statement::run() {
  if (step()) DGT_THROW(ErrorKind::kInternal, "statement `{}` unexpectedly returned a row", sql_head(sql_));
}

bool Statement::is_null(const char* col) const { return sqlite3_column_type(stmt_, column(col)) == SQLITE_NULL; }
int64_t Statement::get_int(const char* col) const { return sqlite3_column_int64(stmt_, column(col)); }
double Statement::get_real(const char* col) const {
  return is_null(col) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, column(col));
}
std::string Statement::get_text(const char* col) const {
  int i = column(col);
  if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return {};
  const unsigned char* text = sqlite3_column_text(stmt_, i);
  if (!text) c_.fail(SQLITE_NOMEM, fmt::format("reading column {}", col));  // only fails out of memory
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
}

std::vector<uint8_t> Statement::get_blob(const char* col) const {
  int i = column(col);
  if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return {};
  const auto* bytes = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, i));
  const int n = sqlite3_column_bytes(stmt_, i);
  if (!bytes && n > 0) c_.fail(SQLITE_NOMEM, fmt::format("reading column {}", col));
  return bytes ? std::vector<uint8_t>(bytes, bytes + n) : std::vector<uint8_t>{};
}

int Statement::index(const char* name) {
  int i = sqlite3_bind_parameter_index(stmt_, name);
  if (i == 0) DGT_THROW(ErrorKind::kInternal, "statement `{}` has no parameter {}", sql_head(sql_), name);
  bound_[static_cast<size_t>(i)] = true;
  return i;
}

void Statement::check_bind(const char* name, int rc) {
  if (rc != SQLITE_OK) c_.fail(rc, fmt::format("binding {} of `{}`", name, sql_head(sql_)));
}

void Statement::check_all_bound() {
  for (size_t i = 1; i < bound_.size(); ++i)
    if (!bound_[i])
      DGT_THROW(ErrorKind::kInternal, "statement `{}`: parameter {} was not bound", sql_head(sql_),
                sqlite3_bind_parameter_name(stmt_, static_cast<int>(i)));
  checked_bindings_ = true;
}

int Statement::column(const char* name) const {
  auto it = columns_.find(name);
  if (it == columns_.end()) DGT_THROW(ErrorKind::kInternal, "statement `{}` has no column {}", sql_head(sql_), name);
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Transaction

Transaction::Transaction(const Connection& c, const char* begin) : c_(c) {
  // A read-only connection never writes, and a query-only one refuses BEGIN IMMEDIATE: a deferred
  // transaction gives the same single snapshot.
  c_.exec(c_.read_only() ? "BEGIN" : begin);
}

Transaction::~Transaction() {
  // SQLite may already have rolled back by itself (e.g. after SQLITE_FULL): then autocommit is on
  // and a second ROLLBACK would fail. A destructor cannot throw, so a failure is only reported.
  if (committed_ || sqlite3_get_autocommit(c_.handle())) return;
  int rc = sqlite3_exec(c_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK)
    std::fprintf(stderr, "dgtune: tuning database %s: ROLLBACK failed: %s\n", c_.path().c_str(),
                 sqlite3_errmsg(c_.handle()));
}

void Transaction::commit() {
  c_.exec("COMMIT");
  committed_ = true;
}

}  // namespace dgt::sql
