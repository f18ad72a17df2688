// KernelConfig: every tunable of the FP8 GEMM kernel family (kernels/gemm/fp8_gemm.cuh).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "problem/problem.hpp"

namespace dgt {

/// Tile order of the persistent scheduler ("rasterization"). kAlongM: inside a band of `group`
/// n-blocks, consecutive tiles walk down M; kAlongN: inside a band of `group` m-blocks, they walk
/// along N. Bands keep the operand tiles that concurrent CTAs share resident in L2.
enum class Raster { kAlongM, kAlongN };

/// How the output tile reaches global memory. kDirect: predicated 4-byte stores from registers (any
/// ldd). kTma: each consumer warpgroup stages its BF16 rows in a 128-byte-swizzled shared-memory tile
/// and one thread stores it with a TMA bulk tensor store (needs ldd * 2 a multiple of 16 bytes).
enum class Epilogue { kDirect, kTma };

/// Consumer mainloop schedule (kernels/gemm/mainloop_1g.cuh, mainloop_2g.cuh, mainloop_2o.cuh, mainloop_pp.cuh).
/// k1g: one promotion group in flight (issue a k-block, wait for it, release the stage, promote; with P > 1 the
/// group's k-blocks are issued one ahead into the same partial buffer and only its last is waited for); the schedule of
/// dgtune <= 0.1 and what keys without the token mean. k2g: two groups in flight with two partial-accumulator
/// buffers (3 x BLOCK_N / 2 accumulator registers per m64 slice instead of 2 x). k2o: k2g plus epilogue overlap: the
/// next tile's first k-block is issued into the free partial buffer before the current tile's epilogue, so the
/// tensor cores work during it (same registers as k2g). All three give the same output bits. kPp (ping-pong): the
/// two consumer warpgroups take alternate tiles, each a whole BLOCK_M x BLOCK_N tile summed by the tensor cores over
/// all of K without promotion, so one warpgroup's epilogue overlaps the other's mainloop; fast accumulation with
/// K <= P x BLOCK_K only (rules R24, P8), where its output equals 1g's.
enum class Mainloop { k1g, k2g, k2o, kPp };

const char* to_string(Raster r);
const char* to_string(Epilogue e);
const char* to_string(Mainloop m);

/// The tunables, each a template parameter of the kernel and its own column in the tuning DB.
/// Units: block sizes in elements (BLOCK_K in FP8 elements = bytes), swizzle in bytes.
struct KernelConfig {
  int block_m = 128;    ///< rows of D per CTA tile: 64, 128, 256 (a multiple of 64 per consumer warpgroup)
  int block_n = 128;    ///< columns of D per CTA tile: multiple of 8, 8..256 (WGMMA N)
  int block_k = 128;    ///< K elements per pipeline stage: a multiple of the swizzle span
  int num_stages = 4;   ///< kNumStages: depth of the shared-memory ring
  int num_math_wg = 2;  ///< consumer warpgroups (1 or 2); BLOCK_M is split evenly between them
  int swizzle = 128;    ///< operand shared-memory swizzle span in bytes (128, 64, 32)
  int cluster_m = 1;    ///< CTAs per cluster along M
  int cluster_n = 1;    ///< CTAs per cluster along N
  Raster raster = Raster::kAlongM;
  int group = 8;  ///< rasterization band width in blocks
  Epilogue epilogue = Epilogue::kDirect;
  int split_k = 1;                    ///< K slices per output tile (reduced deterministically in split order)
  int sms = 0;                        ///< persistent grid: at most this many CTAs (0 = one per SM of the device)
  Mainloop mainloop = Mainloop::k1g;  ///< WGMMA groups in flight in the consumer mainloop
  /// P: promotion into FP32 every P k-blocks. Must be 1 with promote accumulation (R19); with fast
  /// accumulation 1 <= P and P x BLOCK_K <= 2048 (R18).
  int promote_every = 1;
  /// (Last, so that aggregate initialisers written before it keep their order.) With split_k > 1: the split_k CTAs of one tile form a cluster and reduce through distributed shared memory
  /// (key token "sk<S>c"; kernels/gemm/split_k.cuh split_k_reduce_cluster) instead of a global workspace.
  /// Same bits as the workspace reduction; needs cluster 1x1, S <= 8 and S splits that are all non-empty (R25, P9).
  bool split_cluster = false;
  /// Swap AB (after split_cluster, for the same reason): the kernel computes D^T = B A^T, the problem with M and N,
  /// A and B (types, leading dimensions, channel scales) exchanged (kernel_problem below), and its epilogue stores
  /// the tile transposed into D (kernels/gemm/epilogue_tma_swap.cuh). BLOCK_M, BLOCK_N, the cluster shape and the
  /// rasterization then describe that kernel problem: BLOCK_M (the WGMMA M side, multiples of 64) runs along D's N,
  /// BLOCK_N (the WGMMA N side, any multiple of 8) along D's M. What it buys is M granularity: a mid-size M is covered
  /// by BLOCK_N in steps of 8 instead of BLOCK_M in steps of 64 (cuBLASLt's FP8 kernels run this orientation). Key
  /// token "_swapab" at the end; rules R26 and P10 (src/space/resource_model.cpp).
  bool swap_ab = false;

