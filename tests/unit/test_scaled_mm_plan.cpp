// The torch op's rules (python/csrc/scaled_mm_plan.cpp): torch._scaled_mm's arguments -> dgt::Gemm's problem, scale
// copies and errors. python/tests/cpu checks the same rules in the Python fake implementation.
#include <gtest/gtest.h>

#include "scaled_mm_plan.hpp"

namespace dgt::torch_op {
namespace {

TensorDesc tensor(int dim, int64_t s0, int64_t s1, int64_t st0, int64_t st1, Dtype dt, std::uintptr_t ptr = 0x10000) {
  TensorDesc t;
  t.present = true;
  t.dim = dim;
  t.size[0] = s0;
  t.size[1] = dim >= 2 ? s1 : 1;
  t.stride[0] = st0;
  t.stride[1] = st1;
  t.numel = dim == 0 ? 1 : (dim == 1 ? s0 : s0 * s1);
  t.dtype = dt;
  t.cuda = true;
  t.device = 0;
  t.ptr = ptr;
  t.contiguous = dim < 2 || (st1 == 1 && st0 == s1) || s0 == 1;
  return t;
}

// a [M, K] row-major, b [K, N] column-major, tensor-wise scales.
ScaledMmArgs base(int64_t m, int64_t n, int64_t k) {
  ScaledMmArgs a;
  a.a = tensor(2, m, k, k, 1, Dtype::kE4M3);
  a.b = tensor(2, k, n, 1, k, Dtype::kE4M3);
  a.scale_a = tensor(0, 1, 1, 1, 1, Dtype::kF32);
  a.scale_b = tensor(0, 1, 1, 1, 1, Dtype::kF32);
  return a;
}

std::string error_of(const ScaledMmArgs& a) {
  try {
    plan_scaled_mm(a);
  } catch (const ScaledMmError& e) {
    return e.what();
  }
  return "";
}

TEST(ScaledMmPlan, TensorwiseMapsShapeAndLeadingDimensions) {
  ScaledMmArgs a = base(3, 257, 1024);
  a.a.stride[0] = 1040;  // a row slice of a wider buffer
  const ScaledMmPlan p = plan_scaled_mm(a);
  EXPECT_EQ(p.m, 3);
  EXPECT_EQ(p.n, 257);
  EXPECT_EQ(p.k, 1024);
  EXPECT_EQ(p.lda, 1040);
  EXPECT_EQ(p.ldb, 1024);
  EXPECT_EQ(p.ldd, 257);
  EXPECT_STREQ(p.recipe, "tensorwise");
  EXPECT_EQ(p.options.scale, Fp8Scaling::kPerTensor);
  EXPECT_EQ(p.options.output, OutputType::kBF16);
  EXPECT_EQ(p.copy_a.kind, ScaleCopy::kNone);
}

TEST(ScaledMmPlan, RowwiseIsChannelScaling) {
  ScaledMmArgs a = base(64, 128, 256);
  a.scale_a = tensor(2, 64, 1, 1, 1, Dtype::kF32);
  a.scale_b = tensor(2, 1, 128, 128, 1, Dtype::kF32);
  a.use_fast_accum = true;
  const ScaledMmPlan p = plan_scaled_mm(a);
  EXPECT_STREQ(p.recipe, "rowwise");
  EXPECT_EQ(p.options.scale, Fp8Scaling::kChannel);
  EXPECT_TRUE(p.options.fast_accum);
}

TEST(ScaledMmPlan, BlockScalesInDeepGemmLayoutAreReadInPlace) {
  // M = 6 (padded to 8), K = 300 (G = 3, padded to 4), N = 200 (2 blocks).
  ScaledMmArgs a = base(6, 200, 304);
  a.a = tensor(2, 6, 300, 304, 1, Dtype::kE4M3);
  a.b = tensor(2, 300, 200, 1, 304, Dtype::kE4M3);
  a.scale_a = tensor(2, 6, 3, 1, 8, Dtype::kF32);
  a.scale_b = tensor(2, 3, 2, 1, 4, Dtype::kF32);
  const ScaledMmPlan p = plan_scaled_mm(a);
  EXPECT_STREQ(p.recipe, "blockwise_1x128_128x128");
  EXPECT_EQ(p.options.scale, Fp8Scaling::kBlock);
  EXPECT_EQ(p.copy_a.kind, ScaleCopy::kNone);
  EXPECT_EQ(p.copy_b.kind, ScaleCopy::kNone);
}

TEST(ScaledMmPlan, BlockScalesInRowMajorLayoutAreCopiedIntoThePaddedLayout) {
  ScaledMmArgs a = base(6, 200, 304);
  a.a = tensor(2, 6, 300, 304, 1, Dtype::kE4M3);
  a.b = tensor(2, 300, 200, 1, 304, Dtype::kE4M3);
  a.scale_a = tensor(2, 6, 3, 3, 1, Dtype::kF32);  // row-major (M, G): not M-major
  a.scale_b = tensor(2, 3, 2, 2, 1, Dtype::kF32);
  const ScaledMmPlan p = plan_scaled_mm(a);
  ASSERT_EQ(p.copy_a.kind, ScaleCopy::kStrided);
  EXPECT_EQ(p.copy_a.buffer_rows, 3);  // G rows of round_up(M, 4) floats
  EXPECT_EQ(p.copy_a.buffer_cols, 8);
  EXPECT_TRUE(p.copy_a.transposed);
  EXPECT_EQ(p.copy_a.view_rows, 6);
  ASSERT_EQ(p.copy_b.kind, ScaleCopy::kStrided);
  EXPECT_EQ(p.copy_b.buffer_rows, 2);  // ceil(N / 128) rows of round_up(G, 4) floats
  EXPECT_EQ(p.copy_b.buffer_cols, 4);
  EXPECT_EQ(p.copy_b.view_rows, 3);
}

TEST(ScaledMmPlan, OneGranuleWithUnpaddedMIsCopied) {
  // G == 1: a (M, 1) scale says nothing about the padding floats past M = 5; copy rather than read past the tensor.
  ScaledMmArgs a = base(5, 128, 128);
  a.scale_a = tensor(2, 5, 1, 1, 5, Dtype::kF32);
  a.scale_b = tensor(2, 1, 1, 1, 1, Dtype::kF32);
  a.scale_b.numel = 1;
  a.scale_a.numel = 5;
  const ScaledMmPlan p = plan_scaled_mm(a);
  EXPECT_STREQ(p.recipe, "blockwise_1x128_128x128");
  EXPECT_EQ(p.copy_a.kind, ScaleCopy::kStrided);
}

TEST(ScaledMmPlan, Block1d1dScaleBIsRowMajorWithPaddedRows) {
  ScaledMmArgs a = base(8, 130, 256);
  a.scale_a = tensor(2, 8, 2, 1, 8, Dtype::kF32);
  a.scale_b = tensor(2, 2, 130, 132, 1, Dtype::kF32);
  const ScaledMmPlan p = plan_scaled_mm(a);
  EXPECT_STREQ(p.recipe, "blockwise_1x128_1x128");
  EXPECT_EQ(p.options.scale, Fp8Scaling::kBlock1d1d);
  EXPECT_EQ(p.copy_b.kind, ScaleCopy::kNone);
  a.scale_b.stride[0] = 130;  // unpadded rows
  const ScaledMmPlan q = plan_scaled_mm(a);
  ASSERT_EQ(q.copy_b.kind, ScaleCopy::kStrided);
  EXPECT_FALSE(q.copy_b.transposed);
  EXPECT_EQ(q.copy_b.buffer_cols, 132);
  EXPECT_EQ(q.copy_b.view_cols, 130);
}

TEST(ScaledMmPlan, MisalignedScalarScaleIsCloned) {
  ScaledMmArgs a = base(16, 16, 16);
  a.scale_a.ptr = 0x10004;
  EXPECT_EQ(plan_scaled_mm(a).copy_a.kind, ScaleCopy::kClone);
}

TEST(ScaledMmPlan, RefusalsNameTheOperandAndTheRule) {
  ScaledMmArgs a = base(16, 32, 48);
  a.a.stride[0] = 56;
  EXPECT_NE(error_of(a).find("a's row stride (lda = 56) must be a multiple of 16"), std::string::npos);
  a = base(16, 32, 48);
  a.b = tensor(2, 48, 32, 32, 1, Dtype::kE4M3);  // row-major b
  EXPECT_NE(error_of(a).find("b must be column-major"), std::string::npos);
  a = base(16, 32, 48);
  a.b.size[0] = 64;
  EXPECT_NE(error_of(a).find("cannot be multiplied"), std::string::npos);
  a = base(16, 32, 256);
  a.scale_a = tensor(2, 16, 2, 1, 16, Dtype::kF32);
  a.scale_b = tensor(2, 2, 1, 1, 2, Dtype::kF32);
  a.use_fast_accum = true;
  EXPECT_NE(error_of(a).find("use_fast_accum=True is not supported with blockwise_1x128_128x128"), std::string::npos);
  a.use_fast_accum = false;
  a.scale_a = tensor(2, 1, 2, 2, 1, Dtype::kF32);  // 128x128 activation blocks
  a.scale_b = tensor(2, 2, 32, 32, 1, Dtype::kF32);
  EXPECT_NE(error_of(a).find("(BlockWise128x128, BlockWise1x128) scaling is not supported"), std::string::npos);
  a = base(16, 32, 48);
  a.out_dtype = Dtype::kF16;
  EXPECT_NE(error_of(a).find("out_dtype float16 is not supported"), std::string::npos);
  a = base(16, 32, 48);
  a.bias = tensor(1, 32, 1, 1, 1, Dtype::kF32);
  EXPECT_NE(error_of(a).find("bias must be bfloat16"), std::string::npos);
  a = base(16, 32, 48);
  a.scale_b.device = 1;
  EXPECT_NE(error_of(a).find("Expected all tensors to be on the same device, but scale_b is on cuda:1"),
            std::string::npos);
  a = base(16, 32, 48);
  a.scale_a = tensor(2, 16, 3, 3, 1, Dtype::kF32);
  a.scale_b = tensor(2, 1, 32, 32, 1, Dtype::kF32);
  EXPECT_NE(error_of(a).find("Invalid scaling configuration"), std::string::npos);
  EXPECT_EQ(error_of(a).rfind("dgtune.scaled_mm: ", 0), 0u);
}

TEST(ScaledMmPlan, OutVariantTakesItsRowStrideAndDtype) {
  ScaledMmArgs a = base(4, 100, 64);
  a.out = tensor(2, 4, 100, 300, 1, Dtype::kF32);  // a column slice of a [4, 300] buffer
  const ScaledMmPlan p = plan_scaled_mm(a);
  EXPECT_EQ(p.ldd, 300);
  EXPECT_EQ(p.options.output, OutputType::kF32);
  a.out_dtype = Dtype::kBF16;
  EXPECT_NE(error_of(a).find("out has dtype float32 but out_dtype is bfloat16"), std::string::npos);
}

TEST(ScaledMmPlan, E4m3OutputWithoutScaleResultUsesOneAndAmaxForcesE4m3) {
  ScaledMmArgs a = base(4, 16, 64);
  a.out_dtype = Dtype::kE4M3;
  EXPECT_TRUE(plan_scaled_mm(a).default_scale_result);
  a.out_dtype.reset();
  a.amax = true;
  const ScaledMmPlan p = plan_scaled_mm(a);
  EXPECT_EQ(p.options.output, OutputType::kE4M3);
  a.out_dtype = Dtype::kBF16;
  EXPECT_NE(error_of(a).find("scaled_mm_amax writes float8_e4m3fn output"), std::string::npos);
}

TEST(ScaledMmPlan, EmptyProductsLaunchNothingButZeroKIsRefused) {
  EXPECT_TRUE(plan_scaled_mm(base(0, 16, 32)).empty);
  EXPECT_TRUE(plan_scaled_mm(base(8, 0, 32)).empty);
  EXPECT_NE(error_of(base(8, 16, 0)).find("K must be positive"), std::string::npos);
}

}  // namespace
}  // namespace dgt::torch_op
