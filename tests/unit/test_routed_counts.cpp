// Routing counts that land on a grouped key (problem/routed_counts.hpp): the padded total of the contiguous counts
// equals the asked M_sum exactly at every multiple of 128 over a range, the token count is the one nearest the target,
// the masked counts give the asked expected_m, and the refusals. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/routed_counts.hpp"

namespace dgt {
namespace {

TEST(RoutedCounts, PaddedTotalNeverDecreasesWithTokens) {
  int64_t last = 0;
  for (int64_t t = 1; t <= 600; ++t) {
    const int64_t total = routed_padded_total(32, 1, t, 8);
    EXPECT_GE(total, last) << t;
    EXPECT_GE(total, t * 8) << t;  // the padding only adds rows
    EXPECT_EQ(total % 128, 0) << t;
    last = total;
  }
  EXPECT_EQ(routed_padded_total(32, 1, 1, 8), 8 * 128);  // one token opens top_k segments
}

TEST(RoutedCounts, ContiguousTotalIsExactAndTheTokensNearestTheTarget) {
  // From G x 128 up every group holds rows and a token mostly adds one segment at a time, so every multiple of 128
  // is reached (below, a token opens up to top_k segments at once: a total may be unreachable, refused below). With
  // top_k = G every group holds every token: totals are multiples of G x 128.
  struct Range {
    int groups;
    int64_t topk, from, to, step;
  };
  for (const Range& range : {Range{32, 8, 4096, 12288, 128}, Range{8, 2, 1024, 12288, 128},
                             Range{4, 4, 512, 12288, 512}, Range{256, 8, 32768, 65536, 32768 - 128}}) {
    const int groups = range.groups;
    const int64_t topk = range.topk;
    for (int64_t m_sum = range.from; m_sum <= range.to; m_sum += range.step) {
      SCOPED_TRACE(testing::Message() << "G " << groups << " top-" << topk << " M_sum " << m_sum);
      const RouteSpec r = route_for_padded_total(groups, topk, m_sum, "test");
      EXPECT_EQ(r.topk, topk);
      EXPECT_EQ(routed_padded_total(groups, r.seed, r.tokens, topk), m_sum);
      // The parsed line's total is the same number (the key's M).
      GroupedProblem g = parse_grouped_problem(
          "kind=contiguous groups=" + std::to_string(groups) + " m_per_group=" + r.text() + " 256 512", "test");
      EXPECT_EQ(g.total_rows(), m_sum);
      // Nearest the target: moving one token towards it leaves M_sum.
      const int64_t t0 = std::max<int64_t>(1, (m_sum - groups * 64) / topk);
      if (r.tokens < t0) EXPECT_GT(routed_padded_total(groups, r.seed, r.tokens + 1, topk), m_sum);
      if (r.tokens > t0) EXPECT_LT(routed_padded_total(groups, r.seed, r.tokens - 1, topk), m_sum);
    }
  }
}

TEST(RoutedCounts, MaskedExpectedMIsTheHostsCeil) {
  for (const auto& [groups, topk] : {std::pair<int, int64_t>{32, 8}, {8, 2}, {256, 8}, {48, 8}, {4, 4}})
    for (int64_t e = 1; e <= 300; ++e) {
      const RouteSpec r = route_for_expected_m(groups, topk, e, "test");
      EXPECT_EQ(r.text(), "route:1:" + std::to_string(r.tokens) + ":" + std::to_string(topk));
      EXPECT_EQ((r.tokens * topk + groups - 1) / groups, e) << groups << " " << topk << " " << e;
      // The most tokens with that expected_m: one more raises it.
      EXPECT_GT(((r.tokens + 1) * topk + groups - 1) / groups, e) << groups << " " << topk << " " << e;
    }
}

TEST(RoutedCounts, RefusalsNameWhereAndTheRule) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted";
    return std::string();
  };
  EXPECT_NE(message([] { route_for_padded_total(32, 8, 4100, "--m-sum"); })
                .find("--m-sum: M_sum 4100 is not a multiple of 128"),
            std::string::npos);
  // Each bound is its own message: 896 is a multiple of 128, below the lower bound; 2^21 above the upper one.
  EXPECT_NE(message([] { route_for_padded_total(32, 8, 896, "x"); })
                .find("x: M_sum 896 is below the smallest padded total, top_k x 128 = 1024"),
            std::string::npos);
  EXPECT_NE(message([] { route_for_padded_total(32, 8, int64_t(1) << 21, "x"); })
                .find("x: M_sum 2097152 is above the largest padded total, 2^20 = 1048576"),
            std::string::npos);
  EXPECT_NE(message([] { route_for_padded_total(4, 8, 4096, "x"); }).find("x: top_k 8 must be in 1..4"),
            std::string::npos);
  // Every group holds every token: a total that is not a multiple of 4 x 128 is reached by no seed.
  EXPECT_NE(message([] { route_for_padded_total(4, 4, 640, "x"); })
                .find("x: no seeded routing of seeds 1..64 has a padded total M_sum of exactly 640 over 4 groups"),
            std::string::npos);
  EXPECT_NE(message([] { route_for_expected_m(32, 8, 0, "--expected-m"); }).find("--expected-m: expected_m 0 must be >= 1"),
            std::string::npos);
}

}  // namespace
}  // namespace dgt
