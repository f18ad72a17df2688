// dgtune run-time grouped (MoE) GEMM: DeepGEMM's m-grouped contiguous and masked layouts from application code.
//
//   dgt::GroupedGemmProblem p;            // what the host knows without reading the device
//   p.layout = dgt::GroupedLayout::kMasked;  p.groups = 32;  p.m = 256 /* M_max */;  p.expected_m = 16;
//   p.n = 4096;  p.k = 7168;  p.scale = dgt::Fp8Scaling::kBlock;
//   dgt::GroupedGemm moe(p);              // chooses the config and compiles or loads its kernel now
//   moe.run(A, B, D, scale_a, scale_b, masked_m, stream);   // device pointers; no sync, no allocation: capturable
//
// Per group g, with FP32 accumulation promoted per 128-wide k-block:
//   D_g[m, n] (bf16) = sum_k A_g[m, k] * B[g][n, k] * scales,  A, B e4m3, both K-major (row-major [rows, K]).
// The layouts (kernels/gemm/grouped_scheduler.cuh walks them; src/problem/grouped_problem.hpp documents them):
//  - kContiguous: A [M_sum, K], B [G, N, K], D [M_sum, N]. Each group's rows are one segment that starts at a multiple
//    of 128 rows (padding rows after its real rows); m_indices int32 [M_sum] on the device holds each row's group, or
//    -1 for a padding row. Padding rows of D are never written.
//  - kMasked: A [G, M_max, K], B [G, N, K], D [G, M_max, N]; masked_m int32 [G] on the device: group g's real rows are
//    its first masked_m[g] (<= M_max); the rows after them are never written. expected_m is a host hint of the rows
//    per group: it sizes the persistent grid only, any counts are computed correctly.
// The kernel reads m_indices / masked_m at every launch: a CUDA graph captured once may be replayed with other counts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "dgtune/api.hpp"
#include "dgtune/error.hpp"
#include "dgtune/gemm.hpp"

