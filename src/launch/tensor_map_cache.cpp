#include "launch/tensor_map_cache.hpp"

#include <atomic>
#include <memory>

namespace dgt {

namespace {
// 1024 slots of 192 bytes (192 KiB per launching thread, allocated on its first cached launch): enough for a
// model's problems at a few dozen M, each with its A, A-tail and D maps over the buffers a serving loop rotates.
constexpr size_t kSlots = 1024;
}  // namespace

uint64_t next_tensor_map_owner_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

TensorMapSlot& tensor_map_slot(uint64_t owner, int operand, const void* base) {
  thread_local std::unique_ptr<TensorMapSlot[]> table(new TensorMapSlot[kSlots]);
  // splitmix64 finaliser over the three key parts: neighbouring buffers and owners spread over the table.
  uint64_t h = owner * 0x9E3779B97F4A7C15ull ^ (reinterpret_cast<uintptr_t>(base) >> 4) ^ uint64_t(operand) << 58;
  h ^= h >> 30, h *= 0xBF58476D1CE4E5B9ull, h ^= h >> 27, h *= 0x94D049BB133111EBull, h ^= h >> 31;
  return table[h & (kSlots - 1)];
}

}  // namespace dgt
