#include "db/tuning_db.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <memory>
#include <source_location>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "core/error.hpp"

namespace dgt {

namespace {

// ---------------------------------------------------------------------------------------------
// Connection context and error reporting

/// How long a statement waits for another connection's lock before failing with SQLITE_BUSY:
/// parallel tuning processes share one file.
constexpr std::chrono::milliseconds kBusyTimeout{10000};

/// What every helper needs to talk to SQLite and to name the database in its errors.
struct Conn {
  sqlite3* db;
  const std::string& path;
};

/// Error(kSqlite) naming the database, the operation and SQLite's own message. `db` may be null
/// (before sqlite3_open_v2 produced a handle); then only the code's generic text is available.
[[noreturn]] void throw_sqlite(const Conn& c, int rc, std::string_view what,
                               std::source_location loc = std::source_location::current()) {
  const char* msg = c.db ? sqlite3_errmsg(c.db) : sqlite3_errstr(rc);
  throw Error(ErrorKind::kSqlite, fmt::format("tuning database {}: {}: {} (SQLite code {})", c.path, what, msg, rc),
              loc.file_name(), static_cast<int>(loc.line()));
}

/// First line of a SQL text, shortened: enough to recognise the statement in an error message.
std::string sql_head(std::string_view sql) {
  size_t start = sql.find_first_not_of(" \n\t");
  if (start == std::string_view::npos) return {};
  sql = sql.substr(start);
  std::string head(sql.substr(0, std::min(sql.find('\n'), size_t(80))));
  return head.size() < sql.size() ? head + " ..." : head;
}

/// Runs SQL without results (DDL, PRAGMA with no row, BEGIN/COMMIT).
void exec_sql(const Conn& c, const char* sql) {
  int rc = sqlite3_exec(c.db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) throw_sqlite(c, rc, fmt::format("executing `{}`", sql_head(sql)));
}

// ---------------------------------------------------------------------------------------------
// Prepared statement

/// One prepared statement, finalized on destruction. Parameters are bound by name (":name") and
/// columns are read by name (every selected column carries an explicit AS alias), so the long
/// column lists below cannot drift out of order. Before the first step every parameter must have
/// been bound: a forgotten bind would otherwise silently store NULL.
class Stmt {
 public:
  Stmt(const Conn& c, std::string_view sql) : c_(c), sql_(sql) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(c_.db, sql_.c_str(), static_cast<int>(sql_.size()), &raw, nullptr);
    owned_.reset(raw);  // owned before anything below can throw
    if (rc != SQLITE_OK) throw_sqlite(c_, rc, fmt::format("preparing `{}`", sql_head(sql_)));
    stmt_ = raw;
    bound_.assign(static_cast<size_t>(sqlite3_bind_parameter_count(stmt_)) + 1, false);
    int ncol = sqlite3_column_count(stmt_);
    for (int i = 0; i < ncol; ++i) {
      const char* name = sqlite3_column_name(stmt_, i);
      if (!name) throw_sqlite(c_, SQLITE_NOMEM, "reading a column name");
      columns_.emplace(name, i);
    }
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  void bind_int(const char* name, int64_t v) { check_bind(name, sqlite3_bind_int64(stmt_, index(name), v)); }
  void bind_real(const char* name, double v) { check_bind(name, sqlite3_bind_double(stmt_, index(name), v)); }
  void bind_text(const char* name, std::string_view v) {
    // SQLITE_TRANSIENT: SQLite copies the text, so temporaries are safe to pass.
    check_bind(name, sqlite3_bind_text64(stmt_, index(name), v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  void bind_null(const char* name) { check_bind(name, sqlite3_bind_null(stmt_, index(name))); }

  /// Advances one row: true when a row is available, false when done. Throws on any error
  /// (constraint violations included).
  bool step() {
    if (!checked_bindings_) check_all_bound();
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_sqlite(c_, rc, fmt::format("running `{}`", sql_head(sql_)));
  }
  /// Steps once and returns SQLite's code without throwing for SQLITE_BUSY, which the caller
  /// handles (ROW and DONE are returned too; any other code throws).
  int step_allowing_busy() {
    if (!checked_bindings_) check_all_bound();
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE || rc == SQLITE_BUSY) return rc;
    throw_sqlite(c_, rc, fmt::format("running `{}`", sql_head(sql_)));
  }
  /// Steps a statement that returns no rows.
  void run() {
    if (step()) DGT_THROW(ErrorKind::kInternal, "statement `{}` unexpectedly returned a row", sql_head(sql_));
  }

  bool is_null(const char* col) const { return sqlite3_column_type(stmt_, column(col)) == SQLITE_NULL; }
  int64_t get_int(const char* col) const { return sqlite3_column_int64(stmt_, column(col)); }
  int get_int32(const char* col) const { return static_cast<int>(get_int(col)); }
  /// NULL reads as NaN: SQLite stores a bound NaN as NULL, so this restores it.
  double get_real(const char* col) const {
    return is_null(col) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, column(col));
  }
  std::string get_text(const char* col) const {
    int i = column(col);
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return {};
    const unsigned char* text = sqlite3_column_text(stmt_, i);
    if (!text) throw_sqlite(c_, SQLITE_NOMEM, fmt::format("reading column {}", col));  // only fails out of memory
    return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
  }

 private:
  int index(const char* name) {
    int i = sqlite3_bind_parameter_index(stmt_, name);
    if (i == 0) DGT_THROW(ErrorKind::kInternal, "statement `{}` has no parameter {}", sql_head(sql_), name);
    bound_[static_cast<size_t>(i)] = true;
    return i;
  }
  void check_bind(const char* name, int rc) {
    if (rc != SQLITE_OK) throw_sqlite(c_, rc, fmt::format("binding {} of `{}`", name, sql_head(sql_)));
  }
  void check_all_bound() {
    for (size_t i = 1; i < bound_.size(); ++i)
      if (!bound_[i])
        DGT_THROW(ErrorKind::kInternal, "statement `{}`: parameter {} was not bound", sql_head(sql_),
                  sqlite3_bind_parameter_name(stmt_, static_cast<int>(i)));
    checked_bindings_ = true;
  }
  int column(const char* name) const {
    auto it = columns_.find(name);
    if (it == columns_.end()) DGT_THROW(ErrorKind::kInternal, "statement `{}` has no column {}", sql_head(sql_), name);
    return it->second;
  }

  struct Finalize {
    // finalize returns the error of the last step, which step() has already reported.
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };

  Conn c_;
  std::string sql_;  // owned: callers often pass a temporary concatenation
  std::unique_ptr<sqlite3_stmt, Finalize> owned_;
  sqlite3_stmt* stmt_ = nullptr;  // owned_.get(), kept short for the many calls below
  std::vector<bool> bound_;
  bool checked_bindings_ = false;
  std::unordered_map<std::string, int> columns_;
};

/// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() succeeded. IMMEDIATE
/// takes the write lock up front (waiting up to the busy timeout), so two tuning processes never
/// deadlock upgrading read locks. `begin` = "BEGIN" gives a read transaction: one consistent
/// snapshot for several queries.
class Transaction {
 public:
  explicit Transaction(const Conn& c, const char* begin = "BEGIN IMMEDIATE") : c_(c) { exec_sql(c_, begin); }
  ~Transaction() {
    // SQLite may already have rolled back by itself (e.g. after SQLITE_FULL): then autocommit is on
    // and a second ROLLBACK would fail. A destructor cannot throw, so a failure is only reported.
    if (committed_ || sqlite3_get_autocommit(c_.db)) return;
    int rc = sqlite3_exec(c_.db, "ROLLBACK", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK)
      std::fprintf(stderr, "dgtune: tuning database %s: ROLLBACK failed: %s\n", c_.path.c_str(), sqlite3_errmsg(c_.db));
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec_sql(c_, "COMMIT");
    committed_ = true;
  }

