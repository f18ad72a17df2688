// The grouped torch ops' rules in C++ (python/csrc/grouped_plan.cpp), torch-free: the key a valid call becomes, and the
// messages of broken rules, word for word those of python/dgtune/_grouped_ops.py where the CPU tests
// (python/tests/cpu/test_grouped.py) check the same case.
#include <gtest/gtest.h>

#include <string>

#include "grouped_plan.hpp"

namespace dgt::torch_op {
namespace {

GroupedTensor tensor(std::initializer_list<int64_t> sizes, GroupedDtype dtype, int element_size) {
  GroupedTensor t;
  t.dim = static_cast<int>(sizes.size());
  int i = 0;
  t.numel = 1;
  for (int64_t s : sizes) t.size[i++] = s, t.numel *= s;
  int64_t st = 1;  // row-major
  for (int j = t.dim - 1; j >= 0; --j) t.stride[j] = st, st *= t.size[j];
  t.dtype = dtype;
  t.element_size = element_size;
  t.device = "cuda:0";
  t.ptr = 0x10000;
  return t;
}

/// The valid masked call of test_grouped.py's masked_args(): G 4, M_max 256, N 320, K 576 (KG 5, padded to 8).
GroupedOpArgs masked_args() {
  GroupedOpArgs a;
  a.masked = true;
  a.a = tensor({4, 256, 576}, GroupedDtype::kE4M3, 1);
  a.b = tensor({4, 320, 576}, GroupedDtype::kE4M3, 1);
  a.out = tensor({4, 256, 320}, GroupedDtype::kBF16, 2);
  a.layout = tensor({4}, GroupedDtype::kI32, 4);
  a.a_scale = tensor({4, 256, 5}, GroupedDtype::kF32, 4);
  a.a_scale.stride[0] = 5 * 256, a.a_scale.stride[1] = 1, a.a_scale.stride[2] = 256;
  a.b_scale = tensor({4, 3, 5}, GroupedDtype::kF32, 4);
  a.b_scale.stride[0] = 24, a.b_scale.stride[1] = 8, a.b_scale.stride[2] = 1;
  a.expected_m = 16;
  return a;
}

std::string error_of(const GroupedOpArgs& a) {
  try {
    plan_grouped(a);
  } catch (const GroupedOpError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no GroupedOpError";
  return {};
}

TEST(GroupedPlan, ValidMaskedCallBecomesTheKey) {
  const GroupedOpPlan p = plan_grouped(masked_args());
  EXPECT_EQ(p.key.layout, GroupedLayout::kMasked);
  EXPECT_EQ(p.key.groups, 4);
  EXPECT_EQ(p.key.m, 256);
  EXPECT_EQ(p.key.expected_m, 16);
  EXPECT_EQ(p.key.n, 320);
  EXPECT_EQ(p.key.k, 576);
  EXPECT_EQ(p.key.scale, Fp8Scaling::kBlock);
  EXPECT_FALSE(p.empty);
  GroupedOpArgs pt = masked_args();
  pt.a_scale = tensor({}, GroupedDtype::kF32, 4);
  pt.b_scale = tensor({1}, GroupedDtype::kF32, 4);
  EXPECT_EQ(plan_grouped(pt).key.scale, Fp8Scaling::kPerTensor);
}

TEST(GroupedPlan, ContiguousKeyAndEmptyBatch) {
  GroupedOpArgs a;
  a.a = tensor({640, 576}, GroupedDtype::kE4M3, 1);
  a.b = tensor({4, 320, 576}, GroupedDtype::kE4M3, 1);
  a.out = tensor({640, 320}, GroupedDtype::kBF16, 2);
  a.layout = tensor({640}, GroupedDtype::kI32, 4);
  a.a_scale = tensor({640, 5}, GroupedDtype::kF32, 4);
  a.a_scale.stride[0] = 1, a.a_scale.stride[1] = 640;
  a.b_scale = tensor({4, 3, 5}, GroupedDtype::kF32, 4);
  a.b_scale.stride[0] = 24, a.b_scale.stride[1] = 8, a.b_scale.stride[2] = 1;
  const GroupedOpPlan p = plan_grouped(a);
  EXPECT_EQ(p.key.layout, GroupedLayout::kContiguous);
  EXPECT_EQ(p.key.m, 640);
  EXPECT_EQ(p.key.expected_m, 0);
  a.a.size[0] = 0, a.out.size[0] = 0, a.layout.size[0] = 0, a.a.numel = a.out.numel = a.layout.numel = 0;
  a.a_scale = tensor({}, GroupedDtype::kF32, 4), a.b_scale = tensor({}, GroupedDtype::kF32, 4);
  EXPECT_TRUE(plan_grouped(a).empty);
  a.a.size[0] = 300, a.out.size[0] = 300, a.layout.size[0] = 300;
  EXPECT_EQ(error_of(a), "dgtune.m_grouped_scaled_mm_contiguous: M_sum (a.size(0)) = 300 must be a multiple of 128 "
                         "(each group's rows are whole 128-row blocks)");
}

TEST(GroupedPlan, MessagesMatchThePythonRules) {
  const std::string p = "dgtune.m_grouped_scaled_mm_masked: ";
  GroupedOpArgs a = masked_args();
  a.a.dtype = GroupedDtype::kOther;
  EXPECT_EQ(error_of(a), p + "a must be float8_e4m3fn, got another dtype");
  a = masked_args();
  a.out = tensor({4, 256, 256}, GroupedDtype::kBF16, 2);
  EXPECT_EQ(error_of(a), p + "out must be [4, 256, 320], got [4, 256, 256]");
  a = masked_args();
  a.a = tensor({3, 256, 576}, GroupedDtype::kE4M3, 1);
  EXPECT_EQ(error_of(a), p + "a has 3 groups, b has 4 (a [G, M_max, K], b [G, N, K])");
  a = masked_args();
  a.layout = tensor({5}, GroupedDtype::kI32, 4);
  EXPECT_EQ(error_of(a), p + "masked_m must have 4 entries (G), got 5");
  a = masked_args();
  a.a_scale = tensor({4, 256, 5}, GroupedDtype::kF32, 4);  // row-major: DeepGEMM's input before the helper
  EXPECT_EQ(error_of(a), p + "a_scale must be M-major and TMA-aligned with strides (1280, 1, 256), got (1280, 5, 1) "
                             "(dgtune.get_col_major_tma_aligned_tensor makes one)");
  a = masked_args();
  a.b_scale = tensor({4, 3, 5}, GroupedDtype::kF32, 4);
  EXPECT_EQ(error_of(a), p + "b_scale must have strides (24, 8, 1) (rows of ceil(K/128) scales padded to 16 bytes), "
                             "got (15, 5, 1)");
  a = masked_args();
  a.layout.device = "cpu";
  EXPECT_EQ(error_of(a), p + "Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
                             "(a) and cpu (masked_m)");
  a = masked_args();
  a.expected_m = 0;
  EXPECT_EQ(error_of(a), p + "expected_m = 0 must be >= 1");
  a = masked_args();
  a.a.size[2] = a.b.size[2] = 520;
  EXPECT_NE(error_of(a).find("K = 520 must be a positive multiple of 16"), std::string::npos);
  a = masked_args();
  a.b.ptr += 8;
  EXPECT_NE(error_of(a).find("b's data must be 16-byte aligned"), std::string::npos);
  a = masked_args();
  a.a.stride[1] = 1, a.a.stride[2] = 256;  // a [G, M_max, K] with M contiguous
  EXPECT_EQ(error_of(a), p + "a must be contiguous, got strides (147456, 1, 256)");
}

}  // namespace
}  // namespace dgt::torch_op
