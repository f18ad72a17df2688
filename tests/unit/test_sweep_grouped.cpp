// The sweep loop (tune/sweep_loop.hpp) on a grouped shapes-file line, with a fake measurer: candidates are the space
// ranked on the dense view minus what breaks G1-G3, each is prepared (compiled ahead) as a grouped kernel of the
// line's layout and never as a dense one, the measurer is started with the grouped problem, trials and the loop
// baseline are stored under the grouped key with the distribution, a second sweep resumes (measures nothing), and
// grouped_top_k cuts grouped lines only. No GPU needed.
#include <gtest/gtest.h>

#include "db_fixture.hpp"
#include "temp_dir_test.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "db/tuning_db.hpp"
#include "problem/shapes_file.hpp"
#include "space/cost_model.hpp"
#include "space/grouped_defaults.hpp"
#include "space/grouped_rules.hpp"
#include "space/search_space.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_loop.hpp"

namespace dgt {
namespace {

/// Records what the loop asks; every candidate is an ok trial of 100 us minus its rank (the best-ranked is not the
/// fastest, so the winner is read from the DB, not the order).
class GroupedFakeMeasurer final : public Measurer {
 public:
  int sm_count() const override { return 132; }
  std::string describe() const override { return "fake grouped measurer"; }
  bool prepare(const EvaluatedSpec&) override {
    ++prepared;
    return true;
  }
  bool prepare_grouped(const EvaluatedSpec& spec, GroupKind kind) override {
    prepared_grouped.emplace_back(spec.spec.config, kind);
    return true;
  }
  void begin_shape(const Problem& p) override {
    ++dense_shapes;
    current = p;
  }
  void begin_grouped_shape(const GroupedProblem& g) override {
    begun.push_back(g);
    current = g.keyed();
  }
  std::pair<BaselineRecord, BaselineRecord> baselines() override {
    BaselineRecord def;
    def.problem = current;
    def.provider = kProviderCublasDefault;
    def.status = TrialStatus::kOk;
    def.algo = "per-group loop";
    def.set_timing(Timing{200.0, 200.0, 200.0, 10, 0.001, 1800, false});
    BaselineRecord tuned = def;
    tuned.provider = kProviderCublasTuned;
    tuned.status = TrialStatus::kUnsupported;
    tuned.timing.reset();
    ++baseline_calls;
    return {def, tuned};
  }
  TrialRecord measure(const EvaluatedSpec& spec) override {
    measured.push_back(spec.spec.config);
    return test::ok_trial(current, spec.spec.config, 101.0 - double(measured.size()));
  }

