// Statistics of `dgtune compare` and `dgtune gate`, and the sample summaries of every timer: pure CPU, no CUDA.
//
// Everything here works on LOG-RATIOS of times, natural log, dimensionless:
//   r_i = ln(x_i / y_i)   for round i, where x_i and y_i are the times (any unit, the same for both)
//                         of side X and side Y measured in the same interleaved round.
// r < 0 means X took less time than Y in that round. Ratios are reported in two explicitly named
// directions: time_ratio_x_over_y = x / y, and speedup_x_over_y = y / x (> 1: X is faster).
//
// References (cited per function below):
//   [HW]  M. Hollander, D. A. Wolfe, E. Chicken, Nonparametric Statistical Methods, 3rd ed., Wiley 2014:
//         sign test and its interval (sec. 3.4-3.6), Wilcoxon signed-rank test, Hodges-Lehmann estimator
//         and Walsh-average interval (sec. 3.1-3.3), Wilcoxon-Mann-Whitney test, two-sample
//         Hodges-Lehmann shift estimator and its interval (sec. 4.1-4.3), tie corrections.
//   [Le]  E. L. Lehmann, Nonparametrics: Statistical Methods Based on Ranks, 1975 (tie-corrected
//         variance of the rank-sum statistic, ch. 1 sec. 4).
//   [HF]  R. J. Hyndman, Y. Fan, Sample quantiles in statistical packages, Am. Stat. 50 (1996):
//         quantile definition 7.
//
// Bad input throws dgt::Error: ErrorKind::kInvalid for bad data (empty sample, length mismatch,
// non-positive or non-finite time, non-finite log-ratio) and ErrorKind::kUsage for bad parameters
// (confidence outside (0,1), negative margin, threshold <= -100%, quantile p outside [0,1]).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace dgt::stats {

// ---------------------------------------------------------------------------------------------
// Descriptive helpers
// ---------------------------------------------------------------------------------------------

/// Sample median (same unit as the values): the middle order statistic for odd n, the mean of the
/// two middle ones for even n. Throws kInvalid on an empty sample or a NaN.
double median(std::span<const double> values);

/// median(values), or 0 for an empty sample (a summary of samples that may not exist, e.g. a side that was not
/// measured).
double median_or_zero(std::span<const double> values);

/// Sample quantile at probability p in [0,1] (same unit as the values), Hyndman-Fan definition 7
/// [HF] (the default of R and NumPy): with the sorted sample v_0 <= ... <= v_{n-1} and h = (n-1) p,
/// Q(p) = v_floor(h) + (h - floor(h)) (v_floor(h)+1 - v_floor(h)). Q(0) = min, Q(0.5) = median,
/// Q(1) = max. p10/p90 are quantile(v, 0.1) / quantile(v, 0.9).
double quantile(std::span<const double> values, double p);

/// Geometric mean exp(mean(ln v_i)) (same unit as the values). Every value must be > 0 and finite
/// (kInvalid otherwise). The geomean of speedups is the speedup whose log is the mean log-speedup.
double geometric_mean(std::span<const double> values);

/// r_i = ln(x_i / y_i) (natural log, dimensionless) for round-aligned times of the same unit.
/// Throws kInvalid for different lengths, an empty sample, or a time that is <= 0 or not finite.
std::vector<double> log_ratios(std::span<const double> times_x, std::span<const double> times_y);

// ---------------------------------------------------------------------------------------------
// Exact null distributions and critical values
// ---------------------------------------------------------------------------------------------

/// Binomial CDF P(B <= k), B ~ Binomial(n, p); exact sum of the probability mass function
/// P(B = j) = C(n,j) p^j (1-p)^(n-j), the terms built by the iterative product
/// P(B = j+1) = P(B = j) (n-j)/(j+1) p/(1-p) from (1-p)^n (lgamma terms only where (1-p)^n would
/// underflow). No normal approximation for any n. k < 0 gives 0, k >= n gives 1.
double binomial_cdf(long k, long n, double p);

/// Largest d such that P(B(n, 1/2) <= d) <= alpha_two_sided / 2, or -1 when none exists (n too
/// small). The sign-test interval for a median at confidence 1 - alpha is [v_(d+1), v_(n-d)]
/// (1-based order statistics) [HW sec. 3.6]. Example: n = 20, alpha = 0.05 -> 5.
long sign_critical_value(long n, double alpha_two_sided);

