// Schema v4 and the migrations from v1 and v2 files (fixtures: tests/unit/fixtures/schema_v*.sql, the DDL
// those versions wrote). No GPU needed.
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "db/schema.hpp"
#include "db/tuning_db.hpp"
#include "records/records.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

class MigrationTest : public test::TempDirTest {
 protected:
  std::string db_path(const std::string& name) const { return path(name); }
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string fixture(const char* name) { return read_text(fs::path(DGT_SOURCE_DIR) / "tests/unit/fixtures" / name); }

void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << "\n" << sql.substr(0, 200);
  sqlite3_free(err);
  sqlite3_close(db);
}

/// Every row of a query as text, columns separated by '|', NULL as "NULL".
std::vector<std::string> rows(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db) << "\n" << sql;
  std::vector<std::string> out;
  while (st && sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      if (i) row += '|';
      const unsigned char* t = sqlite3_column_text(st, i);
      row += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    out.push_back(row);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

int64_t raw_int(const std::string& path, const std::string& sql) {
  auto r = rows(path, sql);
  EXPECT_EQ(r.size(), 1u) << sql;
  return r.empty() ? -1 : std::stoll(r[0]);
}

/// sqlite_master without rootpage, each CREATE text normalized: no double quotes (ALTER TABLE RENAME adds
/// them), whitespace runs as one space, no space next to ( ) , (ALTER TABLE ADD COLUMN joins with ", ").
std::vector<std::string> normalized_master(const std::string& path) {
  std::vector<std::string> out;
  for (std::string r :
       rows(path, "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")) {
    r = std::regex_replace(r, std::regex("\""), "");
    r = std::regex_replace(r, std::regex("\\s+"), " ");
    r = std::regex_replace(r, std::regex(" ?([(),]) ?"), "$1");
    out.push_back(r);
  }
  return out;
}

/// Synthetic rows of a v1/v2 file: three old device rows (two environments of one H200, one H100),
/// problems, configs, trials of every shape of value (timed ok, failed without timing, NaN-as-NULL
/// diff), baselines.
const char* kOldRows = R"sql(
INSERT INTO device VALUES (1, 'fp-h200-a', 'NVIDIA H200', 90, 132, 150754820096, 62914560, 1980, 12080, 12040, 120805, 12040,
                           'aaaaaaaaaaaaaaaa', '0.1.0', '2026-11-01T00:00:00Z');
INSERT INTO device VALUES (2, 'fp-h200-b', 'NVIDIA H200', 90, 132, 150754820096, 62914560, 1980, 12090, 12040, 120805, 12040,
                           'bbbbbbbbbbbbbbbb', '0.2.0', '2026-11-02T00:00:00Z');
INSERT INTO device VALUES (3, 'fp-h100', 'NVIDIA H100 80GB HBM3', 90, 132, 85520809984, 52428800, 1980, 12080, 12040, 120805,
                           12040, 'aaaaaaaaaaaaaaaa', '0.1.0', '2026-11-03T00:00:00Z');
INSERT INTO problem VALUES (1, 'p-a', 128, 4096, 7168, 7168, 7168, 4096, 'e4m3', 'e4m3', 'bf16', 'per_tensor', 'promote');
INSERT INTO problem VALUES (2, 'p-b', 4096, 4096, 4096, 4096, 4096, 4096, 'e4m3', 'e5m2', 'bf16', 'per_tensor', 'fast');
INSERT INTO config (id, key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m, cluster_n, raster,
                    group_size, epilogue, split_k)
  VALUES (1, '128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1', 128, 128, 128, 4, 2, 128, 1, 1, 'm', 8, 'direct', 1);
INSERT INTO config (id, key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m, cluster_n, raster,
                    group_size, epilogue, split_k)
  VALUES (2, '128x256x128_s3_wg2_sw128_c1x1_rm8_direct_sk1', 128, 256, 128, 3, 2, 128, 1, 1, 'm', 8, 'direct', 1);
INSERT INTO trial VALUES (1, 1, 1, 1, 'ok', '', 812.25, 168, 0, 197632, 41.5, 40.25, 44.125, 73, 0.0031, 1234.5, 2345.25,
                          1, 0.001, 1e-6, 0, 0, 1830.5, 0, '{"samples":73}', '2026-11-01T01:00:00Z');
INSERT INTO trial VALUES (2, 1, 1, 2, 'compile_error', 'ptxas spills', 900.0, 255, 40, 231424, NULL, NULL, NULL, NULL, NULL,
                          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '{}', '2026-11-01T01:01:00Z');
INSERT INTO trial VALUES (3, 2, 1, 1, 'ok', '', 700.0, 168, 0, 197632, 39.0, 38.0, 40.0, 50, 0.002, 1300.0, 2400.0,
                          1, 0.002, 2e-6, 0, 0, 1800.0, 1, '{"samples":50}', '2026-11-02T01:00:00Z');
INSERT INTO trial VALUES (4, 2, 2, 2, 'verify_failed', 'max_rel_err', 650.0, 200, 0, 231424, NULL, NULL, NULL, NULL, NULL,
                          NULL, NULL, 0, 0.5, NULL, 17, 3, NULL, NULL, '{}', '2026-11-02T01:01:00Z');
INSERT INTO trial VALUES (5, 3, 2, 1, 'ok', '', 710.0, 168, 0, 197632, 300.0, 299.0, 301.0, 20, 0.001, 458.0, 500.0,
                          1, 0.003, 3e-6, 0, 0, 1700.0, 0, '{"samples":20}', '2026-11-03T01:00:00Z');
INSERT INTO baseline VALUES (1, 1, 1, 'cublaslt-default', 'ok', 0, '', 'algo 66', 45.0, 44.0, 46.0, 30, 0.003, 1100.0,
                             2100.0, 1, 0.002, 2e-6, 0, 0, 1810.0, 0, '{}', '2026-11-01T02:00:00Z');
INSERT INTO baseline VALUES (2, 2, 2, 'cublaslt-tuned', 'unsupported', 15, 'CUBLAS_STATUS_NOT_SUPPORTED', '', NULL, NULL,
                             NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '{}',
                             '2026-11-02T02:00:00Z');
)sql";

