#include "db/maintenance.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/output_file.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"
#include "db/writer_check.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"
#include "records/records.hpp"

namespace dgt::dbm {

using sql::Connection;
using sql::Statement;
using sql::Transaction;

namespace {

int64_t scalar(const Connection& c, const std::string& q) {
  Statement s(c, q);
  if (!s.step() || s.is_null("v")) return 0;
  return s.get_int("v");
}

bool has_table(const Connection& c, const std::string& schema, const std::string& name) {
  Statement s(c, "SELECT count(*) AS v FROM " + schema + ".sqlite_master WHERE type = 'table' AND name = :name");
  s.bind_text(":name", name);
  s.step();
  return s.get_int("v") > 0;
}

/// Column names of a table (PRAGMA table_info), in order.
std::vector<std::string> columns(const Connection& c, const std::string& schema, const std::string& table) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  const std::string q = "PRAGMA " + schema + ".table_info(" + table + ")";
  if (sqlite3_prepare_v2(c.handle(), q.c_str(), -1, &st, nullptr) != SQLITE_OK) c.fail(sqlite3_errcode(c.handle()), q);
  while (sqlite3_step(st) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
  sqlite3_finalize(st);
  return out;
}

/// Rows of a PRAGMA that returns text in column 0 (integrity_check) or several columns (foreign_key_check).
std::vector<std::string> pragma_rows(const Connection& c, const std::string& q) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(c.handle(), q.c_str(), -1, &st, nullptr) != SQLITE_OK) c.fail(sqlite3_errcode(c.handle()), q);
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      if (i) row += ' ';
      row += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    out.push_back(row);
  }
  sqlite3_finalize(st);
  return out;
}

int file_version(const Connection& c) {
  if (!has_table(c, "main", "schema_version")) return 0;
  return static_cast<int>(scalar(c, "SELECT max(version) AS v FROM schema_version"));
}

std::string join(const std::vector<std::string>& v, const std::string& prefix = "") {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += ", ";
    s += prefix;
    s += x;
  }
  return s;
}

std::vector<std::string> minus(const std::vector<std::string>& cols, const std::set<std::string>& drop) {
  std::vector<std::string> out;
  for (const auto& c : cols)
    if (!drop.count(c)) out.push_back(c);
  return out;
}

}  // namespace

// ---- check --------------------------------------------------------------------------------------

