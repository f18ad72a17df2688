// Growable split-K scratch (partial tiles + per-tile counters) for launches on one stream.
#pragma once

#include "device/buffer.hpp"
#include "launch/gemm_kernel.hpp"

namespace dgt {

/// Holds the largest split-K workspace asked for so far. get() may reallocate and then zeroes the new
/// counters and synchronises the device, so call it outside timed regions (the loader does so on a
/// shape's first call only); launches using the returned workspace must be ordered on one stream.
class WorkspaceArena {
 public:
  /// A workspace big enough for `kernel` on `p` (empty when the kernel does not split K).
  jit::GemmWorkspace get(const jit::GemmKernel& kernel, const Problem& p);

 private:
  DeviceBuffer partials_, counters_;
};

}  // namespace dgt
