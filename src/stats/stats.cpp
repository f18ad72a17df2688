// Statistics of `dgtune compare` and `dgtune gate`; see stats.hpp for definitions and sources.
#include "stats/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "core/error.hpp"

namespace dgt::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr long kExactLimit = 200;  // exact null distributions up to this many observations
constexpr std::size_t kMaxWalshRounds = 5000;
// Tail probabilities compared with alpha/2 are allowed this relative slack, so that a tail that
// equals alpha/2 in exact arithmetic is not lost to the last bit of rounding.
constexpr double kTailSlack = 1e-12;

void check_nonempty(std::span<const double> v, const char* what) {
  if (v.empty()) DGT_THROW(ErrorKind::kInvalid, "statistics: {} is empty", what);
}

void check_finite(std::span<const double> v, const char* what) {
  check_nonempty(v, what);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      DGT_THROW(ErrorKind::kInvalid, "statistics: {} has a non-finite value at index {}", what, i);
}

void check_confidence(double c) {
  if (!(c > 0.0 && c < 1.0)) DGT_THROW(ErrorKind::kUsage, "statistics: confidence {} is not in (0, 1)", c);
}

void check_alpha(double a) {
  if (!(a > 0.0 && a < 1.0)) DGT_THROW(ErrorKind::kUsage, "statistics: alpha {} is not in (0, 1)", a);
}

std::vector<double> sorted_copy(std::span<const double> v) {
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  return s;
}

