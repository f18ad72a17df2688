// Gate history (migration 0006) and `dgtune db check | devices | prune | merge` (db/maintenance.hpp) on DBs
// built in the test and on the v2 fixture. No GPU.
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "db/maintenance.hpp"
#include "db/schema.hpp"
#include "db/tuning_db.hpp"
#include "eval/gate_report.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

class DbMaintenance : public test::TempDirTest {};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

int64_t raw_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  int64_t v = -1;
  if (st && sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

DeviceFingerprint gpu(const std::string& name, const std::string& kernel_hash, int64_t memory = 150754820096) {
  DeviceFingerprint d;
  d.name = name;
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = memory;
  d.l2_bytes = 62914560;
  d.max_sm_clock_mhz = 1980;
  d.driver_version = 570;
  d.runtime_version = 13000;
  d.cublaslt_version = 130000;
  d.nvrtc_version = 13000;
  d.kernel_hash = kernel_hash;
  d.dgtune_version = "0.4.0";
  d.pci_bus_id = "0000:3b:00.0";
  return d;
}

TrialRecord trial(const Problem& p, const char* config, double us, int samples, TrialStatus st = TrialStatus::kOk) {
  TrialRecord t;
  t.problem = p;
  t.config = KernelConfig::parse_key(config);
  t.status = st;
  if (st == TrialStatus::kOk) {
    Timing tm;
    tm.median_us = us;
    tm.p10_us = us;
    tm.p90_us = us;
    tm.samples = samples;
    t.set_timing(tm);
    t.verification = Verification{true, 0.001, 1e-6, 0, 0};
  } else {
    t.error = "failed";
  }
  t.protocol = "{}";
  return t;
}

const char* kC1 = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0";
const char* kC2 = "128x256x128_s3_wg2_sw128_c1x1_rm8_direct_sk1_sm0";

TEST_F(DbMaintenance, GateHistoryAppendsAndReadsBackBySeries) {
  TuningDb db(path("h.db"));
  const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "aaaa"));
  const Problem p = Problem::dense(128, 4096, 7168);
  for (int run = 0; run < 3; ++run) {
    GateRunRow r;
    r.scope = s;
    r.baseline_path = "base.json";
    r.protocol = "cold-l2-v2";
    r.exit_code = run == 2 ? 3 : 0;
    r.created_at = "2026-11-29T12:0" + std::to_string(run) + ":00Z";
    GateResultRow g;
    g.problem = p;
    g.name = "decode";
    g.config_key = kC1;
    g.verdict = run == 2 ? "regression" : "pass";
    g.ratio_baseline = 0.9;
    g.ratio_now = 0.9 + 0.05 * run;
    g.slowdown = 0.05 * run / 0.9;
    g.slowdown_lo = std::numeric_limits<double>::quiet_NaN();
    EXPECT_GT(db.put_gate_run(r, {g}), 0);
  }
  for (const std::string key : {p.key(), std::string("decode"), std::string("128x4096x7168")}) {
    const auto h = db.gate_history(key);
    ASSERT_EQ(h.size(), 3u) << key;
    EXPECT_EQ(h[0].created_at, "2026-11-29T12:00:00Z");
    EXPECT_EQ(h[2].result.verdict, "regression");
    EXPECT_EQ(h[2].exit_code, 3);
    EXPECT_DOUBLE_EQ(h[1].result.ratio_now, 0.95);
    EXPECT_TRUE(std::isnan(h[1].result.slowdown_lo));
    EXPECT_EQ(h[0].device_name, "NVIDIA H200");
  }
  EXPECT_TRUE(db.gate_history("1x1x1").empty());
}

/// One gate run with one result of `p`: x_now = 1 / ratio_now (the stored ratio is dgtune / cuBLASLt-tuned).
void put_run(TuningDb& db, const DeviceScope& s, const Problem& p, const std::string& created_at, double ratio_now) {
  GateRunRow r;
  r.scope = s;
  r.baseline_path = "base.json";
  r.protocol = "cold-l2-v2";
  r.created_at = created_at;
  GateResultRow g;
  g.problem = p;
  g.config_key = kC1;
  g.verdict = "pass";
  g.ratio_baseline = 0.9;
  g.ratio_now = ratio_now;
  db.put_gate_run(r, {g});
}

