// The CUDA kernels of torch.ops.dgtune.m_grouped_scaled_mm_contiguous / _masked, on the LibTorch stable ABI (as
// scaled_mm_op.cpp): describe the tensors, plan_grouped (the rules, grouped_plan.hpp), take the problem's
// dgt::GroupedGemm (grouped_registry.hpp: made on the first call, refused inside capture) and run it on the current
// stream. The schemas and fake implementations are python/dgtune/_grouped_ops.py's. No allocation and no
// synchronisation after the first call of a problem, so calls can be captured in CUDA graphs and replayed with other
// m_indices / masked_m contents.
#include <cuda_runtime_api.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <string>

#include "device_scope.hpp"
#include "gemm_registry.hpp"
#include "grouped_plan.hpp"
#include "grouped_registry.hpp"

namespace dgt::torch_op {
namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

GroupedTensor describe(const Tensor& t) {
  GroupedTensor d;
  d.dim = static_cast<int>(t.dim());
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (int i = 0; i < d.dim && i < 3; ++i) {
    d.size[i] = sizes[i];
    d.stride[i] = strides[i];
  }
  d.numel = t.numel();
  switch (t.scalar_type()) {
    case ScalarType::Float8_e4m3fn: d.dtype = GroupedDtype::kE4M3, d.element_size = 1; break;
    case ScalarType::BFloat16: d.dtype = GroupedDtype::kBF16, d.element_size = 2; break;
    case ScalarType::Float: d.dtype = GroupedDtype::kF32, d.element_size = 4; break;
    case ScalarType::Int: d.dtype = GroupedDtype::kI32, d.element_size = 4; break;
    default: d.dtype = GroupedDtype::kOther; break;
  }
  d.device = t.is_cuda() ? "cuda:" + std::to_string(t.get_device_index()) : "cpu";
  d.ptr = reinterpret_cast<std::uintptr_t>(t.data_ptr());
  return d;
}

void run(bool masked, const Tensor& a, const Tensor& a_scale, const Tensor& b, const Tensor& b_scale, Tensor& out,
         const Tensor& layout, int64_t expected_m) {
  const std::string op = masked ? "m_grouped_scaled_mm_masked" : "m_grouped_scaled_mm_contiguous";
  GroupedOpArgs args;
  args.masked = masked;
  args.a = describe(a);
  args.a_scale = describe(a_scale);
  args.b = describe(b);
  args.b_scale = describe(b_scale);
  args.out = describe(out);
  args.layout = describe(layout);
  args.expected_m = expected_m;
  GroupedOpPlan plan;
  try {
    plan = plan_grouped(args);
  } catch (const GroupedOpError& e) {
    throw std::runtime_error(e.what());
  }
  if (plan.empty) return;
  const int device = a.get_device_index();
  DeviceScope scope(device);
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device, &stream));
  try {
    const GroupedGemm& g = grouped_for(device, plan.key, static_cast<cudaStream_t>(stream), op);
    g.run(a.data_ptr(), b.data_ptr(), out.data_ptr(), static_cast<const float*>(a_scale.data_ptr()),
          static_cast<const float*>(b_scale.data_ptr()), static_cast<const int32_t*>(layout.data_ptr()),
          static_cast<cudaStream_t>(stream));
  } catch (const Error& e) {
    const std::string prefix = "dgtune." + op + ": ";
    const std::string msg = e.message().rfind(prefix, 0) == 0 ? e.message() : prefix + e.message();
    throw std::runtime_error(msg);
  }
}

void m_grouped_scaled_mm_contiguous(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, Tensor out, Tensor m_indices) {
  run(false, a, a_scale, b, b_scale, out, m_indices, 0);
}

void m_grouped_scaled_mm_masked(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, Tensor out, Tensor masked_m,
                                int64_t expected_m) {
  run(true, a, a_scale, b, b_scale, out, masked_m, expected_m);
}

}  // namespace
}  // namespace dgt::torch_op

STABLE_TORCH_LIBRARY_IMPL(dgtune, CUDA, m) {
  m.impl("m_grouped_scaled_mm_contiguous", TORCH_BOX(&dgt::torch_op::m_grouped_scaled_mm_contiguous));
  m.impl("m_grouped_scaled_mm_masked", TORCH_BOX(&dgt::torch_op::m_grouped_scaled_mm_masked));
}
