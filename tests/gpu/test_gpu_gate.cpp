// The gate's GPU half (eval/shape_compare.hpp) end to end on two small shapes: record a baseline, check the
// unchanged build against it (must pass), and a record whose samples are made 20% slower (must fail).
#include "harness.hpp"

#include <filesystem>

#include "space/cost_model.hpp"
#include "eval/gate_decision.hpp"
#include "eval/gate_record.hpp"
#include "eval/gate_report.hpp"
#include "eval/shape_compare.hpp"

namespace dgt::test {
namespace {

TEST(Gate, RecordThenCheckUnchangedPassesAndASlowdownFails) {
  Gpu::get();  // skips (exit 77) without an sm_90 GPU
  ShapeCompareOptions o;
  o.db_path =
      (std::filesystem::temp_directory_path() / "dgtune_gate_gpu_missing.db").string();  // none: default configs
  o.protocol = MeasureProtocol::cold_l2();
  ShapeComparer cmp(o);
  std::vector<ShapeEntry> shapes(2);
  shapes[0].problem = Problem::dense(2048, 2048, 2048);
  shapes[0].name = "square-2k";
  shapes[1].problem = Problem::dense(128, 2112, 7168);
  gate::GateRecord base = gate::record_header(cmp.fingerprint(), cmp.protocol_json());
  for (const auto& s : shapes) base.shapes.push_back(gate::record_of(cmp.measure(s)));
  for (const auto& s : base.shapes) {
    ASSERT_TRUE(s.ok()) << s.problem.label() << ": " << s.error;
    EXPECT_EQ(s.config_source, "default");
    EXPECT_EQ(s.rounds.size(), 20u);
    EXPECT_EQ(s.default_us.size(), 20u);
  }
  const gate::GateRecord back = gate::parse_record(gate::to_json(base));
  gate::GateRecord now = gate::record_header(cmp.fingerprint(), cmp.protocol_json());
  for (const auto& s : shapes) now.shapes.push_back(gate::record_of(cmp.measure(s)));
  const gate::GateReport r = gate::decide(back, now, {});
  EXPECT_EQ(r.exit_code(), 0) << gate::markdown_summary(r);

  gate::GateRecord slow = now;
  for (auto& s : slow.shapes)
    for (double& t : s.ours_us) t *= 1.2;
  const gate::GateReport f = gate::decide(back, slow, {});
  EXPECT_EQ(f.exit_code(), 3) << gate::markdown_summary(f);
  EXPECT_EQ(f.regressions, 2);
}

// gate --search K: the gated config is one of the model's top K (not the default), measured and verified.
TEST(Gate, SearchGatesTheFastestOfTheModelsTopK) {
  const Gpu& gpu = Gpu::get();
  ShapeCompareOptions o;
  o.db_path = (std::filesystem::temp_directory_path() / "dgtune_gate_gpu_missing.db").string();
  o.protocol = MeasureProtocol::cold_l2();
  o.protocol.rounds = 6;
  o.search_top_k = 3;
  ShapeComparer cmp(o);
  ShapeEntry e;
  e.problem = Problem::dense(256, 1536, 1024);
  const gate::ShapeRecord r = gate::record_of(cmp.measure(e));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config_source, "search-top3");
  std::vector<std::string> top;
  for (const KernelConfig& c : rank_by_estimate(SearchSpace::builtin_default(), e.problem, gpu.device.sm_count, 3))
    top.push_back(c.key());
  ASSERT_EQ(top.size(), 3u);
  EXPECT_NE(std::find(top.begin(), top.end(), r.config_key), top.end()) << r.config_key;
  EXPECT_EQ(r.rounds.size(), 6u);
}

}  // namespace
}  // namespace dgt::test
