// dgt::GroupedGemm without a GPU: the run-time key as a GroupedProblem, the default config rule, the explicit
// override and its rule checks, the pointer rules of a call (the C API's errors: test_grouped_c_api.cpp). Every check here runs
// before a device is opened, so a machine without a GPU sees the same errors as an H200.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "device/device_info.hpp"
#include "dgtune/grouped_gemm.hpp"
#include "loader/grouped_choice.hpp"
#include "launch/grouped_operands.hpp"

namespace dgt {
namespace {

constexpr const char* k128 = "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
constexpr const char* k64 = "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";

GroupedGemmProblem contiguous(int groups, int64_t m_sum, int64_t n = 4096, int64_t k = 7168) {
  GroupedGemmProblem p;
  p.layout = GroupedLayout::kContiguous;
  p.groups = groups;
  p.m = m_sum;
  p.n = n;
  p.k = k;
  return p;
}

GroupedGemmProblem masked(int groups, int64_t m_max, int64_t expected_m, int64_t n = 4096, int64_t k = 7168) {
  GroupedGemmProblem p = contiguous(groups, m_max, n, k);
  p.layout = GroupedLayout::kMasked;
  p.expected_m = expected_m;
  return p;
}

/// The Error `f` throws (fails the test when it throws none or another type).
template <class F>
Error thrown(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no dgt::Error thrown";
  return Error(ErrorKind::kInternal, "none");
}

TEST(GroupedRuntime, KeyBecomesTheLaunchProblem) {
  const GroupedProblem c = grouped_problem_of(contiguous(8, 4096, 4096, 7168));
  EXPECT_EQ(c.kind, GroupKind::kContiguous);
  EXPECT_EQ(c.groups, 8);
  EXPECT_EQ(c.total_rows(), 4096);  // the grid covers every m-block of M_sum
  EXPECT_EQ(c.n, 4096);
  EXPECT_EQ(c.k, 7168);
  EXPECT_EQ(c.scale, ScaleMode::kBlock);
  const GroupedProblem m = grouped_problem_of(masked(32, 256, 17, 7168, 2048));
  EXPECT_EQ(m.kind, GroupKind::kMasked);
  EXPECT_EQ(m.m_max, 256);
  EXPECT_EQ(m.expected_m, 17);
  EXPECT_EQ(m.total_rows(), 32 * 256);
  GroupedGemmProblem pt = masked(4, 128, 1);
  pt.scale = Fp8Scaling::kPerTensor;
  EXPECT_EQ(grouped_problem_of(pt).scale, ScaleMode::kPerTensor);
}

TEST(GroupedRuntime, DefaultRuleFollowsTheH200Measurements) {
  EXPECT_EQ(grouped_gemm_choice(contiguous(8, 32768)).config_key, k128);
  EXPECT_EQ(grouped_gemm_choice(contiguous(8, 32768)).source, "default");
  EXPECT_EQ(grouped_gemm_choice(masked(32, 256, 1)).config_key, k64);
  EXPECT_EQ(grouped_gemm_choice(masked(32, 256, 64)).config_key, k64);  // the boundary: 64 still takes BLOCK_M 64
  EXPECT_EQ(grouped_gemm_choice(masked(32, 256, 65)).config_key, k128);
  EXPECT_EQ(grouped_gemm_choice(masked(8, 512, 256, 7168, 2048)).config_key, k128);
  // Contiguous with N > K (DeepSeek-V3's down projection) walks along N; N <= K (gate_up) along M.
  EXPECT_EQ(grouped_gemm_choice(contiguous(8, 32768, 7168, 2048)).config_key,
            "128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1");
  EXPECT_EQ(grouped_gemm_choice(contiguous(8, 32768, 4096, 4096)).config_key, k128);
}

TEST(GroupedRuntime, DefaultAndGpuTestConfigsAreLegalForBothScaleModes) {
  // The keys tests/gpu/test_gpu_grouped_runtime.cpp runs: a rule broken here would only show on the GPU otherwise.
  for (Fp8Scaling scale : {Fp8Scaling::kBlock, Fp8Scaling::kPerTensor}) {
    for (int64_t expected : {8, 16, 128, 200}) {
      GroupedGemmProblem p = masked(4, 256, expected, 320, 576);
      p.scale = scale;
      EXPECT_NO_THROW(grouped_gemm_choice(p));
    }
    GroupedGemmProblem c = contiguous(4, 640, 320, 576);
    c.scale = scale;
    for (const char* config : {"", "64x96x128_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
                               "128x64x128_s6_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1"})
      EXPECT_NO_THROW(grouped_gemm_choice(c, config)) << config;
  }
}

TEST(GroupedRuntime, ExplicitConfigIsCheckedAgainstTheGroupedRules) {
  const char* other = "128x128x128_s5_wg2_sw128_c1x1_rm64_tma_sk1_sm0_2g_p1";
  const GroupedGemmChoice c = grouped_gemm_choice(contiguous(4, 1024), other);
  EXPECT_EQ(c.config_key, other);
  EXPECT_EQ(c.source, "explicit");
  // G2: a cluster along M could multicast B across groups.
  Error e = thrown([] { grouped_gemm_choice(contiguous(4, 1024), "128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1"); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
  EXPECT_NE(e.message().find("G2"), std::string::npos) << e.message();
  // G3: split-K.
  e = thrown([] { grouped_gemm_choice(masked(4, 128, 8), "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk2_sm0_2g_p1"); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
  EXPECT_NE(e.message().find("G3"), std::string::npos) << e.message();
  // A key that does not parse is the caller's typo.
  e = thrown([] { grouped_gemm_choice(masked(4, 128, 8), "128x128"); });
  EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  EXPECT_NE(e.message().find("GroupedGemmOptions.config"), std::string::npos) << e.message();
}

TEST(GroupedRuntime, KeyRulesNameTheFieldAndTheRule) {
  struct Case {
    GroupedGemmProblem p;
    ErrorKind kind;
    const char* field;
    const char* rule;
  };
  GroupedGemmProblem channel = contiguous(4, 1024);
  channel.scale = Fp8Scaling::kChannel;
  GroupedGemmProblem bad_layout = contiguous(4, 1024);
  bad_layout.layout = static_cast<GroupedLayout>(7);
  GroupedGemmProblem contiguous_hint = contiguous(4, 1024);
  contiguous_hint.expected_m = 3;
  const Case cases[] = {
      {contiguous(4, 1000), ErrorKind::kInvalid, "GroupedGemmProblem.m = 1000", "multiple of 128"},
      {contiguous(4, 0), ErrorKind::kInvalid, "GroupedGemmProblem.m = 0", "multiple of 128"},
      {masked(4, 200, 8), ErrorKind::kInvalid, "GroupedGemmProblem.m = 200 (M_max)", "G5"},
      {masked(4, 256, 0), ErrorKind::kInvalid, "GroupedGemmProblem.expected_m = 0", ">= 1"},
      {contiguous_hint, ErrorKind::kInvalid, "GroupedGemmProblem.expected_m = 3", "must be 0"},
      {contiguous(0, 1024), ErrorKind::kInvalid, "GroupedGemmProblem.groups = 0", "1 .. 4096"},
      {contiguous(5000, 1024), ErrorKind::kInvalid, "GroupedGemmProblem.groups = 5000", "1 .. 4096"},
      {channel, ErrorKind::kInvalid, "GroupedGemmProblem.scale = kChannel", "G4"},
      {bad_layout, ErrorKind::kUsage, "GroupedGemmProblem.layout = 7", "dgt::GroupedLayout"},
      // K breaks the dense TMA rule (rows of A and B are 16-byte multiples).
      {contiguous(4, 1024, 4096, 100), ErrorKind::kInvalid, "K=100", "16"},
  };
  for (const Case& c : cases) {
    const Error e = thrown([&] { grouped_problem_of(c.p); });
    EXPECT_EQ(e.kind(), c.kind) << e.message();
    EXPECT_NE(e.message().find(c.field), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(c.rule), std::string::npos) << e.message();
  }
}

TEST(GroupedRuntime, OperandRulesNameTheOperand) {
  alignas(16) static unsigned char buf[256];
  const GroupedProblem block = grouped_problem_of(masked(4, 128, 8));
  jit::GroupedOperands ok{buf, buf + 16, buf + 32, reinterpret_cast<const float*>(buf + 48),
                          reinterpret_cast<const float*>(buf + 64), reinterpret_cast<const int32_t*>(buf + 80)};
  EXPECT_NO_THROW(check_grouped_operands(block, ok));
  struct Case {
    jit::GroupedOperands ops;
    const char* needle;
  };
  jit::GroupedOperands null_b = ok, odd_a = ok, odd_d = ok, odd_sa = ok, null_layout = ok, odd_layout = ok;
  null_b.b = nullptr;
  odd_a.a = buf + 8;
  odd_d.d = buf + 40;
  odd_sa.scale_a = reinterpret_cast<const float*>(buf + 52);  // 4-byte aligned, not 16
  null_layout.layout = nullptr;
  odd_layout.layout = reinterpret_cast<const int32_t*>(buf + 82);
  const Case cases[] = {{null_b, "b is null"},
                        {odd_a, "a = "},
                        {odd_d, "d = "},
                        {odd_sa, "scale_a = "},
                        {null_layout, "masked_m is null"},
                        {odd_layout, "masked_m = "}};
  for (const Case& c : cases) {
    const Error e = thrown([&] { check_grouped_operands(block, c.ops); });
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    EXPECT_NE(e.message().find(c.needle), std::string::npos) << e.message();
  }
  EXPECT_NE(thrown([&] { check_grouped_operands(block, odd_sa); }).message().find("16-byte aligned"),
            std::string::npos);
  // A per-tensor scale is one float: 4-byte alignment is enough, 2 is not; a contiguous layout names m_indices.
  GroupedGemmProblem pt = contiguous(4, 1024);
  pt.scale = Fp8Scaling::kPerTensor;
  const GroupedProblem per_tensor = grouped_problem_of(pt);
  EXPECT_NO_THROW(check_grouped_operands(per_tensor, odd_sa));
  jit::GroupedOperands half_sa = ok;
  half_sa.scale_a = reinterpret_cast<const float*>(buf + 50);
  EXPECT_NE(thrown([&] { check_grouped_operands(per_tensor, half_sa); }).message().find("4-byte aligned"),
            std::string::npos);
  EXPECT_NE(thrown([&] { check_grouped_operands(per_tensor, null_layout); }).message().find("m_indices is null"),
            std::string::npos);
}

TEST(GroupedRuntime, ConstructionChecksTheKeyBeforeTheDevice) {
  // A bad key fails the same way with or without a GPU: the device is opened after the checks.
  const Error e = thrown([] { GroupedGemm g(contiguous(4, 1000)); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
  if (cuda_device_count() == 0) {
    EXPECT_EQ(thrown([] { GroupedGemm g(contiguous(4, 1024)); }).kind(), ErrorKind::kNoDevice);
  }
}

}  // namespace
}  // namespace dgt
