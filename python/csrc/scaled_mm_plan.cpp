#include "scaled_mm_plan.hpp"

#include <sstream>

namespace dgt::torch_op {
namespace {

[[noreturn]] void fail(const std::string& what) { throw ScaledMmError("dgtune.scaled_mm: " + what); }

std::string shape_of(const TensorDesc& t) {
  std::ostringstream s;
  s << "(";
  for (int i = 0; i < t.dim && i < 2; ++i) s << (i ? ", " : "") << t.size[i];
  if (t.dim > 2) s << ", ...";
  s << ")";
  return s.str();
}

std::string strides_of(const TensorDesc& t) {
  std::ostringstream s;
  s << "(" << t.stride[0] << ", " << t.stride[1] << ")";
  return s.str();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up4(int64_t x) { return ceil_div(x, 4) * 4; }
bool aligned16(const TensorDesc& t) { return t.ptr % 16 == 0; }

Fp8Format fp8_format(const TensorDesc& t, const char* name) {
  if (t.dtype == Dtype::kE4M3) return Fp8Format::kE4M3;
  if (t.dtype == Dtype::kE5M2) return Fp8Format::kE5M2;
  fail(std::string(name) + " must be float8_e4m3fn or float8_e5m2, got " + dtype_name(t.dtype));
}

void check_device(const TensorDesc& t, const char* name, int device) {
  if (!t.present) return;
  if (!t.cuda || t.device != device)
    fail(std::string("Expected all tensors to be on the same device, but ") + name + " is on " +
         (t.cuda ? "cuda:" + std::to_string(t.device) : std::string("cpu")) + " and a on cuda:" +
         std::to_string(device));
}

// A per-tensor or per-channel scale: read in place when 16-byte aligned, else cloned (contiguous, aligned).
ScaleCopy clone_if_misaligned(const TensorDesc& s) {
  ScaleCopy c;
  if (!aligned16(s)) c.kind = ScaleCopy::kClone;
  return c;
}

// A block scale whose dgt::Gemm layout is `rows` x `padded_cols` floats, row-major (Fp8Scaling in gemm.hpp). The
// torch tensor is its view of `view_rows` x `view_cols`, transposed or not. Read in place when the tensor's strides
// are that view's and its pointer is 16-byte aligned; else copied into a fresh buffer of exactly that layout.
ScaleCopy block_scale(const TensorDesc& s, int64_t rows, int64_t cols, bool transposed) {
  const int64_t padded = round_up4(cols);
  // The torch view: transposed -> (cols, rows) with strides (1, padded); else (rows, cols) with strides (padded, 1).
  const int64_t vr = transposed ? cols : rows, vc = transposed ? rows : cols;
  const int64_t want0 = transposed ? 1 : padded, want1 = transposed ? padded : 1;
  bool in_place = aligned16(s) && (vr == 1 || s.stride[0] == want0) && (vc == 1 || s.stride[1] == want1);
  // With one row the stride says nothing about the padding floats the kernel may read: only when there are none.
  if (rows == 1 && cols % 4 != 0) in_place = false;
  ScaleCopy c;
  if (in_place) return c;
  c.kind = ScaleCopy::kStrided;
  c.buffer_rows = rows;
  c.buffer_cols = padded;
  c.transposed = transposed;
  c.view_rows = vr;
  c.view_cols = vc;
  return c;
}

}  // namespace

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::kE4M3: return "float8_e4m3fn";
    case Dtype::kE5M2: return "float8_e5m2";
    case Dtype::kBF16: return "bfloat16";
    case Dtype::kF32: return "float32";
    case Dtype::kF16: return "float16";
    default: return "an unsupported dtype";
  }
}