namespace dgt {

/// DeepGEMM's two m-grouped layouts (see the top of this header).
enum class GroupedLayout { kContiguous, kMasked };

/// The key of one grouped GEMM: every field is known on the host before the launch (the per-group row counts are
/// not: they live on the device). Scales (FP32, device memory; scale_a / scale_b of GroupedGemm::run):
///  - Fp8Scaling::kPerTensor: one float each, shared by all groups.
///  - Fp8Scaling::kBlock (DeepGEMM's 1x128 activations and 128x128 weights; DeepSeek-V3): with KG = ceil(K / 128),
///    A's scales are MN-major (rows contiguous per k granule): contiguous [KG][M_sum] (the scale of A[m, 128j ..] at
///    scale_a[j * M_sum + m]), masked [G][KG][M_max] (scale_a[(g * KG + j) * M_max + m]); B's are [G][ceil(N/128)][KP],
///    KP = round_up(KG, 4) (each row of a group's weight-block scales padded to 16 bytes; KP == KG when KG % 4 == 0,
///    as for K = 7168 and 2048), the scale of B[g][128i .., 128j ..] at scale_b[(g * ceil(N/128) + i) * KP + j].
///    This is what DeepGEMM's get_col_major_tma_aligned_tensor gives for A (M_sum and M_max are multiples of 128,
///    so the TMA-aligned leading dimension is the row count itself).
struct GroupedGemmProblem {
  GroupedLayout layout = GroupedLayout::kContiguous;
  int groups = 0;          ///< G, 1 .. 4096
  int64_t m = 0;           ///< contiguous: M_sum, the rows of A and D (a multiple of 128); masked: M_max (a multiple of 128)
  int64_t expected_m = 0;  ///< masked: the expected rows per group, >= 1 (grid size only); contiguous: 0
  int64_t n = 0;           ///< N of one group (rows of B[g], columns of D)
  int64_t k = 0;           ///< K
  Fp8Scaling scale = Fp8Scaling::kBlock;  ///< kPerTensor or kBlock
};

/// How a GroupedGemm is made.
struct GroupedGemmOptions {
  int device = 0;         ///< CUDA ordinal; -1: the calling thread's current device
  std::string cache_dir;  ///< the cubin cache; empty: $DGTUNE_CACHE_DIR, else the per-user cache directory
  /// A config key (e.g. "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1") to run instead of the tuning DB and
  /// the default rule. Checked against the grouped rules G1-G5 and the resource model (R1-R25).
  std::string config;
  /// The tuning DB of `dgtune sweep` / `dgtune tune-model --experts` (read once, at construction); empty: $DGTUNE_DB,
  /// else none. No DB, or a missing, damaged, foreign or other-schema file: one warning, the default rule.
  std::string db_path;
  /// Which winners to prefer, as GemmOptions::protocol: "cold-l2" (default) or "hot-graph"; else Error(kUsage).
  std::string protocol = "cold-l2";
  /// A kernel bundle directory (`dgtune export --format bundle`, which holds the grouped winners' kernels too); empty:
  /// $DGTUNE_BUNDLE, else none. The kernel is taken from it first, then from the cubin cache, then compiled with
  /// NVRTC (one warning when a bundle misses). Errors as GemmOptions::bundle (kIo, kInvalid for another build's).
  std::string bundle;
};

/// What a GroupedGemm runs and why.
struct GroupedGemmChoice {
  std::string config_key;  ///< the kernel config
  /// "explicit" (GroupedGemmOptions::config); from the tuning DB, by dgt::Gemm's identity rule with the ladder over
  /// M_sum (contiguous) or expected_m (masked): "db" (this key's winner under GroupedGemmOptions::protocol's kind),
  /// "db-other-protocol", "ladder" (between two tuned points: the upper one's winner), "nearest" (outside them),
  /// "ladder-other-protocol", "nearest-other-protocol" (the other kind's ladder comes first past the preferred kind's
  /// largest tuned point, as in dgt::Gemm); or "default" (no grouped winner of this layout, G, N, K and
  /// scale mode for this GPU: the measured default rule).
  std::string source;
  std::string protocol;   ///< protocol the winner was timed under, e.g. "cold-l2-v1" ("" unless from the DB)
  std::string tuned_key;  ///< problem key the winner was tuned on ("" unless from the DB)
  double tuned_us = 0;    ///< its stored median time, microseconds (0 unless from the DB)
  bool older_kernel = false;  ///< the winner was measured with another kernel version (its config is still legal)
};

/// The config a GroupedGemm of `problem` runs when no tuning DB holds a winner for it (GroupedGemm looks one up first,
/// GroupedGemmOptions::db_path), without a GPU: `config` when not empty, else the default rule, measured
/// on the H200 (results/h200/grouped-epilogue-2026-12-03.md and grouped-scales-2026-12-03.md, the faster of the
/// candidates per problem):
///  - contiguous, N <= K: 128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 (DeepSeek-V3's gate_up);
///  - contiguous, N > K: 128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1, the same tile walking along N (down: the
///    fastest on every contiguous down row of both machine starts);
///  - masked, expected_m <= 64: 64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 (BLOCK_M 64 wastes half the rows
///    of a 128-row block less on small groups: the winner at 1, 16 and 64 rows per group but one);
///  - masked, expected_m > 64: the rm8 128x128 one (the winner at 256 rows per group).
/// Throws dgt::Error naming the field or operand and the rule: kUsage for an enum value out of range or a config key
/// that does not parse; kInvalid for a problem that breaks a rule (groups outside 1 .. 4096, M not a positive multiple
/// of 128, expected_m < 1 (masked) or != 0 (contiguous), a scale mode other than per-tensor or block, N or K breaking
/// the TMA rules (K a multiple of 16, ...)) and for a config that breaks a grouped rule (G1-G3) or R1-R25, P3, P8, P9.
DGT_API GroupedGemmChoice grouped_gemm_choice(const GroupedGemmProblem& problem, const std::string& config = {});

/// One grouped GEMM problem, its kernel chosen, compiled (or taken from the cubin cache) and loaded at construction:
/// run() then encodes the TMA descriptors on the host and launches, with no NVRTC compile, no device allocation, no
/// DB read, no host synchronisation and no read of device memory, so run() may be captured in a CUDA graph and
/// replayed (with other counts in m_indices / masked_m). Construct it before capturing: construction loads a module
/// (as dgt::Gemm's warm-up does), which must never happen inside a capture. run() is const and thread-safe.
class DGT_API GroupedGemm {
 public:
  /// Checks the problem and the config (grouped_gemm_choice: the same errors, before the device is touched) and the
  /// protocol (kUsage), opens the device (dgt::Error(kNoDevice) without an sm_90 GPU), looks up the tuned winner in the
  /// tuning DB (GroupedGemmOptions::db_path; not when `config` is given), then compiles or loads the kernel (kNvrtc,
  /// kDriver, kIo when no cubin cache directory is writable).
  explicit GroupedGemm(const GroupedGemmProblem& problem, GroupedGemmOptions options = {});
  ~GroupedGemm();
  GroupedGemm(const GroupedGemm&) = delete;
  GroupedGemm& operator=(const GroupedGemm&) = delete;
  GroupedGemm(GroupedGemm&&) noexcept;
  GroupedGemm& operator=(GroupedGemm&&) noexcept;

  /// Enqueues the grouped GEMM on `stream` (a stream of this object's device). All pointers are device pointers, laid
  /// out as GroupedGemmProblem and the top of this header say: `a` A (e4m3), `b` B [G, N, K] (e4m3), `d` D (bf16),
  /// `scale_a` / `scale_b` the scales, `layout` m_indices (contiguous, M_sum int32) or masked_m (masked, G int32).
  /// Throws dgt::Error(kInvalid) naming the operand and the rule, before anything is enqueued, when a pointer is null,
  /// or a, b, d, or a block scale is not 16-byte aligned (TMA and cp.async.bulk), or a per-tensor scale or the layout
  /// array is not 4-byte aligned; dgt::Error(kDriver) when the launch is refused.
  void run(const void* a, const void* b, void* d, const float* scale_a, const float* scale_b, const int32_t* layout,
           cudaStream_t stream) const;

  const GroupedGemmProblem& problem() const;
  const GroupedGemmChoice& choice() const;
  /// Where the kernel came from at construction: "bundle" (GroupedGemmOptions::bundle), "cubin cache" or "nvrtc".
  const std::string& kernel_origin() const;
  /// CTAs of each launch: the persistent grid (min of the resident CTAs and the tiles the key implies).
  int grid_ctas() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dgt
