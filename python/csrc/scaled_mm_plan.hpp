// The rules of dgtune.scaled_mm (torch._scaled_mm's arguments mapped onto dgt::Gemm), without torch: the op describes
// its tensors with TensorDesc and gets a ScaledMmPlan (what to pass to dgt::Gemm::run, which scales to copy) or a
// ScaledMmError naming the operand and the rule. python/dgtune/_ops.py checks the same rules on fake tensors;
// docs/python.md lists them. Kept torch-free so the CPU unit tests check it (tests/unit/test_scaled_mm_plan.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "dgtune/gemm.hpp"

namespace dgt::torch_op {

/// The dtypes the op tells apart (every other torch dtype is kOther).
enum class Dtype { kE4M3, kE5M2, kBF16, kF32, kF16, kOther };

/// What the rules need of one tensor argument. `present` false: an optional argument that is None.
struct TensorDesc {
  bool present = false;
  int dim = 0;
  int64_t size[2] = {1, 1};    ///< the first two sizes (dim < 2: 1)
  int64_t stride[2] = {1, 1};  ///< in elements
  int64_t numel = 0;
  Dtype dtype = Dtype::kOther;
  bool cuda = false;
  int device = -1;          ///< CUDA device index (cuda only)
  std::uintptr_t ptr = 0;   ///< data pointer (0 for fake tensors: alignment is then not checked)
  bool contiguous = false;
};

/// The arguments of dgtune::scaled_mm / scaled_mm_out / scaled_mm_amax.
struct ScaledMmArgs {
  TensorDesc a, b, scale_a, scale_b, bias, scale_result;
  TensorDesc out;                   ///< scaled_mm_out's `out` (present) or none
  std::optional<Dtype> out_dtype;   ///< nullopt: bf16 (or out's dtype with `out`)
  bool use_fast_accum = false;
  bool amax = false;                ///< scaled_mm_amax: e4m3 output with amax
};

/// A scale the op copies before the launch into the layout dgt::Gemm reads: a contiguous buffer of
/// buffer_rows x buffer_cols floats, of which the view (transpose first if `transposed`, then the first
/// view_rows rows) receives the user's scale tensor. kNone: the scale is read where it is.
struct ScaleCopy {
  enum Kind { kNone, kClone, kStrided } kind = kNone;
  int64_t buffer_rows = 0, buffer_cols = 0;
  bool transposed = false;
  int64_t view_rows = 0;  ///< rows kept after the (optional) transpose, via narrow(0, 0, view_rows)
  int64_t view_cols = 0;  ///< columns kept, via narrow(1, 0, view_cols)
};

/// What the op runs: the shape and leading dimensions for dgt::Gemm::run, the recipe, the copies.
struct ScaledMmPlan {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  bool empty = false;            ///< M == 0 or N == 0: nothing to launch
  const char* recipe = "";       ///< "tensorwise" | "rowwise" | "blockwise_1x128_128x128" | "blockwise_1x128_1x128"
  GemmRunOptions options;        ///< formats, accumulation, scale mode, output type (pointers unset)
  Dtype out_dtype = Dtype::kBF16;
  bool has_bias = false;
  bool default_scale_result = false;  ///< e4m3 output without scale_result: the op passes 1.0
  ScaleCopy copy_a, copy_b;
};

/// A rule broken by the arguments; what() starts with "dgtune.scaled_mm: " and names the operand and the rule.
class ScaledMmError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Checks every rule (docs/python.md "Rules") and plans the call. Throws ScaledMmError.
ScaledMmPlan plan_scaled_mm(const ScaledMmArgs& args);

/// "e4m3" / "bf16" / ... for messages.
const char* dtype_name(Dtype d);

}  // namespace dgt::torch_op