TEST_F(DbMaintenance, GateHistoryKeepsFastAndPromoteApartAndShowsAMergedRunOnce) {
  const Problem promote = Problem::dense(128, 4096, 7168);
  Problem fast = promote;
  fast.accum = Accum::kFast;
  const std::string a = path("a.db"), b = path("b.db");
  {
    TuningDb db(a);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    // Interleaved in time, as two CI jobs gating both accumulation modes leave them.
    put_run(db, s, promote, "2026-11-29T12:00:00Z", 0.90);
    put_run(db, s, fast, "2026-11-29T12:01:00Z", 0.80);
    put_run(db, s, promote, "2026-11-29T12:02:00Z", 0.91);
    put_run(db, s, fast, "2026-11-29T12:03:00Z", 0.81);
  }
  fs::copy_file(a, b);  // B holds A's runs too (a copy of the history, then one more run)
  {
    TuningDb db(b);
    put_run(db, db.upsert_device(gpu("NVIDIA H200", "k1")), promote, "2026-11-29T12:04:00Z", 0.92);
  }
  {
    TuningDbReader db(a);
    const auto h = db.gate_history("128x4096x7168");
    ASSERT_EQ(h.size(), 4u);
    // One series per problem, each oldest first: never fast, promote, fast, promote.
    EXPECT_EQ(h[0].problem_key, fast.key());
    EXPECT_EQ(h[1].problem_key, fast.key());
    EXPECT_EQ(h[2].problem_key, promote.key());
    EXPECT_EQ(h[3].problem_key, promote.key());
    EXPECT_EQ(h[0].created_at, "2026-11-29T12:01:00Z");
    EXPECT_EQ(h[3].created_at, "2026-11-29T12:02:00Z");
    EXPECT_EQ(h[0].result.problem, fast);
    // The table names the accumulation in its shape column and reports x = 1 / the stored ratio.
    const report::Table t = gate::history_table(h, "t");
    EXPECT_EQ(std::get<std::string>(t.rows[0][4]), "128x4096x7168 fast");
    EXPECT_EQ(std::get<std::string>(t.rows[2][4]), "128x4096x7168");
    EXPECT_EQ(t.columns[8].id, "x_tuned_now");
    EXPECT_DOUBLE_EQ(std::get<report::Number>(t.rows[0][8]).value, 1 / 0.80);
  }
  // The merge appends B's runs that A lacks, and only those.
  const dbm::MergeReport r = dbm::merge(a, b, path("m.db"));
  for (const auto& t : r.tables)
    if (t.name == "gate_run") {
      EXPECT_EQ(t.from, (std::vector<int64_t>{4, 5}));
      EXPECT_EQ(t.merged, 5);
    }
  TuningDbReader merged(path("m.db"));
  EXPECT_EQ(merged.gate_history(promote.key()).size(), 3u);
  // A DB merged by an older dgtune holds the same run twice: history shows it once.
  raw_exec(path("m.db"),
           "INSERT INTO gate_run (device_id, environment_id, pci_bus_id, baseline_path, baseline_created_at, "
           "baseline_env_key, protocol, threshold, confidence, exit_code, shapes, failures, errors, created_at) "
           "SELECT device_id, environment_id, pci_bus_id, baseline_path, baseline_created_at, baseline_env_key, "
           "protocol, threshold, confidence, exit_code, shapes, failures, errors, created_at FROM gate_run WHERE id = 1; "
           "INSERT INTO gate_result (run_id, problem_id, name, config_key, config_baseline, verdict, reason, "
           "ratio_baseline, ratio_now, slowdown, slowdown_lo, slowdown_hi, p_value, ours_baseline_us, ours_now_us, "
           "tuned_baseline_us, tuned_now_us) SELECT (SELECT max(id) FROM gate_run), problem_id, name, config_key, "
           "config_baseline, verdict, reason, ratio_baseline, ratio_now, slowdown, slowdown_lo, slowdown_hi, p_value, "
           "ours_baseline_us, ours_now_us, tuned_baseline_us, tuned_now_us FROM gate_result WHERE run_id = 1");
  EXPECT_EQ(raw_int(path("m.db"), "SELECT count(*) FROM gate_run"), 6);
  TuningDbReader dup(path("m.db"));
  const auto h = dup.gate_history(promote.key());
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].run_id, 1);
}

