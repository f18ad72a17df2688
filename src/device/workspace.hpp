// Growable split-K scratch (partial tiles + per-tile counters) for launches on one stream.
#pragma once

#include "device/buffer.hpp"
#include "jit/gemm_kernel.hpp"

namespace dgt {

/// Holds the largest split-K workspace asked for so far. get() may reallocate (synchronising the
/// device through cudaFree) and zeroes new counters, so call it outside timed regions; launches using
/// the returned workspace must be ordered on one stream.
class WorkspaceArena {
 public:
  /// A workspace big enough for `kernel` on `p` (empty when the kernel does not split K).
  jit::GemmWorkspace get(const jit::GemmKernel& kernel, const Problem& p);

 private:
  DeviceBuffer partials_, counters_;
};

}  // namespace dgt
