// The ladder probe's pure rules (loader/ladder_probe.hpp): which side it keeps and how many operand copies it rotates.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "loader/ladder_probe.hpp"

namespace dgt {
namespace {

TEST(LadderProbe, CublasLtRunsWhenMoreThanTheMarginFasterInMostRounds) {
  // Round r pairs kernel_us[r] with the chosen algorithm's time in round r: past the 1% margin only.
  const ProbeTimes t = probe_times({10.0, 10.2, 10.5, 9.0, 10.0}, {{10.0, 10.0, 10.0, 10.0, 9.8}}, 3);
  EXPECT_EQ(t.rounds, 5);
  EXPECT_EQ(t.algos, 1);
  EXPECT_EQ(t.algo, 0);
  EXPECT_EQ(t.cublaslt_rounds, 3);  // 10.2 and 10.5 vs 10.0, 10.0 vs 9.8; not 10.0 = 10.0 or 9.0 < 10.0
  EXPECT_DOUBLE_EQ(t.kernel_us, 9.0);
  EXPECT_DOUBLE_EQ(t.cublaslt_us, 9.8);
  EXPECT_EQ(t.operand_sets, 3);
  EXPECT_TRUE(probe_prefers_cublaslt(t));
  // 10.09 vs 10.0 is inside the margin (0.9%), 10.11 past it: two rounds of five are not a majority.
  const ProbeTimes inside = probe_times({10.09, 10.11, 10.11, 9.0, 9.0}, {{10.0, 10.0, 10.0, 10.0, 10.0}}, 1);
  EXPECT_EQ(inside.cublaslt_rounds, 2);
  EXPECT_FALSE(probe_prefers_cublaslt(inside));
  // Half is not more than half: the kernel stays on a tie of rounds.
  EXPECT_FALSE(probe_prefers_cublaslt(probe_times({12, 12, 10, 10}, {{10, 10, 12, 12}}, 1)));
  // The best times do not decide: cuBLASLt's one fast round does not outweigh the kernel's other rounds.
  const ProbeTimes lucky = probe_times({10, 10, 10}, {{5, 11, 11}}, 1);
  EXPECT_DOUBLE_EQ(lucky.cublaslt_us, 5.0);
  EXPECT_FALSE(probe_prefers_cublaslt(lucky));
  EXPECT_FALSE(probe_prefers_cublaslt(probe_times({}, {{}}, 1)));
  EXPECT_THROW(probe_times({1, 2}, {{1}}, 1), Error);
  EXPECT_THROW(probe_times({1, 2}, {}, 1), Error);
}

TEST(LadderProbe, TheAlgorithmWithTheSmallestTotalMeetsTheKernel) {
  // Three algorithms: the first loses to the kernel, the second (total 28) beats it in every round, the third (total
  // 29.5) has the best single launch but a larger total; the second is the one compared.
  const ProbeTimes t = probe_times({11, 11, 11}, {{12, 12, 12}, {9.5, 9.5, 9}, {8, 11, 10.5}}, 1);
  EXPECT_EQ(t.algos, 3);
  EXPECT_EQ(t.algo, 1);
  EXPECT_EQ(t.cublaslt_rounds, 3);
  EXPECT_DOUBLE_EQ(t.cublaslt_us, 9.0);
  EXPECT_TRUE(probe_prefers_cublaslt(t));
  // Equal totals: the heuristic's earlier result.
  EXPECT_EQ(probe_times({11, 11}, {{10, 10}, {9, 11}}, 1).algo, 0);
  // Every algorithm slower: the kernel stays whichever is chosen.
  EXPECT_FALSE(probe_prefers_cublaslt(probe_times({9, 9}, {{10, 10}, {9.5, 9.5}}, 1)));
}

TEST(LadderProbe, ColdL2RotatesCopiesSpanningTwiceTheL2) {
  const int64_t l2 = 50 << 20;  // an H100's 50 MiB
  // Llama-3.1-70B's qkv at M = 143 (A 143 x 8192, B 1280 x 8192 bytes): ceil(100 MiB / 11.6 MiB) = 9 copies.
  const size_t qkv = size_t(143 + 1280) * 8192;
  EXPECT_EQ(probe_operand_sets(qkv, l2, true), 9);
  EXPECT_EQ(probe_operand_sets(size_t(100) << 20, l2, true), 1);  // exactly twice the L2: one copy
  EXPECT_EQ(probe_operand_sets((size_t(100) << 20) - 1, l2, true), 2);
  EXPECT_EQ(probe_operand_sets(size_t(600) << 20, l2, true), 1);
  // Hot-graph launches back to back on warm operands: one copy whatever the size.
  EXPECT_EQ(probe_operand_sets(qkv, l2, false), 1);
  // Tiny operands: the rounds read (1 + 4) x 15 launches' copies at most, so no more are made.
  EXPECT_EQ(probe_operand_sets(size_t(1) << 10, int64_t(1) << 30, true), kProbeMaxOperandSets);
  EXPECT_EQ(kProbeMaxOperandSets, 76);
  // Large operands: the copies stop at kProbeMaxBytes (a 60 MiB copy and a 1 GiB L2 would want 35).
  EXPECT_EQ(probe_operand_sets(size_t(60) << 20, int64_t(1) << 30, true), 17);
  EXPECT_EQ(probe_operand_sets(4096, 0, true), 1);
  EXPECT_EQ(probe_operand_sets(0, l2, true), 1);
}

TEST(LadderProbe, OperandBytesCountPaddingAndTheLimitHoldsD) {
  Problem p = Problem::dense(143, 1280, 8192);
  EXPECT_EQ(probe_operand_bytes(p), size_t(143 + 1280) * 8192);
  p.lda = p.ldb = 8320;  // padded rows are allocated (and filled) too
  EXPECT_EQ(probe_operand_bytes(p), size_t(143 + 1280) * 8320);
  EXPECT_TRUE(probe_fits(p));
  // 16384 x 12800 x 8192 (Qwen-size gate_up at the ladder's top with K = 8192): A 128 MiB + B 100 MiB + D 400 MiB
  // of BF16 fit; with an FP32 D (800 MiB) they do not.
  Problem big = Problem::dense(16384, 12800, 8192);
  EXPECT_TRUE(probe_fits(big));
  big.d = DType::kF32;
  EXPECT_FALSE(probe_fits(big));
}

}  // namespace
}  // namespace dgt