TEST_F(DbMaintenance, CheckIsReadOnlyAndFindsBrokenInvariants) {
  const std::string f = path("c.db");
  {
    TuningDb db(f);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "aaaa"));
    db.put_trial(s, trial(Problem::dense(256, 256, 256), kC1, 10, 20));
  }
  dbm::CheckReport r = dbm::check(f);
  EXPECT_TRUE(r.ok()) << (r.problems.empty() ? "" : r.problems[0]);
  EXPECT_EQ(r.version, schema::latest_version());
  raw_exec(f,
           "UPDATE device SET hw_key = '0000000000000000'; UPDATE trial SET verify_ok = 0; "
           "INSERT INTO sweep (device_id, environment_id, problem_id, space, strategy, protocol_name, candidates, "
           "stored, complete, updated_at) VALUES (1, 1, 1, 's', 'x', 'cold-l2-v1', 10, 3, 1, 'now')");
  r = dbm::check(f);
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_NE(r.problems[0].find("hw_key 0000000000000000"), std::string::npos) << r.problems[0];
  EXPECT_NE(r.problems[1].find("status ok without"), std::string::npos) << r.problems[1];
  EXPECT_NE(r.problems[2].find("stored 3 of 10"), std::string::npos) << r.problems[2];
}

// What the readers refuse, or would rank by, is a problem for check too: a config column that contradicts its key
// (export refuses it naming `db check`, which said "ok"), an ok time that is not a positive finite number (it became
// a winner at -1 us), an unnamed protocol.
TEST_F(DbMaintenance, CheckFindsWhatTheReadersRefuse) {
  const std::string f = path("r.db");
  {
    TuningDb db(f);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "aaaa"));
    db.put_trial(s, trial(Problem::dense(256, 256, 256), kC1, 10, 20));
    db.put_trial(s, trial(Problem::dense(512, 256, 256), kC2, 12, 20));
  }
  ASSERT_TRUE(dbm::check(f).ok());
  const std::string key1 = KernelConfig::parse_key(kC1).key();
  raw_exec(f, "UPDATE config SET mainloop = 'zz', block_m = -1 WHERE id = 1; UPDATE trial SET median_us = -1 WHERE id = 1; "
              "UPDATE trial SET median_us = 'abc', protocol_name = '' WHERE id = 2");
  const dbm::CheckReport r = dbm::check(f);
  const auto has = [&](const std::string& what) {
    for (const std::string& p : r.problems)
      if (p.find(what) != std::string::npos) return true;
    return false;
  };
  std::string all;
  for (const std::string& p : r.problems) all += p + "\n";
  EXPECT_EQ(r.problems.size(), 5u) << all;
  EXPECT_TRUE(has("config 1 (" + key1 + "): block_m = -1 but its key gives 128"));
  EXPECT_TRUE(has("config 1 (" + key1 + "): mainloop = 'zz' but its key gives '1g'"));
  EXPECT_TRUE(has("trial 1: status ok with median_us = -1.0, not a positive finite time"));
  EXPECT_TRUE(has("trial 2: status ok with median_us = 'abc', not a positive finite time"));
  EXPECT_TRUE(has("trial 2: no protocol name")) << all;
}

// A damaged file: the other commands send the user to `db check`, which lists SQLite's findings instead of failing on
// the first query that reads a damaged page.
TEST_F(DbMaintenance, CheckReportsADamagedFileInsteadOfFailing) {
  const std::string f = path("d.db");
  {
    TuningDb db(f);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "aaaa"));
    for (int m = 1; m <= 200; ++m) db.put_trial(s, trial(Problem::dense(m * 16, 256, 256), kC1, 10 + m, 20));
  }
  std::string bytes = read_text(f);
  ASSERT_GT(bytes.size(), 16u * 4096);
  // A b-tree page's header overwritten (a leaf page type with impossible cell counts), as a disk error leaves it.
  bytes.replace(11 * 4096, 8, std::string("\x0d\xff\xff\xff\xff\xff\xff\xff", 8));
  std::ofstream(f, std::ios::binary | std::ios::trunc) << bytes;
  dbm::CheckReport r;
  ASSERT_NO_THROW(r = dbm::check(f));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.problems[0].rfind("integrity_check", 0), 0u) << r.problems[0];
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("the file is damaged"), std::string::npos) << r.notes.back();
}