double median_sorted(const std::vector<double>& s) {
  const std::size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

// Median of a vector that may be reordered (nth_element).
double median_inplace(std::vector<double>& v) {
  const std::size_t n = v.size();
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  double hi = *mid;
  if (n % 2) return hi;
  double lo = *std::max_element(v.begin(), mid);
  return 0.5 * (lo + hi);
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Largest u in [0, umax] with cdf(u) <= tail (cdf non-decreasing), or -1. Binary search.
long largest_below(const std::function<double(long)>& cdf, long umax, double tail) {
  const double lim = tail * (1.0 + kTailSlack);
  long lo = -1, hi = umax + 1;  // invariant: cdf(lo) <= lim (or lo = -1), cdf(hi) > lim (or hi = umax + 1)
  while (hi - lo > 1) {
    const long mid = lo + (hi - lo) / 2;
    (cdf(mid) <= lim ? lo : hi) = mid;
  }
  return lo;
}

// --- exact distributions ----------------------------------------------------------------------

// Cumulative P(T+ <= t), t = 0..n(n+1)/2, exact (counts of subsets of {1..n} with sum t).
std::vector<double> wilcoxon_cumulative(long n) {
  const long m = n * (n + 1) / 2;
  std::vector<double> c(static_cast<std::size_t>(m) + 1, 0.0);
  c[0] = 1.0;
  long top = 0;
  for (long k = 1; k <= n; ++k) {
    top += k;
    for (long t = top; t >= k; --t) c[t] += c[t - k];
  }
  double acc = 0.0;
  for (auto& x : c) {
    acc += std::ldexp(x, static_cast<int>(-n));
    x = acc;
  }
  return c;
}

// Cumulative P(U <= u), u = 0..n1 n2, exact: coefficients of [n1+n2 choose n1]_q, normalised by
// their sum C(n1+n2, n1). Each factor (1 - q^(n+i)) / (1 - q^i) keeps the product a polynomial with
// non-negative integer coefficients (the Gaussian binomial [n+i choose i]_q).
std::vector<double> mann_whitney_cumulative(long n1, long n2) {
  const long m = std::min(n1, n2), n = std::max(n1, n2);
  const long deg = m * n;
  std::vector<double> p(static_cast<std::size_t>(deg + m + n + 2), 0.0);
  p[0] = 1.0;
  long d = 0;  // current degree
  for (long i = 1; i <= m; ++i) {
    const long s = n + i;
    for (long t = d + s; t >= s; --t) p[t] -= p[t - s];  // * (1 - q^s)
    for (long t = i; t <= d + s; ++t) p[t] += p[t - i];  // / (1 - q^i)
    d = i * n;
    for (long t = d + 1; t <= d + s; ++t) p[t] = 0.0;  // exact zeros (remove rounding residue)
  }
  p.resize(static_cast<std::size_t>(deg) + 1);
  for (auto& x : p) x = std::max(x, 0.0);
  // Normalise with the symmetric pairing (coefficients are symmetric: p[t] = p[deg - t]); use the
  // lower half, which carries the smaller rounding error, for both halves.
  for (long t = 0; t < deg - t; ++t) p[deg - t] = p[t];
  double total = 0.0;
  for (double x : p) total += x;
  double acc = 0.0;
  for (auto& x : p) {
    acc += x / total;
    x = acc;
  }
  return p;
}

// Mann-Whitney null CDF as a function: exact or tie-corrected normal with continuity correction.
struct UDistribution {
  long n_pairs = 0;
  bool exact = true;
  std::vector<double> cum;  // exact
  double mean = 0.0, sd = 0.0;

  double cdf(long u) const {
    if (u < 0) return 0.0;
    if (u >= n_pairs) return 1.0;
    if (exact) return cum[static_cast<std::size_t>(u)];
    double x = static_cast<double>(u) + 0.5 - mean;
    if (sd <= 0.0) return x > 0 ? 1.0 : (x < 0 ? 0.0 : 0.5);
    return normal_cdf(x / sd);
  }
};

// Sum over tie groups of (t^3 - t) within a sample.
double tie_sum(std::span<const double> v) {
  auto s = sorted_copy(v);
  double sum = 0.0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t j = i;
    while (j < s.size() && s[j] == s[i]) ++j;
    double t = static_cast<double>(j - i);
    sum += t * t * t - t;
    i = j;
  }
  return sum;
}

UDistribution u_distribution(std::span<const double> a, std::span<const double> b, ShiftMethod method) {
  const long n1 = static_cast<long>(a.size()), n2 = static_cast<long>(b.size());
  const double ties = tie_sum(a) + tie_sum(b);
  UDistribution d;
  d.n_pairs = n1 * n2;
  bool exact;
  switch (method) {
    case ShiftMethod::kExact:
      if (n1 > kExactLimit || n2 > kExactLimit)
        DGT_THROW(ErrorKind::kUsage,
                  "statistics: exact Mann-Whitney distribution needs at most {} rounds per side ({} and {} given)",
                  kExactLimit, n1, n2);
      exact = true;
      break;
    case ShiftMethod::kNormal: exact = false; break;
    default: exact = n1 <= kExactLimit && n2 <= kExactLimit && ties == 0.0; break;
  }
  d.exact = exact;
  if (exact) {
    d.cum = mann_whitney_cumulative(n1, n2);
  } else {
    const double nn = static_cast<double>(n1 + n2);
    const double f = static_cast<double>(n1) * static_cast<double>(n2) / 12.0;
    double var = f * ((nn + 1.0) - (nn > 1 ? ties / (nn * (nn - 1.0)) : 0.0));
    d.mean = 0.5 * static_cast<double>(d.n_pairs);
    d.sd = std::sqrt(std::max(var, 0.0));
  }
  return d;
}

std::vector<double> pairwise_differences(std::span<const double> a, std::span<const double> b) {
  std::vector<double> dd;
  dd.reserve(a.size() * b.size());
  for (double y : b)
    for (double x : a) dd.push_back(y - x);
  return dd;
}

std::vector<double> walsh_averages(std::span<const double> v) {
  std::vector<double> w;
  w.reserve(v.size() * (v.size() + 1) / 2);
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i; j < v.size(); ++j) w.push_back(0.5 * (v[i] + v[j]));
  return w;
}

Interval infinite_interval(bool exact) { return Interval{-kInf, kInf, 1.0, exact}; }

}  // namespace

// --- descriptive ------------------------------------------------------------------------------

