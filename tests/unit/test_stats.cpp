// Known-answer tests of stats/stats (compare's and the gate's statistics).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "stats/stats.hpp"
#include "core/error.hpp"

namespace dgt::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Reproducible N(0,1) draws on every standard library: mt19937 is fully specified, Box-Muller here.
std::vector<double> normal_noise(std::size_t n, double sigma, unsigned seed) {
  std::mt19937 gen(seed);
  auto uni = [&] { return (static_cast<double>(gen()) + 0.5) / 4294967296.0; };
  std::vector<double> v;
  while (v.size() < n) {
    double u1 = uni(), u2 = uni();
    double r = std::sqrt(-2.0 * std::log(u1));
    v.push_back(sigma * r * std::cos(2 * std::numbers::pi * u2));
    if (v.size() < n) v.push_back(sigma * r * std::sin(2 * std::numbers::pi * u2));
  }
  return v;
}

template <class F>
void expect_error(F&& f, ErrorKind kind) {
  try {
    f();
    ADD_FAILURE() << "no dgt::Error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
  }
}

// ---- helpers ------------------------------------------------------------------------------------

TEST(StatsHelpers, Median) {
  EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{7}), 7.0);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{1, 2, 3, 1e9}), 2.5);
  expect_error([] { median(std::vector<double>{}); }, ErrorKind::kInvalid);
  expect_error([] { median(std::vector<double>{1, std::nan("")}); }, ErrorKind::kInvalid);
}

TEST(StatsHelpers, QuantileDefinition7) {
  // {1,2,3,4}: h = 3p. p10: h = 0.3 -> 1.3; p90: h = 2.7 -> 3.7; p50 = 2.5.
  std::vector<double> v{4, 1, 3, 2};
  EXPECT_NEAR(quantile(v, 0.1), 1.3, 1e-12);
  EXPECT_NEAR(quantile(v, 0.9), 3.7, 1e-12);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(v, 1.0), 4.0);
  // 1..11: p10 = 2, p90 = 10 exactly (h = 1 and 9).
  std::vector<double> w;
  for (int i = 11; i >= 1; --i) w.push_back(i);
  EXPECT_DOUBLE_EQ(quantile(w, 0.1), 2.0);
  EXPECT_DOUBLE_EQ(quantile(w, 0.9), 10.0);
  EXPECT_DOUBLE_EQ(quantile(std::vector<double>{5}, 0.9), 5.0);
  expect_error([&] { quantile(v, -0.01); }, ErrorKind::kUsage);
  expect_error([&] { quantile(v, 1.01); }, ErrorKind::kUsage);
  expect_error([] { quantile(std::vector<double>{}, 0.5); }, ErrorKind::kInvalid);
}

TEST(StatsHelpers, GeometricMean) {
  EXPECT_NEAR(geometric_mean(std::vector<double>{1, 4, 16}), 4.0, 1e-12);
  EXPECT_NEAR(geometric_mean(std::vector<double>{2, 0.5}), 1.0, 1e-15);
  EXPECT_NEAR(geometric_mean(std::vector<double>{1.1, 1.1, 1.1}), 1.1, 1e-15);
  expect_error([] { geometric_mean(std::vector<double>{1, 0}); }, ErrorKind::kInvalid);
  expect_error([] { geometric_mean(std::vector<double>{1, -2}); }, ErrorKind::kInvalid);
  expect_error([] { geometric_mean(std::vector<double>{1, kInf}); }, ErrorKind::kInvalid);
  expect_error([] { geometric_mean(std::vector<double>{}); }, ErrorKind::kInvalid);
}