TEST_F(DbMaintenance, CheckRecomputesProblemKeysWithTheScaleMode) {
  // A channel-scaled problem's key holds "_ch_": check must read scale_mode to recompute it (it once read every
  // column but that one, so every DB with a scale=channel/block shape failed db check).
  const std::string f = path("scales.db");
  {
    TuningDb db(f);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    for (ScaleMode m : {ScaleMode::kPerTensor, ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d}) {
      Problem p = Problem::dense(256, 7168, 2048);
      p.scale = m;
      db.put_trial(s, trial(p, kC1, 10, 20));
    }
  }
  EXPECT_EQ(raw_int(f, "SELECT count(*) FROM problem"), 4);
  const dbm::CheckReport ok = dbm::check(f);
  EXPECT_TRUE(ok.ok()) << (ok.problems.empty() ? "" : ok.problems[0]);
  raw_exec(f, "UPDATE problem SET scale_mode = 'per-tensor' WHERE scale_mode = 'channel'");
  const dbm::CheckReport bad = dbm::check(f);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("_ch_promote but its columns give"), std::string::npos) << bad.problems[0];
  EXPECT_NE(bad.problems[0].find("_pt_promote"), std::string::npos) << bad.problems[0];
}

TEST_F(DbMaintenance, CheckNeverMigratesAnOldFixture) {
  const std::string f = path("v2.db");
  raw_exec(f, read_text(fs::path(DGT_SOURCE_DIR) / "tests/unit/fixtures/schema_v2.sql"));
  const std::string before = read_text(f);
  const dbm::CheckReport r = dbm::check(f);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.version, 2);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("schema version 2"), std::string::npos);
  EXPECT_TRUE(read_text(f) == before);
  EXPECT_THROW(dbm::devices(f), Error);
}

TEST_F(DbMaintenance, PruneRemovesOtherKernelVersionsDryRunWritesNothing) {
  const std::string f = path("p.db");
  {
    TuningDb db(f);
    const DeviceScope old = db.upsert_device(gpu("NVIDIA H200", "old1"));
    const DeviceScope cur = db.upsert_device(gpu("NVIDIA H200", "new1"));
    const Problem p = Problem::dense(256, 256, 256);
    db.put_trial(old, trial(p, kC1, 10, 20));
    db.put_trial(old, trial(p, kC2, 11, 20));
    db.put_sweep_state(old, p, "sm90-default", "exhaustive", {2, 2, true, ""});
    db.put_trial(cur, trial(p, kC1, 9, 20));
  }
  dbm::PruneReport r = dbm::prune(f, "new1", true);
  ASSERT_EQ(r.removed.size(), 1u);
  EXPECT_EQ(r.removed[0].kernel_hash, "old1");
  EXPECT_EQ(r.removed[0].trials, 2);
  EXPECT_EQ(r.removed[0].sweeps, 1);
  EXPECT_EQ(r.kept_trials, 1);
  EXPECT_EQ(raw_int(f, "SELECT count(*) FROM trial"), 3);
  r = dbm::prune(f, "new1", false);
  EXPECT_EQ(raw_int(f, "SELECT count(*) FROM trial"), 1);
  EXPECT_EQ(raw_int(f, "SELECT count(*) FROM sweep"), 0);
  EXPECT_EQ(raw_int(f, "SELECT count(*) FROM environment"), 2);  // identity rows stay
  EXPECT_TRUE(dbm::check(f).ok());
}

