// The device scratch the shapes of one problem family share in dgt::Gemm: split-K partials and tile counters, and
// the cuBLASLt workspace (internal header).
#pragma once

#include <cstddef>
#include <list>

#include "device/buffer.hpp"
#include "launch/gemm_kernel.hpp"

namespace dgt {

/// Grows on demand outside capture and is sized once for every warmed M by Gemm::warmup, so that a warmed family
/// never allocates again. A buffer that is outgrown is kept (not freed) until the Gemm is destroyed: shapes resolved
/// earlier keep launching with it, so no launch ever sees its scratch freed or moved. Launches sharing a buffer must
/// be stream-ordered (the rule dgt::Gemm documents per family). Not thread-safe (the loader's exclusive lock).
class FamilyScratch {
 public:
  /// Makes the scratch at least this big: true when it already was or was grown. false, with nothing changed, when it
  /// would have to allocate and `may_allocate` is false (inside graph capture). A new counters buffer is zeroed and
  /// the device synchronised (the kernel keeps the counters zero after every complete launch). Each allocation adds
  /// one to `allocs`. Throws Error(kCuda) when an allocation fails.
  bool reserve(size_t partial_bytes, size_t counter_bytes, size_t lt_bytes, bool may_allocate,
               unsigned long long& allocs);

  /// The split-K scratch as jit::GemmWorkspace (empty buffers as null).
  jit::GemmWorkspace split_k() const;
  void* lt() const { return lt_.get(); }
  size_t lt_bytes() const { return lt_.bytes(); }

 private:
  DeviceBuffer partials_, counters_, lt_;
  std::list<DeviceBuffer> retired_;
};

}  // namespace dgt
