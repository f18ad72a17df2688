// The ladder probe: at the first call of an M that no sweep tuned (a ladder or nearest pick), dgt::Gemm times the
// kernel it picked and cuBLASLt's heuristic on operands of its own and keeps the faster (docs/loader.md "The ladder
// probe"). Both sides of the ladder check are predictions: a stored median scaled by the cost model, and the linear
// interpolation of a heuristic whose algorithm changes with M. Measured on H100 coverage grids, each side alone left
// rows 10-20% behind cuBLASLt-tuned where the other was not (results/h200/coverage-2026-12-06.md).
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "launch/cublaslt_gemm.hpp"
#include "launch/gemm_kernel.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// Timed rounds of a probe: each round launches both sides once, in alternating order.
inline constexpr int kProbeRounds = 15;

/// How much faster (as a factor) cuBLASLt's median must be than the kernel's before the probe picks cuBLASLt: a
/// call through the loader costs about 0.1 us more with cuBLASLt (results/h200/queue-tail-2026-12-06.md), and the
/// kernel is the one whose config the tuner chose.
inline constexpr double kProbeCublasLtMargin = 1.01;

/// The largest device memory a probe allocates for rotated operand copies (bytes); one copy is always made.
inline constexpr size_t kProbeMaxBytes = size_t(1) << 30;

/// What a probe measured.
struct ProbeTimes {
  double kernel_us = 0;    ///< median over the rounds of the dgtune kernel's launch (CUDA events), microseconds
  double cublaslt_us = 0;  ///< the same for cuBLASLt's algorithm
  int rounds = 0;          ///< rounds timed (kProbeRounds)
  int operand_sets = 0;    ///< copies of A and B the rounds rotate through (probe_operand_sets)
};

/// Whether the probe picks cuBLASLt: its median at least kProbeCublasLtMargin times faster than the kernel's. False
/// when either time is not positive.
bool probe_prefers_cublaslt(const ProbeTimes& t);

/// How many copies of A and B (`set_bytes` each) a probe rotates through so that, under the cold-l2 protocol, a launch
/// finds its operands outside the L2 as the sweep's flush leaves them: enough copies to span twice `l2_bytes`, at most
/// what fits in kProbeMaxBytes, at least 1. Under hot-graph (`cold_l2` false, back-to-back launches on warm operands)
/// always 1.
int probe_operand_sets(size_t set_bytes, int64_t l2_bytes, bool cold_l2);

/// Times `kernel` (loaded for p) and cuBLASLt's `algo` on p, each launched once untimed and then kProbeRounds times,
/// on operands of its own: seeded random e4m3/e5m2 A and B (padding columns included), unit scales, a zero bias,
/// rotated through probe_operand_sets copies, and a split-K scratch and cuBLASLt workspace of its own (the family's
/// scratch may be in use by calls in flight), on a non-blocking stream of its own. Synchronises that stream and frees
/// everything before it returns. Throws Error (kCuda when an allocation fails, kCublas when cuBLASLt cannot run
/// `algo` on p, kInvalid when one set of operands exceeds kProbeMaxBytes). Not while another thread captures in
/// cudaStreamCaptureModeGlobal (it allocates).
ProbeTimes probe_ladder_pick(const jit::GemmKernel& kernel, cublasLtHandle_t handle, const cublasLtMatmulAlgo_t& algo,
                             const Problem& p, int64_t l2_bytes, bool cold_l2);

}  // namespace dgt
