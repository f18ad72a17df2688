// The bracket rule of the loader's cuBLASLt heuristic memo (loader/heuristic_memo.hpp): a first call of an M between
// two warmed M takes their pick only when both picks are the same algorithm.
#include <gtest/gtest.h>

#include "loader/heuristic_memo.hpp"

namespace dgt {
namespace {

CublasLtAlgoBytes algo(uint8_t id) {
  CublasLtAlgoBytes a{};
  a[0] = id;
  a[63] = uint8_t(id ^ 0x5a);
  return a;
}

TEST(HeuristicMemo, AgreeingNeighboursStandForTheMBetween) {
  HeuristicMemo memo;
  memo.record(64, algo(1));
  memo.record(96, algo(1));
  memo.record(128, algo(2));
  int64_t from = 0;
  const CublasLtAlgoBytes* p = memo.pick(80, &from);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, algo(1));
  EXPECT_EQ(from, 96);  // the upper neighbour's pick
  // 96 < M < 128: the neighbours disagree, so the heuristic must be asked.
  EXPECT_EQ(memo.pick(100), nullptr);
  EXPECT_EQ(memo.pick(127), nullptr);
}

TEST(HeuristicMemo, AnExactMTakesItsOwnPickAndTheEdgesHaveNoBracket) {
  HeuristicMemo memo;
  memo.record(16, algo(3));
  memo.record(32, algo(3));
  int64_t from = 0;
  ASSERT_NE(memo.pick(16, &from), nullptr);
  EXPECT_EQ(from, 16);
  EXPECT_TRUE(memo.has(32));
  EXPECT_FALSE(memo.has(24));
  EXPECT_NE(memo.pick(24), nullptr);
  EXPECT_EQ(memo.pick(8), nullptr);   // below the smallest recorded M
  EXPECT_EQ(memo.pick(33), nullptr);  // above the largest
  memo.record(32, algo(4));           // a later record replaces
  EXPECT_EQ(memo.pick(24), nullptr);
  EXPECT_EQ(*memo.pick(32), algo(4));
}

TEST(HeuristicMemo, EmptyMemoKnowsNothing) {
  HeuristicMemo memo;
  EXPECT_EQ(memo.pick(1), nullptr);
  EXPECT_EQ(memo.size(), 0u);
}

}  // namespace
}  // namespace dgt
