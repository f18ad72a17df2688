// A thin SQLite wrapper: one connection, prepared statements, transactions, errors. Knows nothing about
// dgtune's tables (db/schema.hpp creates and migrates them, db/tuning_db.hpp queries them).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace dgt::sql {

/// How long a statement waits for another connection's lock before failing with SQLITE_BUSY:
/// parallel tuning processes share one file.
inline constexpr std::chrono::milliseconds kBusyTimeout{10000};

/// First line of a SQL text, shortened: enough to recognise the statement in an error message.
std::string sql_head(std::string_view sql);

/// How a read-only Connection reached its file (README "Read-only deployment").
enum class ReadAccess {
  kReadWrite,  ///< not read-only
  kQueryOnly,  ///< the file is writable by this process: opened read-write with `PRAGMA query_only`, so SQL
               ///< cannot change it and closing removes the -wal/-shm files like any last connection does
  kReadOnly,   ///< SQLITE_OPEN_READONLY: the file is not writable, but a -wal file shows a writer at work
  kImmutable,  ///< `file:PATH?immutable=1`: no locks, no -wal/-shm files (a deployed read-only DB)
};

/// One open SQLite connection with the busy timeout set and foreign keys on. Every failure throws
/// Error(kSqlite) naming the database path, the operation and SQLite's own message (with a hint to run
/// `dgtune db check` when SQLite calls the file damaged or not a database).
class Connection {
 public:
  /// Opens `path`. Something other than a regular file at the path (a FIFO, socket, device or directory) is
  /// Error(kIo) naming what it is, before SQLite sees it (it would block on a FIFO). read_only: the file must exist
  /// (Error(kIo) naming it otherwise), is never created and never left with -wal/-shm files this connection made:
  /// a writable file is opened with `PRAGMA query_only`; a file this process cannot write, in WAL mode without a
  /// -wal file, is opened immutable; else SQLITE_OPEN_READONLY, retried immutable when SQLite fails for lack of
  /// write access (a WAL file in a read-only folder: SQLite code 8 or 14). An immutable open logs one notice; one
  /// that would skip a write-ahead log holding frames is refused instead (Error(kIo) saying why and what to do):
  /// the data is read completely or not at all. Not read-only: missing parent directories are created (Error(kIo)
  /// when that fails), and a file SQLite can only open read-only is Error(kIo) before anything is read.
  Connection(std::string path, bool read_only);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }
  ReadAccess access() const { return access_; }
  /// True inside BEGIN ... COMMIT/ROLLBACK (SQLite's autocommit mode is off).
  bool in_transaction() const;

  /// Runs SQL without results (DDL, PRAGMA with no row, BEGIN/COMMIT; several statements allowed).
  void exec(std::string_view sql) const;
  /// `VACUUM INTO target`: a compacted, consistent copy of this database in the new file `target`. Allowed on
  /// a read-only connection (only the target is written; a query-only one lifts query_only for the statement).
  void vacuum_into(const std::string& target) const;
  /// Switches the file to WAL. Changing the journal mode needs an exclusive lock and SQLite returns
  /// SQLITE_BUSY at once instead of calling the busy handler, so this retries for as long as the busy
  /// timeout would have waited (another process is typically creating the schema of a new file).
  void enable_wal() const;
  /// Error(kSqlite): "tuning database PATH: WHAT: SQLite's message (SQLite code RC)".
  [[noreturn]] void fail(int rc, std::string_view what,
                         std::source_location loc = std::source_location::current()) const;
  /// fail() with SQLite's message given (for failures after the handle is gone).
  [[noreturn]] void fail_with(int rc, std::string_view what, std::string_view msg,
                              std::source_location loc = std::source_location::current()) const;

 private:
  void open_read_only();
  /// sqlite3_open_v2 into db_, then a first read (which is where SQLite opens the -wal and -shm files);
  /// returns SQLite's code and leaves db_ closed on failure.
  int try_open(const std::string& name, int flags, const char* first_sql);

  std::string path_;
  sqlite3* db_ = nullptr;
  bool read_only_ = false;
  ReadAccess access_ = ReadAccess::kReadWrite;
};

/// "SQLite code RC: NAME: what it means" for a result code (extended codes keep their number; the words are the
/// primary code's), so no message shows a bare number.
std::string code_text(int rc);

/// SQLite's `file:` URI of a path with `immutable=1` (%, ? and # escaped).
std::string immutable_uri(const std::string& path);

/// One prepared statement, finalized on destruction. Parameters are bound by name (":name") and
/// columns are read by name (every selected column carries an explicit AS alias), so long column
/// lists cannot drift out of order. Before the first step every parameter must have been bound: a
/// forgotten bind would otherwise silently store NULL.
class Statement {
 public:
  Statement(const Connection& c, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind_int(const char* name, int64_t v);
  void bind_real(const char* name, double v);
  /// SQLite copies the text, so temporaries are safe to pass.
  void bind_text(const char* name, std::string_view v);
  void bind_null(const char* name);
  /// SQLite copies the bytes; an empty blob binds NULL.
  void bind_blob(const char* name, const std::vector<uint8_t>& v);

  /// Advances one row: true when a row is available, false when done. Throws on any error
  /// (constraint violations included).
  bool step();
  /// Steps once and returns SQLite's code without throwing for SQLITE_BUSY, which the caller
  /// handles (ROW and DONE are returned too; any other code throws).
  int step_allowing_busy();
  /// Steps a statement that returns no rows.
  void run();

  bool is_null(const char* col) const;
  int64_t get_int(const char* col) const;
  int get_int32(const char* col) const { return static_cast<int>(get_int(col)); }
  /// NULL reads as NaN: SQLite stores a bound NaN as NULL, so this restores it.
  double get_real(const char* col) const;
  /// NULL reads as "".
  std::string get_text(const char* col) const;
  /// NULL reads as an empty vector.
  std::vector<uint8_t> get_blob(const char* col) const;

 private:
  int index(const char* name);
  void check_bind(const char* name, int rc);
  void check_all_bound();
  int column(const char* name) const;

  const Connection& c_;
  std::string sql_;  // owned: callers often pass a temporary concatenation
  sqlite3_stmt* stmt_ = nullptr;
  std::vector<bool> bound_;
  bool checked_bindings_ = false;
  std::unordered_map<std::string, int> columns_;
};

/// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() succeeded. IMMEDIATE
/// takes the write lock up front (waiting up to the busy timeout), so two tuning processes never
/// deadlock upgrading read locks. `begin` = "BEGIN" gives a read transaction: one consistent
/// snapshot for several queries; on a read-only connection every transaction is such a "BEGIN".
class Transaction {
 public:
  explicit Transaction(const Connection& c, const char* begin = "BEGIN IMMEDIATE");
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();
  bool committed() const { return committed_; }

 private:
  const Connection& c_;
  bool committed_ = false;
};

/// Current UTC time as ISO 8601 with a Z suffix, e.g. "2026-11-29T06:30:00Z".
std::string utc_now_iso8601();

}  // namespace dgt::sql
