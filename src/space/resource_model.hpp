// The resource model: shared memory, registers and legality of one kernel instance, computed on the
// host with the same rules, order and numbers as the static_asserts in
// kernels/gemm/fp8_gemm_traits.cuh.
#pragma once

#include <functional>
#include <string>

#include "problem/kernel_config.hpp"

namespace dgt {

/// sm_90 opt-in maximum dynamic shared memory per block (227 KB).
constexpr int kMaxSmemPerBlock = 232448;
/// Largest split-K factor in the family (R15, host only: the split count is a run-time argument).
constexpr int kMaxSplitK = 16;

/// Shared-memory budget in bytes, by part (kernels/gemm/fp8_gemm_traits.cuh layout).
struct SmemBudget {
  int a_stages = 0;   ///< kNumStages * BLOCK_M * BLOCK_K
  int b_stages = 0;   ///< kNumStages * BLOCK_N * BLOCK_K, rounded up to 1024 (the next region is swizzled)
  int staging = 0;    ///< BLOCK_M * BLOCK_N * bytes of D (bf16 2, f32 4, e4m3 1) with the TMA-store epilogue, else 0
  int scales = 0;     ///< block scale modes: kNumStages * the stage's scales (A: BLOCK_M floats per 128-wide
                      ///< granule; block: 16 bytes per 128-column block of B the tile touches; block1d1d: BLOCK_N
                      ///< floats per granule), else 0
  int barriers = 0;   ///< 2 * kNumStages * 8 (full + empty mbarriers) + 8 (split-K flag) with split-K, 16 with a
                      ///< cluster split (its full and free barriers)
  int reduce = 0;     ///< cluster split: (split_k - 1) FP32 partial tiles, BLOCK_M * BLOCK_N * 4 bytes each, after
                      ///< the barriers rounded up to 16 bytes; else 0
  int align_pad = 0;  ///< 1024: slack to align the dynamic base for the swizzled tiles
  int total = 0;      ///< what the launch requests
};

/// Registers per consumer thread after setmaxnreg.
struct RegBudget {
  int accumulators = 0;  ///< (BLOCK_M / WG / 64) * BLOCK_N / 2 per buffer: x2 (acc + 1 partial) with 1g, x3 with 2g
  int overhead = 0;      ///< kRegOverhead: addresses, loop state, epilogue temporaries (24 with 1g and pp, 32 with 1g for
                         ///< block scales on a multicast cluster, 16 with 2g),
                         ///< plus the scale modes' kScaleRegs and the output/epilogue's kEpiRegs
  int limit = 0;         ///< 240 with one consumer warpgroup, 232 with two
};

/// Budget and verdict for one kernel instance.
struct ResourceReport {
  SmemBudget smem;
  RegBudget regs;
  int threads = 0;
  /// Empty when legal; otherwise "R<n>: <reason with the numbers>", the first rule that fails.
  std::string rejection;
  bool ok() const { return rejection.empty(); }
};

/// Evaluates rules R1..R26 in order (see kernels/gemm/fp8_gemm_traits.cuh; R26 in fp8_gemm.cuh) and the budgets.
ResourceReport evaluate_resources(const KernelSpec& spec);

/// A spec with its resource report, evaluated once and passed along. A sweep's candidate is evaluated when
/// the space is enumerated (Candidate::resources, space/search_space.hpp); the compile queue, code generation
/// (the shared-memory size it embeds), the trial record and the kernel cache read that report instead of
/// evaluating the spec again. A caller that does not come from the space (the loader, `dgtune run`, a worker
/// given a config) evaluates once with evaluate().
struct EvaluatedSpec {
  KernelSpec spec;
  ResourceReport resources;  ///< evaluate_resources(spec)

  static EvaluatedSpec evaluate(const KernelSpec& spec) { return {spec, evaluate_resources(spec)}; }
};

namespace test_hooks {
/// Called with the spec at the start of every evaluate_resources() (unit tests count evaluations per spec);
/// nullptr (the default) calls nothing. May be called from several threads at once (the compile pool).
using EvaluateResourcesHook = void (*)(const KernelSpec& spec);
void set_evaluate_resources_hook(EvaluateResourcesHook hook);
}  // namespace test_hooks

/// kEpiRegs: consumer registers the output type and epilogue add to the overhead: 0 with per-tensor and
/// channel scales, bias 2 + e4m3 4 + GELU 4 with the block scale modes (mirrors
/// Fp8GemmTraits::kEpiRegs; calibrated with the NVRTC spill test EpilogueCompiles.SampleOfEveryOutputAndEpilogueCompilesWithoutSpills (ctest nvrtc_epilogue_compiles)).
int epilogue_regs(DType d, Bias bias, Act act, ScaleMode scale);

/// Hard requirements a legal config puts on the problem (unlike the P1/P2/P4-P7 heuristics, breaking
/// one makes the launch fail): P3, the TMA-store epilogue needs D's rows to be 16-byte multiples
/// (ldd x bytes of D's type % 16 == 0: ldd % 8 for bf16, % 4 for f32, % 16 for e4m3); P8, the ping-pong
/// mainloop (one tensor-core sum per tile, no promotion) needs K <= promote_every x BLOCK_K (<= 2048, R18);
/// P9, a cluster split needs its split_k splits all non-empty (effective_splits(c, K) == split_k); P10, swap AB
/// needs D's N x bytes a multiple of 16 (its transposed store is TMA only). `p` is D's problem, not the transposed
/// one. Empty when the config can run the problem; else "P3: <reason>", "P8: ...", "P9: ..." or "P10: ...". (D's address must
/// also be 16-byte aligned for TMA stores; that is checked per call, naming operand D.)
std::string problem_fit(const KernelConfig& c, const Problem& p);

/// The first rule `c` breaks for `p`: a legality rule R1-R26 of evaluate_resources() or the hard
/// requirements P3, P8, P9, P10 of problem_fit(); empty when the config can run the problem. Every path that takes a
/// config from the user (run --config, compare --config) checks it with this before a GPU or a DB is
/// touched, and the loader keeps only stored winners that pass it.
std::string config_rule_violation(const KernelConfig& c, const Problem& p);

/// The deepest kNumStages <= cap (>= 2) with which `spec` is legal, or 0 when none is. `legal` (default: the
/// report of evaluate_resources() is ok) lets a caller that keeps the reports it computed answer from them.
int deepest_stages(KernelSpec spec, int cap, const std::function<bool(const KernelSpec&)>& legal = {});

}  // namespace dgt
