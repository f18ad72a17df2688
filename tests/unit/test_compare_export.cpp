// `dgtune compare --between` and `dgtune export` end to end on synthetic tuning DBs (no GPU): the DBs are
// written with TuningDb (stored samples with known verdicts, winners with baselines), the dgtune binary
// (DGT_DGTUNE_BIN) reads them; the exported C++ header is compiled with the host compiler.
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "db/measurements.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"
#include "db/tuning_db.hpp"
#include "loader/export_header.hpp"
#include "problem/grouped_problem.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int rc = -1;
  std::string out;  ///< stdout and stderr together
};

CliRun run_dgtune(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(DGT_DGTUNE_BIN) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  const int st = pclose(f);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

DeviceFingerprint gpu(const std::string& name, int sms) {
  DeviceFingerprint d;
  d.name = name;
  d.cc_major = 9;
  d.sm_count = sms;
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.max_sm_clock_mhz = 1980;
  d.driver_version = 12080;
  d.runtime_version = 12040;
  d.cublaslt_version = 120805;
  d.nvrtc_version = 12040;
  d.kernel_hash = "0123456789abcdef";
  d.dgtune_version = "0.4.0";
  return d;
}

/// A stored compare of one shape: per round, dgtune takes `ours` x jitter, cuBLASLt-tuned `tuned` x
/// jitter and cuBLASLt-default 1.1 x tuned. `spread` > 0 alternates dgtune by x(1 +- spread).
StoredMeasurement measurement(const Problem& p, double ours, double tuned, double spread = 0, int rounds = 20) {
  StoredMeasurement m;
  m.problem = p;
  m.protocol_name = "cold-l2-v2";
  m.protocol_json = R"({"kind":"cold-l2","name":"cold-l2-v2","rounds":20,"version":2})";
  m.rounds = rounds;
  m.reference_clock_mhz = 1980;
  m.clock_floor_mhz = 1485;
  m.sides = {{0, "dgtune", "config", "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "", "db", 0,
              Verification{true, 1e-3, 1e-6, 0, 0}},
             {1, "cublaslt-default", "provider", "", "", "cublaslt-default", 32, std::nullopt},
             {2, "cublaslt-tuned", "provider", "", "algo=66 rank=3 returned=32 requested=32", "cublaslt-tuned", 32,
              std::nullopt}};
  for (int r = 0; r < rounds; ++r) {
    const double jitter = 1 + 0.001 * ((r * 7) % 5 - 2);
    const double alt = spread > 0 ? (r % 2 ? 1 + spread : 1 / (1 + spread)) : 1.0;
    m.samples.push_back({0, r, r % 3, ours * jitter * alt, 1900, false});
    m.samples.push_back({1, r, (r + 1) % 3, 1.1 * tuned * jitter, 1900, false});
    m.samples.push_back({2, r, (r + 2) % 3, tuned / jitter, 1900, false});
  }
  return m;
}

class CompareExportTest : public test::TempDirTest {};

const Problem kFaster = Problem::dense(128, 4096, 7168), kSlower = Problem::dense(256, 4096, 7168),
              kSame = Problem::dense(512, 4096, 7168), kNoisy = Problem::dense(1024, 4096, 7168),
              kOnlyA = Problem::dense(64, 2112, 7168);

/// A and B: B's dgtune gained 10% on cuBLASLt-tuned for kFaster, lost 10% for kSlower, 0.1% for kSame;
/// kNoisy's B run alternates +-25%; kOnlyA is stored in A only.
void make_between_dbs(const std::string& a, const std::string& b) {
  TuningDb A(a), B(b);
  const DeviceScope sa = A.upsert_device(gpu("NVIDIA H200", 132)), sb = B.upsert_device(gpu("NVIDIA H200", 132));
  for (const Problem& p : {kFaster, kSlower, kSame, kNoisy, kOnlyA}) A.put_measurement(sa, measurement(p, 10, 10));
  B.put_measurement(sb, measurement(kFaster, 9, 10));
  B.put_measurement(sb, measurement(kSlower, 11, 10));
  B.put_measurement(sb, measurement(kSame, 10.01, 10));
  B.put_measurement(sb, measurement(kNoisy, 10, 10, 0.25));
}

std::map<std::string, nlohmann::json> rows_by_shape(const nlohmann::json& table) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& r : table["rows"]) out[r["shape"].get<std::string>()] = r;
  return out;
}

TEST_F(CompareExportTest, StoredMeasurementRoundTrips) {
  TuningDb db(path("m.db"));
  const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", 132));
  const StoredMeasurement m = measurement(kFaster, 9, 10);
  const int64_t first = db.put_measurement(s, m);
  const int64_t second = db.put_measurement(s, measurement(kFaster, 8, 10));
  EXPECT_GT(second, first);
  const auto back = db.latest_measurements(s.device_id);
  ASSERT_EQ(back.size(), 1u);  // the newest per (problem, protocol)
  EXPECT_EQ(back[0].id, second);
  EXPECT_EQ(back[0].problem.key(), kFaster.key());
  EXPECT_EQ(back[0].protocol_name, "cold-l2-v2");
  EXPECT_EQ(back[0].rounds, 20);
  ASSERT_EQ(back[0].sides.size(), 3u);
  EXPECT_EQ(back[0].sides[2].algo, "algo=66 rank=3 returned=32 requested=32");
  EXPECT_EQ(back[0].sides[2].heuristic_count, 32);
  ASSERT_TRUE(back[0].sides[0].check.has_value());
  EXPECT_TRUE(back[0].sides[0].check->ok);
  EXPECT_FALSE(back[0].sides[1].check.has_value());
  ASSERT_EQ(back[0].samples.size(), 60u);
  EXPECT_DOUBLE_EQ(back[0].samples[0].time_us, measurement(kFaster, 8, 10).samples[0].time_us);
  StoredMeasurement bad = m;
  bad.samples.push_back({7, 0, 0, 1.0, 0, false});
  EXPECT_THROW(db.put_measurement(s, bad), Error);
  const auto devices = db.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].measurements, 2);
}

