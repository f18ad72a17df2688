// Phase timestamps of one launch, for `dgtune trace` (src/cli/trace.cpp). Compiled in only when the
// generated source defines DGT_TRACE (jit::generate_gemm(spec, true)); every other build gets empty marks
// and the same code as before. Each CTA records, for its first work unit, when it reached each point:
// %globaltimer (ns, one clock for the whole GPU, to line CTAs up) and %clock64 (this SM's cycles, for the
// fine phases inside a CTA).
#pragma once
#include "common.cuh"

namespace dgt::gemm {

/// The points, in the order a CTA normally reaches them (src/cli/trace.cpp names them the same).
enum TracePoint : u32 {
  kTraceStart = 0,         ///< thread 0, first instruction
  kTraceSetup = 1,         ///< thread 0, barriers initialised and the CTA (cluster) synchronised
  kTraceFirstIssue = 2,    ///< producer, first TMA loads of the CTA issued
  kTraceFirstFull = 3,     ///< consumer thread 0, first full-barrier wait passed (first data in shared memory)
  kTraceMainloopEnd = 4,   ///< consumer thread 0, first unit's last k-block retired and promoted (2o: before the
                           ///< next tile's early first k-block)
  kTraceReduced = 5,       ///< consumer thread 0, split-K reduction done (or: this CTA was not the last split)
  kTraceStored = 6,        ///< consumer thread 0, first unit's epilogue issued its stores
  kTraceEnd = 7,           ///< consumer thread 0 after its warpgroup's last unit, once the shared-memory reads of
                           ///< its TMA stores are done (pp: warpgroup 1 may still be running its last unit)
  // Finer points of the start (first unit, first empty slot and first issue come before the producer's
  // register release: the first k-blocks are issued early):
  kTraceProducerRegs = 8,  ///< producer TMA thread, after setmaxnreg.dec (which follows the early k-blocks' issue)
  kTraceFirstUnit = 9,     ///< producer TMA thread, first work unit's coordinates computed
  kTraceFirstEmpty = 10,   ///< producer TMA thread, first empty slot (fresh: not waited for)
  kTraceConsumerRegs = 11, ///< consumer thread 0, after setmaxnreg.inc
  kTracePoints = 12
};

constexpr u32 kTraceMaxCtas = 1024;

#ifdef DGT_TRACE
constexpr bool kTrace = true;
}  // namespace dgt::gemm
/// [CTA][point][0: globaltimer ns, 1: clock64]. The host zeroes it before the traced launch and reads it
/// after (cuModuleGetGlobal, C name "dgt_trace"); CTAs beyond kTraceMaxCtas are not recorded.
extern "C" {
__device__ unsigned long long dgt_trace[dgt::gemm::kTraceMaxCtas * dgt::gemm::kTracePoints * 2];
}
namespace dgt::gemm {

__device__ __forceinline__ void trace_mark(u32 point) {
  if (blockIdx.x >= kTraceMaxCtas) return;
  unsigned long long ns, cycles;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns)::"memory");
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(cycles)::"memory");
  dgt_trace[(blockIdx.x * kTracePoints + point) * 2] = ns;
  dgt_trace[(blockIdx.x * kTracePoints + point) * 2 + 1] = cycles;
}
#else
constexpr bool kTrace = false;
__device__ __forceinline__ void trace_mark(u32) {}
#endif

}  // namespace dgt::gemm