  /// Canonical key, e.g. "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1" ("sk2c": a cluster split; a trailing
  /// "_swapab": swap_ab). Older keys still parse: without "_sm0" (dgtune 0.1.0) sms = 0; without the mainloop token
  /// ("1g"/"2g") the one-group schedule; without "_p<P>" P = 1.
  std::string key() const;
  /// Parse a canonical key. Throws Error(kUsage) naming the token that is malformed.
  static KernelConfig parse_key(std::string_view key);

  /// Splits that run as one launched cluster: split_k with a cluster split, else 1.
  int splits_per_cluster() const { return split_cluster && split_k > 1 ? split_k : 1; }
  /// CTAs per launched cluster: the multicast CTAs (cluster_m x cluster_n) times splits_per_cluster().
  int cluster_ctas() const { return cluster_m * cluster_n * splits_per_cluster(); }

  /// Threads per CTA: one producer warpgroup plus the consumer warpgroups.
  int threads() const { return 128 * (1 + num_math_wg); }
  /// Rows of the tile one consumer warpgroup computes and stores: BLOCK_M / consumer warpgroups, or the
  /// whole BLOCK_M with the ping-pong mainloop (each warpgroup owns whole tiles).
  int rows_per_wg() const { return mainloop == Mainloop::kPp ? block_m : block_m / (num_math_wg > 0 ? num_math_wg : 1); }

  bool operator==(const KernelConfig&) const = default;
};

/// What identifies one compiled kernel: the config plus the problem fields that change the code
/// (operand types, accumulation numerics). Two problems that agree on these share a cubin.
struct KernelSpec {
  KernelConfig config;
  DType a = DType::kE4M3;
  DType b = DType::kE4M3;
  Accum accum = Accum::kPromote;
  ScaleMode scale = ScaleMode::kPerTensor;  ///< a template parameter of the kernel (kScaleMode)
  DType d = DType::kBF16;                   ///< output type (kOutType): bf16, f32, e4m3
  Bias bias = Bias::kNone;                  ///< kBias
  Act act = Act::kNone;                     ///< kAct