/// P(T+ <= t) for the Wilcoxon signed-rank statistic T+ of n untied, non-zero observations under
/// the null hypothesis (symmetric about 0): exact for n <= 200 from the counts of subsets of
/// {1..n} with sum t, obtained by dynamic programming (the generating function prod_k (1 + q^k),
/// [HW sec. 3.1]); for n > 200 the normal approximation with continuity correction, mean
/// n(n+1)/4, variance n(n+1)(2n+1)/24.
double wilcoxon_cdf(long t, long n);

/// Largest t such that P(T+ <= t) <= alpha_two_sided / 2 (exact for n <= 200), or -1 when none
/// exists. This is the lower critical value of tables of the two-sided signed-rank test (reject when
/// min(T+, T-) <= t): n = 20, alpha = 0.05 -> 52. The Walsh-average interval uses it [HW sec. 3.3].
long wilcoxon_critical_value(long n, double alpha_two_sided);

/// P(U <= u) for the Mann-Whitney statistic U = #{(i,j): y_j > x_i} of two untied samples of
/// sizes n1 and n2 under the null hypothesis of equal distributions [HW sec. 4.1]: exact for
/// n1, n2 <= 200, the counts being the coefficients of the Gaussian binomial coefficient
/// [n1+n2 choose n1]_q built as prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), m = min(n1,n2),
/// n = max(n1,n2); beyond that the normal approximation (mean n1 n2/2, variance
/// n1 n2 (n1+n2+1)/12, continuity correction).
double mann_whitney_cdf(long u, long n1, long n2);

/// Largest u such that P(U <= u) <= alpha_two_sided / 2 (exact for n1, n2 <= 200), or -1 when none
/// exists: the lower critical value of tables of the two-sided Mann-Whitney test (reject when
/// min(U, n1 n2 - U) <= u). n1 = n2 = 10, alpha = 0.05 -> 23. For a one-sided level alpha pass
/// 2 alpha.
long mann_whitney_critical_value(long n1, long n2, double alpha_two_sided);

// ---------------------------------------------------------------------------------------------
// One-sample (paired) location: estimates and exact intervals
// ---------------------------------------------------------------------------------------------

/// A two-sided confidence interval in the unit of the data it was computed from (for the functions
/// below: natural-log ratio). lo = -inf / hi = +inf when the sample is too small for the requested
/// confidence (every finite interval would cover less).
struct Interval {
  double lo = 0.0;
  double hi = 0.0;
  /// Coverage probability the interval actually has under the method's assumptions (exact methods
  /// give slightly more than requested because the null distributions are discrete); 1 when the
  /// interval is infinite.
  double coverage = 0.0;
  /// True when the coverage comes from the exact null distribution, false for a normal approximation.
  bool exact = true;
};

/// One-sample Hodges-Lehmann estimate of the centre of a symmetric distribution: the median of the
/// n(n+1)/2 Walsh averages (v_i + v_j)/2, i <= j [HW sec. 3.2]. Same unit as the values.
double hodges_lehmann(std::span<const double> values);

/// Distribution-free confidence interval for the MEDIAN of the population the sample comes from
/// (sign test, [HW sec. 3.6]): [v_(d+1), v_(n-d)] with d = sign_critical_value(n, 1 - confidence);
/// coverage 1 - 2 P(B(n,1/2) <= d), exact for every n. Needs no symmetry. n = 20 at 0.95 gives the
/// 6th and 15th order statistics (coverage 0.958611). Needs n >= 6 at 0.95 to be finite.
Interval sign_interval(std::span<const double> values, double confidence);

/// Confidence interval for the centre of symmetry (pseudo-median) from the Wilcoxon signed-rank
/// test (Tukey's Walsh-average interval, [HW sec. 3.3]): [W_(t+1), W_(M-t)] among the M = n(n+1)/2
/// sorted Walsh averages, t = wilcoxon_critical_value(n, 1 - confidence); coverage
/// 1 - 2 P(T+ <= t), exact for n <= 200 (normal approximation above, n <= 5000 accepted: the
/// Walsh averages are held in memory). Assumes the data are symmetric about their centre.
Interval wilcoxon_interval(std::span<const double> values, double confidence);

// ---------------------------------------------------------------------------------------------
// Paired comparison of two sides measured in the same rounds (`dgtune compare`)
// ---------------------------------------------------------------------------------------------

/// Which interval the verdict of compare_paired uses.
///  - kSign (DEFAULT): interval for the median log-ratio itself, exact for every n, valid for any
///    continuous distribution of r. GPU timing noise is skewed (a throttled or preempted round is
///    slow, never fast) and the two sides need not have the same noise, so the log-ratios need not
///    be symmetric; the sign interval is then still an interval for the number we report (the
///    median ratio), which the Wilcoxon interval is not. Costs width: asymptotic relative efficiency
///    0.64 vs Wilcoxon under normal noise (about 25% wider at n = 20).
///  - kWilcoxon: Walsh-average interval for the pseudo-median, reported with the Hodges-Lehmann
///    estimate; tighter (ARE 0.955 vs the t-interval under normal noise) and exact under the null,
///    but it is an interval for the median only when the log-ratios are symmetric.
enum class IntervalMethod { kSign, kWilcoxon };