ScaledMmPlan plan_scaled_mm(const ScaledMmArgs& args) {
  const TensorDesc &a = args.a, &b = args.b, &sa = args.scale_a, &sb = args.scale_b;
  ScaledMmPlan p;
  if (a.dim != 2 || b.dim != 2)
    fail("Inputs must be 2D but got a.dim()=" + std::to_string(a.dim) + " and b.dim()=" + std::to_string(b.dim));
  p.options.a_format = fp8_format(a, "a");
  p.options.b_format = fp8_format(b, "b");
  if (!a.cuda) fail("a must be a CUDA tensor (dgtune runs on Hopper GPUs only)");
  for (auto [t, name] : {std::pair{&b, "b"}, {&sa, "scale_a"}, {&sb, "scale_b"}, {&args.bias, "bias"},
                         {&args.scale_result, "scale_result"}, {&args.out, "out"}})
    check_device(*t, name, a.device);
  p.m = a.size[0];
  p.k = a.size[1];
  p.n = b.size[1];
  if (b.size[0] != p.k)
    fail("a and b shapes cannot be multiplied (" + std::to_string(p.m) + "x" + std::to_string(p.k) + " and " +
         std::to_string(b.size[0]) + "x" + std::to_string(p.n) + ")");
  if (p.k == 0) fail("K must be positive (a is " + shape_of(a) + ")");
  p.empty = p.m == 0 || p.n == 0;

  // Layouts: a row-major [M, K] and b column-major [K, N] (the .t() of a K-major [N, K] weight), TMA's rules on the
  // leading dimensions (multiples of 16 bytes) and the pointers (16-byte aligned).
  if (!p.empty) {
    if (!(a.stride[1] == 1 || p.k == 1))
      fail("a must be row-major (stride(1) == 1), got strides " + strides_of(a));
    p.lda = p.m == 1 ? std::max(a.stride[0], p.k) : a.stride[0];
    if (p.lda < p.k) fail("a's row stride " + std::to_string(p.lda) + " is below K = " + std::to_string(p.k));
    if (p.lda % 16 != 0)
      fail("a's row stride (lda = " + std::to_string(p.lda) + ") must be a multiple of 16 (TMA: 16-byte rows)");
    if (!(b.stride[0] == 1 || p.k == 1))
      fail("b must be column-major (stride(0) == 1; the .t() of a row-major [N, K] weight), got strides " +
           strides_of(b));
    p.ldb = p.n == 1 ? std::max(b.stride[1], p.k) : b.stride[1];
    if (p.ldb < p.k) fail("b's column stride " + std::to_string(p.ldb) + " is below K = " + std::to_string(p.k));
    if (p.ldb % 16 != 0)
      fail("b's column stride (ldb = " + std::to_string(p.ldb) + ") must be a multiple of 16 (TMA: 16-byte rows)");
    if (!aligned16(a)) fail("a's data pointer must be 16-byte aligned (TMA)");
    if (!aligned16(b)) fail("b's data pointer must be 16-byte aligned (TMA)");
  }

  // The recipe from the scale shapes, in torch._scaled_mm's order (torch/_meta_registrations.py).
  const int64_t g = ceil_div(p.k, 128);
  if (!sa.present || !sb.present) fail("scale_a and scale_b are required");
  if (sa.numel == 1 && sb.numel == 1) {
    if (sa.dtype != Dtype::kF32 || sb.dtype != Dtype::kF32)
      fail("For tensorwise scaling, both scale_a and scale_b must be float (fp32) tensors, got " +
           std::string(dtype_name(sa.dtype)) + " and " + dtype_name(sb.dtype));
    p.recipe = "tensorwise";
    p.options.scale = Fp8Scaling::kPerTensor;
    p.copy_a = clone_if_misaligned(sa);
    p.copy_b = clone_if_misaligned(sb);
  } else {
    if (sa.dtype != Dtype::kF32 || sb.dtype != Dtype::kF32)
      fail("scale_a and scale_b must be float (fp32) tensors, got " + std::string(dtype_name(sa.dtype)) + " and " +
           dtype_name(sb.dtype));
    if (sa.dim != 2 || sb.dim != 2)
      fail("For non-tensorwise scaling, scale tensors must be 2D, got scale_a.dim()=" + std::to_string(sa.dim) +
           " and scale_b.dim()=" + std::to_string(sb.dim));
    const int64_t nb = ceil_div(p.n, 128);
    if (sa.size[0] == p.m && sa.size[1] == 1 && sb.size[0] == 1 && sb.size[1] == p.n) {
      if (!sa.contiguous || !sb.contiguous) fail("Both scale_a and scale_b must be contiguous for rowwise scaling");
      p.recipe = "rowwise";
      p.options.scale = Fp8Scaling::kChannel;
      p.copy_a = clone_if_misaligned(sa);
      p.copy_b = clone_if_misaligned(sb);
    } else if (sa.size[0] == p.m && sa.size[1] == g && sb.size[0] == g && sb.size[1] == nb) {
      p.recipe = "blockwise_1x128_128x128";
      p.options.scale = Fp8Scaling::kBlock;
      p.copy_a = block_scale(sa, g, p.m, /*transposed=*/true);
      p.copy_b = block_scale(sb, nb, g, /*transposed=*/true);
    } else if (sa.size[0] == p.m && sa.size[1] == g && sb.size[0] == g && sb.size[1] == p.n) {
      p.recipe = "blockwise_1x128_1x128";
      p.options.scale = Fp8Scaling::kBlock1d1d;
      p.copy_a = block_scale(sa, g, p.m, /*transposed=*/true);
      p.copy_b = block_scale(sb, g, p.n, /*transposed=*/false);
    } else if (sa.size[0] == ceil_div(p.m, 128) && sa.size[1] == g && sb.size[0] == g && sb.size[1] == p.n) {
      fail("(BlockWise128x128, BlockWise1x128) scaling is not supported by dgtune (torch._scaled_mm runs it); "
           "dgtune runs 1x128 activations with 128x128 or 1x128 weight blocks");
    } else {
      std::ostringstream s;
      s << "Invalid scaling configuration. For tensorwise scaling, both scales should be scalar. For rowwise "
        << "scaling, scale_a should be (" << p.m << ", 1), scale_b should be (1, " << p.n << "). For (BlockWise1x128, "
        << "BlockWise128x128), scale_a should be (" << p.m << ", " << g << "), scale_b should be (" << g << ", " << nb
        << "). For (BlockWise1x128, BlockWise1x128), scale_a should be (" << p.m << ", " << g << "), scale_b should be ("
        << g << ", " << p.n << "). Got scale_a.size()=" << shape_of(sa) << " and scale_b.size()=" << shape_of(sb);
      fail(s.str());
    }
    const bool block = p.options.scale == Fp8Scaling::kBlock || p.options.scale == Fp8Scaling::kBlock1d1d;
    if (block && args.use_fast_accum)
      fail(std::string("use_fast_accum=True is not supported with ") + p.recipe +
           " scaling (the block scales are applied as each 128-wide k granule is promoted to FP32)");
  }
  p.options.fast_accum = args.use_fast_accum;

  // Output type, bias, scale_result, out=.
  Dtype od = args.out_dtype ? *args.out_dtype : (args.out.present ? args.out.dtype : Dtype::kBF16);
  if (args.amax) {
    if (args.out_dtype && *args.out_dtype != Dtype::kE4M3) fail("scaled_mm_amax writes float8_e4m3fn output");
    od = Dtype::kE4M3;
  }
  switch (od) {
    case Dtype::kBF16: p.options.output = OutputType::kBF16; break;
    case Dtype::kF32: p.options.output = OutputType::kF32; break;
    case Dtype::kE4M3: p.options.output = OutputType::kE4M3; break;
    default:
      fail(std::string("out_dtype ") + dtype_name(od) +
           " is not supported (dgtune writes bfloat16, float32 or float8_e4m3fn)");
  }
  p.out_dtype = od;
  if (od == Dtype::kE4M3) {
    const TensorDesc& sr = args.scale_result;
    if (sr.present && (sr.numel != 1 || sr.dtype != Dtype::kF32))
      fail("scale_result must be a single-element float32 tensor, got " + shape_of(sr) + " " + dtype_name(sr.dtype));
    if (sr.present && sr.ptr % 4 != 0) fail("scale_result's data pointer must be 4-byte aligned");
    p.default_scale_result = !sr.present;
  }
  if (args.bias.present) {
    const TensorDesc& bias = args.bias;
    if (bias.dtype != Dtype::kBF16) fail(std::string("bias must be bfloat16, got ") + dtype_name(bias.dtype));
    if (bias.dim != 1 || bias.size[0] != p.n)
      fail("bias must be a 1-D tensor of N = " + std::to_string(p.n) + " elements, got " + shape_of(bias));
    if (!bias.contiguous) fail("bias must be contiguous");
    if (bias.ptr % 2 != 0) fail("bias's data pointer must be 2-byte aligned");
    p.has_bias = true;
  }
  if (args.out.present) {
    const TensorDesc& out = args.out;
    if (out.dtype != od)
      fail(std::string("out has dtype ") + dtype_name(out.dtype) + " but out_dtype is " + dtype_name(od));
    if (out.dim != 2 || out.size[0] != p.m || out.size[1] != p.n)
      fail("out must be [M, N] = (" + std::to_string(p.m) + ", " + std::to_string(p.n) + "), got " + shape_of(out));
    if (!(out.stride[1] == 1 || p.n == 1)) fail("out must be row-major (stride(1) == 1), got " + strides_of(out));
    p.ldd = p.m == 1 ? std::max(out.stride[0], p.n) : out.stride[0];
    if (p.ldd < p.n) fail("out's row stride " + std::to_string(p.ldd) + " is below N = " + std::to_string(p.n));
  } else {
    p.ldd = p.n;
  }
  return p;
}

}  // namespace dgt::torch_op