TEST(StatsHelpers, LogRatiosValidateTimes) {
  auto r = log_ratios(std::vector<double>{2.0, 1.0}, std::vector<double>{1.0, 2.0});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0], std::log(2.0), 1e-15);
  EXPECT_NEAR(r[1], -std::log(2.0), 1e-15);
  expect_error([] { log_ratios(std::vector<double>{1, 2}, std::vector<double>{1}); }, ErrorKind::kInvalid);
  expect_error([] { log_ratios(std::vector<double>{}, std::vector<double>{}); }, ErrorKind::kInvalid);
  expect_error([] { log_ratios(std::vector<double>{0.0}, std::vector<double>{1}); }, ErrorKind::kInvalid);
  expect_error([] { log_ratios(std::vector<double>{1.0}, std::vector<double>{-1}); }, ErrorKind::kInvalid);
  expect_error([] { log_ratios(std::vector<double>{std::nan("")}, std::vector<double>{1}); }, ErrorKind::kInvalid);
  expect_error([] { log_ratios(std::vector<double>{kInf}, std::vector<double>{1}); }, ErrorKind::kInvalid);
}

// ---- distributions ------------------------------------------------------------------------------

TEST(StatsBinomial, ExactTails) {
  // P(B(20,1/2) <= 5) = (1+20+190+1140+4845+15504) / 2^20 = 21700 / 1048576.
  EXPECT_DOUBLE_EQ(binomial_cdf(5, 20, 0.5), 0.020694732666015625);
  EXPECT_DOUBLE_EQ(binomial_cdf(6, 20, 0.5), 60460.0 / 1048576.0);
  EXPECT_DOUBLE_EQ(binomial_cdf(0, 6, 0.5), 1.0 / 64.0);
  // P(B(10,0.3) <= 2) = 0.7^10 + 10*0.3*0.7^9 + 45*0.09*0.7^8 = 0.3827827864.
  EXPECT_NEAR(binomial_cdf(2, 10, 0.3), 0.3827827864, 1e-10);
  EXPECT_EQ(binomial_cdf(-1, 10, 0.3), 0.0);
  EXPECT_EQ(binomial_cdf(10, 10, 0.3), 1.0);
  // Large n (lgamma branch): symmetry P(B <= 999) + P(B <= 1000) = 1 for n = 2000, p = 1/2.
  EXPECT_NEAR(binomial_cdf(999, 2000, 0.5) + binomial_cdf(1000, 2000, 0.5), 1.0, 1e-11);
  expect_error([] { binomial_cdf(1, 10, 1.5); }, ErrorKind::kUsage);
}

TEST(StatsBinomial, SignCriticalValues) {
  EXPECT_EQ(sign_critical_value(20, 0.05), 5);  // 0.0207 <= 0.025 < P(B <= 6) = 0.0577
  EXPECT_EQ(sign_critical_value(10, 0.05), 1);  // 11/1024 <= 0.025 < 56/1024
  EXPECT_EQ(sign_critical_value(6, 0.05), 0);   // 1/64
  EXPECT_EQ(sign_critical_value(5, 0.05), -1);  // 1/32 > 0.025: no finite interval
  EXPECT_EQ(sign_critical_value(20, 0.01), 3);  // P(B<=3) = 1351/2^20 = 0.00129, P(B<=4) = 0.0059 > 0.005
  expect_error([] { sign_critical_value(20, 0.0); }, ErrorKind::kUsage);
  expect_error([] { sign_critical_value(0, 0.05); }, ErrorKind::kInvalid);
}

TEST(StatsWilcoxon, ExactNullDistribution) {
  // n = 3: subsets of {1,2,3} by sum 0..6: counts 1,1,1,2,1,1,1 over 8.
  const double want3[] = {1, 2, 3, 5, 6, 7, 8};
  for (int t = 0; t <= 6; ++t) EXPECT_DOUBLE_EQ(wilcoxon_cdf(t, 3), want3[t] / 8.0) << t;
  // n = 12 against brute-force enumeration of the 2^12 sign patterns.
  const int n = 12;
  std::vector<int> count(n * (n + 1) / 2 + 1, 0);
  for (int mask = 0; mask < (1 << n); ++mask) {
    int s = 0;
    for (int k = 0; k < n; ++k)
      if (mask >> k & 1) s += k + 1;
    ++count[s];
  }
  double acc = 0;
  for (int t = 0; t < static_cast<int>(count.size()); ++t) {
    acc += count[t] / 4096.0;
    EXPECT_NEAR(wilcoxon_cdf(t, n), acc, 1e-15) << t;
  }
  EXPECT_EQ(wilcoxon_cdf(-1, 5), 0.0);
  EXPECT_EQ(wilcoxon_cdf(15, 5), 1.0);
}