/// Outcome of a paired comparison, always from X's point of view.
enum class Verdict {
  kFaster,        ///< X is faster than Y: interval below 0 (time ratio < 1) and not inside the margin
  kSlower,        ///< X is slower than Y: interval above 0 and not inside the margin
  kEquivalent,    ///< the whole interval lies inside the equivalence margin (checked first)
  kInconclusive,  ///< none of the above: the interval contains 0 and reaches outside the margin
};

/// "faster", "slower", "equivalent", "inconclusive".
const char* to_string(Verdict v);
const char* to_string(IntervalMethod m);

struct PairedOptions {
  /// Two-sided confidence level of the interval, in (0,1).
  double confidence = 0.95;
  /// Equivalence margin as a fraction (0.02 = 2%), >= 0. In log space the margin is
  /// delta = ln(1 + margin); the equivalence region for the log time ratio is [-delta, +delta],
  /// i.e. time ratio x/y (and speedup y/x) in [1/(1+margin), 1+margin] = [0.98039, 1.02] for 2%.
  /// Symmetric in log space, so swapping X and Y swaps faster/slower and nothing else.
  double margin = 0.02;
  IntervalMethod method = IntervalMethod::kSign;
};

/// Result of compare_paired. All *_log fields are natural-log time ratios ln(x/y) (dimensionless);
/// the accessor functions convert to ratios.
struct PairedComparison {
  std::size_t rounds = 0;
  double confidence = 0.95;
  IntervalMethod method = IntervalMethod::kSign;
  /// ln(1 + margin): the half-width of the equivalence region in log space.
  double log_margin = 0.0;
  /// Median of r_i = ln(x_i/y_i). exp(median) is the median time ratio (for even n the geometric
  /// mean of the two middle ratios).
  double median_log_ratio = 0.0;
  /// One-sample Hodges-Lehmann estimate of r (median of Walsh averages); NaN when n > 5000.
  double hodges_lehmann_log_ratio = 0.0;
  /// Sign-test interval for the median of r (always computed).
  Interval sign_interval;
  /// Walsh-average interval for the pseudo-median of r; computed when n <= 5000, otherwise NaNs.
  Interval wilcoxon_interval;
  /// The point estimate that goes with `method`: median_log_ratio (kSign) or
  /// hodges_lehmann_log_ratio (kWilcoxon).
  double estimate_log = 0.0;
  /// The interval the verdict used (sign_interval or wilcoxon_interval).
  Interval interval;
  Verdict verdict = Verdict::kInconclusive;

  /// Estimated time ratio x/y (< 1: X is faster).
  double time_ratio_x_over_y() const;
  /// Estimated speedup of X over Y = y/x (> 1: X is faster) = 1 / time_ratio_x_over_y().
  double speedup_x_over_y() const;
  /// Interval of the speedup y/x: [exp(-interval.hi), exp(-interval.lo)] (0 / +inf when infinite).
  double speedup_x_over_y_lo() const;
  double speedup_x_over_y_hi() const;
};

/// Paired comparison of side X with side Y from round-aligned times (same unit, same length n >= 1,
/// all > 0): r_i = ln(x_i/y_i), its median, Hodges-Lehmann estimate, both intervals, and the
/// verdict from the interval [lo, hi] of `opts.method` with delta = ln(1 + margin):
///   kEquivalent   if -delta <= lo and hi <= delta (closed: an interval touching the margin counts);
///   else kFaster  if hi < 0;
///   else kSlower  if lo > 0;
///   else kInconclusive (also whenever the interval is infinite: too few rounds, n < 6 at 0.95).
/// A difference that is significant but smaller than the margin is therefore "equivalent".
PairedComparison compare_paired(std::span<const double> times_x, std::span<const double> times_y,
                                const PairedOptions& opts = {});

/// Same from already computed log-ratios r_i = ln(x_i/y_i) (finite, n >= 1), e.g. stored samples.
PairedComparison compare_paired_log_ratios(std::span<const double> log_ratios, const PairedOptions& opts = {});

// ---------------------------------------------------------------------------------------------
// Two independent samples: the regression gate (`dgtune gate`)
// ---------------------------------------------------------------------------------------------