/// v2 additions: persistent grid sizes and sweep progress.
const char* kV2Rows = R"sql(
UPDATE config SET sms = 66 WHERE id = 2;
INSERT INTO sweep VALUES (1, 1, 1, 'sm90-default', 'exhaustive', 341, 120, 0, '2026-11-01T03:00:00Z');
INSERT INTO sweep VALUES (2, 2, 2, 'sm90-default', 'model-top16', 16, 16, 1, '2026-11-02T03:00:00Z');
)sql";

// The columns v1/v2 and v3 share, and each measurement's (device, environment) facts through its joins.
const char* kTrialColumns =
    "t.id, t.problem_id, t.config_id, t.status, t.error, t.compile_ms, t.registers, t.spill_bytes, t.smem_bytes, "
    "t.median_us, t.p10_us, t.p90_us, t.samples, t.rse, t.tflops, t.gbps, t.verify_ok, t.max_rel_err, t.diff, "
    "t.nan_count, t.pad_touched, t.sm_clock_mhz, t.throttled, t.protocol, t.created_at";
const char* kBaselineColumns =
    "b.id, b.problem_id, b.provider, b.status, b.cublas_status, b.error, b.algo, b.median_us, b.p10_us, b.p90_us, "
    "b.samples, b.rse, b.tflops, b.gbps, b.verify_ok, b.max_rel_err, b.diff, b.nan_count, b.pad_touched, "
    "b.sm_clock_mhz, b.throttled, b.protocol, b.created_at";
const char* kIdentityColumns =
    "d.name, d.cc, d.sm_count, d.memory_bytes, d.l2_bytes, e.driver_version, e.runtime_version, e.cublaslt_version, "
    "e.nvrtc_version, e.kernel_hash, e.dgtune_version";

std::string old_join(const char* alias, const char* columns, const char* table) {
  // Before v3 one device row held both the hardware and the software columns.
  return std::string("SELECT ") + columns + ", " +
         std::regex_replace(kIdentityColumns, std::regex("\\b[de]\\."), "o.") + " FROM " + table + " " + alias +
         " JOIN device o ON o.id = " + alias + ".device_id ORDER BY " + alias + ".id";
}
std::string new_join(const char* alias, const char* columns, const char* table) {
  return std::string("SELECT ") + columns + ", " + kIdentityColumns + " FROM " + table + " " + alias +
         " JOIN device d ON d.id = " + alias + ".device_id JOIN environment e ON e.id = " + alias +
         ".environment_id ORDER BY " + alias + ".id";
}