namespace {

/// The config table's tunable columns with the value each holds for `k`, as SQLite's quote() writes it.
std::vector<std::pair<const char*, std::string>> config_columns(const KernelConfig& k) {
  const auto quoted = [](std::string_view t) { return fmt::format("'{}'", t); };
  return {{"block_m", std::to_string(k.block_m)}, {"block_n", std::to_string(k.block_n)},
          {"block_k", std::to_string(k.block_k)}, {"num_stages", std::to_string(k.num_stages)},
          {"num_math_wg", std::to_string(k.num_math_wg)}, {"swizzle", std::to_string(k.swizzle)},
          {"cluster_m", std::to_string(k.cluster_m)}, {"cluster_n", std::to_string(k.cluster_n)},
          {"raster", quoted(to_string(k.raster))}, {"group_size", std::to_string(k.group)},
          {"epilogue", quoted(to_string(k.epilogue))}, {"split_k", std::to_string(k.split_k)},
          {"sms", std::to_string(k.sms)}, {"mainloop", quoted(to_string(k.mainloop))},
          {"promote_every", std::to_string(k.promote_every)}, {"split_cluster", k.split_cluster ? "1" : "0"},
          {"swap_ab", k.swap_ab ? "1" : "0"}};
}

/// Problem rows whose columns contradict their key or break a rule of a problem (the readers refuse both).
void find_bad_problems(const Connection& c, std::vector<std::string>& out) {
  // A file older than schema 11 (check does not migrate) has no grouped columns: every problem is dense.
  const auto problem_cols = columns(c, "main", "problem");
  const bool grouped_cols = std::find(problem_cols.begin(), problem_cols.end(), "group_kind") != problem_cols.end();
  Statement s(
      c,
      std::string("SELECT id AS id, key AS key, m AS m, n AS n, k AS k, lda AS lda, ldb AS ldb, ldd AS ldd, "
                  "dtype_a AS a, dtype_b AS b, dtype_d AS d, scale_mode AS scale_mode, accum AS accum, bias AS bias, "
                  "act AS act, ") +
          (grouped_cols ? "group_kind AS group_kind, groups AS groups, m_max AS m_max, expected_m AS expected_m"
                        : "'none' AS group_kind, 0 AS groups, 0 AS m_max, 0 AS expected_m") +
          " FROM problem");
  while (s.step()) {
    try {
      Problem p;
      p.m = s.get_int("m"), p.n = s.get_int("n"), p.k = s.get_int("k");
      p.lda = s.get_int("lda"), p.ldb = s.get_int("ldb"), p.ldd = s.get_int("ldd");
      p.a = parse_dtype(s.get_text("a"));
      p.b = parse_dtype(s.get_text("b"));
      p.d = parse_output_dtype(s.get_text("d"));
      // "per_tensor": the spelling of dgtune 0.1 files (schema 1), kept by the migrations.
      const std::string scale = s.get_text("scale_mode");
      p.scale = scale == "per_tensor" ? ScaleMode::kPerTensor : parse_scale_mode(scale);
      p.accum = parse_accum(s.get_text("accum"));
      p.bias = parse_bias(s.get_text("bias"));
      p.act = parse_act(s.get_text("act"));
      // Schema 11: a grouped problem's key starts with its layout, G (and M_max, expected_m).
      const std::string kind = s.get_text("group_kind");
      if (kind != "none") {
        p.group_kind = parse_group_kind(kind);
        p.groups = s.get_int32("groups");
        p.m_max = s.get_int("m_max");
        p.expected_m = s.get_int("expected_m");
      }
      validate_problem(p);  // the readers refuse a problem no dgtune would store: the rule it breaks comes first
      if (p.key() != s.get_text("key"))
        out.push_back(
            fmt::format("problem {}: key {} but its columns give {}", s.get_int("id"), s.get_text("key"), p.key()));
    } catch (const Error& e) {
      out.push_back(fmt::format("problem {} ({}): {}", s.get_int("id"), s.get_text("key"), e.message()));
    }
  }
}

/// Ok trials and baselines whose median_us is not a positive finite time (a winner, an export row, a loader estimate
/// rank by it), at most 20 per table; a text compares greater than any number in SQLite, hence the typeof.
void find_bad_times(const Connection& c, std::vector<std::string>& out) {
  for (const char* table : {"trial", "baseline"}) {
    Statement s(c, fmt::format("SELECT id AS id, quote(median_us) AS t FROM {} WHERE status = 'ok' AND median_us IS "
                               "NOT NULL AND (typeof(median_us) NOT IN ('real', 'integer') OR NOT (median_us > 0) OR "
                               "median_us >= 9e999) ORDER BY id LIMIT 20",
                               table));
    while (s.step())
      out.push_back(fmt::format("{} {}: status ok with median_us = {}, not a positive finite time", table,
                                s.get_int("id"), s.get_text("t")));
  }
}

}  // namespace

