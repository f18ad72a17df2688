// The grouped kernels' last kernel parameter on the host side.
#pragma once

#include <cstdint>

namespace dgt::jit {

/// Mirrors dgt::gemm::GroupArgs (kernels/gemm/grouped_scheduler.cuh), field for field: the device layout array
/// (contiguous m_indices / masked masked_m, int32), G, masked M_max, and the floats between two groups' A and B
/// block scales. Every FP8 GEMM kernel takes it as its last parameter; dense kernels get zeros and never read it.
struct GroupKernelArgs {
  const int32_t* layout = nullptr;
  uint32_t num_groups = 0, m_max = 0, sa_group = 0, sb_group = 0;
};
static_assert(sizeof(GroupKernelArgs) == 24, "must match dgt::gemm::GroupArgs (kernels/gemm/grouped_scheduler.cuh)");

}  // namespace dgt::jit
