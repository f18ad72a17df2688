// The model strategy's cut on a dense line (tune/sweep_loop.hpp): the top K by the cost model, plus the loader's
// default config (dgt::default_config) when the cut left it out, so a tuned winner is never slower than what runs
// untuned. The case: a block-scaled M = 8192 DeepSeek-V3 shape, whose top 8 held no 128x128 2g config on the H200
// before the cost model's block-scale terms and still leaves out the default (128x128 s6 direct-store 2g). An
// exhaustive sweep, --max-candidates and an uncut top K add nothing. No GPU needed.
#include <gtest/gtest.h>

#include "db_fixture.hpp"
#include "temp_dir_test.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "db/tuning_db.hpp"
#include "problem/shapes_file.hpp"
#include "space/cost_model.hpp"
#include "space/search_space.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_loop.hpp"

namespace dgt {
namespace {

/// Records the configs it is asked to measure; each is an ok trial of 100 us, no baselines.
class RecordingMeasurer final : public Measurer {
 public:
  int sm_count() const override { return 132; }
  std::string describe() const override { return "recording measurer"; }
  bool prepare(const EvaluatedSpec&) override { return true; }
  void begin_shape(const Problem& p) override { current = p; }
  std::pair<BaselineRecord, BaselineRecord> baselines() override { return {}; }
  TrialRecord measure(const EvaluatedSpec& spec) override {
    measured.push_back(spec.spec.config);
    return test::ok_trial(current, spec.spec.config, 100.0);
  }
  Problem current;
  std::vector<KernelConfig> measured;
};

class SweepDefaults : public test::TempDirTest {
 protected:
  /// Sweeps `line` with `opts` on a fresh DB; returns the configs measured, in order.
  std::vector<KernelConfig> sweep(const std::string& line, SweepOptions opts, int* candidates = nullptr) {
    const auto shapes = parse_shapes_with_grouped(line + "\n", "s.txt");
    opts.baselines = false;
    TuningDb db(path("t" + std::to_string(++dbs_) + ".db"));
    const DeviceScope scope = db.upsert_device(test::h200_fingerprint("sweep defaults"));
    RecordingMeasurer m;
    const auto out = run_sweep(db, scope, m, shapes, opts);
    if (candidates) *candidates = out.at(0).candidates;
    return m.measured;
  }
  /// The cost model's first `k` candidates for `p`.
  static std::vector<KernelConfig> top(const Problem& p, size_t k) {
    std::vector<KernelConfig> out;
    for (const Candidate& c : rank_candidates(SearchSpace::builtin_default(), p, 132))
      if (out.size() < k) out.push_back(c.config);
    return out;
  }
  int dbs_ = 0;
};

TEST_F(SweepDefaults, ModelTopKAlsoMeasuresTheLoaderDefaultItLeftOut) {
  // A shape whose model top 8 leaves the default (128x128 s6 2g with the TMA store) out.
  const std::string line = "8192 7168 2048";
  const Problem p = parse_shapes(line + "\n", "s.txt").at(0).problem;
  const KernelConfig d = default_config(p);
  EXPECT_EQ(d.block_m, 128);
  EXPECT_EQ(d.block_n, 128);
  EXPECT_EQ(d.num_math_wg, 2);
  EXPECT_EQ(d.mainloop, Mainloop::k2g);
  std::vector<KernelConfig> want = top(p, 8);
  ASSERT_EQ(want.size(), 8u);
  ASSERT_TRUE(std::find(want.begin(), want.end(), d) == want.end())
      << "the model's top 8 now holds the default: pick a shape where it does not";
  want.push_back(d);  // measured last, after the model's eight
  SweepOptions opts;
  opts.strategy = Strategy::kModel;
  opts.top_k = 8;
  int candidates = 0;
  EXPECT_EQ(sweep(line, opts, &candidates), want);
  EXPECT_EQ(candidates, 9);
}

TEST_F(SweepDefaults, NothingAddedWhenTheDefaultIsRankedOrTheCutIsACap) {
  const std::string line = "8192 4096 7168 scale=block";
  const Problem p = parse_shapes(line + "\n", "s.txt").at(0).problem;
  const KernelConfig d = default_config(p);
  // --max-candidates (exhaustive) is a cap: exactly the best 8, without the default.
  SweepOptions capped;
  capped.max_candidates = 8;
  EXPECT_EQ(sweep(line, capped), top(p, 8));
  // A top K that reaches the default measures it once, in its ranked place.
  const std::vector<KernelConfig> all = top(p, 100000);
  const auto at = std::find(all.begin(), all.end(), d);
  ASSERT_NE(at, all.end()) << "the default is not in the space";
  SweepOptions model;
  model.strategy = Strategy::kModel;
  model.top_k = int(at - all.begin()) + 1;
  const std::vector<KernelConfig> got = sweep(line, model);
  EXPECT_EQ(got, top(p, size_t(model.top_k)));
  EXPECT_EQ(std::count(got.begin(), got.end(), d), 1);
  // An exhaustive sweep and a top K past the space's size: every candidate once, in ranked order, nothing added.
  EXPECT_EQ(sweep(line, SweepOptions{}), all);
  SweepOptions uncut;
  uncut.strategy = Strategy::kModel;
  uncut.top_k = int(all.size()) + 5;
  EXPECT_EQ(sweep(line, uncut), all);
}

}  // namespace
}  // namespace dgt