CheckReport check(const std::string& path) {
  CheckReport r;
  r.latest = schema::latest_version();
  Connection c(path, /*read_only=*/true);  // never schema::open_and_migrate: check writes nothing
  try {
    for (const std::string& row : pragma_rows(c, "PRAGMA integrity_check"))
      if (row != "ok") r.problems.push_back("integrity_check: " + row);
  } catch (const Error& e) {
    r.problems.push_back("integrity_check could not run: " + e.message());
  }
  // The other commands refuse a damaged file naming this one: report SQLite's findings instead of failing on the
  // first query that reads a damaged page.
  if (!r.problems.empty()) {
    try {
      r.version = file_version(c);  // for the title, when the damage spares that page
    } catch (const Error&) {
    }
    r.notes.push_back("the file is damaged: dgtune's own checks were not run (SQLite's findings are listed)");
    return r;
  }
  if (!has_table(c, "main", "schema_version")) {
    r.problems.push_back("no schema_version table: not a dgtune tuning database");
    return r;
  }
  r.version = file_version(c);
  if (r.version < 1) {
    r.problems.push_back(fmt::format(
        "schema version {} is not a version any dgtune writes (they start at 1); not checked further", r.version));
    return r;
  }
  if (scalar(c, "SELECT count(*) AS v FROM schema_version") != 1)
    r.problems.push_back(
        fmt::format("schema_version holds {} rows, want 1", scalar(c, "SELECT count(*) AS v FROM schema_version")));
  if (r.version > r.latest) {
    r.problems.push_back(
        fmt::format("schema version {} is newer than this dgtune's {}; not checked further", r.version, r.latest));
    return r;
  }
  for (const std::string& row : pragma_rows(c, "PRAGMA foreign_key_check"))
    r.problems.push_back("foreign_key_check (table rowid parent fkid): " + row);
  if (r.version < 3) {
    r.notes.push_back(
        fmt::format("schema version {} (older than {}): only SQLite's checks ran; open it read-write with "
                    "any writing dgtune command to migrate it, then check again",
                    r.version, r.latest));
    return r;
  }
  if (r.version < r.latest)
    r.notes.push_back(
        fmt::format("schema version {} (this dgtune writes {}); not migrated by check", r.version, r.latest));
  schema::register_functions(c);
  {
    Statement s(c,
                "SELECT id AS id, hw_key AS k, dgt_hardware_key(name, cc, sm_count, memory_bytes, l2_bytes) AS want "
                "FROM device WHERE hw_key <> dgt_hardware_key(name, cc, sm_count, memory_bytes, l2_bytes)");
    while (s.step())
      r.problems.push_back(fmt::format("device {}: hw_key {} but its columns give {}", s.get_int("id"), s.get_text("k"),
                                       s.get_text("want")));
  }
  {
    Statement s(c,
                "SELECT id AS id, env_key AS k, dgt_environment_key(driver_version, runtime_version, cublaslt_version, "
                "nvrtc_version, kernel_hash, dgtune_version) AS want FROM environment WHERE env_key <> "
                "dgt_environment_key(driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash, "
                "dgtune_version)");
    while (s.step())
      r.problems.push_back(fmt::format("environment {}: env_key {} but its columns give {}", s.get_int("id"),
                                       s.get_text("k"), s.get_text("want")));
  }
  find_bad_problems(c, r.problems);
  {
    // Each tunable column agrees with the key (the readers refuse a config whose columns contradict it, naming this
    // command); only the columns the file's schema has.
    const auto have = columns(c, "main", "config");
    const auto has = [&](const char* col) { return std::find(have.begin(), have.end(), col) != have.end(); };
    std::string cols;
    for (const auto& [col, value] : config_columns(KernelConfig{}))
      if (has(col)) cols += fmt::format(", quote({0}) AS {0}", col);
    Statement s(c, "SELECT id AS id, key AS key" + cols + " FROM config");
    while (s.step()) {
      KernelConfig k;
      try {
        k = KernelConfig::parse_key(s.get_text("key"));
      } catch (const Error& e) {
        r.notes.push_back(fmt::format("config {}: key '{}' does not parse with this dgtune ({})", s.get_int("id"),
                                      s.get_text("key"), e.message()));
        continue;
      }
      for (const auto& [col, value] : config_columns(k))
        if (has(col) && s.get_text(col) != value)
          r.problems.push_back(fmt::format("config {} ({}): {} = {} but its key gives {}", s.get_int("id"),
                                           s.get_text("key"), col, s.get_text(col), value));
    }
  }
  for (const char* table : {"trial", "baseline"}) {
    Statement s(c, std::string("SELECT DISTINCT status AS status FROM ") + table);
    while (s.step()) {
      try {
        (void)parse_trial_status(s.get_text("status"));
      } catch (const Error&) {
        r.problems.push_back(fmt::format("{}: unknown status '{}'", table, s.get_text("status")));
      }
    }
  }
  {
    Statement s(c, "SELECT count(*) AS n FROM trial WHERE status = 'claimed'");
    s.step();
    if (s.get_int("n") > 0)
      r.notes.push_back(fmt::format(
          "{} trials are claimed: a sweep is measuring them now, or was killed (the next sweep measures them)",
          s.get_int("n")));
  }
  {
    Statement s(c,
                "SELECT id AS id FROM trial WHERE status = 'ok' AND (median_us IS NULL OR verify_ok IS NULL OR "
                "verify_ok <> 1)");
    while (s.step())
      r.problems.push_back(
          fmt::format("trial {}: status ok without a timing or a passed verification", s.get_int("id")));
  }
  // An ok timing is a positive finite time measured under a named protocol.
  find_bad_times(c, r.problems);
  for (const char* table : {"trial", "baseline"}) {
    const auto cols = columns(c, "main", table);  // protocol_name: schema 7 on
    if (std::find(cols.begin(), cols.end(), "protocol_name") == cols.end()) continue;
    Statement p(c, fmt::format("SELECT id AS id FROM {} WHERE protocol_name IS NULL OR protocol_name = '' ORDER BY id "
                               "LIMIT 20",
                               table));
    while (p.step()) r.problems.push_back(fmt::format("{} {}: no protocol name", table, p.get_int("id")));
  }
  {
    Statement s(
        c,
        "SELECT id AS id, candidates AS c, stored AS s, complete AS done FROM sweep WHERE stored > candidates OR "
        "(complete <> 0 AND stored < candidates)");
    while (s.step())
      r.problems.push_back(fmt::format("sweep {}: stored {} of {} candidates, complete = {}", s.get_int("id"),
                                       s.get_int("s"), s.get_int("c"), s.get_int("done")));
  }
  if (has_table(c, "main", "measurement_side")) {
    // A measurement's sides are 0..n-1, as compare --between reads them (it refuses other indexes, naming this command).
    Statement s(c,
                "SELECT measurement_id AS m, side AS side FROM measurement_side o WHERE side < 0 OR side >= (SELECT "
                "count(*) FROM measurement_side i WHERE i.measurement_id = o.measurement_id) ORDER BY measurement_id, "
                "side LIMIT 20");
    while (s.step())
      r.problems.push_back(fmt::format("measurement {}: side {} is outside 0..(sides - 1)", s.get_int("m"),
                                       s.get_int("side")));
  }
  if (has_table(c, "main", "measurement_sample")) {
    // Stored compare samples are times: zero, negative, infinite (9e999 is SQLite's Inf), missing or text ones (a
    // text compares greater than any number in SQLite) would make every statistic of `compare --between` meaningless.
    Statement s(c,
                "SELECT measurement_id AS m, side AS side, round AS round, quote(time_us) AS t FROM measurement_sample "
                "WHERE typeof(time_us) NOT IN ('real', 'integer') OR NOT (time_us > 0) OR time_us >= 9e999 ORDER BY "
                "measurement_id, side, round "
                "LIMIT 20");
    while (s.step())
      r.problems.push_back(fmt::format("measurement {}: side {}, round {}: time_us = {} is not a positive finite time",
                                       s.get_int("m"), s.get_int("side"), s.get_int("round"), s.get_text("t")));
  }
  return r;
}