double median(std::span<const double> values) {
  check_nonempty(values, "sample");
  for (double x : values)
    if (std::isnan(x)) DGT_THROW(ErrorKind::kInvalid, "statistics: sample contains NaN");
  return median_sorted(sorted_copy(values));
}

double median_or_zero(std::span<const double> values) { return values.empty() ? 0.0 : median(values); }

double quantile(std::span<const double> values, double p) {
  if (!(p >= 0.0 && p <= 1.0)) DGT_THROW(ErrorKind::kUsage, "statistics: quantile probability {} is not in [0, 1]", p);
  check_nonempty(values, "sample");
  for (double x : values)
    if (std::isnan(x)) DGT_THROW(ErrorKind::kInvalid, "statistics: sample contains NaN");
  auto s = sorted_copy(values);
  const double h = static_cast<double>(s.size() - 1) * p;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= s.size()) return s.back();
  return s[lo] + (h - static_cast<double>(lo)) * (s[lo + 1] - s[lo]);
}

double geometric_mean(std::span<const double> values) {
  check_nonempty(values, "sample");
  double sum = 0.0;
  for (double x : values) {
    if (!(x > 0.0) || !std::isfinite(x))
      DGT_THROW(ErrorKind::kInvalid, "statistics: geometric mean needs positive finite values ({} given)", x);
    sum += std::log(x);
  }
  return std::exp(sum / static_cast<double>(values.size()));
}

std::vector<double> log_ratios(std::span<const double> times_x, std::span<const double> times_y) {
  if (times_x.size() != times_y.size())
    DGT_THROW(ErrorKind::kInvalid, "statistics: paired samples differ in length ({} and {} rounds)", times_x.size(),
              times_y.size());
  check_nonempty(times_x, "paired sample");
  std::vector<double> r(times_x.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double x = times_x[i], y = times_y[i];
    if (!(x > 0.0) || !(y > 0.0) || !std::isfinite(x) || !std::isfinite(y))
      DGT_THROW(ErrorKind::kInvalid, "statistics: round {} has a non-positive or non-finite time ({}, {})", i, x, y);
    r[i] = std::log(x / y);
  }
  return r;
}

// --- distributions ----------------------------------------------------------------------------

double binomial_cdf(long k, long n, double p) {
  if (n < 0) DGT_THROW(ErrorKind::kUsage, "statistics: binomial n = {} is negative", n);
  if (!(p >= 0.0 && p <= 1.0)) DGT_THROW(ErrorKind::kUsage, "statistics: binomial p = {} is not in [0, 1]", p);
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  if (p == 0.0) return 1.0;
  if (p == 1.0) return 0.0;
  const double nd = static_cast<double>(n);
  const double log_q = std::log1p(-p);
  double sum = 0.0;
  if (nd * log_q > -700.0) {
    // Iterative products: P(B=0) = (1-p)^n, P(B=j+1) = P(B=j) (n-j)/(j+1) p/(1-p). For p = 1/2 and
    // n <= 53 every term is exactly representable.
    double term = std::pow(1.0 - p, nd);
    const double odds = p / (1.0 - p);
    for (long j = 0; j <= k; ++j) {
      sum += term;
      term *= static_cast<double>(n - j) / static_cast<double>(j + 1) * odds;
    }
  } else {
    const double log_p = std::log(p), lgn = std::lgamma(nd + 1.0);
    for (long j = 0; j <= k; ++j) {
      const double jd = static_cast<double>(j);
      sum += std::exp(lgn - std::lgamma(jd + 1.0) - std::lgamma(nd - jd + 1.0) + jd * log_p + (nd - jd) * log_q);
    }
  }
  return std::min(sum, 1.0);
}

long sign_critical_value(long n, double alpha_two_sided) {
  check_alpha(alpha_two_sided);
  if (n < 1) DGT_THROW(ErrorKind::kInvalid, "statistics: sign test needs n >= 1 ({} given)", n);
  return largest_below([&](long d) { return binomial_cdf(d, n, 0.5); }, n, 0.5 * alpha_two_sided);
}