DeviceFingerprint old_h200(const std::string& kernel_hash, int driver, const std::string& version) {
  DeviceFingerprint d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.max_sm_clock_mhz = 1980;
  d.driver_version = driver;
  d.runtime_version = 12040;
  d.cublaslt_version = 120805;
  d.nvrtc_version = 12040;
  d.kernel_hash = kernel_hash;
  d.dgtune_version = version;
  return d;
}

/// The problem columns of schema versions 1 to 7 (schema 8 adds bias and act).
constexpr const char* kProblemV7Columns =
    "id, key, m, n, k, lda, ldb, ldd, dtype_a, dtype_b, dtype_d, scale_mode, accum";

/// Builds a file of version `v` (1 or 2) with the synthetic rows, migrates it, and checks it against a
/// fresh file: the same sqlite_master and every stored row with the same values and identity.
void check_migration(const std::string& path, const std::string& fresh, int v) {
  raw_exec(path, fixture(v == 1 ? "schema_v1.sql" : "schema_v2.sql"));
  raw_exec(path, kOldRows);
  if (v == 2) raw_exec(path, kV2Rows);
  ASSERT_EQ(raw_int(path, "SELECT version FROM schema_version"), v);
  const auto trials_before = rows(path, old_join("t", kTrialColumns, "trial"));
  const auto baselines_before = rows(path, old_join("b", kBaselineColumns, "baseline"));
  const auto problems_before = rows(path, std::string("SELECT ") + kProblemV7Columns + " FROM problem ORDER BY id");
  // The config columns every version has; schema 4 adds mainloop and promote_every (checked below).
  const std::string config_v2_columns =
      std::string("id, key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, ") +
      "cluster_m, cluster_n, raster, group_size, epilogue, split_k" + (v == 2 ? ", sms" : "");
  const auto configs_before = rows(path, "SELECT " + config_v2_columns + " FROM config ORDER BY id");
  const auto sweeps_before =
      v == 2 ? rows(path, old_join("s",
                                   "s.id, s.problem_id, s.space, s.strategy, s.candidates, s.stored, s.complete, "
                                   "s.updated_at",
                                   "sweep"))
             : std::vector<std::string>{};
  ASSERT_EQ(trials_before.size(), 5u);
  ASSERT_EQ(baselines_before.size(), 2u);

  { TuningDb db(path); }
  { TuningDb db(fresh); }
  EXPECT_EQ(raw_int(path, "SELECT version FROM schema_version"), schema::latest_version());
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM schema_version"), 1);
  const auto master = normalized_master(path);
  EXPECT_EQ(master, normalized_master(fresh));
  EXPECT_EQ(master.size(), 28u);  // 13 tables, 1 view, 4 named and 10 automatic (UNIQUE, composite PRIMARY KEY) indexes
  EXPECT_EQ(rows(path, "PRAGMA foreign_key_check").size(), 0u);
  EXPECT_EQ(rows(path, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});

  // No trial, baseline, problem, config or sweep lost or changed; each keeps its identity.
  EXPECT_EQ(rows(path, new_join("t", kTrialColumns, "trial")), trials_before);
  EXPECT_EQ(rows(path, new_join("b", kBaselineColumns, "baseline")), baselines_before);
  EXPECT_EQ(rows(path, std::string("SELECT ") + kProblemV7Columns + " FROM problem ORDER BY id"), problems_before);
  // Schema 8: problems stored before fused epilogues existed had no fused epilogue.
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM problem WHERE bias = 'none' AND act = 'none'"),
            raw_int(path, "SELECT count(*) FROM problem"));
  // Configs stored before schema 4 ran the one-group mainloop promoting every k-block (what their keys parse to).
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM config WHERE mainloop = '1g' AND promote_every = 1"), 2);
  if (v == 1) {
    EXPECT_EQ(raw_int(path, "SELECT count(*) FROM config WHERE sms = 0"), 2);
  } else {
    EXPECT_EQ(rows(path, "SELECT " + config_v2_columns + " FROM config ORDER BY id"), configs_before);
    EXPECT_EQ(rows(path, new_join("s",
                                  "s.id, s.problem_id, s.space, s.strategy, s.candidates, s.stored, s.complete, "
                                  "s.updated_at",
                                  "sweep")),
              sweeps_before);
  }
  // Two hardware identities, three environments; trials and baselines migrated with an unknown bus id.
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM device"), 2);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM environment"), 2);  // the H100 row shares the first H200's software
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM trial WHERE pci_bus_id = ''"), 5);
  EXPECT_EQ(rows(path, "SELECT hw_key FROM device WHERE name = 'NVIDIA H200'"),
            std::vector<std::string>{old_h200("", 0, "").hardware().key()});
  EXPECT_EQ(rows(path, "SELECT env_key FROM environment WHERE kernel_hash = 'bbbbbbbbbbbbbbbb'"),
            std::vector<std::string>{old_h200("bbbbbbbbbbbbbbbb", 12090, "0.2.0").software().key()});

  // The API finds the old rows by the old fingerprints' identity and environment.
  TuningDb db(path);
  std::optional<DeviceScope> a = db.find_device(old_h200("aaaaaaaaaaaaaaaa", 12080, "0.1.0"));
  std::optional<DeviceScope> b = db.find_device(old_h200("bbbbbbbbbbbbbbbb", 12090, "0.2.0"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->device_id, b->device_id);
  EXPECT_NE(a->environment_id, b->environment_id);
  // The migrated file takes new measurements like a fresh one.
  TrialRecord t;
  t.problem = Problem::dense(128, 4096, 7168);
  t.config.mainloop = Mainloop::k2g;
  t.set_timing(Timing{5.0, 5.0, 5.0, 10, 0.001, 1800, false});
  db.put_trial(*a, t);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM trial"), 6);
  EXPECT_DOUBLE_EQ(db.winner(*a, t.problem)->trial.timing->median_us, 5.0);
  EXPECT_EQ(db.winner(*a, t.problem)->trial.config, t.config);
  EXPECT_EQ(rows(path, "SELECT mainloop || ' ' || promote_every FROM config WHERE key = '" + t.config.key() + "'"),
            std::vector<std::string>{"2g 1"});
  EXPECT_EQ(db.upsert_device(old_h200("aaaaaaaaaaaaaaaa", 12080, "0.1.0")), *a);
  // A config row whose schema-4 columns contradict its key is reported, not silently read.
  raw_exec(path, "UPDATE config SET promote_every = 4 WHERE key = '" + t.config.key() + "'");
  EXPECT_THROW(db.winner(*a, t.problem), Error);
}