 private:
  Conn c_;
  bool committed_ = false;
};

// ---------------------------------------------------------------------------------------------
// Schema

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE device (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  cc INTEGER NOT NULL,
  sm_count INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  l2_bytes INTEGER NOT NULL,
  max_sm_clock_mhz INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  runtime_version INTEGER NOT NULL,
  cublaslt_version INTEGER NOT NULL,
  nvrtc_version INTEGER NOT NULL,
  kernel_hash TEXT NOT NULL,
  dgtune_version TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE problem (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
  lda INTEGER NOT NULL, ldb INTEGER NOT NULL, ldd INTEGER NOT NULL,
  dtype_a TEXT NOT NULL, dtype_b TEXT NOT NULL, dtype_d TEXT NOT NULL,
  scale_mode TEXT NOT NULL,
  accum TEXT NOT NULL
);
CREATE INDEX problem_by_nk ON problem (n, k);
CREATE TABLE config (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  block_m INTEGER NOT NULL, block_n INTEGER NOT NULL, block_k INTEGER NOT NULL,
  num_stages INTEGER NOT NULL, num_math_wg INTEGER NOT NULL, swizzle INTEGER NOT NULL,
  cluster_m INTEGER NOT NULL, cluster_n INTEGER NOT NULL,
  raster TEXT NOT NULL, group_size INTEGER NOT NULL, epilogue TEXT NOT NULL, split_k INTEGER NOT NULL
);
CREATE TABLE trial (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  config_id INTEGER NOT NULL REFERENCES config (id),
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  compile_ms REAL,
  registers INTEGER NOT NULL, spill_bytes INTEGER NOT NULL, smem_bytes INTEGER NOT NULL,
  median_us REAL, p10_us REAL, p90_us REAL, samples INTEGER, rse REAL,
  tflops REAL, gbps REAL,
  verify_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  sm_clock_mhz REAL, throttled INTEGER,
  protocol TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, problem_id, config_id)
);
CREATE TABLE baseline (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  provider TEXT NOT NULL,
  status TEXT NOT NULL,
  cublas_status INTEGER NOT NULL,
  error TEXT NOT NULL,
  algo TEXT NOT NULL,
  median_us REAL, p10_us REAL, p90_us REAL, samples INTEGER, rse REAL,
  tflops REAL, gbps REAL,
  verify_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  sm_clock_mhz REAL, throttled INTEGER,
  protocol TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, problem_id, provider)
);
CREATE VIEW winner AS
SELECT trial_id, device_id, problem_id, config_id, problem_key, config_key, median_us, tflops
FROM (
  SELECT t.id AS trial_id, t.device_id AS device_id, t.problem_id AS problem_id, t.config_id AS config_id,
         p.key AS problem_key, c.key AS config_key, t.median_us AS median_us, t.tflops AS tflops,
         row_number() OVER (PARTITION BY t.device_id, t.problem_id ORDER BY t.median_us ASC, c.key ASC) AS rank
  FROM trial t
  JOIN problem p ON p.id = t.problem_id
  JOIN config c ON c.id = t.config_id
  WHERE t.status = 'ok' AND t.median_us IS NOT NULL
)
WHERE rank = 1;
)sql";

// Version 2 (dgtune 0.2): the persistent grid size becomes a config column, and per-sweep progress is
// recorded so that a sweep stopped by its time budget is marked incomplete and continued later.
constexpr const char* kMigrateV1ToV2 = R"sql(
ALTER TABLE config ADD COLUMN sms INTEGER NOT NULL DEFAULT 0;
CREATE TABLE sweep (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  space TEXT NOT NULL,
  strategy TEXT NOT NULL,
  candidates INTEGER NOT NULL,
  stored INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (device_id, problem_id, space, strategy)
);
)sql";