TEST(StatsWilcoxon, PublishedCriticalValues) {
  // Two-sided alpha = 0.05 table of the signed-rank test (e.g. HW Table A.4 / any standard table).
  EXPECT_EQ(wilcoxon_critical_value(20, 0.05), 52);
  EXPECT_EQ(wilcoxon_critical_value(10, 0.05), 8);
  EXPECT_EQ(wilcoxon_critical_value(30, 0.05), 137);
  EXPECT_EQ(wilcoxon_critical_value(6, 0.05), 0);
  EXPECT_EQ(wilcoxon_critical_value(5, 0.05), -1);
  // Two-sided 0.01: n = 20 -> 37.
  EXPECT_EQ(wilcoxon_critical_value(20, 0.01), 37);
  // The defining inequality around the critical value.
  EXPECT_LE(wilcoxon_cdf(52, 20), 0.025);
  EXPECT_GT(wilcoxon_cdf(53, 20), 0.025);
  // Above the exact limit: normal approximation, still monotone and centred.
  EXPECT_NEAR(wilcoxon_cdf(250 * 251 / 4, 250), 0.5, 0.01);
  EXPECT_GT(wilcoxon_critical_value(250, 0.05), 0);
}

TEST(StatsMannWhitney, ExactNullDistribution) {
  // n1 = n2 = 2: U in 0..4 with counts 1,1,2,1,1 over 6.
  const double want[] = {1, 2, 4, 5, 6};
  for (int u = 0; u <= 4; ++u) EXPECT_NEAR(mann_whitney_cdf(u, 2, 2), want[u] / 6.0, 1e-15) << u;
  // n1 = 5, n2 = 6 against enumeration of all C(11,5) = 462 rank assignments.
  const int n1 = 5, n2 = 6, N = n1 + n2;
  std::vector<int> count(n1 * n2 + 1, 0);
  int total = 0;
  for (int mask = 0; mask < (1 << N); ++mask) {
    if (__builtin_popcount(mask) != n1) continue;
    ++total;
    int u = 0, seen_first = 0;  // U = #{(i,j): second-sample item j ranks above first-sample item i}
    for (int k = 0; k < N; ++k) {
      if (mask >> k & 1)
        ++seen_first;
      else
        u += seen_first;
    }
    ++count[u];
  }
  ASSERT_EQ(total, 462);
  double acc = 0;
  for (int u = 0; u <= n1 * n2; ++u) {
    acc += count[u] / 462.0;
    EXPECT_NEAR(mann_whitney_cdf(u, n1, n2), acc, 1e-14) << u;
    EXPECT_NEAR(mann_whitney_cdf(u, n2, n1), acc, 1e-14) << u;
  }
}

TEST(StatsMannWhitney, PublishedCriticalValues) {
  // Two-sided alpha = 0.05 table of the Mann-Whitney U test.
  EXPECT_EQ(mann_whitney_critical_value(10, 10, 0.05), 23);
  EXPECT_EQ(mann_whitney_critical_value(20, 20, 0.05), 127);
  EXPECT_EQ(mann_whitney_critical_value(5, 5, 0.05), 2);
  EXPECT_EQ(mann_whitney_critical_value(8, 12, 0.05), 22);
  EXPECT_EQ(mann_whitney_critical_value(2, 2, 0.05), -1);
  EXPECT_LE(mann_whitney_cdf(23, 10, 10), 0.025);
  EXPECT_GT(mann_whitney_cdf(24, 10, 10), 0.025);
  // 200 x 200 (largest exact case): symmetric and normalised.
  EXPECT_NEAR(mann_whitney_cdf(19999, 200, 200) + mann_whitney_cdf(20000, 200, 200), 1.0, 1e-12);
  expect_error([] { mann_whitney_critical_value(10, 10, 1.0); }, ErrorKind::kUsage);
  expect_error([] { mann_whitney_cdf(1, 0, 10); }, ErrorKind::kInvalid);
}

