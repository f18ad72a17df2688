// L2 flush for the cold protocol: write a buffer >= 2x L2, then read it back, so L2 ends up holding
// only CLEAN lines of an unrelated buffer. A write-only (memset) flush leaves ~L2-size of dirty lines
// whose write-back the next timed kernel pays (measured 15-25% on memory-bound shapes; design.md).
#pragma once
#include "common.cuh"

extern "C" __global__ void dgt_flush_write(uint4* buf, dgt::u64 n16, dgt::u32 salt) {
  for (dgt::u64 i = blockIdx.x * dgt::u64(blockDim.x) + threadIdx.x; i < n16; i += dgt::u64(gridDim.x) * blockDim.x)
    buf[i] = make_uint4(salt, dgt::u32(i), salt ^ 0x5bd1e995u, dgt::u32(i >> 32));
}

/// Reads every 16-byte word; the sink write (never taken in practice) keeps the loads alive.
extern "C" __global__ void dgt_flush_read(const uint4* buf, dgt::u64 n16, dgt::u32* sink) {
  dgt::u32 acc = 0;
  for (dgt::u64 i = blockIdx.x * dgt::u64(blockDim.x) + threadIdx.x; i < n16; i += dgt::u64(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}