/// What the file holds: its schema version (0 without a schema_version table, e.g. a new file)
/// and whether it holds any table, view or index at all.
struct FileState {
  int version = 0;
  bool empty = true;
};

/// Reads the FileState. Call it inside a transaction: another process may be creating the schema
/// right now, and two separate snapshots could see "no schema_version" and then "not empty".
FileState read_file_state(const Conn& c) {
  FileState st;
  {
    Stmt s(c,
           "SELECT count(*) AS objects, coalesce(sum(type = 'table' AND name = 'schema_version'), 0) AS has_version "
           "FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'");
    s.step();
    st.empty = s.get_int("objects") == 0;
    if (s.get_int("has_version") == 0) return st;
  }
  Stmt s(c, "SELECT max(version) AS v FROM schema_version");
  s.step();
  if (s.is_null("v"))
    DGT_THROW(ErrorKind::kSqlite, "tuning database {}: the schema_version table is empty (damaged file?)", c.path);
  st.version = s.get_int32("v");
  return st;
}

/// Switches the file to WAL. Changing the journal mode needs an exclusive lock and SQLite returns
/// SQLITE_BUSY at once instead of calling the busy handler, so retry here for as long as the busy
/// timeout would have waited (another process is typically creating the schema of a new file).
void enable_wal(const Conn& c, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string mode;
  while (true) {
    Stmt wal(c, "PRAGMA journal_mode = WAL");
    int rc = wal.step_allowing_busy();
    if (rc == SQLITE_ROW) {
      mode = wal.get_text("journal_mode");
      break;
    }
    if (rc == SQLITE_DONE) break;
    if (std::chrono::steady_clock::now() >= deadline) throw_sqlite(c, rc, "switching to WAL journal mode");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (mode != "wal")
    DGT_THROW(ErrorKind::kSqlite, "tuning database {}: cannot switch to WAL journal mode (SQLite kept '{}')", c.path,
              mode);
}

[[noreturn]] void throw_foreign_database(const Conn& c) {
  DGT_THROW(ErrorKind::kSqlite,
            "{} is not a dgtune tuning database (it has no schema_version table); it was left unmodified", c.path);
}

[[noreturn]] void throw_newer_schema(const Conn& c, int stored) {
  DGT_THROW(ErrorKind::kSqlite,
            "tuning database {} has schema version {}, newer than version {} that this dgtune knows; use a newer "
            "dgtune (the file was not modified)",
            c.path, stored, TuningDb::kSchemaVersion);
}

// ---------------------------------------------------------------------------------------------
// Value conversions

/// Current UTC time as ISO 8601 with a Z suffix, e.g. "2026-11-29T06:30:00Z".
std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (now == std::time_t(-1) || !gmtime_r(&now, &tm)) DGT_THROW(ErrorKind::kInternal, "cannot read the system clock");
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    DGT_THROW(ErrorKind::kInternal, "cannot format the current time");
  return buf;
}

std::string created_at_or_now(const std::string& created_at) {
  return created_at.empty() ? utc_now_iso8601() : created_at;
}

ScaleMode parse_scale_mode(const Conn& c, const std::string& text) {
  if (text == to_string(ScaleMode::kPerTensor)) return ScaleMode::kPerTensor;
  DGT_THROW(ErrorKind::kSqlite, "tuning database {}: unknown scale_mode '{}' in the problem table", c.path, text);
}

void bind_timing(Stmt& s, const std::optional<Timing>& t) {
  if (!t) {
    for (const char* name : {":median_us", ":p10_us", ":p90_us", ":samples", ":rse", ":sm_clock_mhz", ":throttled"})
      s.bind_null(name);
    return;
  }
  s.bind_real(":median_us", t->median_us);
  s.bind_real(":p10_us", t->p10_us);
  s.bind_real(":p90_us", t->p90_us);
  s.bind_int(":samples", t->samples);
  s.bind_real(":rse", t->rse);
  s.bind_real(":sm_clock_mhz", t->sm_clock_mhz);
  s.bind_int(":throttled", t->throttled ? 1 : 0);
}

void bind_verification(Stmt& s, const std::optional<Verification>& v) {
  if (!v) {
    for (const char* name : {":verify_ok", ":max_rel_err", ":diff", ":nan_count", ":pad_touched"}) s.bind_null(name);
    return;
  }
  s.bind_int(":verify_ok", v->ok ? 1 : 0);
  s.bind_real(":max_rel_err", v->max_rel_err);
  s.bind_real(":diff", v->diff);
  s.bind_int(":nan_count", v->nan_count);
  s.bind_int(":pad_touched", v->pad_touched);
}

std::optional<Timing> read_timing(const Stmt& s) {
  if (s.is_null("median_us")) return std::nullopt;
  Timing t;
  t.median_us = s.get_real("median_us");
  t.p10_us = s.get_real("p10_us");
  t.p90_us = s.get_real("p90_us");
  t.samples = s.get_int32("samples");
  t.rse = s.get_real("rse");
  t.sm_clock_mhz = s.get_real("sm_clock_mhz");
  t.throttled = s.get_int("throttled") != 0;
  return t;
}