// ---- devices ------------------------------------------------------------------------------------

std::vector<DeviceSummary> devices(const std::string& path) {
  Connection c(path, /*read_only=*/true);
  // Refused as export refuses them: a newer schema (its tables may mean something else by the same names), a version
  // no dgtune writes, tables without a schema_version.
  schema::refuse_unusable(c, schema::read_file_state(c));
  const int v = file_version(c);
  if (v == 0)  // "migrate it" would be wrong advice: a read-write open refuses a foreign file too
    DGT_THROW(ErrorKind::kSqlite, "tuning database {} is not a dgtune tuning database (it has no schema_version table)",
              path);
  if (v < 3)
    DGT_THROW(ErrorKind::kSqlite,
              "tuning database {} has schema version {}: open it read-write once (e.g. `dgtune db prune "
              "--dry-run`) to migrate it",
              path, v);
  Statement s(c,
              "SELECT d.id AS id, d.hw_key AS hw_key, d.name AS name, d.cc AS cc, d.sm_count AS sm_count, "
              "d.memory_bytes AS memory_bytes, d.l2_bytes AS l2_bytes, "
              "(SELECT count(DISTINCT environment_id) FROM trial t WHERE t.device_id = d.id) AS envs, "
              "(SELECT count(*) FROM trial t WHERE t.device_id = d.id) AS trials, "
              "(SELECT count(*) FROM baseline b WHERE b.device_id = d.id) AS baselines, "
              "(SELECT count(*) FROM winner w WHERE w.device_id = d.id) AS winners FROM device d ORDER BY d.id");
  std::vector<DeviceSummary> out;
  while (s.step()) {
    DeviceSummary d;
    d.id = s.get_int("id");
    d.hw_key = s.get_text("hw_key");
    d.name = s.get_text("name");
    d.cc = s.get_int32("cc");
    d.sm_count = s.get_int32("sm_count");
    d.memory_bytes = s.get_int("memory_bytes");
    d.l2_bytes = s.get_int("l2_bytes");
    d.environments = s.get_int32("envs");
    d.trials = s.get_int32("trials");
    d.baselines = s.get_int32("baselines");
    d.winners = s.get_int32("winners");
    out.push_back(d);
  }
  return out;
}

// ---- prune --------------------------------------------------------------------------------------