TEST_F(DbMaintenance, MergeFollowsTheWrittenRules) {
  const std::string a = path("a.db"), b = path("b.db"), out = path("out.db");
  const Problem p = Problem::dense(256, 256, 256), q = Problem::dense(512, 512, 512);
  {
    TuningDb db(a);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    db.put_trial(s, trial(p, kC1, 10, 20));                       // duplicate: B has more samples -> B's
    db.put_trial(s, trial(p, kC2, 0, 0, TrialStatus::kTimeout));  // duplicate: B ok -> B's
    db.put_trial(s, trial(q, kC1, 50, 30));                       // only in A
    db.put_sweep_state(s, p, "sm90-default", "exhaustive", {2, 2, true, ""});
    db.put_sweep_state(s, q, "sm90-default", "exhaustive", {1, 1, true, ""});
    GateRunRow r;
    r.scope = s;
    GateResultRow g;
    g.problem = p;
    g.verdict = "pass";
    db.put_gate_run(r, {g});
  }
  {
    TuningDb db(b);
    const DeviceScope h100 = db.upsert_device(gpu("NVIDIA H100 80GB HBM3", "k1", 85520809984));  // other hardware
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    db.put_trial(h100, trial(p, kC1, 20, 20));
    db.put_trial(s, trial(p, kC1, 12, 40));
    db.put_trial(s, trial(p, kC2, 8, 20));
    db.put_sweep_state(s, p, "sm90-default", "exhaustive", {2, 1, false, ""});
  }
  const std::string a_before = read_text(a);
  const dbm::MergeReport r = dbm::merge(a, b, out);
  EXPECT_TRUE(read_text(a) == a_before);  // inputs are only read
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM device"), 2);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM trial"), 4);  // 3 H200 + 1 H100
  // Rule 2: more samples wins; ok wins over not ok.
  EXPECT_EQ(raw_int(out,
                    "SELECT t.samples FROM trial t JOIN config c ON c.id = t.config_id JOIN device d ON d.id = "
                    "t.device_id JOIN problem p ON p.id = t.problem_id WHERE d.name = 'NVIDIA H200' AND c.key = '" +
                        KernelConfig::parse_key(kC1).key() + "' AND p.m = 256"),
            40);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM trial t JOIN config c ON c.id = t.config_id WHERE c.key = '" +
                             KernelConfig::parse_key(kC2).key() + "' AND t.status = 'ok'"),
            1);
  // Rule 4: winners recomputed: H200's 256^3 winner is B's 8 us kC2; H100's stays its own.
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM winner"), 3);
  EXPECT_EQ(raw_int(out,
                    "SELECT w.median_us FROM winner w JOIN device d ON d.id = w.device_id JOIN problem p ON p.id = "
                    "w.problem_id WHERE d.name = 'NVIDIA H200' AND p.m = 256"),
            8);
  EXPECT_EQ(
      raw_int(out, "SELECT w.median_us FROM winner w JOIN device d ON d.id = w.device_id WHERE d.name LIKE '%H100%'"),
      20);
  // Rule 5: complete only where both were; a state of one input is copied.
  EXPECT_EQ(raw_int(out, "SELECT s.complete FROM sweep s JOIN problem p ON p.id = s.problem_id WHERE p.m = 256"), 0);
  EXPECT_EQ(raw_int(out, "SELECT s.complete FROM sweep s JOIN problem p ON p.id = s.problem_id WHERE p.m = 512"), 1);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM gate_result"), 1);
  ASSERT_FALSE(r.tables.empty());
  EXPECT_TRUE(dbm::check(out).ok());
  EXPECT_THROW(dbm::merge(a, b, out), Error);  // the output must not exist
  for (const auto& f : fs::directory_iterator(dir_))  // no input copy or partial output left behind
    EXPECT_EQ(f.path().string().find(".tmp"), std::string::npos) << f.path();
}