/// Null distribution used for the Mann-Whitney statistic.
///  - kAuto (default): kExact when n1, n2 <= 200 and neither sample contains tied values,
///    otherwise kNormal.
///  - kExact: exact distribution (no ties assumed); n1, n2 <= 200 (kUsage otherwise).
///  - kNormal: normal approximation with continuity correction and the tie-corrected variance
///    [Le ch. 1 sec. 4; HW sec. 4.1]
///      Var U = n1 n2 / 12 * ((N + 1) - sum_g (t_g^3 - t_g) / (N (N - 1))),  N = n1 + n2,
///    t_g the sizes of the groups of tied values. The groups are taken within each sample (ties
///    between the two samples happen only at isolated shifts), so the variance does not depend on
///    the shift and the bound, interval and p-value below stay consistent with each other.
enum class ShiftMethod { kAuto, kExact, kNormal };

struct GateOptions {
  /// Largest tolerated slowdown as a fraction (0.05 = 5%), > -1. In log space
  /// tau = ln(1 + threshold).
  double threshold = 0.05;
  /// Confidence of the one-sided test, in (0,1); alpha = 1 - confidence.
  double confidence = 0.95;
  ShiftMethod method = ShiftMethod::kAuto;
};

enum class GateVerdict {
  kPass,        ///< the data do not reject "slowdown <= threshold"
  kRegression,  ///< "slowdown <= threshold" rejected at the stated confidence
};

/// "pass" / "regression".
const char* to_string(GateVerdict v);

/// Result of gate_test. Shift = location(current) - location(baseline) of the log-ratios
/// ln(dgtune time / cuBLASLt time), natural log, dimensionless; > 0 means dgtune got slower relative
/// to cuBLASLt. slowdown = exp(shift) - 1 as a fraction (0.10 = 10% more time than at baseline).
struct GateResult {
  std::size_t baseline_rounds = 0;
  std::size_t current_rounds = 0;
  double confidence = 0.95;
  /// tau = ln(1 + threshold).
  double threshold_log = 0.0;
  /// Two-sample Hodges-Lehmann shift estimate: median over all pairs of (current_j - baseline_i)
  /// [HW sec. 4.2].
  double shift_log = 0.0;
  /// One-sided lower confidence bound for the shift at `confidence` [HW sec. 4.3]: D_(k), the k-th
  /// smallest of the n1 n2 pairwise differences, k - 1 = mann_whitney_critical_value(n1, n2,
  /// 2 alpha); -inf when the samples are too small.
  double lower_bound_log = 0.0;
  /// Two-sided interval for the shift at `confidence` (for the report table).
  Interval interval;
  /// p-value of H0 "shift <= tau": P(U >= m) under shift tau, m = #{(i,j): current_j - baseline_i > tau}
  /// (differences equal to tau count against a regression). Small = evidence of a regression.
  double p_value = 1.0;
  /// Actual one-sided coverage of lower_bound_log, 1 - P(U <= k-1) (>= confidence when exact).
  double lower_bound_coverage = 1.0;
  /// True when the exact Mann-Whitney distribution was used, false for the normal approximation.
  bool exact = true;
  /// kRegression iff p_value <= 1 - confidence, which is the same event as lower_bound_log > tau.
  GateVerdict verdict = GateVerdict::kPass;

  /// exp(shift_log) - 1 (fraction).
  double slowdown() const;
  /// exp(lower_bound_log) - 1 (fraction; -1 when the bound is -inf).
  double slowdown_lower_bound() const;
};

/// Two-sample Hodges-Lehmann shift estimate median_{i,j}(b_j - a_i), same unit as the inputs
/// [HW sec. 4.2]. Both samples non-empty and finite.
double hodges_lehmann_shift(std::span<const double> a, std::span<const double> b);

/// Two-sided confidence interval for the shift b - a (Moses' interval, [HW sec. 4.3]):
/// [D_(u+1), D_(n1 n2 - u)] with u = mann_whitney_critical_value(n1, n2, 1 - confidence)
/// (or its normal approximation, see ShiftMethod).
Interval shift_interval(std::span<const double> a, std::span<const double> b, double confidence,
                        ShiftMethod method = ShiftMethod::kAuto);

/// The gate's one-sided test for one shape: baseline log-ratios (n1 rounds) against current
/// log-ratios (n2 rounds), each round's value ln(dgtune time / cuBLASLt-tuned time) of the same round.
/// Fails (kRegression) when the data reject "slowdown <= threshold" at the stated confidence. Memory
/// and time O(n1 n2 log(n1 n2)).
GateResult gate_test(std::span<const double> baseline_log_ratios, std::span<const double> current_log_ratios,
                     const GateOptions& opts = {});

}  // namespace dgt::stats