std::optional<Verification> read_verification(const Stmt& s) {
  if (s.is_null("verify_ok")) return std::nullopt;
  Verification v;
  v.ok = s.get_int("verify_ok") != 0;
  v.max_rel_err = s.get_real("max_rel_err");
  v.diff = s.get_real("diff");
  v.nan_count = s.get_int("nan_count");
  v.pad_touched = s.get_int("pad_touched");
  return v;
}

Problem read_problem(const Conn& c, const Stmt& s) {
  Problem p;
  p.m = s.get_int("m");
  p.n = s.get_int("n");
  p.k = s.get_int("k");
  p.lda = s.get_int("lda");
  p.ldb = s.get_int("ldb");
  p.ldd = s.get_int("ldd");
  p.a = parse_dtype(s.get_text("dtype_a"));
  p.b = parse_dtype(s.get_text("dtype_b"));
  p.d = parse_dtype(s.get_text("dtype_d"));
  p.scale = parse_scale_mode(c, s.get_text("scale_mode"));
  p.accum = parse_accum(s.get_text("accum"));
  return p;
}

// Column lists shared by every query that reads whole records. Only constant SQL is concatenated;
// values are always bound.
#define DGT_PROBLEM_COLUMNS                                                                     \
  "p.m AS m, p.n AS n, p.k AS k, p.lda AS lda, p.ldb AS ldb, p.ldd AS ldd, p.dtype_a AS dtype_a, " \
  "p.dtype_b AS dtype_b, p.dtype_d AS dtype_d, p.scale_mode AS scale_mode, p.accum AS accum"
#define DGT_MEASUREMENT_COLUMNS(t)                                                                         \
  t ".status AS status, " t ".error AS error, " t ".median_us AS median_us, " t ".p10_us AS p10_us, " t   \
  ".p90_us AS p90_us, " t ".samples AS samples, " t ".rse AS rse, " t ".sm_clock_mhz AS sm_clock_mhz, " t \
  ".throttled AS throttled, " t ".verify_ok AS verify_ok, " t ".max_rel_err AS max_rel_err, " t          \
  ".diff AS diff, " t ".nan_count AS nan_count, " t ".pad_touched AS pad_touched, " t                     \
  ".tflops AS tflops, " t ".gbps AS gbps, " t ".protocol AS protocol, " t ".created_at AS created_at"

constexpr const char* kTrialSelect =
    "SELECT t.problem_id AS problem_id, c.key AS config_key, t.compile_ms AS compile_ms, t.registers AS registers, "
    "t.spill_bytes AS spill_bytes, t.smem_bytes AS smem_bytes, " DGT_PROBLEM_COLUMNS ", " DGT_MEASUREMENT_COLUMNS("t")
    " FROM trial t JOIN problem p ON p.id = t.problem_id JOIN config c ON c.id = t.config_id ";

constexpr const char* kBaselineSelect =
    "SELECT b.provider AS provider, b.cublas_status AS cublas_status, b.algo AS algo, " DGT_PROBLEM_COLUMNS
    ", " DGT_MEASUREMENT_COLUMNS("b") " FROM baseline b JOIN problem p ON p.id = b.problem_id ";

#undef DGT_PROBLEM_COLUMNS
#undef DGT_MEASUREMENT_COLUMNS

TrialRecord read_trial(const Conn& c, const Stmt& s) {
  TrialRecord t;
  t.problem = read_problem(c, s);
  t.config = KernelConfig::parse_key(s.get_text("config_key"));
  t.status = parse_trial_status(s.get_text("status"));
  t.error = s.get_text("error");
  t.compile_ms = s.get_real("compile_ms");
  t.registers = s.get_int32("registers");
  t.spill_bytes = s.get_int32("spill_bytes");
  t.smem_bytes = s.get_int32("smem_bytes");
  t.timing = read_timing(s);
  t.verification = read_verification(s);
  t.tflops = s.get_real("tflops");
  t.gbps = s.get_real("gbps");
  t.protocol = s.get_text("protocol");
  t.created_at = s.get_text("created_at");
  return t;
}

BaselineRecord read_baseline(const Conn& c, const Stmt& s) {
  BaselineRecord b;
  b.problem = read_problem(c, s);
  b.provider = s.get_text("provider");
  b.status = s.get_text("status");
  b.cublas_status = s.get_int32("cublas_status");
  b.error = s.get_text("error");
  b.algo = s.get_text("algo");
  b.timing = read_timing(s);
  b.verification = read_verification(s);
  b.tflops = s.get_real("tflops");
  b.gbps = s.get_real("gbps");
  b.protocol = s.get_text("protocol");
  b.created_at = s.get_text("created_at");
  return b;
}

// ---------------------------------------------------------------------------------------------
// Queries by problem id (the public functions resolve the Problem to its id first)

std::optional<BaselineRecord> baseline_by_id(const Conn& c, int64_t device_id, int64_t problem_id,
                                             std::string_view provider) {
  Stmt s(c, std::string(kBaselineSelect) +
                "WHERE b.device_id = :device_id AND b.problem_id = :problem_id AND b.provider = :provider");
  s.bind_int(":device_id", device_id);
  s.bind_int(":problem_id", problem_id);
  s.bind_text(":provider", provider);
  if (!s.step()) return std::nullopt;
  return read_baseline(c, s);
}

std::map<std::string, int> status_counts(const Conn& c, int64_t device_id, int64_t problem_id) {
  Stmt s(c,
         "SELECT status AS status, count(*) AS n FROM trial WHERE device_id = :device_id AND problem_id = :problem_id "
         "GROUP BY status");
  s.bind_int(":device_id", device_id);
  s.bind_int(":problem_id", problem_id);
  std::map<std::string, int> counts;
  while (s.step()) counts[s.get_text("status")] = s.get_int32("n");
  return counts;
}