TEST_F(CompareExportTest, BetweenGivesTheKnownVerdicts) {
  make_between_dbs(path("a.db"), path("b.db"));
  const CliRun r =
      run_dgtune("compare --between " + path("a.db") + " " + path("b.db") + " --format json --log-level warn");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["tables"].size(), 3u) << r.out;
  auto rows = rows_by_shape(doc["tables"][0]);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_EQ(rows[kFaster.label()]["verdict"], "faster") << rows[kFaster.label()].dump();
  EXPECT_NEAR(rows[kFaster.label()]["change"].get<double>(), 10.0 / 9.0, 0.01);
  EXPECT_EQ(rows[kSlower.label()]["verdict"], "slower");
  EXPECT_NEAR(rows[kSlower.label()]["change"].get<double>(), 10.0 / 11.0, 0.01);
  EXPECT_EQ(rows[kSame.label()]["verdict"], "equivalent");
  EXPECT_EQ(rows[kNoisy.label()]["verdict"], "inconclusive");
  EXPECT_EQ(rows[kFaster.label()]["a_verdict"], "equivalent");  // A: dgtune == cuBLASLt-tuned
  EXPECT_EQ(rows[kFaster.label()]["b_verdict"], "faster");      // B: 10% faster than cuBLASLt-tuned
  EXPECT_EQ(rows[kSlower.label()]["b_verdict"], "slower");
  // Summary counts per verdict.
  std::map<std::string, nlohmann::json> summary;
  for (const auto& row : doc["tables"][1]["rows"]) summary[row["what"].get<std::string>()] = row["value"];
  EXPECT_EQ(summary["shapes faster"], 1);
  EXPECT_EQ(summary["shapes slower"], 1);
  EXPECT_EQ(summary["shapes equivalent"], 1);
  EXPECT_EQ(summary["shapes inconclusive"], 1);
  // kOnlyA is listed as stored in A only.
  ASSERT_EQ(doc["tables"][2]["rows"].size(), 1u);
  EXPECT_EQ(doc["tables"][2]["rows"][0]["shape"], kOnlyA.label());
  EXPECT_EQ(doc["tables"][2]["rows"][0]["db"], "A");

  // Swapping A and B swaps faster and slower.
  const CliRun swapped =
      run_dgtune("compare --between " + path("b.db") + " " + path("a.db") + " --format json --log-level warn");
  ASSERT_EQ(swapped.rc, 0) << swapped.out;
  rows = rows_by_shape(nlohmann::json::parse(swapped.out)["tables"][0]);
  EXPECT_EQ(rows[kFaster.label()]["verdict"], "slower");
  EXPECT_EQ(rows[kSlower.label()]["verdict"], "faster");

  // Every other format renders.
  for (const char* f : {"table", "csv", "md"}) {
    const CliRun o = run_dgtune("compare --between " + path("a.db") + " " + path("b.db") + " --format " + f);
    EXPECT_EQ(o.rc, 0) << f << o.out;
    EXPECT_NE(o.out.find("inconclusive"), std::string::npos) << f;
  }
  // --protocol hot-graph keeps nothing here (all stored runs are cold-l2).
  const CliRun hot =
      run_dgtune("compare --between " + path("a.db") + " " + path("b.db") + " --protocol hot-graph --format json");
  ASSERT_EQ(hot.rc, 0) << hot.out;
  EXPECT_EQ(nlohmann::json::parse(hot.out)["tables"][0]["rows"].size(), 0u);
}

