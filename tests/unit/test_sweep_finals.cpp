// The sweep's finals (tune/finals.hpp): which configs race, what is stored under cold-l2-v2, when finals run again,
// and that the loader's rule then runs the finals' winner and compares it with the cuBLASLt algorithm timed in the
// same rounds. A fake measurer stands in for the GPU: its one-at-a-time times rank A < B < C < D, its finals make B
// the fastest and cuBLASLt-tuned faster still, as the clock of a power-limited shape can. No GPU needed.
#include <gtest/gtest.h>

#include "db_fixture.hpp"
#include "temp_dir_test.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "db/tuning_db.hpp"
#include "loader/choice.hpp"
#include "problem/shapes_file.hpp"
#include "space/cost_model.hpp"
#include "space/search_space.hpp"
#include "tune/finals.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_loop.hpp"

namespace dgt {
namespace {

KernelConfig cfg(const std::string& key) { return KernelConfig::parse_key(key); }

TrialRecord trial(const std::string& key, double us, TrialStatus status = TrialStatus::kOk) {
  TrialRecord t = test::ok_trial(Problem::dense(4096, 4096, 4096), cfg(key), us);
  t.status = status;
  if (status != TrialStatus::kOk) t.timing.reset();
  return t;
}

const std::string kA = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1";
const std::string kB = "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1";
const std::string kC = "128x256x128_s3_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1";
const std::string kD = "128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1";

std::vector<std::string> keys(const std::vector<TrialRecord>& ts) {
  std::vector<std::string> out;
  for (const TrialRecord& t : ts) out.push_back(t.config.key());
  return out;
}

TEST(Finals, SelectTakesTheFastestOkTrialsWithinFivePercent) {
  const std::vector<TrialRecord> ts = {trial(kC, 104.0), trial(kD, 106.0), trial(kA, 100.0),
                                       trial("64x128x128_s4_wg1_sw128_c1x1_rm8_direct_sk1", 1.0, TrialStatus::kVerifyFailed),
                                       trial(kB, 100.0)};
  // Ties by config key (kA < kB), 106 > 1.05 x 100 is out, the failed trial never races.
  EXPECT_EQ(keys(select_finalists(ts, 4)), (std::vector<std::string>{kA, kB, kC}));
  EXPECT_EQ(keys(select_finalists(ts, 2)), (std::vector<std::string>{kA, kB}));
  EXPECT_EQ(keys(select_finalists(ts, 4, 1.10)), (std::vector<std::string>{kA, kB, kC, kD}));
  EXPECT_TRUE(select_finalists(ts, 0).empty());
  EXPECT_TRUE(select_finalists({trial(kA, 0, TrialStatus::kCompileError)}, 4).empty());
}

TEST(Finals, EarlierFinalsConfigsRaceAgainAsTheirSweepTrials) {
  std::vector<TrialRecord> finalists = {trial(kA, 100.0)};
  const std::vector<TrialRecord> sweep = {trial(kA, 100.0), trial(kB, 101.0), trial(kD, 120.0)};
  // kB and kD raced before (kD was within 5% of an older best); kC raced but has no sweep trial now; kA is listed.
  const std::vector<TrialRecord> earlier = {trial(kD, 97.0), trial(kC, 96.0), trial(kA, 98.0), trial(kB, 99.0)};
  add_earlier_finalists(finalists, sweep, earlier);
  ASSERT_EQ(keys(finalists), (std::vector<std::string>{kA, kD, kB}));
  EXPECT_DOUBLE_EQ(finalists[1].timing->median_us, 120.0);  // the sweep's record, not the finals'
}

TEST(Finals, ReplayNeedsAnOkTimedBaselineWithItsAlgorithm) {
  BaselineRecord b;
  b.status = TrialStatus::kOk;
  b.set_timing(Timing{});
  b.algo_data.assign(64, 7);
  EXPECT_TRUE(finals_can_replay(b));
  b.algo_data.resize(10);
  EXPECT_FALSE(finals_can_replay(b));
  b.algo_data.assign(64, 7);
  b.status = TrialStatus::kUnsupported;
  EXPECT_FALSE(finals_can_replay(b));
  EXPECT_EQ(finals_protocol(20).name(), "cold-l2-v2");
  EXPECT_EQ(finals_protocol(7).rounds, 7);
}

/// One-at-a-time times: the k-th config measured takes 100 + k us (so the cost model's order is the time order);
/// baselines: default 130 us, tuned 110 us, each with a 64-byte algorithm. Finals: the second-fastest config runs
/// 90 us, the others 100 + k, cuBLASLt-tuned 85 us, default 120 us.
class FinalsMeasurer final : public Measurer {
 public:
  int sm_count() const override { return 132; }
  std::string describe() const override { return "finals measurer"; }
  bool prepare(const EvaluatedSpec&) override { return true; }
  void begin_shape(const Problem& p) override {
    current = p;
    ++begins;
  }
  std::pair<BaselineRecord, BaselineRecord> baselines() override {
    return {baseline(kProviderCublasDefault, 130.0, 1), baseline(kProviderCublasTuned, 110.0, 2)};
  }
  TrialRecord measure(const EvaluatedSpec& spec) override {
    const double us = 100.0 + static_cast<double>(order.size());
    order[spec.spec.config.key()] = us;
    return test::ok_trial(current, spec.spec.config, us);
  }
  std::optional<FinalsResult> finals(const FinalsRequest& r) override {
    requests.push_back(r);
    if (refuse) return std::nullopt;
    FinalsResult out;
    const std::string json = finals_protocol(r.rounds).to_json();
    for (size_t i = 0; i < r.finalists.size(); ++i) {
      TrialRecord t = test::ok_trial(current, r.finalists[i].config, i == 1 ? 90.0 : order.at(r.finalists[i].config.key()));
      t.protocol = json;
      out.trials.push_back(t);
    }
    for (const BaselineRecord& b : r.baselines) {
      BaselineRecord x = baseline(b.provider, b.provider == kProviderCublasTuned ? 85.0 : 120.0, b.algo_data.at(0));
      x.protocol = json;
      out.baselines.push_back(x);
    }
    return out;
  }
  BaselineRecord baseline(const std::string& provider, double us, uint8_t fill) const {
    BaselineRecord b;
    b.problem = current;
    b.provider = provider;
    b.status = TrialStatus::kOk;
    Timing t;
    t.median_us = t.p10_us = t.p90_us = us;
    t.samples = 10;
    b.set_timing(t);
    b.algo = provider + " algo";
    b.algo_data.assign(64, fill);
    return b;
  }
  Problem current;
  std::map<std::string, double> order;
  std::vector<FinalsRequest> requests;
  int begins = 0;
  bool refuse = false;
};

class SweepFinals : public test::TempDirTest {
 protected:
  void SetUp() override {
    test::TempDirTest::SetUp();
    db_ = std::make_unique<TuningDb>(path("f.db"));
    scope_ = db_->upsert_device(test::h200_fingerprint("finals"));
  }
  std::vector<ShapeOutcome> sweep(int top_k, int finals = 4) {
    SweepOptions o;
    o.strategy = Strategy::kModel;
    o.top_k = top_k;
    o.finals = finals;
    return run_sweep(*db_, scope_, m_, shapes_, o);
  }
  const std::vector<ShapeEntry> shapes_ = parse_shapes("4096 4096 4096\n", "s.txt");
  const Problem& p() const { return shapes_.at(0).problem; }
  std::unique_ptr<TuningDb> db_;
  DeviceScope scope_;
  FinalsMeasurer m_;
};

TEST_F(SweepFinals, StoresTheRaceUnderColdL2V2AndReportsItsWinner) {
  const auto out = sweep(4);
  ASSERT_EQ(m_.requests.size(), 1u);
  const FinalsRequest& r = m_.requests[0];
  EXPECT_EQ(r.rounds, 20);
  // One at a time the configs ran 100, 101, ...: the 4 best are within 5%, all race; both baselines have algorithms.
  ASSERT_EQ(r.finalists.size(), 4u);
  EXPECT_DOUBLE_EQ(r.finalists[0].timing->median_us, 100.0);
  ASSERT_EQ(r.baselines.size(), 2u);
  EXPECT_EQ(r.baselines[0].provider, kProviderCublasDefault);
  EXPECT_EQ(r.baselines[1].provider, kProviderCublasTuned);

  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].finalists, 4);
  EXPECT_EQ(out[0].protocol, "cold-l2-v2");
  ASSERT_TRUE(out[0].winner && out[0].winner->trial.timing);
  const std::string second = r.finalists[1].config.key();
  EXPECT_EQ(out[0].winner->trial.config.key(), second);  // 90 us in the finals
  EXPECT_DOUBLE_EQ(out[0].winner->trial.timing->median_us, 90.0);
  ASSERT_TRUE(out[0].winner->cublas_tuned && out[0].winner->cublas_tuned->timing);
  EXPECT_DOUBLE_EQ(out[0].winner->cublas_tuned->timing->median_us, 85.0);
  // The sweep's own winner is untouched under cold-l2-v1.
  const auto v1 = db_->winner(scope_, p(), kSweepTimerProtocol);
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->trial.config.key(), r.finalists[0].config.key());
  EXPECT_EQ(db_->trials(scope_, p(), "cold-l2-v2").size(), 4u);

  // The loader's rule runs the finals' winner, and its cuBLASLt rival is the algorithm of the same rounds, which won.
  const std::string hash = "finals";
  const auto w = choose_stored_winner(db_->environment_winners(scope_.device_id, p()), p(), hash, "", "cold-l2",
                                      [](const KernelConfig&, const Problem&) { return true; });
  ASSERT_TRUE(w);
  EXPECT_EQ(w->source, "db");
  EXPECT_EQ(w->protocol_name, "cold-l2-v2");
  EXPECT_EQ(w->config.key(), second);
  const auto algos = db_->cublaslt_winners(scope_.device_id, p());
  const StoredCublasLtAlgo* rival = cublaslt_rival(algos, *w);
  ASSERT_NE(rival, nullptr);
  EXPECT_DOUBLE_EQ(rival->median_us, 85.0);
  EXPECT_TRUE(stored_algo_beats_kernel(p(), w->tuned_us, rival->median_us, rival->algo_data.size()));
}

