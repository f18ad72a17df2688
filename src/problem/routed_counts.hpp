// Seeded MoE routing counts that land exactly on a grouped problem key (`dgtune shapes --experts`, `tune-model
// --experts`): the key holds the padded total M (contiguous) or expected_m (masked), the counts do not, so a tuned
// ladder point needs counts whose key is the ladder value itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dgt {

/// A routing distribution route:SEED:TOKENS:TOPK (problem/grouped_problem.hpp grouped_rows_from): TOKENS tokens
/// each pick TOPK distinct of the groups uniformly.
struct RouteSpec {
  uint64_t seed = 1;
  int64_t tokens = 0;
  int64_t topk = 0;
  /// "route:SEED:TOKENS:TOPK", the text a shapes-file line holds.
  std::string text() const;
};

/// The padded total M of route:seed:tokens:topk over `groups` groups: sum over groups of round_up(count, 128) (the
/// contiguous layout's rows, GroupedProblem::total_rows). Non-decreasing in `tokens` for a fixed seed (the counts
/// of T + 1 tokens are those of T plus one token's picks). Throws Error(kUsage) as grouped_rows_from does.
int64_t routed_padded_total(int groups, uint64_t seed, int64_t tokens, int64_t topk);

/// The contiguous ladder point's counts: a route whose padded total is exactly `m_sum`. The rule:
///  - the target token count T0 = max(1, (m_sum - groups x 64) / topk): a group's count modulo 128 is about uniform
///    in real routing, so its segment carries about 64 padding rows on average, and T0 tokens are what an M_sum of
///    m_sum typically holds;
///  - with seed 1, the tokens T whose padded total is exactly m_sum form one interval [lo, hi] (the total never
///    decreases with T); T is T0 clamped into it;
///  - the interval is empty only when one token takes the total past m_sum (two of its picks start a new 128-row
///    segment at once); then seed 2, 3, ... up to 64 is tried in turn.
/// `groups` >= 1 and 1 <= topk <= groups. Throws Error(kUsage) prefixed by `where` naming m_sum and the rule when
/// m_sum is not a multiple of 128, is below topk x 128 (the total of a single token), is above 2^20, or no seed
/// lands on it.
RouteSpec route_for_padded_total(int groups, int64_t topk, int64_t m_sum, std::string_view where);

/// The masked ladder point's counts: route:1:T:topk with T = floor(expected_m x groups / topk), the most tokens whose
/// host-side expected_m, ceil(T x topk / groups), is `expected_m` (topk <= groups makes it exact). Throws
/// Error(kUsage) prefixed by `where` when expected_m < 1 or topk is not in 1..groups.
RouteSpec route_for_expected_m(int groups, int64_t topk, int64_t expected_m, std::string_view where);

}  // namespace dgt