/// Every trial of a DB as "problem config status samples median", sorted: what a merge must agree on.
std::vector<std::string> trial_rows(const std::string& path) {
  std::vector<std::string> out;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT p.key || ' ' || c.key || ' ' || t.status || ' ' || coalesce(t.samples, 0) || ' "
                               "' || coalesce(t.median_us, 0) FROM trial t JOIN problem p ON p.id = t.problem_id JOIN "
                               "config c ON c.id = t.config_id ORDER BY 1",
                               -1, &st, nullptr),
            SQLITE_OK);
  while (st && sqlite3_step(st) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

TEST_F(DbMaintenance, MergeOfThreeInputsFoldsLeftByTheSameRules) {
  const std::string a = path("a.db"), b = path("b.db"), c = path("c.db");
  const Problem p = Problem::dense(256, 256, 256), q = Problem::dense(512, 512, 512);
  const std::string c1 = KernelConfig::parse_key(kC1).key(), c2 = KernelConfig::parse_key(kC2).key();
  {
    TuningDb db(a);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    db.put_trial(s, trial(p, kC1, 10, 20));  // tie with B's (ok, 20 samples): the earliest input, A, wins
    db.put_trial(s, trial(p, kC2, 0, 0, TrialStatus::kTimeout));  // C's ok one wins
    db.put_sweep_state(s, p, "sm90-default", "exhaustive", {2, 2, true, ""});
    db.put_sweep_state(s, q, "sm90-default", "exhaustive", {1, 1, true, ""});
    GateRunRow r;
    r.scope = s;
    r.baseline_path = "from-a.json";
    GateResultRow g;
    g.problem = p;
    g.verdict = "pass";
    db.put_gate_run(r, {g});
  }
  {
    TuningDb db(b);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    db.put_trial(s, trial(p, kC1, 11, 20));
    db.put_trial(s, trial(q, kC1, 30, 10));  // C has more samples: C's
    db.put_sweep_state(s, p, "sm90-default", "exhaustive", {2, 2, true, ""});
  }
  {
    TuningDb db(c);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    db.put_trial(s, trial(p, kC2, 7, 5));
    db.put_trial(s, trial(q, kC1, 33, 50));
    db.put_sweep_state(s, p, "sm90-default", "exhaustive", {2, 1, false, ""});  // p: incomplete in one input
    db.put_sweep_state(s, q, "sm90-default", "exhaustive", {3, 3, true, ""});   // q: complete in A and C
    GateRunRow r;
    r.scope = s;
    r.baseline_path = "from-c.json";
    GateResultRow g;
    g.problem = q;
    g.verdict = "regression";
    db.put_gate_run(r, {g});
  }
  const std::string out = path("abc.db");
  const dbm::MergeReport r = dbm::merge(std::vector<std::string>{a, b, c}, out);
  EXPECT_EQ(trial_rows(out), (std::vector<std::string>{
                                 p.key() + " " + c1 + " ok 20 10.0",  // tie: A's (B's is 11)
                                 p.key() + " " + c2 + " ok 5 7.0",    // ok beats A's timeout
                                 q.key() + " " + c1 + " ok 50 33.0",  // more samples: C's
                             }));
  EXPECT_EQ(raw_int(out, "SELECT s.complete FROM sweep s JOIN problem p ON p.id = s.problem_id WHERE p.m = 256"), 0);
  EXPECT_EQ(raw_int(out, "SELECT s.complete FROM sweep s JOIN problem p ON p.id = s.problem_id WHERE p.m = 512"), 1);
  EXPECT_EQ(raw_int(out, "SELECT s.candidates FROM sweep s JOIN problem p ON p.id = s.problem_id WHERE p.m = 512"), 3);
  // Gate runs in input order: A's, then C's.
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM gate_run"), 2);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM gate_run WHERE baseline_path = 'from-a.json' AND id < (SELECT id FROM "
                         "gate_run WHERE baseline_path = 'from-c.json')"),
            1);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM winner"), 2);
  // Per-input row counts, and the output's.
  const auto trials = std::find_if(r.tables.begin(), r.tables.end(), [](const auto& t) { return t.name == "trial"; });
  ASSERT_NE(trials, r.tables.end());
  EXPECT_EQ(trials->from, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(trials->merged, 3);
  EXPECT_TRUE(dbm::check(out).ok());
  // Fold left: the same trials as merging A and B, then that with C.
  const std::string ab = path("ab.db"), ab_c = path("ab_c.db");
  dbm::merge(a, b, ab);
  dbm::merge(ab, c, ab_c);
  EXPECT_EQ(trial_rows(out), trial_rows(ab_c));
  EXPECT_EQ(raw_int(ab_c, "SELECT s.complete FROM sweep s JOIN problem p ON p.id = s.problem_id WHERE p.m = 256"), 0);
}

TEST_F(DbMaintenance, MergeRefusesOneInputADuplicateOrABadInputBeforeWritingAnything) {
  const std::string a = path("a.db"), b = path("b.db"), out = path("out.db");
  {
    TuningDb db(a);
    db.put_trial(db.upsert_device(gpu("NVIDIA H200", "k1")), trial(Problem::dense(64, 64, 64), kC1, 4, 20));
  }
  {
    TuningDb db(b);
    db.put_trial(db.upsert_device(gpu("NVIDIA H200", "k1")), trial(Problem::dense(64, 64, 64), kC1, 5, 20));
  }
  const auto message = [&](const std::vector<std::string>& inputs) -> std::string {
    try {
      dbm::merge(inputs, out);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.message();
      return e.message();
    }
    return "no error";
  };
  EXPECT_NE(message({a}).find("two or more input files (got 1)"), std::string::npos) << message({a});
  const std::string same = message({a, b, a});
  EXPECT_NE(same.find(a + " and " + a + " are the same file"), std::string::npos) << same;
  const std::string missing = message({a, b, path("missing.db")});
  EXPECT_NE(missing.find(path("missing.db") + " does not exist"), std::string::npos) << missing;
  std::ofstream(path("text.db")) << "not a database at all, just text long enough to not be empty ...........";
  EXPECT_THROW(dbm::merge(std::vector<std::string>{a, b, path("text.db")}, out), Error);
  EXPECT_FALSE(fs::exists(out));
  for (const auto& f : fs::directory_iterator(dir_))  // no input copy or partial output left behind
    EXPECT_EQ(f.path().string().find(".tmp"), std::string::npos) << f.path();
}