TEST_F(SweepFinals, RunAgainOnlyWhenSomethingNewWasMeasuredAndRaceEarlierFinalistsToo) {
  sweep(4);
  ASSERT_EQ(m_.requests.size(), 1u);
  const int begins = m_.begins;
  const auto again = sweep(4);  // nothing new: no finals, no inputs made, the stored finals reported
  EXPECT_EQ(m_.requests.size(), 1u);
  EXPECT_EQ(m_.begins, begins);
  EXPECT_EQ(again.at(0).finalists, 0);
  EXPECT_EQ(again.at(0).protocol, "cold-l2-v2");
  ASSERT_TRUE(again.at(0).winner);
  EXPECT_DOUBLE_EQ(again.at(0).winner->trial.timing->median_us, 90.0);

  // A wider sweep measures new configs (104 us and up): the finals run again with the 4 best of the sweep, which are
  // the same four, so nothing is added; with --finals 2 the earlier four still race, the two best listed first.
  sweep(8, 2);
  ASSERT_EQ(m_.requests.size(), 2u);
  const auto& r = m_.requests[1];
  ASSERT_EQ(r.finalists.size(), 4u);
  EXPECT_EQ(keys(r.finalists).at(0), keys(m_.requests[0].finalists).at(0));
  EXPECT_EQ(keys(r.finalists).at(1), keys(m_.requests[0].finalists).at(1));
}

TEST_F(SweepFinals, NoFinalsWhenOffOrRefused) {
  auto out = sweep(4, 0);
  EXPECT_TRUE(m_.requests.empty());
  EXPECT_EQ(out.at(0).protocol, kSweepTimerProtocol);
  EXPECT_EQ(out.at(0).finalists, 0);
  EXPECT_TRUE(db_->trials(scope_, p(), "cold-l2-v2").empty());

  m_.refuse = true;  // the measurer could not run them: the sweep keeps its one-at-a-time winner
  out = sweep(4);
  EXPECT_EQ(m_.requests.size(), 1u);
  EXPECT_EQ(out.at(0).protocol, kSweepTimerProtocol);
  ASSERT_TRUE(out.at(0).winner);
  EXPECT_DOUBLE_EQ(out.at(0).winner->trial.timing->median_us, 100.0);
}

}  // namespace
}  // namespace dgt