/// Adds the baselines and status counts to a winning trial.
WinnerRow complete_winner(const Conn& c, int64_t device_id, int64_t problem_id, TrialRecord trial) {
  WinnerRow w;
  w.trial = std::move(trial);
  w.cublas_default = baseline_by_id(c, device_id, problem_id, kProviderCublasDefault);
  w.cublas_tuned = baseline_by_id(c, device_id, problem_id, kProviderCublasTuned);
  w.status_counts = status_counts(c, device_id, problem_id);
  return w;
}

/// The winner of one problem, read through the winner view so that ad-hoc SQL and dgtune agree.
std::optional<WinnerRow> winner_by_id(const Conn& c, int64_t device_id, int64_t problem_id) {
  Stmt s(c, std::string(kTrialSelect) +
                "JOIN winner w ON w.trial_id = t.id WHERE w.device_id = :device_id AND w.problem_id = :problem_id");
  s.bind_int(":device_id", device_id);
  s.bind_int(":problem_id", problem_id);
  if (!s.step()) return std::nullopt;
  TrialRecord trial = read_trial(c, s);
  return complete_winner(c, device_id, problem_id, std::move(trial));
}

/// Exact comparison of log distances: |log a - log m| < |log b - log m| is max(a,m)/min(a,m) <
/// max(b,m)/min(b,m), compared by cross-multiplication in 128 bits so that equal ratios (M = 64 and
/// M = 256 around 128) tie exactly instead of by rounding.
int compare_log_distance(int64_t a, int64_t b, int64_t m) {
  using u128 = unsigned __int128;
  u128 an = u128(std::max(a, m)), ad = u128(std::min(a, m));
  u128 bn = u128(std::max(b, m)), bd = u128(std::min(b, m));
  u128 lhs = an * bd, rhs = bn * ad;
  return lhs < rhs ? -1 : (lhs > rhs ? 1 : 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TuningDb

TuningDb::TuningDb(const std::string& path, bool read_only) : path_(path), read_only_(read_only) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (read_only) {
    // SQLite would say only "unable to open database file"; name the actual problem.
    bool exists = fs::exists(path_, ec);
    if (ec) DGT_THROW(ErrorKind::kIo, "cannot access tuning database {}: {}", path_, ec.message());
    if (!exists)
      DGT_THROW(ErrorKind::kIo, "tuning database {} does not exist (opened read-only, so it is not created)", path_);
  } else {
    fs::path parent = fs::path(path_).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec)) {
      fs::create_directories(parent, ec);
      if (ec)
        DGT_THROW(ErrorKind::kIo, "cannot create directory {} for tuning database {}: {}", parent.string(), path_,
                  ec.message());
    }
  }

  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
  try {
    Conn c{db_, path_};
    if (rc != SQLITE_OK) throw_sqlite(c, rc, read_only ? "opening read-only" : "opening");
    rc = sqlite3_busy_timeout(db_, static_cast<int>(kBusyTimeout.count()));
    if (rc != SQLITE_OK) throw_sqlite(c, rc, "setting the busy timeout");
    exec("PRAGMA foreign_keys = ON");

    // The version is checked before anything writes: a newer or foreign file must stay
    // byte-for-byte as it is (even switching the journal mode would rewrite its header).
    FileState st;
    {
      Transaction snapshot(c, "BEGIN");
      st = read_file_state(c);
      snapshot.commit();
    }
    if (st.version > kSchemaVersion) throw_newer_schema(c, st.version);
    if (st.version == 0 && !st.empty) throw_foreign_database(c);
    if (read_only) {
      if (st.version == 0) throw_foreign_database(c);
      if (st.version != kSchemaVersion)
        DGT_THROW(ErrorKind::kSqlite,
                  "tuning database {} has schema version {}, older than version {}; open it once read-write with this "
                  "dgtune to migrate it",
                  path_, st.version, kSchemaVersion);
      return;
    }
    enable_wal(c, kBusyTimeout);
    if (st.version < kSchemaVersion) migrate();  // an up-to-date file needs no write lock
  } catch (...) {
    // The destructor does not run when the constructor throws, and sqlite3_open_v2 allocates a
    // handle even when it fails.
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

TuningDb::~TuningDb() {
  // Every statement is finalized by its RAII wrapper, so close only fails on misuse; a destructor
  // cannot throw, so report it.
  int rc = sqlite3_close_v2(db_);
  if (rc != SQLITE_OK) std::fprintf(stderr, "dgtune: closing tuning database %s failed: %s\n", path_.c_str(), sqlite3_errstr(rc));
}

void TuningDb::exec(const char* sql) const { exec_sql(Conn{db_, path_}, sql); }

void TuningDb::migrate() {
  Conn c{db_, path_};
  // Re-read the version under the write lock: another process may have created the schema (or
  // upgraded the file) between the constructor's check and now.
  Transaction tx(c);
  FileState st = read_file_state(c);
  if (st.version > kSchemaVersion) throw_newer_schema(c, st.version);  // tx rolls back; nothing was written
  if (st.version == kSchemaVersion) return;                           // tx rolls back an empty transaction
  if (st.version == 0) {
    // Never build our tables inside somebody else's database.
    if (!st.empty) throw_foreign_database(c);
    exec(kSchemaV1);
    Stmt v(c, "INSERT INTO schema_version (version) VALUES (1)");
    v.run();
    st.version = 1;
  }
  // Upgrade step by step inside the same transaction: a failure leaves the file as it was.
  if (st.version == 1) {
    exec(kMigrateV1ToV2);
    st.version = 2;
  }
  if (st.version != kSchemaVersion)
    DGT_THROW(ErrorKind::kInternal, "tuning database {}: no migration from schema version {} to {}", path_, st.version,
              kSchemaVersion);
  Stmt v(c, "UPDATE schema_version SET version = :version");
  v.bind_int(":version", kSchemaVersion);
  v.run();
  tx.commit();
}

namespace {

void require_writable(bool read_only, const std::string& path, const char* what) {
  if (read_only) DGT_THROW(ErrorKind::kSqlite, "tuning database {} was opened read-only: cannot {}", path, what);
}

}  // namespace

int64_t TuningDb::upsert_device(const DeviceFingerprint& fp) {
  require_writable(read_only_, path_, "store a device");
  Conn c{db_, path_};
  std::string fingerprint = fp.fingerprint();
  Transaction tx(c);
  {
    Stmt s(c,
           "INSERT INTO device (fingerprint, name, cc, sm_count, memory_bytes, l2_bytes, max_sm_clock_mhz, "
           "driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash, dgtune_version, created_at) "
           "VALUES (:fingerprint, :name, :cc, :sm_count, :memory_bytes, :l2_bytes, :max_sm_clock_mhz, :driver_version, "
           ":runtime_version, :cublaslt_version, :nvrtc_version, :kernel_hash, :dgtune_version, :created_at) "
           "ON CONFLICT (fingerprint) DO NOTHING");
    s.bind_text(":fingerprint", fingerprint);
    s.bind_text(":name", fp.name);
    s.bind_int(":cc", 10 * fp.cc_major + fp.cc_minor);
    s.bind_int(":sm_count", fp.sm_count);
    s.bind_int(":memory_bytes", fp.memory_bytes);
    s.bind_int(":l2_bytes", fp.l2_bytes);
    s.bind_int(":max_sm_clock_mhz", fp.max_sm_clock_mhz);
    s.bind_int(":driver_version", fp.driver_version);
    s.bind_int(":runtime_version", fp.runtime_version);
    s.bind_int(":cublaslt_version", fp.cublaslt_version);
    s.bind_int(":nvrtc_version", fp.nvrtc_version);
    s.bind_text(":kernel_hash", fp.kernel_hash);
    s.bind_text(":dgtune_version", fp.dgtune_version);
    s.bind_text(":created_at", utc_now_iso8601());
    s.run();
  }
  std::optional<int64_t> id = find_device(fingerprint);
  if (!id) DGT_THROW(ErrorKind::kInternal, "tuning database {}: device {} missing right after its insert", path_, fingerprint);
  tx.commit();
  return *id;
}

std::optional<int64_t> TuningDb::find_device(const std::string& fingerprint) const {
  Stmt s(Conn{db_, path_}, "SELECT id AS id FROM device WHERE fingerprint = :fingerprint");
  s.bind_text(":fingerprint", fingerprint);
  if (!s.step()) return std::nullopt;
  return s.get_int("id");
}

std::optional<int64_t> TuningDb::find_problem(const Problem& p) const {
  Stmt s(Conn{db_, path_}, "SELECT id AS id FROM problem WHERE key = :key");
  s.bind_text(":key", p.key());
  if (!s.step()) return std::nullopt;
  return s.get_int("id");
}

int64_t TuningDb::upsert_problem(const Problem& p) {
  Conn c{db_, path_};
  {
    Stmt s(c,
           "INSERT INTO problem (key, m, n, k, lda, ldb, ldd, dtype_a, dtype_b, dtype_d, scale_mode, accum) "
           "VALUES (:key, :m, :n, :k, :lda, :ldb, :ldd, :dtype_a, :dtype_b, :dtype_d, :scale_mode, :accum) "
           "ON CONFLICT (key) DO NOTHING");
    s.bind_text(":key", p.key());
    s.bind_int(":m", p.m);
    s.bind_int(":n", p.n);
    s.bind_int(":k", p.k);
    s.bind_int(":lda", p.lda);
    s.bind_int(":ldb", p.ldb);
    s.bind_int(":ldd", p.ldd);
    s.bind_text(":dtype_a", to_string(p.a));
    s.bind_text(":dtype_b", to_string(p.b));
    s.bind_text(":dtype_d", to_string(p.d));
    s.bind_text(":scale_mode", to_string(p.scale));
    s.bind_text(":accum", to_string(p.accum));
    s.run();
  }
  std::optional<int64_t> id = find_problem(p);
  if (!id) DGT_THROW(ErrorKind::kInternal, "tuning database {}: problem {} missing right after its insert", path_, p.key());
  return *id;
}

int64_t TuningDb::upsert_config(const KernelConfig& cfg) {
  Conn c{db_, path_};
  std::string key = cfg.key();
  {
    Stmt s(c,
           "INSERT INTO config (key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m, cluster_n, "
           "raster, group_size, epilogue, split_k, sms) "
           "VALUES (:key, :block_m, :block_n, :block_k, :num_stages, :num_math_wg, :swizzle, :cluster_m, :cluster_n, "
           ":raster, :group_size, :epilogue, :split_k, :sms) "
           "ON CONFLICT (key) DO NOTHING");
    s.bind_text(":key", key);
    s.bind_int(":block_m", cfg.block_m);
    s.bind_int(":block_n", cfg.block_n);
    s.bind_int(":block_k", cfg.block_k);
    s.bind_int(":num_stages", cfg.num_stages);
    s.bind_int(":num_math_wg", cfg.num_math_wg);
    s.bind_int(":swizzle", cfg.swizzle);
    s.bind_int(":cluster_m", cfg.cluster_m);
    s.bind_int(":cluster_n", cfg.cluster_n);
    s.bind_text(":raster", to_string(cfg.raster));
    s.bind_int(":group_size", cfg.group);
    s.bind_text(":epilogue", to_string(cfg.epilogue));
    s.bind_int(":split_k", cfg.split_k);
    s.bind_int(":sms", cfg.sms);
    s.run();
  }
  Stmt s(c, "SELECT id AS id FROM config WHERE key = :key");
  s.bind_text(":key", key);
  if (!s.step()) DGT_THROW(ErrorKind::kInternal, "tuning database {}: config {} missing right after its insert", path_, key);
  return s.get_int("id");
}

bool TuningDb::has_trial(int64_t device_id, const Problem& p, const KernelConfig& cfg) const {
  Stmt s(Conn{db_, path_},
         "SELECT 1 AS found FROM trial t JOIN problem p ON p.id = t.problem_id JOIN config c ON c.id = t.config_id "
         "WHERE t.device_id = :device_id AND p.key = :problem_key AND c.key = :config_key");
  s.bind_int(":device_id", device_id);
  s.bind_text(":problem_key", p.key());
  s.bind_text(":config_key", cfg.key());
  return s.step();
}

void TuningDb::put_trial(int64_t device_id, const TrialRecord& t) {
  require_writable(read_only_, path_, "store a trial");
  Conn c{db_, path_};
  Transaction tx(c);
  int64_t problem_id = upsert_problem(t.problem);
  int64_t config_id = upsert_config(t.config);
  {
    // OR REPLACE: re-measuring a candidate overwrites the old row (UNIQUE(device, problem, config)).
    Stmt s(c,
           "INSERT OR REPLACE INTO trial (device_id, problem_id, config_id, status, error, compile_ms, registers, "
           "spill_bytes, smem_bytes, median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err, "
           "diff, nan_count, pad_touched, sm_clock_mhz, throttled, protocol, created_at) "
           "VALUES (:device_id, :problem_id, :config_id, :status, :error, :compile_ms, :registers, :spill_bytes, "
           ":smem_bytes, :median_us, :p10_us, :p90_us, :samples, :rse, :tflops, :gbps, :verify_ok, :max_rel_err, "
           ":diff, :nan_count, :pad_touched, :sm_clock_mhz, :throttled, :protocol, :created_at)");
    s.bind_int(":device_id", device_id);
    s.bind_int(":problem_id", problem_id);
    s.bind_int(":config_id", config_id);
    s.bind_text(":status", to_string(t.status));
    s.bind_text(":error", t.error);
    s.bind_real(":compile_ms", t.compile_ms);
    s.bind_int(":registers", t.registers);
    s.bind_int(":spill_bytes", t.spill_bytes);
    s.bind_int(":smem_bytes", t.smem_bytes);
    bind_timing(s, t.timing);
    bind_verification(s, t.verification);
    s.bind_real(":tflops", t.tflops);
    s.bind_real(":gbps", t.gbps);
    s.bind_text(":protocol", t.protocol);
    s.bind_text(":created_at", created_at_or_now(t.created_at));
    s.run();
  }
  tx.commit();
}

std::vector<TrialRecord> TuningDb::trials(int64_t device_id, const Problem& p) const {
  Conn c{db_, path_};
  Stmt s(c, std::string(kTrialSelect) +
                "WHERE t.device_id = :device_id AND p.key = :problem_key "
                // Timed ok trials first (fastest first), then everything else; config key breaks ties.
                "ORDER BY (t.status = 'ok' AND t.median_us IS NOT NULL) DESC, "
                "CASE WHEN t.status = 'ok' THEN t.median_us END ASC, c.key ASC");
  s.bind_int(":device_id", device_id);
  s.bind_text(":problem_key", p.key());
  std::vector<TrialRecord> out;
  while (s.step()) out.push_back(read_trial(c, s));
  return out;
}

bool TuningDb::has_baseline(int64_t device_id, const Problem& p, const std::string& provider) const {
  Stmt s(Conn{db_, path_},
         "SELECT 1 AS found FROM baseline b JOIN problem p ON p.id = b.problem_id "
         "WHERE b.device_id = :device_id AND p.key = :problem_key AND b.provider = :provider");
  s.bind_int(":device_id", device_id);
  s.bind_text(":problem_key", p.key());
  s.bind_text(":provider", provider);
  return s.step();
}

void TuningDb::put_baseline(int64_t device_id, const BaselineRecord& b) {
  require_writable(read_only_, path_, "store a baseline");
  Conn c{db_, path_};
  Transaction tx(c);
  int64_t problem_id = upsert_problem(b.problem);
  {
    Stmt s(c,
           "INSERT OR REPLACE INTO baseline (device_id, problem_id, provider, status, cublas_status, error, algo, "
           "median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err, diff, nan_count, "
           "pad_touched, sm_clock_mhz, throttled, protocol, created_at) "
           "VALUES (:device_id, :problem_id, :provider, :status, :cublas_status, :error, :algo, :median_us, :p10_us, "
           ":p90_us, :samples, :rse, :tflops, :gbps, :verify_ok, :max_rel_err, :diff, :nan_count, :pad_touched, "
           ":sm_clock_mhz, :throttled, :protocol, :created_at)");
    s.bind_int(":device_id", device_id);
    s.bind_int(":problem_id", problem_id);
    s.bind_text(":provider", b.provider);
    s.bind_text(":status", b.status);
    s.bind_int(":cublas_status", b.cublas_status);
    s.bind_text(":error", b.error);
    s.bind_text(":algo", b.algo);
    bind_timing(s, b.timing);
    bind_verification(s, b.verification);
    s.bind_real(":tflops", b.tflops);
    s.bind_real(":gbps", b.gbps);
    s.bind_text(":protocol", b.protocol);
    s.bind_text(":created_at", created_at_or_now(b.created_at));
    s.run();
  }
  tx.commit();
}

void TuningDb::put_sweep_state(int64_t device_id, const Problem& p, const std::string& space, const std::string& strategy,
                               const SweepState& state) {
  require_writable(read_only_, path_, "store a sweep state");
  Conn c{db_, path_};
  Transaction tx(c);
  int64_t problem_id = upsert_problem(p);
  {
    Stmt s(c,
           "INSERT OR REPLACE INTO sweep (device_id, problem_id, space, strategy, candidates, stored, complete, updated_at) "
           "VALUES (:device_id, :problem_id, :space, :strategy, :candidates, :stored, :complete, :updated_at)");
    s.bind_int(":device_id", device_id);
    s.bind_int(":problem_id", problem_id);
    s.bind_text(":space", space);
    s.bind_text(":strategy", strategy);
    s.bind_int(":candidates", state.candidates);
    s.bind_int(":stored", state.stored);
    s.bind_int(":complete", state.complete ? 1 : 0);
    s.bind_text(":updated_at", utc_now_iso8601());
    s.run();
  }
  tx.commit();
}

std::optional<SweepState> TuningDb::sweep_state(int64_t device_id, const Problem& p, const std::string& space,
                                                const std::string& strategy) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return std::nullopt;
  Stmt s(Conn{db_, path_},
         "SELECT candidates AS candidates, stored AS stored, complete AS complete, updated_at AS updated_at FROM sweep "
         "WHERE device_id = :device_id AND problem_id = :problem_id AND space = :space AND strategy = :strategy");
  s.bind_int(":device_id", device_id);
  s.bind_int(":problem_id", *problem_id);
  s.bind_text(":space", space);
  s.bind_text(":strategy", strategy);
  if (!s.step()) return std::nullopt;
  SweepState st;
  st.candidates = s.get_int32("candidates");
  st.stored = s.get_int32("stored");
  st.complete = s.get_int("complete") != 0;
  st.updated_at = s.get_text("updated_at");
  return st;
}

