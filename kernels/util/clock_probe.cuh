// SM clock probe (as nvbench does): count clock64 cycles over a globaltimer interval.
#pragma once
#include "common.cuh"

__device__ __forceinline__ dgt::u64 dgt_globaltimer_ns() {
  dgt::u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// out[0] = elapsed ns, out[1] = elapsed SM cycles over a busy wait of about spin_ns.
extern "C" __global__ void dgt_clock_probe(dgt::u64* out, dgt::u64 spin_ns) {
  const dgt::u64 t0 = dgt_globaltimer_ns();
  const dgt::u64 c0 = clock64();
  dgt::u64 t1 = t0;
  while (t1 - t0 < spin_ns) t1 = dgt_globaltimer_ns();
  const dgt::u64 c1 = clock64();
  out[0] = t1 - t0;
  out[1] = c1 - c0;
}