double wilcoxon_cdf(long t, long n) {
  if (n < 1) DGT_THROW(ErrorKind::kInvalid, "statistics: signed-rank test needs n >= 1 ({} given)", n);
  const long m = n * (n + 1) / 2;
  if (t < 0) return 0.0;
  if (t >= m) return 1.0;
  if (n <= kExactLimit) return wilcoxon_cumulative(n)[static_cast<std::size_t>(t)];
  const double nd = static_cast<double>(n);
  const double mean = nd * (nd + 1) / 4.0, sd = std::sqrt(nd * (nd + 1) * (2 * nd + 1) / 24.0);
  return normal_cdf((static_cast<double>(t) + 0.5 - mean) / sd);
}

long wilcoxon_critical_value(long n, double alpha_two_sided) {
  check_alpha(alpha_two_sided);
  if (n < 1) DGT_THROW(ErrorKind::kInvalid, "statistics: signed-rank test needs n >= 1 ({} given)", n);
  const long m = n * (n + 1) / 2;
  if (n <= kExactLimit) {
    auto cum = wilcoxon_cumulative(n);
    return largest_below([&](long t) { return cum[static_cast<std::size_t>(t)]; }, m, 0.5 * alpha_two_sided);
  }
  return largest_below([&](long t) { return wilcoxon_cdf(t, n); }, m, 0.5 * alpha_two_sided);
}

double mann_whitney_cdf(long u, long n1, long n2) {
  if (n1 < 1 || n2 < 1)
    DGT_THROW(ErrorKind::kInvalid, "statistics: Mann-Whitney needs n1, n2 >= 1 ({}, {} given)", n1, n2);
  if (u < 0) return 0.0;
  if (u >= n1 * n2) return 1.0;
  if (n1 <= kExactLimit && n2 <= kExactLimit) return mann_whitney_cumulative(n1, n2)[static_cast<std::size_t>(u)];
  const double a = static_cast<double>(n1), b = static_cast<double>(n2);
  return normal_cdf((static_cast<double>(u) + 0.5 - a * b / 2.0) / std::sqrt(a * b * (a + b + 1.0) / 12.0));
}

long mann_whitney_critical_value(long n1, long n2, double alpha_two_sided) {
  check_alpha(alpha_two_sided);
  if (n1 < 1 || n2 < 1)
    DGT_THROW(ErrorKind::kInvalid, "statistics: Mann-Whitney needs n1, n2 >= 1 ({}, {} given)", n1, n2);
  if (n1 <= kExactLimit && n2 <= kExactLimit) {
    auto cum = mann_whitney_cumulative(n1, n2);
    return largest_below([&](long u) { return cum[static_cast<std::size_t>(u)]; }, n1 * n2, 0.5 * alpha_two_sided);
  }
  return largest_below([&](long u) { return mann_whitney_cdf(u, n1, n2); }, n1 * n2, 0.5 * alpha_two_sided);
}

// --- one-sample -------------------------------------------------------------------------------

double hodges_lehmann(std::span<const double> values) {
  check_finite(values, "sample");
  if (values.size() > kMaxWalshRounds)
    DGT_THROW(ErrorKind::kUsage, "statistics: Hodges-Lehmann estimate limited to {} values ({} given)", kMaxWalshRounds,
              values.size());
  auto w = walsh_averages(values);
  return median_inplace(w);
}

Interval sign_interval(std::span<const double> values, double confidence) {
  check_confidence(confidence);
  check_finite(values, "sample");
  const long n = static_cast<long>(values.size());
  const long d = sign_critical_value(n, 1.0 - confidence);
  if (d < 0) return infinite_interval(true);
  auto s = sorted_copy(values);
  return Interval{s[static_cast<std::size_t>(d)], s[static_cast<std::size_t>(n - 1 - d)],
                  1.0 - 2.0 * binomial_cdf(d, n, 0.5), true};
}

