// The copy limit as one more side of the measurement engine (bench/device_sides.hpp): a streaming kernel
// that reads A and B once and writes D once on the problem's own buffers (launch/copy_limit.hpp), timed
// under the same protocol as the GEMM sides. copy us / GEMM us is the fraction of the copy limit a GEMM
// achieves (1.0 = as fast as moving its bytes once).
#pragma once

#include <cstdint>

#include "bench/device_sides.hpp"
#include "device/buffer.hpp"
#include "launch/copy_limit.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

/// Label of the copy-limit side in a RoundsResult and in stored measurements (kind "provider").
inline constexpr const char* kSideCopyLimit = "copy-limit";

/// Owns the plan and the sink the copy side needs; must outlive the engine that runs side().
class CopyLimitSide {
 public:
  /// Plans the copy for `p` (plan_copy_limit) and allocates the 4-byte sink (so nothing is allocated
  /// during a graph capture). `util` and the buffers behind `ops` must outlive this object.
  CopyLimitSide(const UtilKernels& util, const Problem& p, int sm_count, const jit::GemmOperands& ops);

  /// The side: label kSideCopyLimit, one launch of dgt_copy_limit per call, check_output = false (it
  /// writes a fold of A and B into D, not a GEMM result; the GEMM sides' checks poison D first).
  Side side() const;
  const CopyLimitPlan& plan() const { return plan_; }

 private:
  const UtilKernels* util_;
  CopyLimitPlan plan_;
  jit::GemmOperands ops_;
  DeviceBuffer sink_;
};

}  // namespace dgt
