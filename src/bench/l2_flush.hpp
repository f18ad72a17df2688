// The L2 flush of the cold-l2 protocols: a buffer of l2_flush_bytes(protocol, L2) written and then read on the
// stream before each timed launch, so L2 holds only clean lines of unrelated data (a memset-only flush leaves
// dirty lines whose write-back the timed kernel pays). Used by every timer (bench/protocol.hpp Timer, the
// engine's bench/device_sides.hpp) and by kernel tracing (eval/kernel_trace.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "bench/measure_protocol.hpp"
#include "device/buffer.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

class L2Flush {
 public:
  /// Allocates the flush buffer for a device with `l2_bytes` of L2 under protocol `p` (its flush_factor).
  /// Throws Error(kCuda) when the allocation fails.
  L2Flush(const UtilKernels& util, int64_t l2_bytes, const MeasureProtocol& p);

  /// Enqueues one flush on `s` (each with a new salt, so no flush writes the bytes of the previous one).
  void enqueue(cudaStream_t s);
  /// Bytes of the flush buffer.
  int64_t bytes() const { return static_cast<int64_t>(buffer_.bytes()); }

 private:
  const UtilKernels* util_;
  DeviceBuffer buffer_, sink_;
  uint32_t salt_ = 1;
};

}  // namespace dgt