// ---- one-sample intervals -----------------------------------------------------------------------

TEST(StatsIntervals, SignIntervalOrderStatistics) {
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  Interval s = sign_interval(v, 0.95);
  EXPECT_EQ(s.lo, 6.0);
  EXPECT_EQ(s.hi, 15.0);
  EXPECT_DOUBLE_EQ(s.coverage, 1.0 - 2.0 * 0.020694732666015625);
  EXPECT_TRUE(s.exact);
  // n = 5 is too small for 95%.
  Interval inf = sign_interval(std::vector<double>{1, 2, 3, 4, 5}, 0.95);
  EXPECT_EQ(inf.lo, -kInf);
  EXPECT_EQ(inf.hi, kInf);
  expect_error([&] { sign_interval(v, 0.0); }, ErrorKind::kUsage);
  expect_error([&] { sign_interval(v, 1.0); }, ErrorKind::kUsage);
  expect_error([] { sign_interval(std::vector<double>{}, 0.95); }, ErrorKind::kInvalid);
}

TEST(StatsIntervals, WilcoxonIntervalWalshAverages) {
  // n = 6 at 0.95: t = 0, interval = [smallest, largest Walsh average] = [min, max], coverage 62/64.
  Interval w6 = wilcoxon_interval(std::vector<double>{3, 1, 4, 1.5, 9, 2.6}, 0.95);
  EXPECT_EQ(w6.lo, 1.0);
  EXPECT_EQ(w6.hi, 9.0);
  EXPECT_DOUBLE_EQ(w6.coverage, 1.0 - 2.0 / 64.0);
  // n = 20: the 53rd and 158th of the 210 sorted Walsh averages (t = 52).
  std::vector<double> v;
  for (int i = 1; i <= 20; ++i) v.push_back(i * i * 0.01);
  std::vector<double> walsh;
  for (int i = 0; i < 20; ++i)
    for (int j = i; j < 20; ++j) walsh.push_back(0.5 * (v[i] + v[j]));
  std::sort(walsh.begin(), walsh.end());
  Interval w = wilcoxon_interval(v, 0.95);
  EXPECT_EQ(w.lo, walsh[52]);
  EXPECT_EQ(w.hi, walsh[157]);
  EXPECT_NEAR(w.coverage, 1.0 - 2.0 * wilcoxon_cdf(52, 20), 1e-15);
  EXPECT_GE(w.coverage, 0.95);
  EXPECT_EQ(wilcoxon_interval(std::vector<double>{1, 2, 3, 4, 5}, 0.95).lo, -kInf);
}

TEST(StatsIntervals, HodgesLehmann) {
  // Walsh averages of {1,2,3,4,100} sorted: 1 1.5 2 2 2.5 2.5 3 [3] 3.5 4 50.5 51 51.5 52 100.
  EXPECT_DOUBLE_EQ(hodges_lehmann(std::vector<double>{1, 2, 3, 4, 100}), 3.0);
  EXPECT_DOUBLE_EQ(hodges_lehmann(std::vector<double>{5}), 5.0);
  // Two-sample: {1,2,3} vs {11,12,13}: differences 8..12, median 10.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(std::vector<double>{1, 2, 3}, std::vector<double>{11, 12, 13}), 10.0);
  expect_error([] { hodges_lehmann(std::vector<double>{}); }, ErrorKind::kInvalid);
  expect_error([] { hodges_lehmann_shift(std::vector<double>{1}, std::vector<double>{}); }, ErrorKind::kInvalid);
}

