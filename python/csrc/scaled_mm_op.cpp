// The CUDA kernels of torch.ops.dgtune.scaled_mm / scaled_mm_out / scaled_mm_amax, written against the LibTorch
// stable ABI (torch/csrc/stable, PyTorch >= 2.10), so one build serves every later torch and every Python: the
// schemas and the fake (meta) implementations are defined in python/dgtune/_ops.py; this file only registers the
// dispatch key CUDA. Each call: describe the tensors, plan_scaled_mm (the rules), copy the scales the plan asks for,
// allocate the output through PyTorch's caching allocator on the current stream, and run dgt::Gemm on that stream.
// No synchronisation and no allocation beyond the caching allocator, so the calls can be captured in CUDA graphs
// after dgtune.warmup().
#include <cuda_runtime_api.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <optional>
#include <string>
#include <tuple>

#include "device_scope.hpp"
#include "gemm_registry.hpp"
#include "scaled_mm_plan.hpp"

namespace dgt::torch_op {
namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

Dtype to_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Float8_e4m3fn: return Dtype::kE4M3;
    case ScalarType::Float8_e5m2: return Dtype::kE5M2;
    case ScalarType::BFloat16: return Dtype::kBF16;
    case ScalarType::Float: return Dtype::kF32;
    case ScalarType::Half: return Dtype::kF16;
    default: return Dtype::kOther;
  }
}

int32_t aoti_dtype(Dtype d) {
  switch (d) {
    case Dtype::kE4M3: return aoti_torch_dtype_float8_e4m3fn();
    case Dtype::kBF16: return aoti_torch_dtype_bfloat16();
    default: return aoti_torch_dtype_float32();
  }
}

TensorDesc describe(const Tensor& t) {
  TensorDesc d;
  d.present = true;
  d.dim = static_cast<int>(t.dim());
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (int i = 0; i < d.dim && i < 2; ++i) {
    d.size[i] = sizes[i];
    d.stride[i] = strides[i];
  }
  d.numel = t.numel();
  d.dtype = to_dtype(t.scalar_type());
  d.cuda = t.is_cuda();
  d.device = d.cuda ? t.get_device_index() : -1;
  d.ptr = reinterpret_cast<std::uintptr_t>(t.data_ptr());
  d.contiguous = t.is_contiguous();
  return d;
}

TensorDesc describe(const std::optional<Tensor>& t) { return t.has_value() ? describe(*t) : TensorDesc{}; }

Tensor empty_strided(int64_t rows, int64_t cols, int64_t stride0, Dtype dtype, int device) {
  const int64_t sizes[2] = {rows, cols};
  const int64_t strides[2] = {stride0, 1};
  AtenTensorHandle h = nullptr;
  TORCH_ERROR_CODE_CHECK(
      aoti_torch_empty_strided(2, sizes, strides, aoti_dtype(dtype), aoti_torch_device_type_cuda(), device, &h));
  return Tensor(h);
}

// The scale dgt::Gemm reads: the user's tensor, or a copy into the layout the plan names (counted).
Tensor prepare_scale(const Tensor& s, const ScaleCopy& c, int device, OpCounters& counters) {
  if (c.kind == ScaleCopy::kNone) return s;
  counters.scale_copies.fetch_add(1, std::memory_order_relaxed);
  if (c.kind == ScaleCopy::kClone) return torch::stable::clone(torch::stable::contiguous(s));
  Tensor buffer = empty_strided(c.buffer_rows, c.buffer_cols, c.buffer_cols, Dtype::kF32, device);
  Tensor view = buffer;
  if (c.transposed) {
    Tensor t = torch::stable::transpose(buffer, 0, 1);
    view = torch::stable::narrow(t, 0, 0, c.view_rows);
  } else {
    view = torch::stable::narrow(buffer, 1, 0, c.view_cols);
  }
  torch::stable::copy_(view, s);
  return buffer;
}

struct Call {
  Tensor a, b, scale_a, scale_b;
  std::optional<Tensor> bias, scale_result;
  std::optional<ScalarType> out_dtype;
  bool use_fast_accum;
};