Interval wilcoxon_interval(std::span<const double> values, double confidence) {
  check_confidence(confidence);
  check_finite(values, "sample");
  if (values.size() > kMaxWalshRounds)
    DGT_THROW(ErrorKind::kUsage, "statistics: Wilcoxon interval limited to {} values ({} given)", kMaxWalshRounds,
              values.size());
  const long n = static_cast<long>(values.size());
  const bool exact = n <= kExactLimit;
  const long t = wilcoxon_critical_value(n, 1.0 - confidence);
  if (t < 0) return infinite_interval(exact);
  auto w = walsh_averages(values);
  std::sort(w.begin(), w.end());
  const long m = static_cast<long>(w.size());
  return Interval{w[static_cast<std::size_t>(t)], w[static_cast<std::size_t>(m - 1 - t)],
                  1.0 - 2.0 * wilcoxon_cdf(t, n), exact};
}

// --- paired comparison ------------------------------------------------------------------------

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kEquivalent: return "equivalent";
    case Verdict::kInconclusive: return "inconclusive";
  }
  return "?";
}

const char* to_string(IntervalMethod m) { return m == IntervalMethod::kSign ? "sign" : "wilcoxon"; }

const char* to_string(GateVerdict v) { return v == GateVerdict::kPass ? "pass" : "regression"; }

double PairedComparison::time_ratio_x_over_y() const { return std::exp(estimate_log); }
double PairedComparison::speedup_x_over_y() const { return std::exp(-estimate_log); }
double PairedComparison::speedup_x_over_y_lo() const { return std::exp(-interval.hi); }
double PairedComparison::speedup_x_over_y_hi() const { return std::exp(-interval.lo); }

PairedComparison compare_paired(std::span<const double> times_x, std::span<const double> times_y,
                                const PairedOptions& opts) {
  auto r = log_ratios(times_x, times_y);
  return compare_paired_log_ratios(r, opts);
}

PairedComparison compare_paired_log_ratios(std::span<const double> log_ratios, const PairedOptions& opts) {
  check_confidence(opts.confidence);
  if (!(opts.margin >= 0.0) || !std::isfinite(opts.margin))
    DGT_THROW(ErrorKind::kUsage, "statistics: equivalence margin {} must be a finite fraction >= 0", opts.margin);
  check_finite(log_ratios, "log-ratio sample");
  PairedComparison c;
  c.rounds = log_ratios.size();
  c.confidence = opts.confidence;
  c.method = opts.method;
  c.log_margin = std::log1p(opts.margin);
  c.median_log_ratio = median_sorted(sorted_copy(log_ratios));
  c.sign_interval = sign_interval(log_ratios, opts.confidence);
  if (log_ratios.size() <= kMaxWalshRounds) {
    c.hodges_lehmann_log_ratio = hodges_lehmann(log_ratios);
    c.wilcoxon_interval = wilcoxon_interval(log_ratios, opts.confidence);
  } else {
    if (opts.method == IntervalMethod::kWilcoxon)
      DGT_THROW(ErrorKind::kUsage, "statistics: Wilcoxon interval limited to {} rounds ({} given)", kMaxWalshRounds,
                log_ratios.size());
    c.hodges_lehmann_log_ratio = kNaN;
    c.wilcoxon_interval = Interval{kNaN, kNaN, kNaN, false};
  }
  const bool sign = opts.method == IntervalMethod::kSign;
  c.estimate_log = sign ? c.median_log_ratio : c.hodges_lehmann_log_ratio;
  c.interval = sign ? c.sign_interval : c.wilcoxon_interval;
  const double lo = c.interval.lo, hi = c.interval.hi, d = c.log_margin;
  if (lo >= -d && hi <= d)
    c.verdict = Verdict::kEquivalent;
  else if (hi < 0.0)
    c.verdict = Verdict::kFaster;
  else if (lo > 0.0)
    c.verdict = Verdict::kSlower;
  else
    c.verdict = Verdict::kInconclusive;
  return c;
}

