// Per-thread cache of encoded TMA tensor maps, for the loader's launch path (host cost of dgt::Gemm::run).
//
// cuTensorMapEncodeTiled is the largest host cost of a launch after the launch itself, and a serving process calls
// the same problem with a handful of operand buffers over and over (PyTorch's caching allocator hands the same
// blocks back). A map depends only on its base address and on the problem and config it was made for, so a prepared
// launch (GemmLaunchPlan, a unique id per object) keys its maps by (plan id, operand slot, base address). The cache
// is thread-local (no lock on the launch path) and direct-mapped: a collision re-encodes, it never returns a map of
// another key.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace dgt {

/// A fresh id for a prepared launch (never 0, never reused in this process): the cache key's first part.
uint64_t next_tensor_map_owner_id();

/// The slot of this thread's cache that (owner, operand, base) maps to; `hit` says whether it holds that key.
/// Internal to cached_tensor_map.
struct TensorMapSlot {
  uint64_t owner = 0;
  const void* base = nullptr;
  int operand = -1;
  alignas(64) CUtensorMap map;
};
TensorMapSlot& tensor_map_slot(uint64_t owner, int operand, const void* base);

/// Copies the map of (owner, operand, base) into `out`: from this thread's cache, else encode() (which may throw:
/// nothing is cached then) stored for the next call. owner 0 never caches.
template <class Encode>
void cached_tensor_map(uint64_t owner, int operand, const void* base, CUtensorMap& out, Encode&& encode) {
  if (owner == 0) {
    out = encode();
    return;
  }
  TensorMapSlot& s = tensor_map_slot(owner, operand, base);
  if (s.owner == owner && s.operand == operand && s.base == base) {
    out = s.map;
    return;
  }
  out = encode();
  s.map = out;
  s.owner = owner, s.operand = operand, s.base = base;
}

}  // namespace dgt