// Plans, prepares and launches; `out` is written (allocated by the caller), `amax` set when the plan has one.
void launch(const Call& c, const ScaledMmPlan& p, Tensor& out, float* amax) {
  if (p.empty) return;
  const int device = c.a.get_device_index();
  DeviceScope scope(device);
  OpCounters& counters = counters_for(device);
  Tensor sa = prepare_scale(c.scale_a, p.copy_a, device, counters);
  Tensor sb = prepare_scale(c.scale_b, p.copy_b, device, counters);
  std::optional<Tensor> one;
  GemmRunOptions o = p.options;
  if (p.has_bias) o.bias = c.bias->data_ptr();
  if (p.options.output == OutputType::kE4M3) {
    if (p.default_scale_result) {
      one = torch::stable::full({}, 1.0, ScalarType::Float, std::nullopt, c.a.device());
      o.scale_d = static_cast<const float*>(one->data_ptr());
    } else {
      o.scale_d = static_cast<const float*>(c.scale_result->data_ptr());
    }
    o.amax = amax;
  }
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device, &stream));
  try {
    gemm_for(device).run(c.a.data_ptr(), c.b.data_ptr(), out.data_ptr(), p.m, p.n, p.k, p.lda, p.ldb, p.ldd,
                         static_cast<const float*>(sa.data_ptr()), static_cast<const float*>(sb.data_ptr()),
                         static_cast<cudaStream_t>(stream), o);
  } catch (const Error& e) {
    throw std::runtime_error(std::string("dgtune.scaled_mm: ") + e.what());
  }
  counters.calls.fetch_add(1, std::memory_order_relaxed);
}

ScaledMmPlan plan(const Call& c, const std::optional<Tensor>& out, bool amax) {
  ScaledMmArgs args;
  args.a = describe(c.a);
  args.b = describe(c.b);
  args.scale_a = describe(c.scale_a);
  args.scale_b = describe(c.scale_b);
  args.bias = describe(c.bias);
  args.scale_result = describe(c.scale_result);
  args.out = describe(out);
  if (c.out_dtype) args.out_dtype = to_dtype(*c.out_dtype);
  args.use_fast_accum = c.use_fast_accum;
  args.amax = amax;
  try {
    return plan_scaled_mm(args);
  } catch (const ScaledMmError& e) {
    throw std::runtime_error(e.what());
  }
}

Tensor scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, std::optional<Tensor> bias,
                 std::optional<Tensor> scale_result, std::optional<ScalarType> out_dtype, bool use_fast_accum) {
  const Call c{a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum};
  const ScaledMmPlan p = plan(c, std::nullopt, false);
  Tensor out = empty_strided(p.m, p.n, p.n, p.out_dtype, a.get_device_index());
  launch(c, p, out, nullptr);
  return out;
}

void scaled_mm_out(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, std::optional<Tensor> bias,
                   std::optional<Tensor> scale_result, std::optional<ScalarType> out_dtype, bool use_fast_accum,
                   Tensor out) {
  const Call c{a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum};
  const ScaledMmPlan p = plan(c, out, false);
  launch(c, p, out, nullptr);
}

std::tuple<Tensor, Tensor> scaled_mm_amax(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b,
                                          std::optional<Tensor> bias, std::optional<Tensor> scale_result,
                                          bool use_fast_accum) {
  const Call c{a, b, scale_a, scale_b, bias, scale_result, std::nullopt, use_fast_accum};
  const ScaledMmPlan p = plan(c, std::nullopt, true);
  Tensor out = empty_strided(p.m, p.n, p.n, Dtype::kE4M3, a.get_device_index());
  // amax of an empty product is 0 (the kernel writes it otherwise).
  Tensor amax = p.empty ? torch::stable::full({}, 0.0, ScalarType::Float, std::nullopt, a.device())
                        : torch::stable::empty({}, ScalarType::Float, std::nullopt, a.device());
  launch(c, p, out, static_cast<float*>(amax.data_ptr()));
  return {out, amax};
}

}  // namespace
}  // namespace dgt::torch_op

STABLE_TORCH_LIBRARY_IMPL(dgtune, CUDA, m) {
  m.impl("scaled_mm", TORCH_BOX(&dgt::torch_op::scaled_mm));
  m.impl("scaled_mm_out", TORCH_BOX(&dgt::torch_op::scaled_mm_out));
  m.impl("scaled_mm_amax", TORCH_BOX(&dgt::torch_op::scaled_mm_amax));
}