TEST(StatsIntervals, ShiftIntervalMoses) {
  // n1 = n2 = 3: P(U <= 0) = 1/20 = 0.05, so at 0.90 u = 0 and the interval is [min D, max D] = [8, 12].
  std::vector<double> a{1, 2, 3}, b{11, 12, 13};
  Interval s = shift_interval(a, b, 0.90);
  EXPECT_EQ(s.lo, 8.0);
  EXPECT_EQ(s.hi, 12.0);
  EXPECT_NEAR(s.coverage, 0.90, 1e-12);
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(shift_interval(a, b, 0.95).lo, -kInf);  // too small for 95%
  expect_error([&] { shift_interval(a, b, 1.2); }, ErrorKind::kUsage);
}

// ---- paired comparison: one test per verdict ----------------------------------------------------

TEST(StatsPaired, AllRatiosEqualFaster) {
  // X takes 1.0, Y takes 1.10 in every round: speedup of X over Y = y/x = 1.10 in all 20 rounds.
  std::vector<double> x(20, 1.0), y(20, 1.10);
  for (auto method : {IntervalMethod::kSign, IntervalMethod::kWilcoxon}) {
    PairedComparison c = compare_paired(x, y, {.method = method});
    EXPECT_EQ(c.verdict, Verdict::kFaster) << to_string(method);
    EXPECT_EQ(c.rounds, 20u);
    EXPECT_DOUBLE_EQ(c.speedup_x_over_y(), 1.10);
    EXPECT_DOUBLE_EQ(c.time_ratio_x_over_y(), 1.0 / 1.10);
    EXPECT_DOUBLE_EQ(c.speedup_x_over_y_lo(), 1.10);
    EXPECT_DOUBLE_EQ(c.speedup_x_over_y_hi(), 1.10);
    EXPECT_DOUBLE_EQ(c.median_log_ratio, std::log(1.0 / 1.10));
    EXPECT_DOUBLE_EQ(c.hodges_lehmann_log_ratio, std::log(1.0 / 1.10));
  }
  EXPECT_STREQ(to_string(Verdict::kFaster), "faster");
}

TEST(StatsPaired, SwappedSidesSlower) {
  std::vector<double> x(20, 1.0), y(20, 1.10);
  PairedComparison c = compare_paired(y, x);
  EXPECT_EQ(c.verdict, Verdict::kSlower);
  EXPECT_DOUBLE_EQ(c.speedup_x_over_y(), 1.0 / 1.10);
  EXPECT_DOUBLE_EQ(c.time_ratio_x_over_y(), 1.10);
  EXPECT_EQ(c.method, IntervalMethod::kSign);  // the default
  EXPECT_EQ(c.interval.lo, c.sign_interval.lo);
  EXPECT_STREQ(to_string(Verdict::kSlower), "slower");
}

TEST(StatsPaired, SymmetricSmallNoiseEquivalent) {
  // Ratios 1 + 0.005 * k/10, k = -10..10 except 0 (20 rounds): symmetric within +-0.5%.
  std::vector<double> x, y;
  for (int k = -10; k <= 10; ++k) {
    if (k == 0) continue;
    x.push_back(100.0 * (1.0 + 0.005 * k / 10.0));
    y.push_back(100.0);
  }
  for (auto method : {IntervalMethod::kSign, IntervalMethod::kWilcoxon}) {
    PairedComparison c = compare_paired(x, y, {.method = method});
    EXPECT_EQ(c.verdict, Verdict::kEquivalent) << to_string(method);
    EXPECT_LT(c.interval.lo, 0.0);
    EXPECT_GT(c.interval.hi, 0.0);
    EXPECT_NEAR(c.speedup_x_over_y(), 1.0, 0.001);
  }
  EXPECT_STREQ(to_string(Verdict::kEquivalent), "equivalent");
}

TEST(StatsPaired, SignificantButInsideMarginIsEquivalent) {
  // X 1% faster in every round: the interval excludes 0, but lies inside +-2%.
  std::vector<double> x(20, 1.0), y(20, 1.01);
  EXPECT_EQ(compare_paired(x, y).verdict, Verdict::kEquivalent);
  // With no margin it is "faster".
  EXPECT_EQ(compare_paired(x, y, {.margin = 0.0}).verdict, Verdict::kFaster);
}

