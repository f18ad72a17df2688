// The rules of dgtune.m_grouped_scaled_mm_contiguous / _masked (DeepGEMM's m-grouped arguments mapped onto
// dgt::GroupedGemm), without torch: the op describes its tensors and gets the GroupedGemm key, or a GroupedOpError
// whose message names the argument and the rule. python/dgtune/_grouped_ops.py checks the same rules, in the same
// order and words, on fake tensors. Kept torch-free so the CPU unit tests check it (tests/unit/test_grouped_plan.cpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "dgtune/grouped_gemm.hpp"

namespace dgt::torch_op {

/// The dtypes the grouped rules tell apart.
enum class GroupedDtype { kE4M3, kBF16, kF32, kI32, kOther };

/// What the rules need of one tensor (up to 3 dimensions).
struct GroupedTensor {
  int dim = 0;
  int64_t size[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};  ///< in elements
  int64_t numel = 0;
  int element_size = 1;           ///< bytes
  GroupedDtype dtype = GroupedDtype::kOther;
  std::string device;             ///< e.g. "cuda:0", for the device rule's message
  std::uintptr_t ptr = 0;         ///< data pointer (0: alignment is not checked)
};

struct GroupedOpArgs {
  bool masked = false;
  GroupedTensor a, a_scale, b, b_scale, out, layout;  ///< layout: m_indices (contiguous) or masked_m (masked)
  int64_t expected_m = 0;                             ///< masked only
};

/// The call as dgt::GroupedGemm takes it. `empty`: contiguous M_sum = 0, nothing to launch.
struct GroupedOpPlan {
  GroupedGemmProblem key;
  bool empty = false;
};

/// A broken rule; what() is "dgtune.<op>: <message>" as python/dgtune/_grouped_ops.py words it.
class GroupedOpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Checks every rule (the order of _grouped_ops.check_grouped: dimensions, dtypes, one device, shapes, M a multiple
/// of 128, K a positive multiple of 16, expected_m >= 1 (masked), contiguity, the scales (both one element: per-tensor;
/// else the block shapes and strides), 16-byte alignment of a, b, out and block scales, 4 bytes of the layout) and
/// returns the plan. Throws GroupedOpError.
GroupedOpPlan plan_grouped(const GroupedOpArgs& args);

}  // namespace dgt::torch_op