TEST(Schema, MigrationsAreEmbeddedInOrder) {
  const auto& ms = schema::migrations();
  ASSERT_EQ(ms.size(), 11u);
  EXPECT_EQ(ms[0].version, 2);
  EXPECT_EQ(ms[0].name, "0002_config_sms_and_sweep");
  EXPECT_EQ(ms[1].version, 3);
  EXPECT_EQ(ms[1].name, "0003_identity_split");
  EXPECT_EQ(ms[2].version, 4);
  EXPECT_EQ(ms[2].name, "0004_config_mainloop");
  EXPECT_EQ(ms[3].version, 5);
  EXPECT_EQ(ms[3].name, "0005_measurement");
  EXPECT_NE(schema::schema_sql().find("CREATE TABLE measurement_sample"), std::string::npos);
  EXPECT_EQ(ms[4].version, 6);
  EXPECT_EQ(ms[4].name, "0006_gate_history");
  EXPECT_EQ(ms[5].version, 7);
  EXPECT_EQ(ms[5].name, "0007_protocol_per_trial");
  EXPECT_EQ(ms[6].version, 8);
  EXPECT_EQ(ms[6].name, "0008_problem_epilogue");
  EXPECT_EQ(ms[7].version, 9);
  EXPECT_EQ(ms[7].name, "0009_config_split_cluster");
  EXPECT_EQ(ms[8].version, 10);
  EXPECT_EQ(ms[8].name, "0010_baseline_algo");
  EXPECT_EQ(ms[9].version, 11);
  EXPECT_EQ(ms[9].name, "0011_grouped_problem");
  EXPECT_EQ(ms[10].version, 12);
  EXPECT_EQ(ms[10].name, "0012_config_swap_ab");
  EXPECT_EQ(schema::schema_sql_version(), 7);  // new files get schema.sql (7), then 0008 to 0012
  EXPECT_EQ(schema::latest_version(), 12);
  EXPECT_NE(schema::schema_sql().find("UNIQUE (device_id, environment_id, problem_id, config_id, protocol_name)"),
            std::string::npos);
  EXPECT_NE(schema::schema_sql().find("CREATE TABLE gate_run"), std::string::npos);
  EXPECT_NE(schema::schema_sql().find("CREATE TABLE environment"), std::string::npos);
}