std::optional<BaselineRecord> TuningDb::baseline(int64_t device_id, const Problem& p, const std::string& provider) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return std::nullopt;
  return baseline_by_id(Conn{db_, path_}, device_id, *problem_id, provider);
}

std::optional<WinnerRow> TuningDb::winner(int64_t device_id, const Problem& p) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return std::nullopt;
  return winner_by_id(Conn{db_, path_}, device_id, *problem_id);
}

std::vector<WinnerRow> TuningDb::winners(int64_t device_id) const {
  Conn c{db_, path_};
  // Read the winning trials first and complete them afterwards, so only one statement is active.
  std::vector<std::pair<int64_t, TrialRecord>> found;
  {
    Stmt s(c, std::string(kTrialSelect) +
                  "JOIN winner w ON w.trial_id = t.id WHERE w.device_id = :device_id ORDER BY p.m, p.n, p.k, p.key");
    s.bind_int(":device_id", device_id);
    while (s.step()) found.emplace_back(s.get_int("problem_id"), read_trial(c, s));
  }
  std::vector<WinnerRow> out;
  out.reserve(found.size());
  for (auto& [problem_id, trial] : found) out.push_back(complete_winner(c, device_id, problem_id, std::move(trial)));
  return out;
}

std::optional<WinnerRow> TuningDb::nearest_winner(int64_t device_id, const Problem& p) const {
  if (p.m < 1) DGT_THROW(ErrorKind::kInvalid, "nearest_winner: M = {} is invalid (must be >= 1)", p.m);
  Conn c{db_, path_};
  Stmt s(c,
         "SELECT p.id AS problem_id, p.m AS m, p.key AS key FROM winner w JOIN problem p ON p.id = w.problem_id "
         "WHERE w.device_id = :device_id AND p.n = :n AND p.k = :k AND p.dtype_a = :dtype_a AND p.dtype_b = :dtype_b "
         "AND p.dtype_d = :dtype_d AND p.scale_mode = :scale_mode AND p.accum = :accum");
  s.bind_int(":device_id", device_id);
  s.bind_int(":n", p.n);
  s.bind_int(":k", p.k);
  s.bind_text(":dtype_a", to_string(p.a));
  s.bind_text(":dtype_b", to_string(p.b));
  s.bind_text(":dtype_d", to_string(p.d));
  s.bind_text(":scale_mode", to_string(p.scale));
  s.bind_text(":accum", to_string(p.accum));

  struct Candidate {
    int64_t problem_id, m;
    std::string key;
  };
  const std::string own_key = p.key();
  // True when a is the better choice: nearer in log M, then larger M, then p itself, then lower key.
  auto better = [&](const Candidate& a, const Candidate& b) {
    int d = compare_log_distance(a.m, b.m, p.m);
    if (d != 0) return d < 0;
    if (a.m != b.m) return a.m > b.m;
    if ((a.key == own_key) != (b.key == own_key)) return a.key == own_key;
    return a.key < b.key;
  };
  std::optional<Candidate> best;
  while (s.step()) {
    Candidate cand{s.get_int("problem_id"), s.get_int("m"), s.get_text("key")};
    if (cand.m < 1) continue;  // cannot be placed on a log scale; never stored by dgtune
    if (!best || better(cand, *best)) best = std::move(cand);
  }
  if (!best) return std::nullopt;
  return winner_by_id(c, device_id, best->problem_id);
}

}  // namespace dgt
