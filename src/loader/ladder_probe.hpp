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
#include <vector>

#include "launch/cublaslt_gemm.hpp"
#include "launch/gemm_kernel.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// Timed rounds of a probe: each round launches every side once, the order rotating from round to round.
inline constexpr int kProbeRounds = 15;

/// How many of cuBLASLt's heuristic algorithms a probe times beside the kernel: its first four. cuBLASLt-tuned (the
/// fastest of the heuristic's results, timed) was one of the first four at 2013 of 2220 rows of eight H100 coverage
/// grids, and at 49 of the 51 rows there where the probe with the first alone stayed below 0.98
/// (results/h200/ladder-probe-2026-12-06.md).
inline constexpr int kProbeCublasLtAlgos = 4;

/// How much faster (as a factor) cuBLASLt must be than the kernel in a round for the round to count as cuBLASLt's: a
/// call through the loader costs about 0.1 us more with cuBLASLt (results/h200/queue-tail-2026-12-06.md), and the
/// kernel is the one whose config the tuner chose.
inline constexpr double kProbeCublasLtMargin = 1.01;

/// The largest device memory (bytes) a probe allocates for its copies of A and B, and for one copy of A, B and D: a
/// problem whose A, B and D take more is not probed (probe_fits). The split-K scratch and cuBLASLt's workspace (at
/// most 32 MiB) come on top.
inline constexpr size_t kProbeMaxBytes = size_t(1) << 30;

/// The most copies of A and B a probe rotates through: the rounds' launches (kernel and kProbeCublasLtAlgos algorithms,
/// kProbeRounds times) each take the next copy, so more are never read.
inline constexpr int kProbeMaxOperandSets = (1 + kProbeCublasLtAlgos) * kProbeRounds + 1;

/// What a probe measured.
struct ProbeTimes {
  int rounds = 0;           ///< rounds timed (kProbeRounds)
  int algos = 0;            ///< cuBLASLt algorithms timed
  int algo = 0;             ///< the one of them with the smallest total time over the rounds (ties: the first)
  int cublaslt_rounds = 0;  ///< rounds where the kernel took more than kProbeCublasLtMargin x that algorithm's time
  double kernel_us = 0;     ///< the kernel's fastest launch over the rounds (CUDA events), microseconds
  double cublaslt_us = 0;   ///< the same for that algorithm
  int operand_sets = 0;     ///< copies of A and B the rounds rotate through (probe_operand_sets)
};

/// Whether the probe picks cuBLASLt (ProbeTimes::algo): it was more than kProbeCublasLtMargin faster than the kernel
/// in more than half of the rounds, each round pairing the sides' launches (a drift of the clock over the rounds
/// moves all alike; the same pairing as compare's per-round ratios, docs/measurement.md). False without rounds.
bool probe_prefers_cublaslt(const ProbeTimes& t);

/// ProbeTimes from the rounds' times (microseconds): kernel_us[r] of round r and cublaslt_us[j][r] of algorithm j in
/// round r (every list as long as kernel_us, at least one algorithm, else Error(kInternal)), and the operand copies.
ProbeTimes probe_times(const std::vector<double>& kernel_us, const std::vector<std::vector<double>>& cublaslt_us,
                       int operand_sets);

/// How many copies of A and B (`set_bytes` each) a probe rotates through so that, under the cold-l2 protocol, a launch
/// finds its operands outside the L2 as the sweep's flush leaves them: enough copies to span twice `l2_bytes`, at most
/// kProbeMaxOperandSets and what fits in kProbeMaxBytes, at least 1. Operands below 2 x L2 / kProbeMaxOperandSets
/// (3.2 MiB with a 50 MiB L2) may then be partly in the L2 at a launch. Under hot-graph (`cold_l2` false,
/// back-to-back launches on warm operands) always 1.
int probe_operand_sets(size_t set_bytes, int64_t l2_bytes, bool cold_l2);

/// Bytes of one copy of p's A and B (M x lda and N x ldb elements, padding included).
size_t probe_operand_bytes(const Problem& p);

/// Whether p's A, B and D (M x ldd elements) fit in kProbeMaxBytes: a probe is made only then.
bool probe_fits(const Problem& p);

/// Times `kernel` (loaded for p) and each of cuBLASLt's `algos` on p, each launched once untimed and then kProbeRounds
/// times,
/// on operands of its own: seeded random e4m3/e5m2 A and B (padding columns included), unit scales, a zero bias,
/// rotated through probe_operand_sets copies, and a split-K scratch and cuBLASLt workspace of its own (the family's
/// scratch may be in use by calls in flight), on a non-blocking stream of its own. After the untimed launches it
/// synchronises the device; the timed rounds are all enqueued behind a host function that holds the stream, then
/// released, so no launch waits for the host. Synchronises that stream and frees everything before it returns, also
/// when it throws. Throws Error (kCuda when an allocation or launch fails, kCublas when cuBLASLt cannot run an algorithm on
/// p, kInvalid when !probe_fits(p) or `algos` is empty). Not while any thread captures in cudaStreamCaptureModeGlobal (it allocates and
/// synchronises).
ProbeTimes probe_ladder_pick(const jit::GemmKernel& kernel, cublasLtHandle_t handle,
                             const std::vector<cublasLtMatmulAlgo_t>& algos, const Problem& p, int64_t l2_bytes,
                             bool cold_l2);

}  // namespace dgt
