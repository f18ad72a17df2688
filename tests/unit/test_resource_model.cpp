#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "space/resource_model.hpp"

namespace dgt {
namespace {

KernelSpec spec(int bm, int bn, int stages, int wg, Accum accum = Accum::kPromote) {
  KernelSpec s;
  s.config.block_m = bm;
  s.config.block_n = bn;
  s.config.num_stages = stages;
  s.config.num_math_wg = wg;
  s.accum = accum;
  return s;
}

TEST(ResourceModel, SharedMemoryBudgetByHand) {
  // 128x128x128, 4 stages: A 4*128*128, B 4*128*128, barriers 2*4*8, align 1024.
  ResourceReport r = evaluate_resources(spec(128, 128, 4, 2));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.smem.a_stages, 65536);
  EXPECT_EQ(r.smem.b_stages, 65536);
  EXPECT_EQ(r.smem.barriers, 64);
  EXPECT_EQ(r.smem.align_pad, 1024);
  EXPECT_EQ(r.smem.total, 132160);
  EXPECT_EQ(r.threads, 384);
  // 64x112x128, 7 stages, one consumer warpgroup: 7*8192 + 7*14336 + 112 + 1024 = 200704 + 1136.
  r = evaluate_resources(spec(64, 112, 7, 1));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.smem.total, 7 * 64 * 128 + 7 * 112 * 128 + 112 + 1024);
  EXPECT_EQ(r.threads, 256);
}

TEST(ResourceModel, DeepestPipelineThatFits) {
  // 128x256x128 uses 48 KiB per stage: 4 stages = 196608 + 64 + 1024 fits 232448, 5 stages do not.
  EXPECT_TRUE(evaluate_resources(spec(128, 256, 4, 2, Accum::kFast)).ok());
  ResourceReport r = evaluate_resources(spec(128, 256, 5, 2, Accum::kFast));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.rejection.substr(0, 3), "R9:");
  EXPECT_NE(r.rejection.find("246864"), std::string::npos) << r.rejection;  // 5*49152 + 80 + 1024
}

TEST(ResourceModel, RegisterBudget) {
  // One consumer WG, BLOCK_M 128 = two m64 slices, BLOCK_N 96, promotion doubles: 2*48*2 = 192 + 48 <= 240.
  ResourceReport r = evaluate_resources(spec(128, 96, 4, 1));
  EXPECT_TRUE(r.ok()) << r.rejection;
  EXPECT_EQ(r.regs.accumulators, 192);
  EXPECT_EQ(r.regs.limit, 240);
  // BLOCK_N 112 with promotion: 224 + 48 > 240.
  r = evaluate_resources(spec(128, 112, 4, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.rejection.substr(0, 4), "R10:");
  // ... legal with fast accumulation: 112 + 48.
  EXPECT_TRUE(evaluate_resources(spec(128, 112, 4, 1, Accum::kFast)).ok());
  // Two consumer WGs: limit 232, BLOCK_N 184 promote = 184 + 48 = 232 fits, 192 does not.
  EXPECT_TRUE(evaluate_resources(spec(128, 184, 4, 2)).ok());
  EXPECT_EQ(evaluate_resources(spec(128, 192, 4, 2)).rejection.substr(0, 4), "R10:");
}

TEST(ResourceModel, FirstFailingRuleIsReported) {
  EXPECT_EQ(evaluate_resources(spec(96, 128, 4, 2)).rejection.substr(0, 3), "R1:");
  EXPECT_EQ(evaluate_resources(spec(128, 100, 4, 2)).rejection.substr(0, 3), "R2:");
  EXPECT_EQ(evaluate_resources(spec(64, 128, 4, 2)).rejection.substr(0, 3), "R7:");
  EXPECT_EQ(evaluate_resources(spec(128, 128, 1, 2)).rejection.substr(0, 3), "R8:");
  KernelSpec s = spec(128, 128, 4, 2);
  s.config.swizzle = 64;
  s.config.block_k = 96;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 3), "R4:");
  s.config.cluster_m = 2;
  s.config.block_k = 128;
  EXPECT_EQ(evaluate_resources(s).rejection.substr(0, 4), "R11:");
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> rule_ids(const std::string& text) {
  std::vector<std::string> ids;
  std::regex re(R"("(R\d+):)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) ids.push_back((*it)[1]);
  return ids;
}

TEST(ResourceModel, HostRulesMirrorKernelStaticAssertsInOrder) {
  // The kernel's static_asserts and the host model list the same rules in the same order.
  auto kernel = rule_ids(read(std::string(DGT_SOURCE_DIR) + "/kernels/gemm/fp8_gemm_traits.cuh"));
  auto host = rule_ids(read(std::string(DGT_SOURCE_DIR) + "/src/space/resource_model.cpp"));
  ASSERT_EQ(kernel.size(), 12u);
  // R13 (split-K) is host-only; the kernel file documents it in a comment without a quote.
  ASSERT_EQ(host.size(), 13u);
  host.pop_back();
  EXPECT_EQ(kernel, host);
}

}  // namespace
}  // namespace dgt