TEST_F(MigrationTest, V1FileMigratesToTheFreshSchemaKeepingEveryRow) {
  check_migration(db_path("v1.db"), db_path("fresh.db"), 1);
}

TEST_F(MigrationTest, V2FileMigratesToTheFreshSchemaKeepingEveryRow) {
  check_migration(db_path("v2.db"), db_path("fresh.db"), 2);
}

// v6 -> v7: trial, baseline and sweep are rebuilt with protocol_name in their UNIQUE keys. The fixture
// (tests/unit/fixtures/schema_v6.sql) was written by the v6 TuningDb API: 18 trials of three scopes
// (ok, compile_error, verify_failed; one with an empty protocol text, one whose JSON names no protocol), 8
// baselines (one unsupported), 3 sweep states, an interleaved measurement and a gate run.
TEST_F(MigrationTest, V6FileMigratesToPerProtocolTablesKeepingEveryRow) {
  const std::string path = db_path("v6.db"), fresh = db_path("fresh.db");
  raw_exec(path, fixture("schema_v6.sql"));
  raw_exec(path, "UPDATE trial SET protocol = 'not json' WHERE id = 8");  // text no JSON function can read
  ASSERT_EQ(raw_int(path, "SELECT version FROM schema_version"), 6);
  // Every v6 column of every table, in a fixed order (v7 adds protocol_name between protocol and created_at).
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"trial", std::string("SELECT id, device_id, environment_id, config_id, pci_bus_id, ") + kTrialColumns +
                    " FROM trial t ORDER BY id"},
      {"baseline", std::string("SELECT id, device_id, environment_id, pci_bus_id, ") + kBaselineColumns +
                       " FROM baseline b ORDER BY id"},
      {"sweep",
       "SELECT id, device_id, environment_id, problem_id, space, strategy, candidates, stored, complete, updated_at "
       "FROM sweep ORDER BY id"},
      {"device", "SELECT * FROM device ORDER BY id"},
      {"environment", "SELECT * FROM environment ORDER BY id"},
      {"problem", std::string("SELECT ") + kProblemV7Columns + " FROM problem ORDER BY id"},
      // Every v6 column of config (v9 adds split_cluster, checked below).
      {"config",
       "SELECT id, key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m, cluster_n, raster, "
       "group_size, epilogue, split_k, sms, mainloop, promote_every FROM config ORDER BY id"},
      {"measurement", "SELECT * FROM measurement ORDER BY id"},
      {"measurement_side", "SELECT * FROM measurement_side ORDER BY measurement_id, side"},
      {"measurement_sample", "SELECT * FROM measurement_sample ORDER BY measurement_id, side, round"},
      {"gate_run", "SELECT * FROM gate_run ORDER BY id"},
      {"gate_result", "SELECT * FROM gate_result ORDER BY id"},
      // The v6 winners are the v7 winners of the protocol every v6 trial was timed under.
      {"winner",
       "SELECT trial_id, device_id, environment_id, problem_id, config_key, median_us FROM winner ORDER BY "
       "trial_id"}};
  std::vector<std::vector<std::string>> before;
  for (const auto& [name, sql] : tables) before.push_back(rows(path, sql));
  ASSERT_EQ(before[0].size(), 18u);
  ASSERT_EQ(before[1].size(), 8u);
  ASSERT_EQ(before[2].size(), 3u);
  ASSERT_EQ(before[7].size(), 1u);
  ASSERT_EQ(before[10].size(), 1u);
  ASSERT_GE(before[12].size(), 6u);

  { TuningDb db(path); }
  { TuningDb db(fresh); }
  EXPECT_EQ(raw_int(path, "SELECT version FROM schema_version"), 12);
  EXPECT_EQ(normalized_master(path), normalized_master(fresh));
  // Configs stored before schema 12 ran D = A B^T as given.
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM config WHERE swap_ab = 0"), raw_int(path, "SELECT count(*) FROM config"));
  // Problems stored before schema 11 are dense: no group identity, no distribution, and their keys unchanged
  // (the problem rows above compare equal, key included).
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM problem WHERE group_kind = 'none' AND groups = 0 AND m_max = 0 AND "
                          "expected_m = 0 AND group_rows = '' AND group_rows_text = ''"),
            raw_int(path, "SELECT count(*) FROM problem"));
  EXPECT_GT(raw_int(path, "SELECT count(*) FROM problem"), 0);
  // Configs stored before schema 9 reduced their splits through the workspace.
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM config WHERE split_cluster != 0"), 0);
  EXPECT_GT(raw_int(path, "SELECT count(*) FROM config"), 0);
  // Baselines stored before schema 10 have no algorithm to replay (the loader never takes them as a backend).
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM baseline WHERE algo_data IS NOT NULL OR workspace_bytes != 0"), 0);
  EXPECT_EQ(rows(path, "PRAGMA foreign_key_check").size(), 0u);
  EXPECT_EQ(rows(path, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  for (size_t i = 0; i < tables.size(); ++i) EXPECT_EQ(rows(path, tables[i].second), before[i]) << tables[i].first;
  // Every v6 trial, baseline and sweep was the sweep Timer's: cold-l2-v1, also for the texts naming none.
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM trial WHERE protocol_name = 'cold-l2-v1'"), 18);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM baseline WHERE protocol_name = 'cold-l2-v1'"), 8);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM sweep WHERE protocol_name = 'cold-l2-v1'"), 3);
  EXPECT_EQ(rows(path, "SELECT protocol FROM trial WHERE id IN (4, 6, 8) ORDER BY id"),
            (std::vector<std::string>{"", R"({"samples":73})", "not json"}));

  // The migrated file keeps a second protocol's trial of the same (device, environment, problem, config)
  // beside the first, and resumes per protocol.
  TuningDb db(path);
  const auto scope_row = rows(path, "SELECT device_id || ' ' || environment_id FROM trial WHERE id = 1").at(0);
  DeviceScope s;
  s.device_id = std::stoll(scope_row.substr(0, scope_row.find(' ')));
  s.environment_id = std::stoll(scope_row.substr(scope_row.find(' ') + 1));
  const Problem p = Problem::dense(128, 2112, 7168);
  const std::set<std::string> cold_keys = db.stored_config_keys(s, p, "cold-l2-v1");
  EXPECT_EQ(cold_keys.size(), 3u);
  EXPECT_TRUE(db.stored_config_keys(s, p, "hot-graph-v1").empty());
  const auto cold_winner = db.winner(s, p, "cold-l2-v1");
  ASSERT_TRUE(cold_winner);
  TrialRecord hot = cold_winner->trial;
  hot.protocol = R"({"kind":"hot-graph","name":"hot-graph-v1","version":1})";
  hot.set_timing(Timing{1.0, 1.0, 1.0, 10, 0.001, 1800, false});
  hot.created_at.clear();
  db.put_trial(s, hot);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM trial"), 19);
  EXPECT_EQ(db.stored_config_keys(s, p, "hot-graph-v1"), std::set<std::string>{hot.config.key()});
  EXPECT_DOUBLE_EQ(db.winner(s, p, "hot-graph-v1")->trial.timing->median_us, 1.0);
  EXPECT_DOUBLE_EQ(db.winner(s, p, "cold-l2-v1")->trial.timing->median_us, cold_winner->trial.timing->median_us);
}