// A newer schema is the file's content at fault (exit 1, Error(kSqlite)) for devices and merge as for export: devices
// listed its tables, merge called it bad input.
/// The kind and message of the Error `f` throws ({kUsage, "no error"} when it throws none).
template <class F>
std::pair<ErrorKind, std::string> error_of(const F& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.message()};
  }
  return {ErrorKind::kUsage, "no error"};
}

TEST_F(DbMaintenance, NewerSchemaIsRefusedByDevicesAndMergeAsAFileError) {
  const std::string a = path("a.db"), newer = path("newer.db"), out = path("out.db");
  for (const std::string& f : {a, newer}) {
    TuningDb db(f);
    db.put_trial(db.upsert_device(gpu("NVIDIA H200", "k1")), trial(Problem::dense(64, 64, 64), kC1, 4, 20));
  }
  raw_exec(newer, "UPDATE schema_version SET version = 99");
  const auto [dk, dm] = error_of([&] { dbm::devices(newer); });
  EXPECT_EQ(dk, ErrorKind::kSqlite) << dm;
  EXPECT_NE(dm.find("tuning database " + newer + " has schema version 99, newer than version"), std::string::npos)
      << dm;
  const auto [mk, mm] = error_of([&] { dbm::merge(std::vector<std::string>{a, newer}, out); });
  EXPECT_EQ(mk, ErrorKind::kSqlite) << mm;
  EXPECT_NE(mm.find("db merge: " + newer + " has schema version 99, newer than this dgtune's"), std::string::npos)
      << mm;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(dbm::devices(a).size(), 1u);
}

// A problem that breaks a rule (M = -5) or an ok time that is no positive finite time: export's reader and merge
// refuse the file (Error(kSqlite): exit 1) naming it, the table and the row, and send the user to `db check`, which
// lists the row; they were passed on with exit 0. Merge writes nothing.
TEST_F(DbMaintenance, CorruptRowsAreRefusedByTheReaderAndMergeAndListedByCheck) {
  const std::string good = path("good.db"), out = path("out.db");
  const auto make = [&](const std::string& f) {
    TuningDb db(f);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    db.put_trial(s, trial(Problem::dense(256, 256, 256), kC1, 10, 20));
    db.put_trial(s, trial(Problem::dense(512, 256, 256), kC2, 12, 20));
    return s.device_id;
  };
  make(good);
  struct Case {
    const char* file;
    const char* sql;
    std::string reader, check;
  };
  const std::string key2 = Problem::dense(512, 256, 256).key(), config2 = KernelConfig::parse_key(kC2).key();
  for (const Case& c :
       {Case{"m.db", "UPDATE problem SET m = -5 WHERE id = 1", "problem table, key -5x256x256", "M = -5 is invalid"},
        Case{"neg.db", "UPDATE trial SET median_us = -1 WHERE id = 2",
             "trial table, problem " + key2 + ", config " + config2 + ": status ok with median_us = -1",
             "trial 2: status ok with median_us = -1.0, not a positive finite time"},
        Case{"inf.db", "UPDATE trial SET median_us = 9e999 WHERE id = 2",
             "trial table, problem " + key2 + ", config " + config2 + ": status ok with median_us = inf",
             "trial 2: status ok with median_us = "}}) {
    const std::string f = path(c.file);
    const int64_t device = make(f);
    raw_exec(f, c.sql);
    const auto [rk, rm] = error_of([&] { TuningDbReader(f).export_rows(device); });
    EXPECT_EQ(rk, ErrorKind::kSqlite) << rm;
    EXPECT_NE(rm.find("tuning database " + f + ": " + c.reader), std::string::npos) << rm;
    EXPECT_NE(rm.find("run `dgtune db check --db " + f + "`"), std::string::npos) << rm;
    const auto [mk, mm] = error_of([&] { dbm::merge(std::vector<std::string>{good, f}, out); });
    EXPECT_EQ(mk, ErrorKind::kSqlite) << mm;
    EXPECT_NE(mm.find("db merge: " + f + ": "), std::string::npos) << mm;
    EXPECT_NE(mm.find(c.check), std::string::npos) << mm;
    EXPECT_FALSE(fs::exists(out));
    const dbm::CheckReport r = dbm::check(f);
    std::string all;
    for (const std::string& p : r.problems) all += p + "\n";
    EXPECT_NE(all.find(c.check), std::string::npos) << all;
  }
  EXPECT_EQ(TuningDbReader(good).export_rows(1).size(), 2u);
}