TEST(StatsPaired, MarginIsClosedInLogSpace) {
  // Every log time ratio = ln(1.02) = delta: the interval touches the margin -> equivalent.
  std::vector<double> r(20, std::log1p(0.02));
  PairedComparison c = compare_paired_log_ratios(r);
  EXPECT_DOUBLE_EQ(c.log_margin, std::log1p(0.02));
  EXPECT_EQ(c.verdict, Verdict::kEquivalent);
  EXPECT_EQ(compare_paired_log_ratios(r, {.margin = 0.019}).verdict, Verdict::kSlower);
  // Mirror image: ln(1/1.02) = -delta is inside too (the margin is symmetric in log space).
  std::vector<double> m(20, -std::log1p(0.02));
  EXPECT_EQ(compare_paired_log_ratios(m).verdict, Verdict::kEquivalent);
}

TEST(StatsPaired, WideNoiseInconclusive) {
  // Ratios 1 + 0.10 * k/10, k = -10..10 except 0: symmetric +-10% around 1.
  std::vector<double> x, y;
  for (int k = -10; k <= 10; ++k) {
    if (k == 0) continue;
    x.push_back(1.0 + 0.10 * k / 10.0);
    y.push_back(1.0);
  }
  for (auto method : {IntervalMethod::kSign, IntervalMethod::kWilcoxon})
    EXPECT_EQ(compare_paired(x, y, {.method = method}).verdict, Verdict::kInconclusive) << to_string(method);
  EXPECT_STREQ(to_string(Verdict::kInconclusive), "inconclusive");
}

TEST(StatsPaired, TooFewRoundsInconclusive) {
  std::vector<double> x(5, 1.0), y(5, 1.10);
  PairedComparison c = compare_paired(x, y);
  EXPECT_EQ(c.verdict, Verdict::kInconclusive);
  EXPECT_EQ(c.interval.lo, -kInf);
  EXPECT_EQ(c.speedup_x_over_y_lo(), 0.0);
  EXPECT_EQ(c.speedup_x_over_y_hi(), kInf);
  // Six rounds are enough at 95%, not at 99%.
  std::vector<double> x6(6, 1.0), y6(6, 1.10);
  EXPECT_EQ(compare_paired(x6, y6).verdict, Verdict::kFaster);
  EXPECT_EQ(compare_paired(x6, y6, {.confidence = 0.99}).verdict, Verdict::kInconclusive);
}

TEST(StatsPaired, OneHugeOutlierDoesNotFlip) {
  // X 10% faster with +-0.5% noise; in one round X is hit by a 100x stall.
  auto noise = normal_noise(20, 0.0025, 7);
  std::vector<double> x(20), y(20, 1.0);
  for (int i = 0; i < 20; ++i) x[i] = std::exp(std::log(1.0 / 1.10) + noise[i]);
  x[4] *= 100.0;
  for (auto method : {IntervalMethod::kSign, IntervalMethod::kWilcoxon}) {
    PairedComparison c = compare_paired(x, y, {.method = method});
    EXPECT_EQ(c.verdict, Verdict::kFaster) << to_string(method);
    EXPECT_NEAR(c.speedup_x_over_y(), 1.10, 0.01);
  }
  // Equivalent sides, one 100x stall of Y: still equivalent.
  std::vector<double> a(20), b(20, 1.0);
  for (int i = 0; i < 20; ++i) a[i] = std::exp(noise[i]);
  b[11] *= 100.0;
  for (auto method : {IntervalMethod::kSign, IntervalMethod::kWilcoxon})
    EXPECT_EQ(compare_paired(a, b, {.method = method}).verdict, Verdict::kEquivalent) << to_string(method);
}