TEST_F(MigrationTest, MigratedRowsAnswerTheScopedQueries) {
  const std::string path = db_path("v2.db");
  raw_exec(path, fixture("schema_v2.sql"));
  raw_exec(path, kOldRows);
  TuningDb db(path);
  const DeviceScope a = *db.find_device(old_h200("aaaaaaaaaaaaaaaa", 12080, "0.1.0"));
  // One winner per (device, environment, problem) that has a timed ok trial: trials 1, 3 and 5.
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM winner"), 3);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM winner WHERE kernel_hash = 'aaaaaaaaaaaaaaaa'"), 2);
  EXPECT_EQ(raw_int(path, "SELECT trial_id FROM winner WHERE environment_id = " + std::to_string(a.environment_id) +
                              " AND device_id = " + std::to_string(a.device_id)),
            1);
}

TEST_F(MigrationTest, V4FileGainsTheMeasurementTables) {
  // A v4 file (kernel v2): the fresh schema without the measurement (5) and gate-history (6) tables.
  const std::string path = db_path("v4.db"), fresh = db_path("fresh.db");
  { TuningDb db(path); }
  raw_exec(path,
           "DROP TABLE measurement_sample; DROP TABLE measurement_side; DROP TABLE measurement; "
           "DROP TABLE gate_result; DROP TABLE gate_run; ALTER TABLE problem DROP COLUMN bias; "
           "ALTER TABLE problem DROP COLUMN act; ALTER TABLE config DROP COLUMN split_cluster; "
           "ALTER TABLE problem DROP COLUMN group_kind; ALTER TABLE problem DROP COLUMN groups; "
           "ALTER TABLE problem DROP COLUMN m_max; ALTER TABLE problem DROP COLUMN expected_m; "
           "ALTER TABLE problem DROP COLUMN group_rows; ALTER TABLE problem DROP COLUMN group_rows_text; "
           "ALTER TABLE config DROP COLUMN swap_ab; UPDATE schema_version SET version = 4");
  { TuningDb db(fresh); }
  { TuningDb db(path); }
  EXPECT_EQ(raw_int(path, "SELECT version FROM schema_version"), schema::latest_version());
  EXPECT_EQ(normalized_master(path), normalized_master(fresh));
}