  static KernelSpec of(const KernelConfig& c, const Problem& p) {
    return {c, p.a, p.b, p.accum, p.scale, p.d, p.bias, p.act};
  }
  /// config key + "_e4m3.e4m3_promote" (+ "_channel" / "_block" / "_block1d1d" for those scale modes;
  /// + "_df32" / "_de4m3", "_bias", "_relu" / "_gelu_tanh" for a non-default output or epilogue).
  std::string key() const;
  /// Key of the compiled code: split_k and sms are run-time arguments, so configs that differ only in
  /// the split count (beyond "split or not") or the grid size share one cubin; a cluster split's count is
  /// compile-time (the cluster's size) and stays in the key.
  std::string compiled_key() const;
  bool operator==(const KernelSpec&) const = default;
};

/// The problem the kernel of `c` computes: `p` itself, or with swap_ab its transpose D^T = B A^T (M and N, the operand
/// types, lda and ldb exchanged; ldd, the output, bias and activation stay D's: the swapped epilogue stores into D).
/// Channel scales follow their operands (the launch passes B's scales as the kernel's A scales). Tile arithmetic
/// (TileGrid::of), the rules and the cost model see this problem.
Problem kernel_problem(const KernelConfig& c, const Problem& p);

/// Parse "m"/"n", "direct"/"tma" and "1g"/"2g"/"2o"/"pp". Throw Error(kUsage) naming `where` and the value.
Raster parse_raster(std::string_view s, std::string_view where);
Epilogue parse_epilogue(std::string_view s, std::string_view where);
Mainloop parse_mainloop(std::string_view s, std::string_view where);

/// Shared-memory swizzle of the TMA-store epilogue's staging tile and D tensor map, in bytes: the
/// largest of 128, 64, 32 that divides a staging row (BLOCK_N * out_bytes bytes; out_bytes = 2 for bf16,
/// 4 for f32, 1 for e4m3), else 0 (no swizzle; one box of the full BLOCK_N). Mirrors
/// Fp8GemmTraits::kEpiSwizzle (kernels/gemm/fp8_gemm_traits.cuh).
int epilogue_swizzle_bytes(int block_n, int out_bytes = 2);
/// Columns of one TMA store box of D: the swizzle span in output elements, or BLOCK_N without swizzle.
int epilogue_box_cols(int block_n, int out_bytes = 2);
/// Columns of D (N of them, `out_bytes` each) that the TMA-store epilogue stores with TMA: N rounded down to a
/// whole number of 16-byte units of a row. A TMA store writes whole 16-byte units of global memory, so a
/// tensor map as wide as N would write D's padding up to the next 16-byte boundary when N * out_bytes is not a
/// multiple of 16 (seen on the H200 with e4m3 D and ldd > N; Triton documents the same for its descriptor
/// stores). The kernel writes the columns from here to N itself. Mirrors tma_store_cols in
/// kernels/gemm/epilogue_tma.cuh. 0 when a row of D is shorter than 16 bytes.
int64_t epilogue_tma_cols(int64_t n, int out_bytes);
/// The shape of the TMA-store epilogue's D tensor map for a D of `n` columns of `out_bytes` bytes: the columns it
/// covers (epilogue_tma_cols; at least one 16-byte unit, so that a map of a D narrower than 16 bytes, never used for
/// a store, still encodes), its box (epilogue_box_cols x rows_per_wg()) and swizzle (epilogue_swizzle_bytes). With
/// swap_ab the transposed store's map instead: all n columns (rule P10 keeps them whole 16-byte units), boxes of 64
/// columns x BLOCK_N rows of D, 128-byte swizzle (kernels/gemm/epilogue_tma_swap.cuh). The dense launch plan and the
/// grouped launch build D's map from it.
struct EpilogueStoreMap {
  uint64_t cols = 0;
  uint32_t box_cols = 0, box_rows = 0, swizzle = 0;
};
EpilogueStoreMap epilogue_store_map(const KernelConfig& c, int64_t n, int out_bytes);
/// Rows of A one TMA load box holds for a problem with `m` rows: BLOCK_M / cluster_n (a cluster slice), or
/// round_up(m, 8) when cluster_n == 1 and m < BLOCK_M, so a decode-shaped A is not loaded as a box that is
/// mostly out of bounds (TMA's zero fill of out-of-bounds rows is slow). Mirrors Fp8GemmTraits::a_box_rows
/// (kernels/gemm/fp8_gemm_traits.cuh): the tensor map's box and the kernel's expected bytes must agree.
int a_box_rows(const KernelConfig& c, int64_t m);
/// Rows of A one box of the M-tail tensor map loads, the map the last m-block reads: round_up(m % BLOCK_M, 8) when
/// cluster_n == 1 and BLOCK_M does not divide m, else a_box_rows' cluster slice (BLOCK_M / cluster_n); a box mostly
/// out of bounds would run TMA's slow zero-fill path for every k-block of that m-block. Mirrors
/// Fp8GemmTraits::a_tail_rows (kernels/gemm/fp8_gemm_traits.cuh); equal to a_box_rows(c, m) when m < BLOCK_M.
int a_tail_box_rows(const KernelConfig& c, int64_t m);
/// Rows of B one box of the main B map loads: BLOCK_N / cluster_m (a multicast slice).
int b_box_rows(const KernelConfig& c);
/// The same for B's N tail: round_up(n % BLOCK_N, 8) when cluster_m == 1 and BLOCK_N does not divide n, else
/// b_box_rows(c). Mirrors Fp8GemmTraits::b_tail_rows.
int b_tail_box_rows(const KernelConfig& c, int64_t n);

void to_json(nlohmann::json& j, const KernelConfig& c);
void from_json(const nlohmann::json& j, KernelConfig& c);

}  // namespace dgt
