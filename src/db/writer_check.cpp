#include "db/writer_check.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "db/file_kind.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"

namespace dgt {

namespace fs = std::filesystem;

namespace {

/// The nearest folder of `path` that exists (the writer creates the missing ones below it).
fs::path existing_folder(const std::string& path) {
  fs::path dir = fs::absolute(path).parent_path();
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  return dir;
}

/// SQLite's quick_check (every page and the b-tree structure; integrity_check without matching each index to its
/// table, so it reads the file once): a damaged file is left as it is, and nothing is read from it as data.
void refuse_damaged(const sql::Connection& c) {
  const char* q = "PRAGMA quick_check(4)";  // the first few problems are enough to say that it is damaged
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(c.handle(), q, -1, &st, nullptr) != SQLITE_OK) c.fail(sqlite3_errcode(c.handle()), q);
  std::vector<std::string> problems;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const unsigned char* row = sqlite3_column_text(st, 0);
    if (row && std::string_view(reinterpret_cast<const char*>(row)) != "ok")
      problems.emplace_back(reinterpret_cast<const char*>(row));
  }
  // A page that cannot be read at all stops the check itself: that is its report.
  const std::string stopped = rc == SQLITE_DONE ? std::string() : sqlite3_errmsg(c.handle());
  sqlite3_finalize(st);
  if ((rc & 0xff) == SQLITE_CORRUPT) problems.insert(problems.begin(), stopped);
  else if (rc != SQLITE_DONE) c.fail_with(rc, q, stopped);
  if (problems.empty()) return;
  // The first row starts with "*** in database main ***\n": the page's problem is the part worth a line.
  std::string first = problems.front();
  if (const size_t nl = first.rfind('\n'); nl != std::string::npos) first = first.substr(nl + 1);
  DGT_THROW(ErrorKind::kSqlite,
            "tuning database {} is damaged: SQLite's quick_check reports '{}'{}; it was left unmodified; run `dgtune "
            "db check --db {}` for every problem",
            c.path(), escaped(first), problems.size() > 1 ? " and more" : "", c.path());
}

/// check_db_writable(); the file's state, or nothing for a missing or empty file.
std::optional<schema::FileState> writable_state(const std::string& path, std::string_view flag) {
  if (path.empty()) DGT_THROW(ErrorKind::kUsage, "{}: the tuning database path is empty", flag);
  if (const std::string kind = sql::non_file_kind(path); !kind.empty())
    DGT_THROW(ErrorKind::kUsage, "{} '{}': it is {}, not a tuning database file; nothing was written", flag,
              escaped(path), kind);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (::access(path.c_str(), R_OK | W_OK) != 0)
      DGT_THROW(ErrorKind::kIo, "tuning database {} ({}) is not writable by this process: {}; nothing was written",
                path, flag, std::strerror(errno));
  } else if (errno != ENOENT) {
    DGT_THROW(ErrorKind::kUsage, "{} '{}': {}", flag, escaped(path), std::strerror(errno));
  }
  // SQLite creates the -wal/-shm files (and a new database) in the folder.
  const fs::path dir = existing_folder(path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    DGT_THROW(ErrorKind::kUsage, "{} '{}': '{}' is not a directory", flag, escaped(path), escaped(dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    DGT_THROW(ErrorKind::kIo,
              "tuning database {} ({}): the folder {} is not writable by this process ({}); SQLite needs to create "
              "the database's -wal and -shm files there; nothing was written",
              path, flag, dir.string(), std::strerror(errno));
  if (st.st_size == 0) return std::nullopt;  // missing or empty: the writer creates the schema
  // The writer's checks on the file as it stands, through a connection that cannot write it.
  sql::Connection c(path, /*read_only=*/true);
  refuse_damaged(c);
  schema::FileState state;
  {
    sql::Transaction snapshot(c, "BEGIN");
    state = schema::read_file_state(c);
    snapshot.commit();
  }
  schema::refuse_unusable(c, state);
  return state;
}

}  // namespace

void check_db_writable(const std::string& path, std::string_view flag) { (void)writable_state(path, flag); }

int check_existing_db_writable(const std::string& path, std::string_view flag, std::string_view command) {
  const std::optional<schema::FileState> state = writable_state(path, flag);
  if (!state || !state->has_version_table)
    DGT_THROW(ErrorKind::kSqlite,
              "tuning database {} ({}) is not a dgtune tuning database ({}); {} works on an existing one and never "
              "creates one; it was left unmodified",
              path, flag, state ? "it has no schema_version table" : "the file is empty", command);
  return state->version;
}

void check_db_intact(const std::string& path) {
  sql::Connection c(path, /*read_only=*/true);
  refuse_damaged(c);
}

}  // namespace dgt