// Rows that break a stored measurement's shape (a side index outside 0..n-1, a sample of a side that is not stored,
// a time stored as text: a hand-edited or damaged file) are refused as a damaged DB (exit 1) naming the file, the
// measurement and the row, never read as zeros or indexed out of bounds (a negative side crashed compare --between).
TEST_F(CompareExportTest, BetweenRefusesDamagedMeasurementRows) {
  const struct {
    const char* name;
    const char* sql;
    const char* says;
  } cases[] = {
      {"negative side", "UPDATE measurement_side SET side = -1 WHERE side = 2", "has side -1 (cublaslt-tuned), outside 0..2"},
      {"unknown sample side", "UPDATE measurement_sample SET side = 7 WHERE side = 2 AND round = 0",
       "has a sample of side 7, which it does not store"},
      // A text read as 0.0 before; now as NaN, which the sample check names (side and round).
      {"text time", "UPDATE measurement_sample SET time_us = 'abc' WHERE side = 0 AND round = 3",
       "side 'dgtune', round 3: time_us = nan is not a positive finite time"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string stem = c.name;
    std::replace(stem.begin(), stem.end(), ' ', '-');
    const std::string a = path("a-" + stem + ".db"), b = path("b-" + stem + ".db");
    make_between_dbs(a, b);
    {
      sql::Connection conn(b, false);
      conn.exec("PRAGMA foreign_keys = OFF");
      conn.exec(c.sql);
    }
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      const CliRun r = run_dgtune("compare --between " + x + " " + y + " --format json");
      EXPECT_EQ(r.rc, 1) << r.out;
      EXPECT_NE(r.out.find("tuning database " + b + ": stored"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(c.says), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("dgtune db check --db " + b), std::string::npos) << r.out;
    }
  }
  // db check names a side outside 0..n-1 even when its samples were renumbered with it (no foreign key breaks).
  {
    make_between_dbs(path("a-renumbered.db"), path("b-renumbered.db"));
    sql::Connection conn(path("b-renumbered.db"), false);
    conn.exec("PRAGMA foreign_keys = OFF");
    conn.exec("UPDATE measurement_side SET side = 5 WHERE side = 2; UPDATE measurement_sample SET side = 5 WHERE side = 2");
  }
  const CliRun renumbered = run_dgtune("db check --db " + path("b-renumbered.db"));
  EXPECT_EQ(renumbered.rc, 1) << renumbered.out;
  EXPECT_NE(renumbered.out.find("side 5 is outside 0..(sides - 1)"), std::string::npos) << renumbered.out;
  // db check names the text time too (SQLite compares a text greater than any number, so `NOT (time_us > 0)` missed it).
  const CliRun check = run_dgtune("db check --db " + path("b-text-time.db"));
  EXPECT_EQ(check.rc, 1) << check.out;
  EXPECT_NE(check.out.find("side 0, round 3: time_us = 'abc' is not a positive finite time"), std::string::npos)
      << check.out;
}

TEST_F(CompareExportTest, BetweenWithSeveralDevicesListsThemAndExits2) {
  make_between_dbs(path("a.db"), path("b.db"));
  {
    TuningDb B(path("b.db"));
    const DeviceScope h100 = B.upsert_device(gpu("NVIDIA H100 80GB HBM3", 132 - 18));
    B.put_measurement(h100, measurement(kFaster, 12, 10));
  }
  const CliRun r = run_dgtune("compare --between " + path("a.db") + " " + path("b.db"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("several devices"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--device-b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA H200"), std::string::npos) << r.out;
  const CliRun named =
      run_dgtune("compare --between " + path("a.db") + " " + path("b.db") + " --device-b 2 --format json");
  ASSERT_EQ(named.rc, 0) << named.out;
  auto rows = rows_by_shape(nlohmann::json::parse(named.out)["tables"][0]);
  EXPECT_EQ(rows[kFaster.label()]["verdict"], "slower");  // the H100 run: 12 us vs 10
  const CliRun unknown = run_dgtune("compare --between " + path("a.db") + " " + path("b.db") + " --device-b 9");
  EXPECT_EQ(unknown.rc, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("no device '9'"), std::string::npos) << unknown.out;
}

TEST_F(CompareExportTest, DbMergeKeepsEveryStoredSample) {
  make_between_dbs(path("a.db"), path("b.db"));
  const CliRun r = run_dgtune("db merge " + path("a.db") + " " + path("b.db") + " -o " + path("c.db"));
  ASSERT_EQ(r.rc, 0) << r.out;
  TuningDbReader c(path("c.db"));
  ASSERT_EQ(c.devices().size(), 1u);  // one hardware identity in both
  EXPECT_EQ(c.devices()[0].measurements, 9);
  // Newest per (problem, protocol): B's runs of the four shared shapes (stored later) and A's kOnlyA.
  const auto ms = c.latest_measurements(c.devices()[0].id);
  ASSERT_EQ(ms.size(), 5u);
  for (const StoredMeasurement& m : ms) {
    EXPECT_EQ(m.sides.size(), 3u);
    EXPECT_EQ(m.samples.size(), 60u);
  }
}

TEST_F(CompareExportTest, CompareNeverCreatesOrMigratesADb) {
  const CliRun r = run_dgtune("compare --between " + path("missing-a.db") + " " + path("missing-b.db"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_FALSE(fs::exists(path("missing-a.db")));
}

/// A DB with two winners (one with cuBLASLt-tuned stored), plus slower trials.
void make_export_db(const std::string& p) {
  TuningDb db(p);
  const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", 132));
  auto trial = [&](const Problem& pr, const std::string& key, double us) {
    TrialRecord t;
    t.problem = pr;
    t.config = KernelConfig::parse_key(key);
    t.protocol = R"({"name":"cold-l2-v1","statistic":"median"})";
    t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
    t.set_timing(Timing{us, us * 0.99, us * 1.02, 50, 0.002, 1755, false});
    db.put_trial(s, t);
  };
  trial(kFaster, "64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1", 20.0);
  trial(kFaster, "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", 30.0);
  Problem fast = kSlower;
  fast.accum = Accum::kFast;
  trial(fast, "128x256x128_s3_wg2_sw128_c2x1_rn16_tma_sk1_sm120_1g_p1", 50.0);
  BaselineRecord b;
  b.problem = kFaster;
  b.provider = kProviderCublasTuned;
  b.algo = "algo=66";
  b.set_timing(Timing{22.0, 22.0, 22.0, 20, 0.01, 1700, false});
  db.put_baseline(s, b);
}

// The backend column follows the loader's rule: cuBLASLt when its stored algorithm (schema 10: 64 bytes) was faster
// than the winner under the same protocol; a faster baseline without algorithm bytes (stored before schema 10) cannot
// be replayed, so dgtune's kernel stays.
TEST_F(CompareExportTest, ExportShowsTheBackendTheLoaderRuns) {
  const std::string file = path("b.db");
  const Problem with_algo = Problem::dense(512, 4096, 4096), without_algo = Problem::dense(256, 4096, 4096);
  {
    TuningDb db(file);
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", 132));
    for (const Problem& pr : {with_algo, without_algo}) {
      TrialRecord t;
      t.problem = pr;
      t.config = KernelConfig::parse_key("64x32x128_s4_wg1_sw128_c1x1_rm8_direct_sk1_sm0");
      t.protocol = R"({"name":"cold-l2-v1","statistic":"median"})";
      t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
      t.set_timing(Timing{40.0, 39.0, 41.0, 50, 0.002, 1755, false});
      db.put_trial(s, t);
      BaselineRecord b;
      b.problem = pr;
      b.provider = kProviderCublasTuned;
      b.algo = "algo=66 tile=20 stages=36 splitk=1 swizzle=0 cluster=3 reduction=0 rank=2 returned=8 requested=32";
      b.protocol = t.protocol;
      b.verification = t.verification;
      b.set_timing(Timing{30.0, 29.0, 31.0, 50, 0.002, 1755, false});
      if (pr == with_algo)
        for (int i = 0; i < 64; ++i) b.algo_data.push_back(uint8_t(i * 7 + 1));
      b.workspace_bytes = 4096;
      db.put_baseline(s, b);
    }
    // The reader gives the stored algorithm back byte for byte, with its version and protocol.
    const auto algos = db.cublaslt_winners(s.device_id, with_algo);
    ASSERT_EQ(algos.size(), 1u);  // the row without bytes is not a replayable algorithm
    EXPECT_EQ(algos[0].problem, with_algo);
    ASSERT_EQ(algos[0].algo_data.size(), 64u);
    EXPECT_EQ(algos[0].algo_data[63], uint8_t(63 * 7 + 1));
    EXPECT_EQ(algos[0].workspace_bytes, 4096);
    EXPECT_EQ(algos[0].protocol_name, "cold-l2-v1");
    EXPECT_DOUBLE_EQ(algos[0].median_us, 30.0);
    EXPECT_EQ(algos[0].cublaslt_version, 120805);  // gpu()'s cuBLASLt
    EXPECT_EQ(algos[0].heuristic_us, 0.0);         // no heuristic baseline stored yet
    // The heuristic's median of the same problem and protocol rides along; another protocol's does not.
    for (const auto& [protocol, us] : {std::pair{std::string(R"({"name":"hot-graph-v1","statistic":"median"})"), 5.0},
                                       std::pair{std::string(R"({"name":"cold-l2-v1","statistic":"median"})"), 33.0}}) {
      BaselineRecord h;
      h.problem = with_algo;
      h.provider = kProviderCublasDefault;
      h.algo = "algo=66 tile=21";
      h.protocol = protocol;
      h.set_timing(Timing{us, us, us, 50, 0.002, 1755, false});
      db.put_baseline(s, h);
    }
    const auto with_heuristic = db.cublaslt_winners(s.device_id, with_algo);
    ASSERT_EQ(with_heuristic.size(), 1u);
    EXPECT_DOUBLE_EQ(with_heuristic[0].heuristic_us, 33.0);
    EXPECT_DOUBLE_EQ(with_heuristic[0].median_us, 30.0);
  }
  const CliRun json = run_dgtune("export --db " + file + " --format json");
  ASSERT_EQ(json.rc, 0) << json.out;
  const auto rows = nlohmann::json::parse(json.out)["winners"];
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    const bool replayable = r["m"] == 512;
    EXPECT_EQ(r["backend"], replayable ? "cublaslt" : "dgtune") << r.dump();
    if (replayable) EXPECT_EQ(r["cublaslt_algo"].get<std::string>().rfind("algo=66 tile=20", 0), 0u);
  }
}

TEST_F(CompareExportTest, ExportEveryFormat) {
  make_export_db(path("t.db"));
  const std::string db = " --db " + path("t.db");
  const CliRun csv = run_dgtune("export" + db + " --format csv");
  ASSERT_EQ(csv.rc, 0) << csv.out;
  EXPECT_NE(csv.out.find("block_m,block_n,block_k,num_stages,num_math_wg,swizzle,cluster_m,cluster_n,raster,group_size,"
                         "epilogue,split_k,split_reduce,sms,mainloop,promote_every"),
            std::string::npos)
      << csv.out;
  EXPECT_NE(csv.out.find("64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1"), std::string::npos);
  EXPECT_EQ(csv.out.find("128x128x128_s4_wg2"), std::string::npos);  // not a winner
  EXPECT_NE(csv.out.find("cold-l2-v1"), std::string::npos);

  const CliRun json = run_dgtune("export" + db + " --format json");
  ASSERT_EQ(json.rc, 0) << json.out;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["schema"], "dgtune-export");
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["db_schema_version"], schema::latest_version());
  ASSERT_EQ(doc["winners"].size(), 2u);
  const auto& w = doc["winners"][0];
  EXPECT_EQ(w["config"], "64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1");
  EXPECT_EQ(w["split_k"], 4);
  EXPECT_EQ(w["split_reduce"], "workspace");  // "cluster" for an sk<S>c key
  EXPECT_EQ(w["mainloop"], "1g");
  EXPECT_EQ(w["promote_every"], 1);
  EXPECT_EQ(w["protocol"], "cold-l2-v1");
  EXPECT_DOUBLE_EQ(w["median_us"].get<double>(), 20.0);
  EXPECT_NEAR(w["x_cublas_tuned"].get<double>(), 1.1, 1e-9);
  EXPECT_GT(w["tflops"].get<double>(), 0);
  EXPECT_TRUE(doc["winners"][1]["x_cublas_tuned"].is_null());  // no baseline stored
  // The baseline is slower than the winner (and stored without algorithm bytes): dgtune's kernel runs.
  EXPECT_EQ(w["backend"], "dgtune");
  EXPECT_TRUE(w["cublaslt_algo"].is_null());
  EXPECT_EQ(doc["winners"][1]["epilogue"], "tma");
  EXPECT_EQ(doc["winners"][1]["accum"], "fast");

  const CliRun md = run_dgtune("export" + db + " --format md");
  ASSERT_EQ(md.rc, 0) << md.out;
  EXPECT_NE(md.out.find("| 64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1 "), std::string::npos) << md.out;
  const CliRun table = run_dgtune("export" + db);
  ASSERT_EQ(table.rc, 0) << table.out;
  EXPECT_NE(table.out.find("128x256x128_s3_wg2_sw128_c2x1_rn16_tma_sk1_sm120_1g_p1"), std::string::npos) << table.out;

  const CliRun out = run_dgtune("export" + db + " --format csv --out " + path("w.csv"));
  ASSERT_EQ(out.rc, 0) << out.out;
  std::ifstream f(path("w.csv"));
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), csv.out);
}

// Grouped winners (schema 11) get the grouped columns and their loop baseline; a dense-only DB's export has none of
// those columns, and the C++ header (dgt::Gemm's dense table) never lists a grouped winner.
TEST_F(CompareExportTest, ExportListsGroupedWinnersWithTheirIdentity) {
  make_export_db(path("d.db"));
  const CliRun dense = run_dgtune("export --db " + path("d.db") + " --format json");
  ASSERT_EQ(dense.rc, 0) << dense.out;
  for (const auto& w : nlohmann::json::parse(dense.out)["winners"])
    for (const char* col : {"kind", "groups", "m_max", "expected_m", "total_m", "loop_us", "x_loop"})
      EXPECT_FALSE(w.contains(col)) << col;
  const CliRun dense_table = run_dgtune("export --db " + path("d.db"));
  EXPECT_EQ(dense_table.out.find("x loop"), std::string::npos) << dense_table.out;

  make_export_db(path("g.db"));
  const GroupedProblem g = parse_grouped_problem(
      "kind=masked groups=32 masked_m=route:1:256:8 m_max=128 expected_m=64 4096 7168 scale=block", "t");
  {
    TuningDb db(path("g.db"));
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", 132));
    TrialRecord t;
    t.problem = g.keyed();
    t.config = KernelConfig::parse_key("128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1");
    t.protocol = R"({"name":"cold-l2-v1","statistic":"median"})";
    t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
    t.set_timing(Timing{50.0, 49.0, 51.0, 50, 0.002, 1755, false});
    db.put_trial(s, t);
    BaselineRecord loop;
    loop.problem = g.keyed();
    loop.provider = kProviderCublasDefault;
    loop.algo = "per-group loop: 32 calls";
    loop.protocol = t.protocol;
    loop.set_timing(Timing{95.0, 95.0, 95.0, 50, 0.002, 1755, false});
    db.put_baseline(s, loop);
  }
  const CliRun json = run_dgtune("export --db " + path("g.db") + " --format json");
  ASSERT_EQ(json.rc, 0) << json.out;
  const auto rows = nlohmann::json::parse(json.out)["winners"];
  ASSERT_EQ(rows.size(), 3u);
  int grouped = 0;
  for (const auto& w : rows) {
    if (w["kind"].is_null()) {  // a dense winner beside it: empty grouped cells
      EXPECT_TRUE(w["groups"].is_null());
      EXPECT_TRUE(w["x_loop"].is_null());
      continue;
    }
    ++grouped;
    EXPECT_EQ(w["kind"], "masked");
    EXPECT_EQ(w["groups"], 32);
    EXPECT_EQ(w["m_max"], 128);
    EXPECT_EQ(w["expected_m"], 64);
    EXPECT_EQ(w["total_m"], 32 * 128);
    EXPECT_EQ(w["n"], 4096);
    EXPECT_DOUBLE_EQ(w["loop_us"].get<double>(), 95.0);
    EXPECT_DOUBLE_EQ(w["x_loop"].get<double>(), 1.9);
    EXPECT_EQ(w["config"], "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1");
  }
  EXPECT_EQ(grouped, 1);
  // The short table shows the grouped columns too.
  const CliRun table = run_dgtune("export --db " + path("g.db"));
  ASSERT_EQ(table.rc, 0) << table.out;
  EXPECT_NE(table.out.find("expected_m"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("masked G32"), std::string::npos) << table.out;
  const CliRun cpp = run_dgtune("export --db " + path("g.db") + " --format cpp");
  ASSERT_EQ(cpp.rc, 0) << cpp.out;
  EXPECT_EQ(cpp.out.find("grouped-masked"), std::string::npos);
  EXPECT_NE(cpp.out.find("64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1"), std::string::npos);
}

TEST_F(CompareExportTest, ExportTableShowsAShortColumnSetAndAllOnRequest) {
  make_export_db(path("t.db"));
  const std::string db = " --db " + path("t.db");
  // The header line of the table: the default has the seven columns a reader wants first.
  auto header = [](const std::string& out) {
    std::istringstream in(out);
    std::string title, head;
    std::getline(in, title);
    std::getline(in, head);
    return head;
  };
  const CliRun table = run_dgtune("export" + db);
  ASSERT_EQ(table.rc, 0) << table.out;
  std::istringstream words(header(table.out));
  std::vector<std::string> cols{std::istream_iterator<std::string>(words), {}};
  EXPECT_EQ(cols, (std::vector<std::string>{"shape", "config", "protocol", "us", "TFLOPS", "cuBLASLt", "tuned", "us",
                                            "x", "tuned", "backend"}));
  EXPECT_NE(table.out.find("--columns all adds every tunable"), std::string::npos);
  // Every line of the table under its title (which names the DB's path) fits a wide terminal.
  for (const auto& line : [&] {
         std::vector<std::string> v;
         std::istringstream in(table.out);
         std::string title;
         std::getline(in, title);
         for (std::string l; std::getline(in, l);) v.push_back(l);
         return v;
       }())
    EXPECT_LT(line.size(), 240u) << line;  // it was 402 columns wide
  const CliRun all = run_dgtune("export" + db + " --columns all");
  ASSERT_EQ(all.rc, 0) << all.out;
  EXPECT_NE(header(all.out).find("promote every"), std::string::npos) << all.out;
  EXPECT_NE(header(all.out).find("kernel hash"), std::string::npos);
  // The machine formats keep every column unless asked for the short set.
  const CliRun json = run_dgtune("export" + db + " --format json");
  EXPECT_EQ(nlohmann::json::parse(json.out)["winners"][0].size(), 44u);
  const CliRun json_short = run_dgtune("export" + db + " --format json --columns short");
  EXPECT_EQ(nlohmann::json::parse(json_short.out)["winners"][0].size(), 8u);
  const CliRun bad = run_dgtune("export" + db + " --format cpp --columns all");
  EXPECT_EQ(bad.rc, 2) << bad.out;
}

TEST_F(CompareExportTest, ExportNeverWritesOverItsDbAndPrintsItsAbsolutePath) {
  make_export_db(path("t.db"));
  const std::string before = [&] {
    std::ifstream f(path("t.db"), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }();
  fs::create_symlink(path("t.db"), path("link.db"));
  for (const std::string& out : {path("t.db"), path("link.db")})
    for (const char* format : {"csv", "json", "table", "md", "cpp", "db"}) {
      const CliRun r = run_dgtune("export --db " + path("t.db") + " --format " + format + " --out " + out);
      EXPECT_EQ(r.rc, 2) << format << ": " << r.out;
      EXPECT_NE(r.out.find("it is the same file as --db"), std::string::npos) << r.out;
    }
  std::ifstream f(path("t.db"), std::ios::binary);
  std::stringstream now;
  now << f.rdbuf();
  EXPECT_TRUE(now.str() == before) << "export changed its own DB";
  // A relative --db is printed absolute: the title names the file exactly.
  CliRun rel;
  const std::string cmd = "cd " + dir_.string() + " && " + DGT_DGTUNE_BIN + " export --db t.db 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) rel.out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << rel.out;
  EXPECT_NE(rel.out.find("dgtune export " + path("t.db") + " device"), std::string::npos) << rel.out;
}

TEST_F(CompareExportTest, BetweenSaysWhenADbHoldsNoSavedCompares) {
  make_between_dbs(path("a.db"), path("b.db"));
  {
    TuningDb empty(path("empty.db"));
    empty.upsert_device(gpu("NVIDIA H200", 132));
  }
  const CliRun r = run_dgtune("compare --between " + path("a.db") + " " + path("empty.db"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(path("empty.db") + " holds none"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dgtune compare --shapes FILE --save DB"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(path("a.db") + " holds none"), std::string::npos) << r.out;
}

TEST_F(CompareExportTest, BetweenNamesAStoredSampleThatIsNoTime) {
  for (double bad : {std::numeric_limits<double>::infinity(), 0.0, -2.0}) {
    fs::remove(path("a.db"));
    fs::remove(path("b.db"));
    {
      TuningDb A(path("a.db")), B(path("b.db"));
      StoredMeasurement m = measurement(kFaster, 10, 10);
      m.samples[3 * 5 + 2].time_us = bad;  // cuBLASLt-tuned, round 5
      A.put_measurement(A.upsert_device(gpu("NVIDIA H200", 132)), m);
      B.put_measurement(B.upsert_device(gpu("NVIDIA H200", 132)), measurement(kFaster, 9, 10));
    }
    const CliRun r = run_dgtune("compare --between " + path("a.db") + " " + path("b.db"));
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find("tuning database " + path("a.db") + ": stored compare measurement 1 of 128x4096x7168 "
                         "(cold-l2-v2), side 'cublaslt-tuned', round 5: time_us = "),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("is not a positive finite time"), std::string::npos) << r.out;
    const CliRun check = run_dgtune("db check --db " + path("a.db"));
    EXPECT_EQ(check.rc, 1) << check.out;
    EXPECT_NE(check.out.find("measurement 1: side 2, round 5: time_us = "), std::string::npos) << check.out;
  }
}

TEST_F(CompareExportTest, ExportedHeaderCompilesAndLooksUpTheStoredConfig) {
  make_export_db(path("t.db"));
  const CliRun r = run_dgtune("export --db " + path("t.db") + " --format cpp --out " + path("tuned.hpp"));
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string fast_args =
      std::to_string(kSlower.m) + ", 4096, 7168, 7168, 7168, 4096, \"e4m3\", \"e4m3\", \"fast\"";
  std::ofstream(path("alone.cpp"))
      << "#include \"tuned.hpp\"\n"
         "static_assert(dgtune_tuned::kTable.count == 2);\n"
         "static_assert(dgtune_tuned::str_eq(dgtune_tuned::lookup(128, 4096, 7168, 7168, 7168, 4096),\n"
         "                                   \"64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1\"));\n"
         "static_assert(dgtune_tuned::str_eq(dgtune_tuned::lookup(" +
             fast_args +
             "),\n"
             "                                   \"128x256x128_s3_wg2_sw128_c2x1_rn16_tma_sk1_sm120_1g_p1\"));\n"
             // No promote entry at M = 256: the ladder rule's fallback (no tuned M above) is the largest below, 128.
             "static_assert(dgtune_tuned::str_eq(dgtune_tuned::lookup(" +
             std::to_string(kSlower.m) +
             ", 4096, 7168, 7168, 7168, 4096), \"64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1\"));\n"
             // Between tuned M the upper one: M = 100 takes M = 128's entry; another N has nothing.
             "static_assert(dgtune_tuned::str_eq(dgtune_tuned::lookup(100, 4096, 7168, 7168, 7168, 4096),\n"
             "                                   \"64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1\"));\n"
             "static_assert(dgtune_tuned::lookup(128, 4112, 7168, 7168, 7168, 4112) == nullptr);\n"
             // The output type, bias and activation are part of the problem: a bias + GELU call finds nothing.
             "static_assert(dgtune_tuned::lookup(128, 4096, 7168, 7168, 7168, 4096, \"e4m3\", \"e4m3\", \"promote\", "
             "\"cold-l2\", \"per-tensor\", \"bf16\", \"bf16\", \"gelu_tanh\") == nullptr);\n"
             "static_assert(dgtune_tuned::lookup(128, 4096, 7168, 7168, 7168, 4096, \"e4m3\", \"e4m3\", \"promote\", "
             "\"cold-l2\", \"per-tensor\", \"f32\") == nullptr);\n"
             "int main() { return dgtune_tuned::lookup(128, 4096, 7168, 7168, 7168, 4096)[0] == '6' ? 0 : 1; }\n";
  const std::string cxx = DGT_HOST_CXX;
  const std::string flags = " -std=c++17 -Wall -Wextra -Werror -I" + dir_.string();
  ASSERT_EQ(std::system((cxx + flags + " " + path("alone.cpp") + " -o " + path("alone")).c_str()), 0);
  EXPECT_EQ(std::system(path("alone").c_str()), 0);
  // Next to <dgtune/gemm.hpp>, in either order: GemmOptions::table takes kTable.
  for (const char* order : {"gemm-first", "table-first"}) {
    const std::string a = "#include <dgtune/gemm.hpp>\n", b = "#include \"tuned.hpp\"\n";
    std::ofstream(path(std::string(order) + ".cpp"))
        << (std::string(order) == "gemm-first" ? a + b : b + a)
        << "int main() { dgt::GemmOptions o; o.table = &dgtune_tuned::kTable; return o.table->count == 2 ? 0 : 1; }\n";
    const std::string cmd = cxx + flags +
                            " -I" DGT_SOURCE_DIR "/src/loader/include -I" DGT_CUDA_INCLUDE " -fsyntax-only " +
                            path(std::string(order) + ".cpp");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

TEST_F(CompareExportTest, ExportCarriesEachWinnersProtocol) {
  make_export_db(path("t.db"));
  {
    // kFaster tuned again under hot-graph: another winner (the 30 us cold-l2 loser is the fastest when hot).
    TuningDb db(path("t.db"));
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", 132));
    TrialRecord t;
    t.problem = kFaster;
    t.config = KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0");
    t.protocol = R"({"kind":"hot-graph","name":"hot-graph-v1","rounds":10,"version":1})";
    t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
    t.set_timing(Timing{9.0, 9.0, 9.0, 10, 0.002, 1755, false});
    db.put_trial(s, t);
  }
  const std::string db = " --db " + path("t.db");
  const CliRun json = run_dgtune("export" + db + " --format json");
  ASSERT_EQ(json.rc, 0) << json.out;
  const auto rows = nlohmann::json::parse(json.out)["winners"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["protocol"], "cold-l2-v1");
  EXPECT_EQ(rows[0]["config"], "64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1");
  EXPECT_NEAR(rows[0]["x_cublas_tuned"].get<double>(), 1.1, 1e-9);  // its own protocol's baseline
  EXPECT_EQ(rows[1]["protocol"], "hot-graph-v1");
  EXPECT_EQ(rows[1]["config"], KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0").key());
  EXPECT_TRUE(rows[1]["x_cublas_tuned"].is_null());  // no hot-graph baseline stored: never the cold one
  for (const char* format : {"csv", "md", "table"}) {
    const CliRun r = run_dgtune("export" + db + " --format " + format);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("hot-graph-v1"), std::string::npos) << format << "\n" << r.out;
  }
  // The header carries the protocol per entry; lookup() prefers the kind asked for.
  const CliRun cpp = run_dgtune("export" + db + " --format cpp --out " + path("tuned.hpp"));
  ASSERT_EQ(cpp.rc, 0) << cpp.out;
  std::ofstream(path("proto.cpp"))
      << "#include \"tuned.hpp\"\n"
         "static_assert(dgtune_tuned::kTable.count == 3);\n"
         "static_assert(dgtune_tuned::str_eq(dgtune_tuned::kTable.entries[1].protocol, \"hot-graph-v1\"));\n"
         "static_assert(dgtune_tuned::str_eq(dgtune_tuned::lookup(128, 4096, 7168, 7168, 7168, 4096),\n"
         "                                   \"64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0_1g_p1\"));\n"
         "static_assert(dgtune_tuned::str_eq(dgtune_tuned::lookup(128, 4096, 7168, 7168, 7168, 4096, \"e4m3\", "
         "\"e4m3\", \"promote\", \"hot-graph\"), \"" +
             KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0").key() +
             "\"));\n"
             "static_assert(!dgtune_tuned::protocol_is(nullptr, \"hot-graph\") && "
             "dgtune_tuned::protocol_is(nullptr, \"cold-l2\"));\n"
             "int main() { return 0; }\n";
  const std::string cxx = DGT_HOST_CXX;
  const std::string cmd =
      cxx + " -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I" + dir_.string() + " " + path("proto.cpp");
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST_F(CompareExportTest, ExportCarriesTheScaleMode) {
  // The same dimensions tuned per-tensor and with block scales: two winners that differ only by the mode.
  const Problem pt = Problem::dense(128, 7168, 2048);
  Problem blk = pt;
  blk.scale = ScaleMode::kBlock;
  const std::string pt_key = "128x128x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",
                    blk_key = "128x112x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
  {
    TuningDb db(path("t.db"));
    const DeviceScope s = db.upsert_device(gpu("NVIDIA H200", 132));
    for (const auto& [p, key, us] : {std::tuple{pt, pt_key, 5.0}, std::tuple{blk, blk_key, 9.0}}) {
      TrialRecord t;
      t.problem = p;
      t.config = KernelConfig::parse_key(key);
      t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
      t.set_timing(Timing{us, us, us, 10, 0.002, 1755, false});
      db.put_trial(s, t);
    }
  }
  const std::string db = " --db " + path("t.db");
  const CliRun json = run_dgtune("export" + db + " --format json");
  ASSERT_EQ(json.rc, 0) << json.out;
  const auto rows = nlohmann::json::parse(json.out)["winners"];
  ASSERT_EQ(rows.size(), 2u);
  std::map<std::string, std::string> config_by_scale;
  for (const auto& r : rows) config_by_scale[r["scale"].get<std::string>()] = r["config"].get<std::string>();
  EXPECT_EQ(config_by_scale, (std::map<std::string, std::string>{{"per-tensor", pt_key}, {"block", blk_key}}));
  const CliRun csv = run_dgtune("export" + db + " --format csv");
  ASSERT_EQ(csv.rc, 0) << csv.out;
  EXPECT_NE(csv.out.find(",a,b,scale,accum,d,bias,act,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",e4m3,e4m3,block,promote,bf16,none,none," + blk_key + ","), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",e4m3,e4m3,per-tensor,promote,bf16,none,none," + pt_key + ","), std::string::npos)
      << csv.out;
  for (const char* format : {"md", "table"}) {
    // The short default names the mode in the shape; every column (scale among them) on request.
    const CliRun r = run_dgtune("export" + db + " --format " + format);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("128x7168x2048 block"), std::string::npos) << format << "\n" << r.out;
    const CliRun all = run_dgtune("export" + db + " --format " + format + " --columns all");
    ASSERT_EQ(all.rc, 0) << all.out;
    EXPECT_NE(all.out.find("per-tensor"), std::string::npos) << format << "\n" << all.out;
    EXPECT_NE(all.out.find("128x7168x2048 block"), std::string::npos) << format << "\n" << all.out;
  }
  // The header: one entry per mode, each with its scale; lookup() takes the mode (default per-tensor).
  const CliRun cpp = run_dgtune("export" + db + " --format cpp --out " + path("tuned.hpp"));
  ASSERT_EQ(cpp.rc, 0) << cpp.out;
  std::ofstream(path("scale.cpp"))
      << "#include \"tuned.hpp\"\n"
         "using dgtune_tuned::lookup;\n"
         "using dgtune_tuned::str_eq;\n"
         "static_assert(dgtune_tuned::kTable.count == 2);\n"
         "static_assert(str_eq(lookup(128, 7168, 2048, 2048, 2048, 7168), \"" +
             pt_key +
             "\"));\n"
             "static_assert(str_eq(lookup(128, 7168, 2048, 2048, 2048, 7168, \"e4m3\", \"e4m3\", \"promote\", "
             "\"cold-l2\", \"per-tensor\"), \"" +
             pt_key +
             "\"));\n"
             "static_assert(str_eq(lookup(128, 7168, 2048, 2048, 2048, 7168, \"e4m3\", \"e4m3\", \"promote\", "
             "\"cold-l2\", \"block\"), \"" +
             blk_key +
             "\"));\n"
             "static_assert(lookup(128, 7168, 2048, 2048, 2048, 7168, \"e4m3\", \"e4m3\", \"promote\", \"cold-l2\", "
             "\"block1d1d\") == nullptr);\n"
             "static_assert(str_eq(dgtune_tuned::kTable.entries[0].scale, \"per-tensor\") ||\n"
             "              str_eq(dgtune_tuned::kTable.entries[0].scale, \"block\"));\n"
             "int main() { return 0; }\n";
  const std::string cxx = DGT_HOST_CXX;
  const std::string cmd =
      cxx + " -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I" + dir_.string() + " " + path("scale.cpp");
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST_F(CompareExportTest, AnOlderHeaderBeforeGemmHppFailsToCompile) {
  // A header exported before TunedEntry::scale, included before <dgtune/gemm.hpp>, defines TunedEntry without
  // the field the library reads: the static_assert in gemm.hpp stops the build instead of reading past entries.
  std::string types = tuned_table_types();
  const std::string field = "  const char* scale;";
  const size_t at = types.find(field);
  ASSERT_NE(at, std::string::npos);
  types.erase(at, types.find('\n', at) + 1 - at);
  std::ofstream(path("old.hpp")) << "#pragma once\n" << types;
  std::ofstream(path("use.cpp")) << "#include \"old.hpp\"\n#include <dgtune/gemm.hpp>\nint main() { return 0; }\n";
  const std::string cmd = std::string(DGT_HOST_CXX) + " -std=c++17 -fsyntax-only -I" + dir_.string() +
                          " -I" DGT_SOURCE_DIR "/src/loader/include -I" DGT_CUDA_INCLUDE " " + path("use.cpp") + " > " +
                          path("err.txt") + " 2>&1";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  std::ifstream f(path("err.txt"));
  std::stringstream err;
  err << f.rdbuf();
  EXPECT_NE(err.str().find("re-export the tuned-table header with this dgtune"), std::string::npos) << err.str();
}

TEST(ExportHeader, GemmHppHoldsTheTypeBlockVerbatim) {
  std::ifstream f(DGT_SOURCE_DIR "/src/loader/include/dgtune/gemm.hpp");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find(tuned_table_types()), std::string::npos)
      << "src/loader/export_header.cpp's tuned_table_types() and gemm.hpp's block must be the same text";
}

TEST(ExportHeader, EmptyTableAndEscaping) {
  HeaderInfo info;
  info.hw_key = "k\"ey";
  info.device_name = "dev\\ice";
  info.kernel_hash = "h";
  info.dgtune_version = "0.4.0";
  const std::string h = export_header({}, info);
  EXPECT_NE(h.find("nullptr, 0ull"), std::string::npos) << h;
  EXPECT_NE(h.find("\"k\\\"ey\""), std::string::npos) << h;
  EXPECT_NE(h.find("\"dev\\\\ice\""), std::string::npos) << h;
  EXPECT_NE(h.find("still needs NVRTC"), std::string::npos);
}

}  // namespace
}  // namespace dgt