PruneReport prune(const std::string& path, const std::string& keep, bool dry_run) {
  PruneReport r;
  r.dry_run = dry_run;
  if (!std::filesystem::exists(path)) DGT_THROW(ErrorKind::kIo, "tuning database {} does not exist", path);
  Connection c(path, dry_run);
  if (dry_run) {
    // An empty or foreign file is not an old DB: migrating it is wrong advice (a read-write open refuses it too).
    if (!has_table(c, "main", "schema_version"))
      DGT_THROW(ErrorKind::kSqlite, "tuning database {} is not a dgtune tuning database ({}); db prune works on an existing one",
                path, std::filesystem::file_size(path) == 0 ? "the file is empty" : "it has no schema_version table");
    if (file_version(c) != schema::latest_version())
      DGT_THROW(ErrorKind::kSqlite,
                "tuning database {} has schema version {}, not {}: prune --dry-run writes nothing, so run "
                "it after a read-write open has migrated the file",
                path, file_version(c), schema::latest_version());
  } else {
    schema::open_and_migrate(c);
  }
  Transaction tx(c);
  {
    Statement s(
        c,
        "SELECT e.kernel_hash AS h, (SELECT count(*) FROM trial t JOIN environment x ON x.id = t.environment_id "
        "WHERE x.kernel_hash = e.kernel_hash) AS trials, (SELECT count(*) FROM sweep w JOIN environment x ON "
        "x.id = w.environment_id WHERE x.kernel_hash = e.kernel_hash) AS sweeps FROM environment e "
        "WHERE e.kernel_hash <> :keep GROUP BY e.kernel_hash ORDER BY e.kernel_hash");
    s.bind_text(":keep", keep);
    while (s.step()) r.removed.push_back({s.get_text("h"), s.get_int32("trials"), s.get_int32("sweeps")});
  }
  {
    Statement s(
        c,
        "SELECT count(*) AS v FROM trial t JOIN environment e ON e.id = t.environment_id WHERE e.kernel_hash = :keep");
    s.bind_text(":keep", keep);
    s.step();
    r.kept_trials = s.get_int32("v");
  }
  if (!dry_run) {
    for (const char* table : {"trial", "sweep"}) {
      Statement s(c, std::string("DELETE FROM ") + table +
                         " WHERE environment_id IN (SELECT id FROM environment WHERE kernel_hash <> :keep)");
      s.bind_text(":keep", keep);
      s.run();
    }
    tx.commit();
  }
  return r;
}

// ---- deployable copy ----------------------------------------------------------------------------

void deployable_copy(const std::string& path, const std::string& out) {
  namespace fs = std::filesystem;
  if (fs::exists(out)) DGT_THROW(ErrorKind::kUsage, "export --format db: output {} exists; name a new file", out);
  // A unique temporary name beside the output: never a file of the user's (a fixed "OUT.tmp" would be removed).
  PendingFile pending(out);
  const std::string& tmp = pending.temp_path();
  struct SideFiles {
    std::string file;
    ~SideFiles() {
      for (const char* suffix : {"-journal", "-wal", "-shm"}) {
        std::error_code ec;
        fs::remove(file + suffix, ec);
      }
    }
  } side_files{tmp};
  {
    Connection src(path, /*read_only=*/true);
    schema::open_and_migrate(src);  // read-only: refuses a foreign, damaged, older or newer file
    // One consistent snapshot of the file and its WAL, compacted, without the claims of running sweeps.
    src.vacuum_into(tmp);
  }
  {
    Connection copy(tmp, false);
    copy.exec("DELETE FROM trial WHERE status = 'claimed'");
    // DELETE: a reader needs no -wal/-shm files, so the copy opens in a read-only folder and leaves nothing.
    Statement s(copy, "PRAGMA journal_mode = DELETE");
    if (!s.step() || s.get_text("journal_mode") != "delete")
      DGT_THROW(ErrorKind::kSqlite, "export --format db: {}: cannot switch the copy to journal_mode=DELETE", tmp);
  }
  pending.commit(/*replace=*/false);
}

// ---- merge --------------------------------------------------------------------------------------