// The reader (TuningDbReader: the loader, export) never creates, migrates or writes a file: an old-schema file
// of every fixture version is refused with both versions named and keeps every byte, and it leaves no
// -journal/-wal/-shm file behind. The writer's read-only open (TuningDb(path, true)) does the same.
TEST_F(MigrationTest, ReaderRefusesEveryOlderFileAndLeavesItsBytes) {
  struct Old {
    const char* name;
    int version;
  };
  for (const Old& old : {Old{"schema_v1.sql", 1}, Old{"schema_v2.sql", 2}, Old{"schema_v6.sql", 6}}) {
    SCOPED_TRACE(old.name);
    const std::string path = db_path(std::string(old.name) + ".db");
    raw_exec(path, fixture(old.name));
    if (old.version < 6) raw_exec(path, kOldRows);
    ASSERT_EQ(raw_int(path, "SELECT version FROM schema_version"), old.version);
    const std::string before = read_text(path);
    const std::string want = "schema version " + std::to_string(old.version) + ", older than version " +
                             std::to_string(schema::latest_version());
    for (int writer = 0; writer < 2; ++writer) {
      try {
        if (writer)
          TuningDb db(path, /*read_only=*/true);
        else
          TuningDbReader db(path);
        ADD_FAILURE() << "expected an Error";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kSqlite);
        EXPECT_NE(e.message().find(want), std::string::npos) << e.message();
      }
      EXPECT_TRUE(read_text(path) == before) << (writer ? "TuningDb(path, true)" : "TuningDbReader") << " changed it";
      for (const char* suffix : {"-journal", "-wal", "-shm"}) EXPECT_FALSE(fs::exists(path + suffix)) << suffix;
    }
  }
  // A missing file is not created (nor its folder).
  const std::string missing = (dir_ / "none" / "t.db").string();
  EXPECT_THROW(TuningDbReader db(missing), Error);
  EXPECT_FALSE(fs::exists(dir_ / "none"));
}

// The reader's version check links without the schema text and the migrations (db/schema_check.cpp): its
// latest_version() is computed by CMake from the same files and must be what they end at.
TEST(Schema, ConfiguredVersionIsTheLastEmbeddedOne) {
  const auto& ms = schema::migrations();
  ASSERT_FALSE(ms.empty());
  EXPECT_EQ(schema::latest_version(), std::max(schema::schema_sql_version(), ms.back().version));
}

TEST_F(MigrationTest, FailedMigrationLeavesTheFileAsItWas) {
  // A stray table named environment makes the migration's CREATE TABLE environment fail after the
  // renames: the one transaction must roll everything back.
  const std::string path = db_path("v2.db");
  raw_exec(path, fixture("schema_v2.sql"));
  raw_exec(path, kOldRows);
  raw_exec(path, "CREATE TABLE environment (x INTEGER);");
  const auto master_before = rows(path, "SELECT type, name, sql FROM sqlite_master ORDER BY type, name");
  EXPECT_THROW(TuningDb db(path), Error);
  EXPECT_EQ(raw_int(path, "SELECT version FROM schema_version"), 2);
  EXPECT_EQ(rows(path, "SELECT type, name, sql FROM sqlite_master ORDER BY type, name"), master_before);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM trial"), 5);
}

// ---------------------------------------------------------------------------------------------
// Identity keys

TEST(Identity, HardwareKeyIsPinned) {
  const DeviceFingerprint d = old_h200("0123456789abcdef", 12080, "0.1.0");
  // Computed independently (Python) from the documented encoding: FNV-1a 64 of
  // name 0x1F cc_major 0x1F cc_minor 0x1F sm_count 0x1F memory_bytes 0x1F l2_bytes.
  EXPECT_EQ(d.hardware().key(), "503230c03c37903a");
  EXPECT_EQ(d.hardware().key(), hex16(fnv1a64("NVIDIA H200\x1f"
                                              "9\x1f"
                                              "0\x1f"
                                              "132\x1f"
                                              "150754820096\x1f"
                                              "62914560")));
}

