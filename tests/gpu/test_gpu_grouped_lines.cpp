// `dgtune compare` and `dgtune gate` on a shapes file with grouped (MoE) lines beside a dense one, in process
// (run_compare, run_gate: what the CLI calls): each grouped line runs what dgt::GroupedGemm runs for its key, read from
// a DB whose grouped winners this test writes for this GPU (no sweep), verified, against the per-group cuBLASLt loop.
// Small N and K: five grouped kernels and a few dense ones compile (NVRTC, through the cubin cache).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "db/tuning_db.hpp"
#include "dgtune/grouped_gemm.hpp"
#include "eval/compare_run.hpp"
#include "eval/gate_record.hpp"
#include "eval/gate_run.hpp"
#include "harness.hpp"
#include "launch/environment.hpp"
#include "report/documents.hpp"

namespace dgt::test {
namespace {

const char* kC = "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";  // no default rule gives it: only the DB
const char* kD = "128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1";  // likewise for these lines (N < K)
const char* kSmall = "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";  // the default, masked expected_m <= 64

TEST(Grouped, CompareAndGateShapesRunTheLoadersGroupedChoice) {
  const Gpu& gpu = Gpu::get();  // skips (exit 77) without an sm_90 GPU
  char tmpl[] = "/tmp/dgtune-grouped-lines-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db_path = dir + "/tuning.db";
  // Grouped winners of this GPU and software: the masked family G4 N512 K1024 (block) at expected_m 16 (kC) and 64 (kD).
  {
    TuningDb db(db_path);
    const DeviceScope env = db.upsert_device(make_fingerprint(gpu.device));
    auto put = [&](const char* text, const char* config, double us) {
      TrialRecord t;
      t.problem = parse_grouped_problem(text, "test").keyed();
      t.config = KernelConfig::parse_key(config);
      t.set_timing(Timing{us, us, us, 10, 0.001, 1800, false});
      t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
      db.put_trial(env, t);
    };
    put("kind=masked groups=4 masked_m=16,16,16,16 m_max=256 expected_m=16 512 1024 scale=block", kC, 10);
    put("kind=masked groups=4 masked_m=64,64,64,64 m_max=256 expected_m=64 512 1024 scale=block", kD, 20);
  }
  const std::string shapes_path = dir + "/mixed.txt";
  std::ofstream(shapes_path)
      << "128 512 1024 name=dense\n"
         "kind=masked groups=4 masked_m=1,30,0,33 m_max=256 expected_m=16 512 1024 scale=block name=at-16\n"
         "kind=masked groups=4 masked_m=40,20,30,38 m_max=256 expected_m=32 512 1024 scale=block name=at-32\n"
         "kind=contiguous groups=4 m_per_group=300,0,200,100 512 1024 name=untuned\n";
  const std::map<std::string, std::pair<std::string, std::string>> want = {
      {"at-16", {"db", kC}}, {"at-32", {"ladder", kD}},
      {"untuned", {"default", "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"}}};

  CompareRunOptions o;
  o.shapes_path = shapes_path;
  o.shapes = load_shapes_file_with_grouped(shapes_path);
  o.protocol = MeasureProtocol::cold_l2();
  o.protocol.rounds = 5;
  o.db_path = db_path;
  const std::vector<report::Table> tables = run_compare(o);
  std::ostringstream out;
  report::render_document(report::kCompareDocument, tables, report::Format::kJson, out);
  const auto doc = nlohmann::json::parse(out.str());
  // The dense table and its summary, then the grouped lines' table and its summary.
  ASSERT_EQ(doc["tables"].size(), 4u) << doc.dump(1);
  EXPECT_EQ(doc["tables"][0]["rows"].size(), 1u);
  const auto& rows = doc["tables"][2]["rows"];
  ASSERT_EQ(rows.size(), 3u) << doc["tables"][2].dump(1);
  for (const auto& r : rows) {
    const auto& [source, config] = want.at(r["name"].get<std::string>());
    EXPECT_EQ(r["config_source"], source) << r.dump();
    EXPECT_EQ(r["config"], config) << r.dump();
    EXPECT_EQ(r["check"], "ok") << r.dump();
    EXPECT_EQ(r["note"], "") << r.dump();
    EXPECT_GT(r["x_loop"].get<double>(), 0) << r.dump();
    EXPECT_GT(r["x_dense"].get<double>(), 0) << r.dump();
    EXPECT_GT(r["tflops"].get<double>(), 0) << r.dump();
    EXPECT_EQ(r["rounds"], 5);
  }
  EXPECT_EQ(rows[0]["tuned_key"],
            parse_grouped_problem("kind=masked groups=4 masked_m=16 m_max=256 expected_m=16 512 1024 scale=block", "t")
                .keyed()
                .key());
  EXPECT_EQ(rows[2]["tuned_key"], "");
  // The loader agrees: dgt::GroupedGemm on the run-time key of the line at expected_m 32.
  GroupedGemmProblem key;
  key.layout = GroupedLayout::kMasked;
  key.groups = 4;
  key.m = 256;
  key.expected_m = 32;
  key.n = 512;
  key.k = 1024;
  GroupedGemmOptions go;
  go.db_path = db_path;
  EXPECT_EQ(GroupedGemm(key, go).choice().config_key, kD);
  std::map<std::string, nlohmann::json> summary;
  for (const auto& r : doc["tables"][3]["rows"]) summary[r["what"].get<std::string>()] = r["value"];
  EXPECT_EQ(summary["grouped lines measured and verified"], 3);
  EXPECT_EQ(summary["masked lines in the geomean"], 2);
  EXPECT_GT(summary["geomean x_loop, masked lines"].get<double>(), 0);
  EXPECT_EQ(summary.count("TFLOPS contiguous G4 N512 K1024 per-tensor promote M_sum 768 (default)"), 1u)
      << doc["tables"][3].dump(1);

  // gate: record the grouped lines (and the dense one), then check the unchanged build against the baseline.
  GateRunOptions g;
  g.record_path = dir + "/base.json";
  g.shapes_path = shapes_path;
  g.shapes = o.shapes;
  g.rounds = 20;
  g.db_path = db_path;
  ASSERT_EQ(run_gate(g), 0);
  const gate::GateRecord base = gate::read_record(g.record_path);
  ASSERT_EQ(base.shapes.size(), 4u);
  for (const gate::ShapeRecord& s : base.shapes) {
    ASSERT_TRUE(s.ok()) << s.problem.label() << ": " << s.error;
    EXPECT_EQ(s.rounds.size(), 20u);
    if (!s.grouped) continue;
    EXPECT_EQ(s.config_source, want.at(s.name).first);
    EXPECT_EQ(s.tuned_us.size(), 20u) << "the loop's samples";
    EXPECT_TRUE(s.default_us.empty());
    EXPECT_NE(s.tuned_algo.find("calls"), std::string::npos) << s.tuned_algo;
  }
  GateRunOptions c;
  c.baseline_path = g.record_path;
  c.db_path = db_path;
  c.history_path = dir + "/history.db";
  EXPECT_EQ(run_gate(c), 0);  // the baseline's shapes, grouped counts included; an unchanged build passes
  const std::vector<GateHistoryPoint> history = TuningDbReader(c.history_path).gate_history("at-32");
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].result.verdict, "pass");
  EXPECT_EQ(history[0].result.config_key, kD);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dgt::test