// --- two-sample / gate ------------------------------------------------------------------------

double GateResult::slowdown() const { return std::expm1(shift_log); }
double GateResult::slowdown_lower_bound() const { return std::expm1(lower_bound_log); }

double hodges_lehmann_shift(std::span<const double> a, std::span<const double> b) {
  check_finite(a, "baseline sample");
  check_finite(b, "current sample");
  auto d = pairwise_differences(a, b);
  return median_inplace(d);
}

Interval shift_interval(std::span<const double> a, std::span<const double> b, double confidence, ShiftMethod method) {
  check_confidence(confidence);
  check_finite(a, "baseline sample");
  check_finite(b, "current sample");
  UDistribution ud = u_distribution(a, b, method);
  const long u = largest_below([&](long k) { return ud.cdf(k); }, ud.n_pairs, 0.5 * (1.0 - confidence));
  if (u < 0) return infinite_interval(ud.exact);
  auto d = pairwise_differences(a, b);
  std::sort(d.begin(), d.end());
  return Interval{d[static_cast<std::size_t>(u)], d[static_cast<std::size_t>(ud.n_pairs - 1 - u)],
                  1.0 - 2.0 * ud.cdf(u), ud.exact};
}

GateResult gate_test(std::span<const double> baseline_log_ratios, std::span<const double> current_log_ratios,
                     const GateOptions& opts) {
  check_confidence(opts.confidence);
  if (!(opts.threshold > -1.0) || !std::isfinite(opts.threshold))
    DGT_THROW(ErrorKind::kUsage, "statistics: gate threshold {} must be a finite fraction > -1", opts.threshold);
  check_finite(baseline_log_ratios, "baseline sample");
  check_finite(current_log_ratios, "current sample");
  const auto& a = baseline_log_ratios;
  const auto& b = current_log_ratios;
  GateResult g;
  g.baseline_rounds = a.size();
  g.current_rounds = b.size();
  g.confidence = opts.confidence;
  g.threshold_log = std::log1p(opts.threshold);
  const double alpha = 1.0 - opts.confidence;

  UDistribution ud = u_distribution(a, b, opts.method);
  g.exact = ud.exact;
  const long npairs = ud.n_pairs;
  auto d = pairwise_differences(a, b);
  std::sort(d.begin(), d.end());
  g.shift_log = median_sorted(d);

  // One-sided lower bound: D_(k) with k - 1 = largest u such that P(U <= u) <= alpha.
  const long u1 = largest_below([&](long k) { return ud.cdf(k); }, npairs, alpha);
  if (u1 < 0) {
    g.lower_bound_log = -kInf;
    g.lower_bound_coverage = 1.0;
  } else {
    g.lower_bound_log = d[static_cast<std::size_t>(u1)];
    g.lower_bound_coverage = 1.0 - ud.cdf(u1);
  }
  // Two-sided interval at the same confidence.
  const long u2 = largest_below([&](long k) { return ud.cdf(k); }, npairs, 0.5 * alpha);
  g.interval = u2 < 0 ? infinite_interval(ud.exact)
                      : Interval{d[static_cast<std::size_t>(u2)], d[static_cast<std::size_t>(npairs - 1 - u2)],
                                 1.0 - 2.0 * ud.cdf(u2), ud.exact};

  // p-value of H0: shift <= tau. m = #{D > tau}; P(U >= m) = P(U <= N - m) by symmetry.
  const long m = static_cast<long>(d.end() - std::upper_bound(d.begin(), d.end(), g.threshold_log));
  g.p_value = ud.cdf(npairs - m);
  // p <= alpha  <=>  N - m <= u1  <=>  D_(u1+1) > tau  (the same event as lower_bound_log > tau).
  g.verdict = g.p_value <= alpha * (1.0 + kTailSlack) ? GateVerdict::kRegression : GateVerdict::kPass;
  return g;
}

}  // namespace dgt::stats