TEST(StatsPaired, WilcoxonTighterWithSymmetricNoise) {
  auto noise = normal_noise(20, 0.01, 3);
  PairedComparison c = compare_paired_log_ratios(noise);
  EXPECT_LT(c.wilcoxon_interval.hi - c.wilcoxon_interval.lo, c.sign_interval.hi - c.sign_interval.lo);
  EXPECT_LE(c.sign_interval.lo, c.median_log_ratio);
  EXPECT_GE(c.sign_interval.hi, c.median_log_ratio);
  EXPECT_LE(c.wilcoxon_interval.lo, c.hodges_lehmann_log_ratio);
  EXPECT_GE(c.wilcoxon_interval.hi, c.hodges_lehmann_log_ratio);
  PairedComparison w = compare_paired_log_ratios(noise, {.method = IntervalMethod::kWilcoxon});
  EXPECT_EQ(w.estimate_log, w.hodges_lehmann_log_ratio);
  EXPECT_EQ(w.interval.lo, w.wilcoxon_interval.lo);
}

TEST(StatsPaired, InputsValidated) {
  std::vector<double> x(20, 1.0), y(20, 1.1), shorter(19, 1.0);
  expect_error([&] { compare_paired(x, shorter); }, ErrorKind::kInvalid);
  expect_error([] { compare_paired(std::vector<double>{}, std::vector<double>{}); }, ErrorKind::kInvalid);
  std::vector<double> bad = x;
  bad[3] = 0.0;
  expect_error([&] { compare_paired(bad, y); }, ErrorKind::kInvalid);
  bad[3] = -1.0;
  expect_error([&] { compare_paired(y, bad); }, ErrorKind::kInvalid);
  expect_error([&] { compare_paired(x, y, {.confidence = 0.0}); }, ErrorKind::kUsage);
  expect_error([&] { compare_paired(x, y, {.confidence = 1.0}); }, ErrorKind::kUsage);
  expect_error([&] { compare_paired(x, y, {.confidence = 95}); }, ErrorKind::kUsage);
  expect_error([&] { compare_paired(x, y, {.margin = -0.01}); }, ErrorKind::kUsage);
  expect_error([] { compare_paired_log_ratios(std::vector<double>{0.1, std::nan("")}); }, ErrorKind::kInvalid);
}

// ---- gate ---------------------------------------------------------------------------------------

// Log-ratios ln(dgtune/cuBLASLt) of 20 rounds around `level` with sigma-noise.
std::vector<double> rounds(double level, double sigma, unsigned seed, std::size_t n = 20) {
  auto v = normal_noise(n, sigma, seed);
  for (auto& x : v) x += std::log(level);
  return v;
}

TEST(StatsGate, DetectsTenPercentSlowdown) {
  auto base = rounds(0.95, 0.01, 11), now = rounds(0.95 * 1.10, 0.01, 12);
  GateResult g = gate_test(base, now);
  EXPECT_EQ(g.verdict, GateVerdict::kRegression);
  EXPECT_TRUE(g.exact);
  EXPECT_NEAR(g.slowdown(), 0.10, 0.01);
  EXPECT_GT(g.slowdown_lower_bound(), 0.05);
  EXPECT_GT(g.lower_bound_log, g.threshold_log);
  EXPECT_LT(g.p_value, 0.05);
  EXPECT_GE(g.lower_bound_coverage, 0.95);
  EXPECT_LE(g.interval.lo, g.shift_log);
  EXPECT_GE(g.interval.hi, g.shift_log);
  EXPECT_NEAR(g.threshold_log, std::log(1.05), 1e-15);
  EXPECT_EQ(g.baseline_rounds, 20u);
  EXPECT_STREQ(to_string(g.verdict), "regression");
  // Normal approximation agrees.
  EXPECT_EQ(gate_test(base, now, {.method = ShiftMethod::kNormal}).verdict, GateVerdict::kRegression);
}