namespace {

/// Refuses an input that cannot be merged (missing, not a dgtune DB, newer schema), before anything is written.
void check_input(const std::string& path) {
  if (!std::filesystem::exists(path)) DGT_THROW(ErrorKind::kUsage, "db merge: {} does not exist", path);
  check_db_intact(path);  // a damaged input's rows would be merged as data
  Connection src(path, /*read_only=*/true);
  if (!has_table(src, "main", "schema_version"))
    DGT_THROW(ErrorKind::kSqlite, "db merge: {} is not a dgtune tuning database (it has no schema_version table)",
              path);  // the file's content is at fault: exit 1, as export, prune and migrate answer for it
  const int v = file_version(src);
  if (v < 1)
    DGT_THROW(ErrorKind::kSqlite,
              "db merge: {} has schema version {}, which no dgtune writes (damaged file?); run `dgtune db check --db "
              "{}`",
              path, v, path);
  if (v > schema::latest_version())  // the file's content: exit 1, as export, prune and migrate answer for it
    DGT_THROW(ErrorKind::kSqlite, "db merge: {} has schema version {}, newer than this dgtune's {}", path, v,
              schema::latest_version());
  // Rows the readers refuse (export names `db check` for them) would be merged as data. Files older than schema 3
  // get SQLite's checks only, as in check().
  if (v < 3) return;
  std::vector<std::string> bad;
  find_bad_problems(src, bad);
  find_bad_times(src, bad);
  if (!bad.empty())
    DGT_THROW(ErrorKind::kSqlite, "db merge: {}: {}{} (damaged or hand-edited file?); run `dgtune db check --db {}`",
              path, bad[0], bad.size() > 1 ? fmt::format(" (and {} more)", bad.size() - 1) : "", path);
}

/// VACUUM INTO a temporary copy (the input is only read), then migrate the copy to the current schema.
std::string migrated_copy(const std::string& path, const std::string& tmp) {
  check_input(path);
  {
    Connection src(path, /*read_only=*/true);
    src.vacuum_into(tmp);
  }
  Connection copy(tmp, false);
  schema::open_and_migrate(copy);
  return tmp;
}

/// Copies rows of the identity tables by their unique key (first input wins for the non-key columns).
void copy_identity(const Connection& c, const std::string& src, const std::string& table) {
  const auto cols = minus(columns(c, "main", table), {"id"});
  c.exec(
      fmt::format("INSERT OR IGNORE INTO main.{0} ({1}) SELECT {1} FROM {2}.{0} ORDER BY id", table, join(cols), src));
}

/// The joins that map a source row's device/environment/problem/config ids to the output's, by key.
std::string id_joins(const std::string& src, const std::string& alias, bool config) {
  std::string j = fmt::format(
      " JOIN {0}.device sd ON sd.id = {1}.device_id JOIN main.device md ON md.hw_key = sd.hw_key"
      " JOIN {0}.environment se ON se.id = {1}.environment_id JOIN main.environment me ON me.env_key = se.env_key"
      " JOIN {0}.problem sp ON sp.id = {1}.problem_id JOIN main.problem mp ON mp.key = sp.key",
      src, alias);
  if (config)
    j += fmt::format(" JOIN {0}.config sc ON sc.id = {1}.config_id JOIN main.config mc ON mc.key = sc.key", src, alias);
  return j;
}

/// Trials or baselines: union; a duplicate (unique key taken) is replaced only by a better row (rule 2).
void copy_measurements(const Connection& c, const std::string& src, const std::string& table, bool config,
                       const std::string& conflict_key) {
  const std::set<std::string> ids = {"id", "device_id", "environment_id", "problem_id", "config_id"};
  const auto cols = minus(columns(c, "main", table), ids);
  std::string set;
  for (const auto& col : cols) {
    if (!set.empty()) set += ", ";
    set += col + " = excluded." + col;
  }
  const std::string target_cols =
      "device_id, environment_id, problem_id" + std::string(config ? ", config_id" : "") + ", " + join(cols);
  const std::string source_cols =
      "md.id, me.id, mp.id" + std::string(config ? ", mc.id" : "") + ", " + join(cols, "t.");
  c.exec(fmt::format(
      // A claim is a sweep's work in progress, not a measurement: never merged.
      "INSERT INTO main.{0} ({1}) SELECT {2} FROM {3}.{0} t {4} WHERE t.status <> 'claimed' ORDER BY t.id "
      "ON CONFLICT ({5}) DO UPDATE SET {6} WHERE (excluded.status = 'ok') > ({0}.status = 'ok') OR "
      "((excluded.status = 'ok') = ({0}.status = 'ok') AND coalesce(excluded.samples, 0) > coalesce({0}.samples, 0))",
      table, target_cols, source_cols, src, id_joins(src, "t", config), conflict_key, set));
}

void copy_sweeps(const Connection& c, const std::string& src) {
  const auto cols = minus(columns(c, "main", "sweep"), {"id", "device_id", "environment_id", "problem_id"});
  c.exec(fmt::format(
      "INSERT INTO main.sweep (device_id, environment_id, problem_id, {0}) SELECT md.id, me.id, mp.id, {1} "
      "FROM {2}.sweep t {3} WHERE true ORDER BY t.id "
      "ON CONFLICT (device_id, environment_id, problem_id, space, strategy, protocol_name) DO UPDATE SET "
      "complete = (sweep.complete <> 0 AND excluded.complete <> 0), candidates = max(sweep.candidates, "
      "excluded.candidates), "
      "stored = max(sweep.stored, excluded.stored), updated_at = max(sweep.updated_at, excluded.updated_at)",
      join(cols), join(cols, "t."), src, id_joins(src, "t", false)));
}

void copy_gate_history(const Connection& c, const std::string& src) {
  if (!has_table(c, src, "gate_run")) return;
  const auto run_cols = minus(columns(c, "main", "gate_run"), {"id", "device_id", "environment_id"});
  const auto res_cols = minus(columns(c, "main", "gate_result"), {"id", "run_id", "problem_id"});
  std::vector<int64_t> runs;
  {
    Statement s(c, "SELECT id AS v FROM " + src + ".gate_run ORDER BY id");
    while (s.step()) runs.push_back(s.get_int("v"));
  }
  // A run already in the output (the same device, environment and every column: two DBs that both hold it, e.g.
  // one copied from the other) is not appended again, so the history shows each run once.
  std::string same_run;
  for (const auto& col : run_cols) same_run += fmt::format(" AND m.{0} IS t.{0}", col);
  for (int64_t id : runs) {
    c.exec(fmt::format(
        "INSERT INTO main.gate_run (device_id, environment_id, {0}) SELECT md.id, me.id, {1} FROM {2}.gate_run t "
        "JOIN {2}.device sd ON sd.id = t.device_id JOIN main.device md ON md.hw_key = sd.hw_key "
        "JOIN {2}.environment se ON se.id = t.environment_id JOIN main.environment me ON me.env_key = se.env_key "
        "WHERE t.id = {3} AND NOT EXISTS (SELECT 1 FROM main.gate_run m WHERE m.device_id = md.id AND "
        "m.environment_id = me.id{4})",
        join(run_cols), join(run_cols, "t."), src, id, same_run));
    if (sqlite3_changes(c.handle()) == 0) continue;
    const int64_t new_id = sqlite3_last_insert_rowid(c.handle());
    c.exec(fmt::format(
        "INSERT INTO main.gate_result (run_id, problem_id, {0}) SELECT {1}, mp.id, {2} FROM {3}.gate_result t "
        "JOIN {3}.problem sp ON sp.id = t.problem_id JOIN main.problem mp ON mp.key = sp.key WHERE t.run_id = {4} "
        "ORDER BY t.id",
        join(res_cols), new_id, join(res_cols, "t."), src, id));
  }
}

/// Interleaved measurements (schema 5): each run with its sides and samples, under the merged ids.
void copy_interleaved_measurements(const Connection& c, const std::string& src) {
  if (!has_table(c, src, "measurement")) return;
  const auto cols = minus(columns(c, "main", "measurement"), {"id", "device_id", "environment_id", "problem_id"});
  const auto side_cols = minus(columns(c, "main", "measurement_side"), {"measurement_id"});
  const auto sample_cols = minus(columns(c, "main", "measurement_sample"), {"measurement_id"});
  std::vector<int64_t> ids;
  {
    Statement s(c, "SELECT id AS v FROM " + src + ".measurement ORDER BY id");
    while (s.step()) ids.push_back(s.get_int("v"));
  }
  for (int64_t id : ids) {
    c.exec(fmt::format(
        "INSERT INTO main.measurement (device_id, environment_id, problem_id, {0}) SELECT md.id, me.id, mp.id, {1} "
        "FROM "
        "{2}.measurement t JOIN {2}.device sd ON sd.id = t.device_id JOIN main.device md ON md.hw_key = sd.hw_key "
        "JOIN {2}.environment se ON se.id = t.environment_id JOIN main.environment me ON me.env_key = se.env_key "
        "JOIN {2}.problem sp ON sp.id = t.problem_id JOIN main.problem mp ON mp.key = sp.key WHERE t.id = {3}",
        join(cols), join(cols, "t."), src, id));
    const int64_t new_id = sqlite3_last_insert_rowid(c.handle());
    c.exec(fmt::format(
        "INSERT INTO main.measurement_side (measurement_id, {0}) SELECT {1}, {2} FROM {3}.measurement_side t "
        "WHERE t.measurement_id = {4} ORDER BY t.side",
        join(side_cols), new_id, join(side_cols, "t."), src, id));
    c.exec(fmt::format(
        "INSERT INTO main.measurement_sample (measurement_id, {0}) SELECT {1}, {2} FROM {3}.measurement_sample t "
        "WHERE t.measurement_id = {4} ORDER BY t.round, t.position",
        join(sample_cols), new_id, join(sample_cols, "t."), src, id));
  }
}

}  // namespace