TEST(Identity, EnvironmentKeyIsPinned) {
  const DeviceFingerprint d = old_h200("0123456789abcdef", 12080, "0.1.0");
  EXPECT_EQ(d.software().key(), "21d7e49cb891aa2c");
  EXPECT_EQ(d.software().key(), hex16(fnv1a64("12080\x1f"
                                              "12040\x1f"
                                              "120805\x1f"
                                              "12040\x1f"
                                              "0123456789abcdef\x1f"
                                              "0.1.0")));
}

TEST(Identity, HardwareKeyIgnoresSoftwareClockAndBusId) {
  DeviceFingerprint a = old_h200("aaaaaaaaaaaaaaaa", 12080, "0.1.0"), b = old_h200("bbbbbbbbbbbbbbbb", 13000, "0.3.0");
  b.max_sm_clock_mhz = 1755;
  b.runtime_version = 13000;
  b.cublaslt_version = 130000;
  b.nvrtc_version = 13000;
  b.pci_bus_id = "0000:3b:00.0";
  EXPECT_EQ(a.hardware().key(), b.hardware().key());
  EXPECT_NE(a.software().key(), b.software().key());
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  // pci_bus_id is in no key.
  DeviceFingerprint c = a;
  c.pci_bus_id = "0000:9a:00.0";
  EXPECT_EQ(c.fingerprint(), a.fingerprint());
  EXPECT_EQ(c.software().key(), a.software().key());
  // Every hardware field changes the hardware key.
  for (int i = 0; i < 6; ++i) {
    HardwareIdentity h = a.hardware();
    switch (i) {
      case 0: h.name = "NVIDIA H100 80GB HBM3"; break;
      case 1: h.cc_major = 10; break;
      case 2: h.cc_minor = 1; break;
      case 3: h.sm_count = 114; break;
      case 4: h.memory_bytes += 1; break;
      case 5: h.l2_bytes = 52428800; break;
    }
    EXPECT_NE(h.key(), a.hardware().key()) << "field " << i;
  }
}

TEST_F(MigrationTest, ScopesSplitHardwareFromEnvironmentAndStoreTheBusId) {
  TuningDb db(db_path("t.db"));
  DeviceFingerprint a = old_h200("aaaaaaaaaaaaaaaa", 12080, "0.1.0");
  a.pci_bus_id = "0000:3b:00.0";
  DeviceFingerprint b = old_h200("bbbbbbbbbbbbbbbb", 12080, "0.1.0");
  b.pci_bus_id = "0000:9a:00.0";
  DeviceScope sa = db.upsert_device(a), sb = db.upsert_device(b);
  EXPECT_EQ(sa.device_id, sb.device_id) << "one hardware identity";
  EXPECT_NE(sa.environment_id, sb.environment_id);
  EXPECT_EQ(sa.pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(db.find_hardware(a.hardware()), sa.device_id);
  Problem p = Problem::dense(128, 4096, 7168);
  TrialRecord t;
  t.problem = p;
  t.config.block_n = 128;
  t.set_timing(Timing{10.0, 9.9, 10.1, 20, 0.001, 1800, false});
  db.put_trial(sa, t);
  db.put_trial(sb, t);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM trial"), 2);
  EXPECT_EQ(rows(db.path(), "SELECT pci_bus_id FROM trial ORDER BY id"),
            (std::vector<std::string>{"0000:3b:00.0", "0000:9a:00.0"}));
  EXPECT_EQ(db.stored_config_keys(sa, p), std::set<std::string>{t.config.key()});
  EXPECT_TRUE(db.stored_config_keys(sa, Problem::dense(256, 4096, 7168)).empty());
  // TFLOPS and GB/s come from one place.
  EXPECT_DOUBLE_EQ(t.tflops, p.flops() / 10e-6 / 1e12);
  EXPECT_DOUBLE_EQ(t.gbps, p.min_bytes() / 10e-6 / 1e9);
  EXPECT_DOUBLE_EQ(db.trials(sa, p).at(0).tflops, tflops_of(p, 10.0));
}

}  // namespace
}  // namespace dgt
