#include "problem/routed_counts.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "problem/grouped_problem.hpp"

namespace dgt {

namespace {
/// Seeds tried in turn when a token jumps over the wanted total (about 1 in 20 per seed: two of its topk picks open
/// a new 128-row segment at once).
constexpr uint64_t kMaxSeed = 64;
/// Largest contiguous total accepted: the search draws up to m_sum / topk tokens a few dozen times.
constexpr int64_t kMaxPaddedTotal = int64_t(1) << 20;

void check_topk(int groups, int64_t topk, std::string_view where) {
  if (groups < 1 || topk < 1 || topk > groups)
    DGT_THROW(ErrorKind::kUsage, "{}: top_k {} must be in 1..{} (the local experts, G)", where, topk, groups);
}

/// The smallest T in [lo, hi] with total(T) >= want, or hi + 1 when there is none (total is non-decreasing).
template <class Total>
int64_t first_reaching(int64_t lo, int64_t hi, int64_t want, const Total& total) {
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (total(mid) >= want)
      hi = mid - 1;
    else
      lo = mid + 1;
  }
  return lo;
}
}  // namespace

std::string RouteSpec::text() const { return fmt::format("route:{}:{}:{}", seed, tokens, topk); }

int64_t routed_padded_total(int groups, uint64_t seed, int64_t tokens, int64_t topk) {
  const RouteSpec r{seed, tokens, topk};
  int64_t total = 0;
  for (int64_t c : grouped_rows_from(r.text(), groups, "routing")) total += round_up(c, kGroupRowAlign);
  return total;
}

RouteSpec route_for_padded_total(int groups, int64_t topk, int64_t m_sum, std::string_view where) {
  check_topk(groups, topk, where);
  // One message per rule, so the user sees which bound the value broke.
  if (m_sum % kGroupRowAlign != 0)
    DGT_THROW(ErrorKind::kUsage, "{}: M_sum {} is not a multiple of {} (a padded total is whole segments of {} rows)",
              where, m_sum, kGroupRowAlign, kGroupRowAlign);
  if (m_sum < topk * kGroupRowAlign)
    DGT_THROW(ErrorKind::kUsage,
              "{}: M_sum {} is below the smallest padded total, top_k x {} = {} (one token already fills top_k = {} "
              "segments of {} rows)",
              where, m_sum, kGroupRowAlign, topk * kGroupRowAlign, topk, kGroupRowAlign);
  if (m_sum > kMaxPaddedTotal)
    DGT_THROW(ErrorKind::kUsage, "{}: M_sum {} is above the largest padded total, 2^20 = {}", where, m_sum,
              kMaxPaddedTotal);
  // Each token adds topk real rows, so past m_sum / topk tokens the total exceeds m_sum whatever the seed.
  const int64_t t_max = m_sum / topk;
  const int64_t t0 = std::max<int64_t>(1, (m_sum - int64_t(groups) * (kGroupRowAlign / 2)) / topk);
  for (uint64_t seed = 1; seed <= kMaxSeed; ++seed) {
    auto total = [&](int64_t t) { return routed_padded_total(groups, seed, t, topk); };
    const int64_t lo = first_reaching(1, t_max, m_sum, total);
    if (lo > t_max || total(lo) != m_sum) continue;  // a token jumped over m_sum with this seed
    const int64_t hi = first_reaching(lo, t_max + 1, m_sum + 1, total) - 1;
    return RouteSpec{seed, std::clamp(t0, lo, hi), topk};
  }
  DGT_THROW(ErrorKind::kUsage, "{}: no seeded routing of seeds 1..{} has a padded total M_sum of exactly {} over {} "
            "groups at top_k {}: choose a neighbouring multiple of {}", where, kMaxSeed, m_sum, groups, topk,
            kGroupRowAlign);
}

RouteSpec route_for_expected_m(int groups, int64_t topk, int64_t expected_m, std::string_view where) {
  check_topk(groups, topk, where);
  if (expected_m < 1) DGT_THROW(ErrorKind::kUsage, "{}: expected_m {} must be >= 1", where, expected_m);
  return RouteSpec{1, expected_m * groups / topk, topk};
}

}  // namespace dgt
