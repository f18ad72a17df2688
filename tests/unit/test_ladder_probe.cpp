// The ladder probe's pure rules (loader/ladder_probe.hpp): which side it keeps and how many operand copies it rotates.
#include <gtest/gtest.h>

#include "loader/ladder_probe.hpp"

namespace dgt {
namespace {

TEST(LadderProbe, CublasLtRunsOnlyWhenMoreThanTheMarginFaster) {
  EXPECT_TRUE(probe_prefers_cublaslt({12.0, 11.0, kProbeRounds, 1}));
  EXPECT_FALSE(probe_prefers_cublaslt({11.0, 12.0, kProbeRounds, 1}));
  // Inside the 1% margin the kernel stays: 10.09 vs 10.0 is 0.9% faster, 10.11 vs 10.0 is 1.1%.
  EXPECT_FALSE(probe_prefers_cublaslt({10.09, 10.0, kProbeRounds, 1}));
  EXPECT_TRUE(probe_prefers_cublaslt({10.11, 10.0, kProbeRounds, 1}));
  EXPECT_FALSE(probe_prefers_cublaslt({10.0, 10.0, kProbeRounds, 1}));
  // A side that was not measured never wins by default.
  EXPECT_FALSE(probe_prefers_cublaslt({12.0, 0.0, kProbeRounds, 1}));
  EXPECT_FALSE(probe_prefers_cublaslt({0.0, 11.0, kProbeRounds, 1}));
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
  // Tiny operands: the copies stop at kProbeMaxBytes.
  EXPECT_EQ(probe_operand_sets(size_t(1) << 10, int64_t(1) << 30, true), int(kProbeMaxBytes >> 10));
  EXPECT_EQ(probe_operand_sets(4096, 0, true), 1);
  EXPECT_EQ(probe_operand_sets(0, l2, true), 1);
}

}  // namespace
}  // namespace dgt