  int prepared = 0, dense_shapes = 0, baseline_calls = 0;
  std::vector<std::pair<KernelConfig, GroupKind>> prepared_grouped;
  std::vector<GroupedProblem> begun;
  Problem current;  ///< the shape begun last (a grouped one's keyed problem)
  std::vector<KernelConfig> measured;
};

class SweepGrouped : public test::TempDirTest {};

TEST_F(SweepGrouped, GroupedLineIsSweptUnderItsKeyAndResumes) {
  const auto shapes = parse_shapes_with_grouped(
      "kind=masked groups=8 masked_m=10,20,0,40,50,60,70,100 m_max=128 expected_m=48 4096 7168 name=moe\n", "s.txt");
  ASSERT_EQ(shapes.size(), 1u);
  const Problem key = shapes[0].problem;
  SweepOptions opts;
  opts.strategy = Strategy::kModel;
  opts.top_k = 6;
  TuningDb db(path("t.db"));
  DeviceFingerprint fp;
  fp.name = "test GPU";
  fp.sm_count = 132;
  const DeviceScope scope = db.upsert_device(fp);

  GroupedFakeMeasurer m;
  const auto out = run_sweep(db, scope, m, shapes, opts);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(m.prepared, 0);  // nothing compiled ahead as a dense kernel
  EXPECT_EQ(m.dense_shapes, 0);
  ASSERT_EQ(m.begun.size(), 1u);
  EXPECT_EQ(m.begun[0].rows, (std::vector<int64_t>{10, 20, 0, 40, 50, 60, 70, 100}));
  EXPECT_EQ(m.baseline_calls, 1);
  // Every measured candidate can run grouped (G1-G3): the first six of the ranked, filtered space, then the default
  // rule's configs the cut left out (the masked expected_m 48 default, the 64-row tile, first).
  std::vector<KernelConfig> want;
  for (const Candidate& c : rank_candidates(opts.space, key, 132))
    if (grouped_rule_violation(c.config).empty() && want.size() < 6) want.push_back(c.config);
  const std::vector<KernelConfig> defaults = grouped_default_configs(*shapes[0].grouped);
  ASSERT_EQ(defaults.size(), 3u);
  EXPECT_EQ(defaults[0].key(), "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  for (const KernelConfig& c : defaults)
    if (std::find(want.begin(), want.end(), c) == want.end()) want.push_back(c);
  ASSERT_GT(want.size(), 6u) << "the model's top six held every default config: the test no longer tests the seeds";
  const size_t n = want.size();
  EXPECT_EQ(m.measured, want);
  EXPECT_EQ(out[0].measured_now, int(n));
  EXPECT_EQ(out[0].candidates, int(n));
  EXPECT_TRUE(out[0].complete);
  // Every candidate queued ahead as the masked grouped kernel, in measuring order, before any is measured.
  ASSERT_EQ(m.prepared_grouped.size(), n);
  for (size_t i = 0; i < m.prepared_grouped.size(); ++i) {
    EXPECT_EQ(m.prepared_grouped[i].first, want[i]);
    EXPECT_EQ(m.prepared_grouped[i].second, GroupKind::kMasked);
  }
  for (const KernelConfig& c : m.measured) EXPECT_EQ(grouped_rule_violation(c), "") << c.key();
  // Stored under the grouped key: the winner is the last measured (fastest), the loop is the default baseline.
  ASSERT_TRUE(out[0].winner);
  EXPECT_EQ(out[0].winner->trial.problem, key);
  EXPECT_EQ(out[0].winner->trial.config, m.measured.back());
  ASSERT_TRUE(out[0].winner->cublas_default);
  EXPECT_DOUBLE_EQ(out[0].winner->cublas_default->timing->median_us, 200.0);
  EXPECT_EQ(db.stored_config_keys(scope, key, kSweepTimerProtocol).size(), n);
  EXPECT_TRUE(db.stored_config_keys(scope, shapes[0].grouped->dense_view(), kSweepTimerProtocol).empty());
  // The distribution is stored with the problem.
  EXPECT_EQ(db.put_group_rows(key, "1,1,1,1,1,1,1,1", "1"), "10,20,0,40,50,60,70,100");

  // Resume: nothing measured again, no baseline again, the grouped problem not even started.
  GroupedFakeMeasurer again;
  const auto out2 = run_sweep(db, scope, again, shapes, opts);
  EXPECT_EQ(out2[0].measured_now, 0);
  EXPECT_EQ(out2[0].already_stored, int(n));
  EXPECT_TRUE(out2[0].complete);
  EXPECT_TRUE(again.begun.empty());
  EXPECT_EQ(again.baseline_calls, 0);
}

// tune-model's grouped_top_k: a grouped line measures that many candidates, a dense line top_k; the sweep state of
// the grouped line says its own cut.
TEST_F(SweepGrouped, GroupedTopKCutsGroupedLinesOnly) {
  const auto shapes = parse_shapes_with_grouped(
      "kind=contiguous groups=4 m_per_group=route:1:200:2 4096 7168 name=moe\n"
      "256 4096 7168 name=dense\n", "s.txt");
  ASSERT_EQ(shapes.size(), 2u);
  SweepOptions opts;
  opts.strategy = Strategy::kModel;
  opts.top_k = 5;
  opts.grouped_top_k = 2;
  EXPECT_EQ(opts.strategy_label(true), "model-top2");
  EXPECT_EQ(opts.strategy_label(false), "model-top5");
  TuningDb db(path("t.db"));
  DeviceFingerprint fp;
  fp.name = "test GPU";
  fp.sm_count = 132;
  const DeviceScope scope = db.upsert_device(fp);
  GroupedFakeMeasurer m;
  const auto out = run_sweep(db, scope, m, shapes, opts);
  ASSERT_EQ(out.size(), 2u);
  // The grouped line: its top two, plus the default rule's configs the cut left out.
  std::vector<KernelConfig> top2;
  for (const Candidate& c : rank_candidates(opts.space, shapes[0].problem, 132))
    if (grouped_rule_violation(c.config).empty() && top2.size() < 2) top2.push_back(c.config);
  int added = 0;
  for (const KernelConfig& c : grouped_default_configs(*shapes[0].grouped))
    added += std::find(top2.begin(), top2.end(), c) == top2.end();
  // The dense line: its top five, plus the loader's default config when the cut left it out.
  std::vector<KernelConfig> top5;
  for (const Candidate& c : rank_candidates(opts.space, shapes[1].problem, 132))
    if (top5.size() < 5) top5.push_back(c.config);
  const int dense_added = std::find(top5.begin(), top5.end(), default_config(shapes[1].problem)) == top5.end();
  EXPECT_EQ(out[0].candidates, 2 + added);
  EXPECT_EQ(out[1].candidates, 5 + dense_added);
  EXPECT_EQ(m.prepared_grouped.size(), size_t(2 + added));
  EXPECT_EQ(m.prepared_grouped[0].second, GroupKind::kContiguous);
  EXPECT_EQ(m.prepared, 5 + dense_added);
  EXPECT_TRUE(out[0].complete);
  EXPECT_TRUE(out[1].complete);
}

// A measurer without grouped support (the default) refuses the shape instead of measuring the dense view.
TEST_F(SweepGrouped, MeasurerWithoutGroupedSupportRefuses) {
  class DenseOnly final : public Measurer {
   public:
    int sm_count() const override { return 132; }
    std::string describe() const override { return "dense only"; }
    bool prepare(const EvaluatedSpec&) override { return false; }
    void begin_shape(const Problem&) override { ADD_FAILURE() << "a grouped shape began as a dense one"; }
    std::pair<BaselineRecord, BaselineRecord> baselines() override { return {}; }
    TrialRecord measure(const EvaluatedSpec&) override {
      ADD_FAILURE() << "measured";
      return {};
    }
  } m;
  const auto shapes =
      parse_shapes_with_grouped("kind=contiguous groups=2 m_per_group=64,64 256 512\n", "s.txt");
  TuningDb db(path("t.db"));
  DeviceFingerprint fp;
  fp.name = "test GPU";
  fp.sm_count = 132;
  const DeviceScope scope = db.upsert_device(fp);
  SweepOptions opts;
  opts.strategy = Strategy::kModel;
  opts.top_k = 2;
  try {
    run_sweep(db, scope, m, shapes, opts);
    ADD_FAILURE() << "swept";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("does not measure grouped problems"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dgt