TEST_F(DbMaintenance, MergeKeepsEachProtocolsTrialsBaselinesAndSweepStates) {
  const std::string a = path("a.db"), b = path("b.db"), out = path("out.db");
  const Problem p = Problem::dense(256, 256, 256);
  const std::string hot = R"({"kind":"hot-graph","name":"hot-graph-v1","version":1})";
  {
    TuningDb db(a);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    db.put_trial(s, trial(p, kC1, 10, 20));  // cold-l2-v1 ("{}" names no protocol: the sweep Timer's)
    db.put_sweep_state(s, p, "sm90-default", "exhaustive", {2, 2, true, ""});
  }
  {
    TuningDb db(b);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", "k1"));
    TrialRecord t = trial(p, kC1, 6, 10);  // same scope, problem and config, timed hot: not a duplicate
    t.protocol = hot;
    db.put_trial(s, t);
    BaselineRecord bl;
    bl.problem = p;
    bl.provider = kProviderCublasTuned;
    bl.protocol = hot;
    db.put_baseline(s, bl);
    db.put_sweep_state(s, p, "sm90-default", "exhaustive", {2, 1, false, ""}, "hot-graph-v1");
  }
  dbm::merge(a, b, out);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM trial"), 2);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM winner"), 2);
  EXPECT_EQ(raw_int(out, "SELECT median_us FROM winner WHERE protocol_name = 'hot-graph-v1'"), 6);
  EXPECT_EQ(raw_int(out, "SELECT median_us FROM winner WHERE protocol_name = 'cold-l2-v1'"), 10);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM baseline WHERE protocol_name = 'hot-graph-v1'"), 1);
  // Each protocol's sweep state stays its own (A's cold one complete, B's hot one not).
  EXPECT_EQ(raw_int(out, "SELECT complete FROM sweep WHERE protocol_name = 'cold-l2-v1'"), 1);
  EXPECT_EQ(raw_int(out, "SELECT complete FROM sweep WHERE protocol_name = 'hot-graph-v1'"), 0);
  EXPECT_TRUE(dbm::check(out).ok());
}

TEST_F(DbMaintenance, MergeMigratesAnOldFixtureCopyAndLeavesTheInput) {
  const std::string v2 = path("v2.db"), cur = path("cur.db"), out = path("out.db");
  raw_exec(v2, read_text(fs::path(DGT_SOURCE_DIR) / "tests/unit/fixtures/schema_v2.sql"));
  raw_exec(
      v2,
      "INSERT INTO device VALUES (1, 'fp', 'NVIDIA H200', 90, 132, 150754820096, 62914560, 1980, 12080, 12040, "
      "120805, 12040, 'aaaa', '0.2.0', '2026-11-01T00:00:00Z');"
      "INSERT INTO problem VALUES (1, '" +
          Problem::dense(64, 64, 64).key() +
          "', 64, 64, 64, 64, 64, 64, 'e4m3', 'e4m3', 'bf16', 'pt', 'promote');"
          "INSERT INTO config (id, key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m, "
          "cluster_n, raster, group_size, epilogue, split_k) VALUES (1, "
          "'128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1', "
          "128, 128, 128, 4, 2, 128, 1, 1, 'm', 8, 'direct', 1);"
          "INSERT INTO trial VALUES (1, 1, 1, 1, 'ok', '', 1.0, 168, 0, 1000, 5.0, 5.0, 5.0, 20, 0.001, 1.0, 1.0, 1, "
          "0.001, 1e-6, 0, 0, 1900.0, 0, '{}', '2026-11-01T01:00:00Z');");
  {
    TuningDb db(cur);
    db.put_trial(db.upsert_device(gpu("NVIDIA H200", "k1")), trial(Problem::dense(64, 64, 64), kC1, 4, 20));
  }
  const std::string before = read_text(v2);
  dbm::merge(v2, cur, out);
  EXPECT_TRUE(read_text(v2) == before);
  EXPECT_EQ(raw_int(v2, "SELECT version FROM schema_version"), 2);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM trial"), 2);  // two environments of one device
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM environment"), 2);
  EXPECT_EQ(raw_int(out, "SELECT count(*) FROM winner"), 2);
  const auto devs = dbm::devices(out);
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_EQ(devs[0].trials, 2);
  EXPECT_EQ(devs[0].environments, 2);
}

}  // namespace
}  // namespace dgt