MergeReport merge(const std::vector<std::string>& inputs, const std::string& out) {
  namespace fs = std::filesystem;
  if (inputs.size() < 2)
    DGT_THROW(ErrorKind::kUsage, "db merge takes two or more input files (got {}): A.db B.db [C.db ...] -o OUT.db",
              inputs.size());
  if (fs::exists(out)) DGT_THROW(ErrorKind::kUsage, "db merge: output {} exists; name a new file", out);
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = i + 1; j < inputs.size(); ++j)
      if (fs::exists(inputs[i]) && fs::exists(inputs[j]) && fs::equivalent(inputs[i], inputs[j]))
        DGT_THROW(ErrorKind::kUsage, "db merge: {} and {} are the same file", inputs[i], inputs[j]);
  // Every input is checked before anything is written, so a bad last input costs no merging.
  for (const auto& in : inputs) check_input(in);

  // The inputs are folded in one at a time (copy, attach, merge, detach, delete the copy): SQLite attaches at
  // most 10 files, and only one input copy is on disk at a time. Each input is its own transaction (ATTACH is
  // refused inside one), so the output is written to OUT.merge.tmp and renamed when every input is in:
  // `out` is complete or absent.
  // Unique temporary names beside the output (PendingFile): a fixed name could be a file of the user's.
  PendingFile pending_out(out);
  const std::string& tmp_out = pending_out.temp_path();
  struct SideFiles {
    std::vector<std::string> files;
    ~SideFiles() {
      for (const auto& f : files)
        for (const char* suffix : {"-journal", "-wal", "-shm"}) {
          std::error_code ec;
          fs::remove(f + suffix, ec);
        }
    }
  } cleanup{{tmp_out}};

  MergeReport report;
  const char* counted[] = {"device",
                           "environment",
                           "problem",
                           "config",
                           "trial",
                           "baseline",
                           "sweep",
                           "gate_run",
                           "gate_result",
                           "measurement",
                           "measurement_side",
                           "measurement_sample"};
  for (const char* t : counted) report.tables.push_back({t, std::vector<int64_t>(inputs.size(), 0), 0});
  {
    Connection c(tmp_out, false);
    schema::open_and_migrate(c);
    for (size_t i = 0; i < inputs.size(); ++i) {
      PendingFile pending_in(out + ".merge-in" + std::to_string(i));
      const std::string& tmp_in = pending_in.temp_path();
      cleanup.files.push_back(tmp_in);
      migrated_copy(inputs[i], tmp_in);
      {
        Statement s(c, "ATTACH DATABASE :src AS src");
        s.bind_text(":src", tmp_in);
        s.run();
      }
      {
        Transaction tx(c);
        for (auto& t : report.tables) t.from[i] = scalar(c, fmt::format("SELECT count(*) AS v FROM src.{}", t.name));
        for (const char* t : {"device", "environment", "problem", "config"}) copy_identity(c, "src", t);
        copy_measurements(c, "src", "trial", true, "device_id, environment_id, problem_id, config_id, protocol_name");
        copy_measurements(c, "src", "baseline", false,
                          "device_id, environment_id, problem_id, provider, protocol_name");
        copy_sweeps(c, "src");
        copy_gate_history(c, "src");
        copy_interleaved_measurements(c, "src");
        tx.commit();
      }
      c.exec("DETACH DATABASE src");
      for (const char* suffix : {"-journal", "-wal", "-shm"}) {
        std::error_code ec;
        fs::remove(tmp_in + suffix, ec);
      }
    }
    for (auto& t : report.tables) t.merged = scalar(c, fmt::format("SELECT count(*) AS v FROM main.{}", t.name));
    c.exec("PRAGMA wal_checkpoint(TRUNCATE)");  // everything in the main file before it is renamed
  }
  pending_out.commit(/*replace=*/false);  // refuses an output another process created meanwhile
  return report;
}

MergeReport merge(const std::string& a, const std::string& b, const std::string& out) {
  return merge(std::vector<std::string>{a, b}, out);
}

}  // namespace dgt::dbm