TEST(StatsGate, PassesHalfPercentSlowdownAndSpeedup) {
  auto base = rounds(0.95, 0.01, 21);
  GateResult g = gate_test(base, rounds(0.95 * 1.005, 0.01, 22));
  EXPECT_EQ(g.verdict, GateVerdict::kPass);
  EXPECT_LT(g.lower_bound_log, g.threshold_log);
  EXPECT_GT(g.p_value, 0.05);
  EXPECT_STREQ(to_string(g.verdict), "pass");
  EXPECT_EQ(gate_test(base, rounds(0.95 / 1.10, 0.01, 23)).verdict, GateVerdict::kPass);
  // A 10% slowdown is a pass with a 15% threshold.
  EXPECT_EQ(gate_test(base, rounds(0.95 * 1.10, 0.01, 24), {.threshold = 0.15}).verdict, GateVerdict::kPass);
}

TEST(StatsGate, PValueAndBoundAgree) {
  auto base = rounds(1.0, 0.01, 31);
  for (int k = 0; k <= 40; ++k) {
    const double shift = 1.0 + 0.0025 * k;  // 0% .. 10%
    for (auto method : {ShiftMethod::kExact, ShiftMethod::kNormal}) {
      GateResult g = gate_test(base, rounds(shift, 0.01, 100 + k), {.method = method});
      EXPECT_EQ(g.verdict == GateVerdict::kRegression, g.lower_bound_log > g.threshold_log) << shift;
      EXPECT_EQ(g.verdict == GateVerdict::kRegression, g.p_value <= 0.05) << shift;
    }
  }
}

TEST(StatsGate, TiesUseTieCorrectedNormal) {
  // Timer resolution makes equal log-ratios: round to 0.002.
  auto q = [](std::vector<double> v) {
    for (auto& x : v) x = std::round(x / 0.002) * 0.002;
    return v;
  };
  auto base = q(rounds(1.0, 0.01, 41)), now = q(rounds(1.10, 0.01, 42));
  GateResult g = gate_test(base, now);
  EXPECT_FALSE(g.exact);
  EXPECT_EQ(g.verdict, GateVerdict::kRegression);
  // Each side constant (all tied): the variance stays positive and the shift is exact.
  GateResult c = gate_test(std::vector<double>(20, 0.0), std::vector<double>(20, std::log(1.10)));
  EXPECT_FALSE(c.exact);
  EXPECT_DOUBLE_EQ(c.shift_log, std::log(1.10));
  EXPECT_EQ(c.verdict, GateVerdict::kRegression);
  GateResult z = gate_test(std::vector<double>(20, 0.0), std::vector<double>(20, std::log(1.04)));
  EXPECT_EQ(z.verdict, GateVerdict::kPass);
}

TEST(StatsGate, TooFewRoundsPass) {
  GateResult g = gate_test(std::vector<double>{0.0, 0.001}, std::vector<double>{0.5, 0.501});
  EXPECT_EQ(g.lower_bound_log, -kInf);
  EXPECT_EQ(g.slowdown_lower_bound(), -1.0);
  EXPECT_EQ(g.verdict, GateVerdict::kPass);
}

TEST(StatsGate, InputsValidated) {
  auto base = rounds(1.0, 0.01, 51);
  expect_error([&] { gate_test(base, std::vector<double>{}); }, ErrorKind::kInvalid);
  expect_error([&] { gate_test(std::vector<double>{}, base); }, ErrorKind::kInvalid);
  expect_error([&] { gate_test(base, std::vector<double>{0.1, kInf}); }, ErrorKind::kInvalid);
  expect_error([&] { gate_test(base, base, {.confidence = 1.0}); }, ErrorKind::kUsage);
  expect_error([&] { gate_test(base, base, {.confidence = -0.5}); }, ErrorKind::kUsage);
  expect_error([&] { gate_test(base, base, {.threshold = -1.0}); }, ErrorKind::kUsage);
  auto big = rounds(1.0, 0.01, 52, 201);
  expect_error([&] { gate_test(base, big, {.method = ShiftMethod::kExact}); }, ErrorKind::kUsage);
  EXPECT_FALSE(gate_test(base, big).exact);  // auto falls back to the normal approximation
}

}  // namespace
}  // namespace dgt::stats
