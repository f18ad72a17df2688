#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/protocol.hpp"
#include "bench/verify.hpp"

namespace dgt {
namespace {

TEST(SampleStats, PercentilesAndRobustError) {
  // 1..11: median 6, p10 = 2, p90 = 10; MAD = 3 -> sigma 4.4478; rse = 1.2533*4.4478/sqrt(11)/6.
  std::vector<double> v;
  for (int i = 11; i >= 1; --i) v.push_back(i);
  SampleStats s = sample_stats(v);
  EXPECT_DOUBLE_EQ(s.median, 6.0);
  EXPECT_DOUBLE_EQ(s.p10, 2.0);
  EXPECT_DOUBLE_EQ(s.p90, 10.0);
  EXPECT_NEAR(s.rse, 1.2533 * 1.4826 * 3.0 / std::sqrt(11.0) / 6.0, 1e-12);
  // Interpolation between order statistics: {1, 2, 3, 4}: median 2.5, p10 = 1.3.
  s = sample_stats({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.p10, 1.3, 1e-12);
  // One wild outlier barely moves the robust error.
  std::vector<double> steady(20, 100.0);
  steady[3] = 100.5;
  steady[7] = 99.5;
  SampleStats a = sample_stats(steady);
  steady[0] = 10000.0;
  SampleStats b = sample_stats(steady);
  EXPECT_DOUBLE_EQ(a.median, 100.0);
  EXPECT_DOUBLE_EQ(b.median, 100.0);
  EXPECT_DOUBLE_EQ(b.rse, a.rse);
  EXPECT_EQ(sample_stats({}).median, 0.0);
}

TEST(Protocol, JsonNamesTheFlush) {
  auto j = nlohmann::json::parse(MeasureProtocol::cold_l2_adaptive().to_json());
  EXPECT_EQ(j.at("name"), "cold-l2-v1");
  EXPECT_EQ(j.at("flush"), "write+read");
  EXPECT_EQ(j.at("min_samples"), 10);
}

// The sweep's timer and the engine share one protocol type; the JSON stored with every cold-l2-v1 trial is
// byte for byte what the sweep stored before (the DB keys winners by this protocol's name and resume compares
// nothing else, but exports and reports print the JSON).
TEST(Protocol, AdaptiveTimerJsonIsUnchanged) {
  EXPECT_EQ(MeasureProtocol::cold_l2_adaptive().to_json(),
            R"({"flush":"write+read","flush_factor_l2":2.0,"max_samples":300,"max_seconds":2.0,"min_samples":10,)"
            R"("name":"cold-l2-v1","statistic":"median","target_rse":0.01,"timer":"cudaEvent per launch","warmup":3})");
  EXPECT_EQ(MeasureProtocol::cold_l2_adaptive().name(), "cold-l2-v1");
  MeasureProtocol p = MeasureProtocol::cold_l2_adaptive();
  p.max_samples = 77;
  p.target_rse = 0.02;
  const MeasureProtocol q = MeasureProtocol::from_json(p.to_json());
  EXPECT_TRUE(q.adaptive);
  EXPECT_EQ(q.max_samples, 77);
  EXPECT_EQ(q.to_json(), p.to_json());
  p.min_samples = 100;  // more than max_samples
  EXPECT_THROW(p.validate(), Error);
}

// One flush size for every timer: flush_factor x L2, at least 64 MiB, a multiple of 16 bytes.
TEST(Protocol, L2FlushBytes) {
  EXPECT_EQ(l2_flush_bytes(MeasureProtocol::cold_l2(), 60 * 1024 * 1024 + 8), 120 * 1024 * 1024 + 16);
  EXPECT_EQ(l2_flush_bytes(MeasureProtocol::cold_l2_adaptive(), 4 * 1024 * 1024), 64 * 1024 * 1024);
  MeasureProtocol p = MeasureProtocol::cold_l2();
  p.flush_factor = 1.5;
  EXPECT_EQ(l2_flush_bytes(p, 50'000'001), 75'000'000);
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(Verify, JudgeThresholds) {
  CompareStatsHost st{};
  st.sum_sq = 2000.0;
  st.sum_xy = 1000.0 * (1 - 1e-6);  // diff = 1e-6
  st.max_abs_err_bits = bits(0.3f);
  st.max_abs_ref_bits = bits(100.0f);  // 0.003 < 1/128
  Verification v = judge(st, VerifyThresholds::for_accum(Accum::kPromote));
  EXPECT_TRUE(v.ok);
  EXPECT_NEAR(v.diff, 1e-6, 1e-12);
  EXPECT_NEAR(v.max_rel_err, 0.003, 1e-6);
  // diff above the promote limit fails, but passes the looser fast-accumulation limit.
  st.sum_xy = 1000.0 * (1 - 1e-4);
  EXPECT_FALSE(judge(st, VerifyThresholds::for_accum(Accum::kPromote)).ok);
  EXPECT_TRUE(judge(st, VerifyThresholds::for_accum(Accum::kFast)).ok);
  // Any NaN or any write outside D fails, whatever the metrics.
  st.sum_xy = 1000.0;
  st.nan_count = 1;
  EXPECT_FALSE(judge(st, VerifyThresholds::for_accum(Accum::kFast)).ok);
  st.nan_count = 0;
  st.pad_touched = 1;
  EXPECT_FALSE(judge(st, VerifyThresholds::for_accum(Accum::kFast)).ok);
  st.pad_touched = 0;
  st.max_abs_err_bits = bits(1.0f);  // 1% of max |ref|
  EXPECT_FALSE(judge(st, VerifyThresholds::for_accum(Accum::kPromote)).ok);
  EXPECT_TRUE(judge(st, VerifyThresholds::for_accum(Accum::kFast)).ok);
}

}  // namespace
}  // namespace dgt
