#include "space/resource_model.hpp"

#include <atomic>
#include <limits>

#include <fmt/format.h>

#include "core/int_math.hpp"
#include "space/tile_grid.hpp"

namespace dgt {

namespace {
// Mirrors Fp8GemmTraits (kernels/gemm/fp8_gemm_traits.cuh).
constexpr int kAlignPad = 1024;
constexpr int kRegOverhead1g = 24;      // kRegOverhead with one WGMMA group in flight (1g, pp)
constexpr int kRegOverhead1gWideProducer = 32;  // ... with block scales on a multicast cluster (kWideProducer)
constexpr int kRegOverheadPpF32 = 48;          // ... pp with f32 output (the accumulator lives through the epilogue)
constexpr int kRegOverhead2g = 16;      // with two (descriptors and loop state in uniform registers)
constexpr int kMaxPromoteSpanK = 2048;  // R18: at most 2048 products per tensor-core partial sum
constexpr int kRegsOneConsumerWG = 240;
constexpr int kRegsTwoConsumerWG = 232;
constexpr int kRegsTwoConsumerWGWideProducer = 224;  // block scales on a multicast cluster (kWideProducer)

// Fp8GemmTraits::kScaleNBlocks: the 128-column blocks of B a tile can touch (block mode). Tiles start at
// multiples of BLOCK_N; when BLOCK_N divides 128 or 128 divides BLOCK_N they are aligned, otherwise a tile
// starting at any multiple of 8 columns touches at most ceil((120 + BLOCK_N) / 128) blocks.
int scale_n_blocks(int block_n) {
  const bool aligned = block_n % 128 == 0 || (block_n > 0 && 128 % block_n == 0);
  return static_cast<int>(aligned ? ceil_div(block_n, 128) : ceil_div(120 + block_n, 128));
}

// Fp8GemmTraits::kSmemScaleStage: the scales one stage carries in the block scale modes.
int stage_scale_bytes(const KernelConfig& c, ScaleMode mode) {
  if (!is_block_scaled(mode)) return 0;
  const int granules = c.block_k == 256 ? 2 : 1;
  const int b = mode == ScaleMode::kBlock ? scale_n_blocks(c.block_n) * 16 : granules * c.block_n * 4;
  return granules * c.block_m * 4 + b;
}

std::atomic<test_hooks::EvaluateResourcesHook> g_evaluate_hook{nullptr};
}  // namespace

void test_hooks::set_evaluate_resources_hook(EvaluateResourcesHook hook) { g_evaluate_hook.store(hook); }

ResourceReport evaluate_resources(const KernelSpec& spec) {
  if (const auto hook = g_evaluate_hook.load(std::memory_order_relaxed)) hook(spec);
  const KernelConfig& c = spec.config;
  const bool tma_epilogue = c.epilogue == Epilogue::kTma;
  const bool split_k = c.split_k > 1;
  ResourceReport r;
  r.threads = c.threads();
  r.smem.a_stages = c.num_stages * c.block_m * c.block_k;
  r.smem.b_stages = static_cast<int>(round_up(c.num_stages * c.block_n * c.block_k, 1024));
  const int out_bytes = dtype_bytes(spec.d);
  const bool pingpong = c.mainloop == Mainloop::kPp;
  const int wg = c.num_math_wg > 0 ? c.num_math_wg : 1;
  // One staging tile per consumer warpgroup: its rows of the tile (pp: a whole tile each, or, where the tile has
  // more than 2 swizzle-wide column bands, a ring of 2 bands; Fp8GemmTraits::kEpiRingBands).
  const int epi_swizzle = epilogue_swizzle_bytes(c.block_n, out_bytes);
  const int ring_bands = pingpong && tma_epilogue && epi_swizzle != 0 && c.block_n * out_bytes / epi_swizzle > 2 ? 2 : 0;
  r.smem.staging = !tma_epilogue ? 0
                   : ring_bands  ? wg * ring_bands * c.rows_per_wg() * epi_swizzle
                                 : wg * c.rows_per_wg() * c.block_n * out_bytes;
  r.smem.scales = c.num_stages * stage_scale_bytes(c, spec.scale);
  const bool split_cluster = c.splits_per_cluster() > 1;
  // The workspace split's flag word, or the cluster split's `full` and `free` barriers (kSmemBarriers).
  r.smem.barriers = 2 * c.num_stages * 8 + (split_k ? (split_cluster ? 16 : 8) : 0);
  r.smem.align_pad = kAlignPad;
  r.smem.total =
      r.smem.align_pad + r.smem.a_stages + r.smem.b_stages + r.smem.staging + r.smem.scales + r.smem.barriers;
  if (split_cluster) {  // kOffReduce (16-byte aligned) + kSmemReduce: rank 0 receives the other splits' partials
    r.smem.reduce = (c.split_k - 1) * c.block_m * c.block_n * 4;
    r.smem.total = r.smem.align_pad +
                   static_cast<int>(round_up(r.smem.total - r.smem.align_pad, 16)) + r.smem.reduce;
  }
  const int mma_per_wg = c.rows_per_wg() / 64;
  const bool two_groups = c.mainloop == Mainloop::k2g || c.mainloop == Mainloop::k2o;  // 2o: same registers as 2g
  // Block scales with BLOCK_K 256 (1g, two granule buffers) keep their loop state like 2g (NVRTC spill test).
  const bool two_partials = two_groups || (is_block_scaled(spec.scale) && c.block_k == 256);
  // ... and one partial buffer per 128-wide granule of a k-block (kTwoPartials).
  // pp: only the tensor-core sum over all of K (P8), no FP32 accumulator next to it.
  r.regs.accumulators = mma_per_wg * (c.block_n / 2) * (pingpong ? 1 : two_partials ? 3 : 2);
  const bool block_scaled = is_block_scaled(spec.scale);
  const int cluster = c.cluster_m * c.cluster_n;
  // Fp8GemmTraits::kMathRegs: with block scales on a multicast cluster the producer keeps 56 registers (kWideProducer).
  const bool wide_producer = block_scaled && cluster > 1;
  r.regs.overhead = two_partials    ? kRegOverhead2g
                    : wide_producer ? kRegOverhead1gWideProducer
                    : pingpong && spec.d == DType::kF32 ? kRegOverheadPpF32
                                                        : kRegOverhead1g;
  // kScaleRegs (fp8_gemm_traits.cuh): one granule's scales, tile bounds, scale pointers; block1d1d also
  // the tile's column scales (calibrated with the NVRTC spill test).
  if (spec.scale == ScaleMode::kBlock) r.regs.overhead += 10 + 2 * mma_per_wg + scale_n_blocks(c.block_n);
  if (spec.scale == ScaleMode::kBlock1d1d) r.regs.overhead += 20 + 2 * mma_per_wg + c.block_n / 2;
  // kEpiRegs (fp8_gemm_traits.cuh): with block scale modes, the pointers and values the output/epilogue
  // keeps live across the tile loop (bias pointer; scale_d, amax pointer and running max for e4m3) and
  // GELU's temporaries; 0 otherwise (measured).
  r.regs.overhead += epilogue_regs(spec.d, spec.bias, spec.act, spec.scale);
  r.regs.limit = c.num_math_wg == 1 ? kRegsOneConsumerWG : wide_producer ? kRegsTwoConsumerWGWideProducer : kRegsTwoConsumerWG;

  auto reject = [&](const std::string& why) {
    if (r.rejection.empty()) r.rejection = why;
  };
  // Same order as the static_asserts.
  if (c.block_m != 64 && c.block_m != 128 && c.block_m != 256)
    reject(fmt::format("R1: BLOCK_M = {} must be 64, 128 or 256", c.block_m));
  if (c.block_n % 8 != 0 || c.block_n < 8 || c.block_n > 256)
    reject(fmt::format("R2: BLOCK_N = {} must be a multiple of 8 in 8..256 (WGMMA N)", c.block_n));
  if (c.swizzle != 32 && c.swizzle != 64 && c.swizzle != 128)
    reject(fmt::format("R3: swizzle = {} bytes must be 32, 64 or 128", c.swizzle));
  if (c.block_k != 64 && c.block_k != 128 && c.block_k != 256)
    reject(fmt::format("R4: BLOCK_K = {} must be 64, 128 or 256", c.block_k));
  if (c.swizzle > 0 && c.block_k % c.swizzle != 0)
    reject(fmt::format("R5: BLOCK_K = {} is not a multiple of the swizzle span {} bytes", c.block_k, c.swizzle));
  if (c.num_math_wg != 1 && c.num_math_wg != 2)
    reject(fmt::format("R6: {} consumer warpgroups (must be 1 or 2)", c.num_math_wg));
  if (c.block_m % (64 * (pingpong ? 1 : wg)) != 0)
    reject(fmt::format("R7: BLOCK_M = {} does not give each of {} consumer warpgroups a multiple of 64 rows", c.block_m,
                       c.num_math_wg));
  if (c.num_stages < 2 || c.num_stages > 32) reject(fmt::format("R8: kNumStages = {} must be in 2..32", c.num_stages));
  if (r.smem.total > kMaxSmemPerBlock)
    reject(fmt::format(
        "R9: shared memory {} bytes (A {} + B {} + staging {} + scales {} + barriers {} + split-K partials {} + align "
        "{}) exceeds {}",
        r.smem.total, r.smem.a_stages, r.smem.b_stages, r.smem.staging, r.smem.scales, r.smem.barriers,
        r.smem.reduce, r.smem.align_pad, kMaxSmemPerBlock));
  if (r.regs.accumulators + r.regs.overhead > r.regs.limit)
    reject(fmt::format(
        "R10: {} accumulator registers + {} overhead exceed the consumer limit of {} ({} partial buffer{} next to the "
        "FP32 accumulators)",
        r.regs.accumulators, r.regs.overhead, r.regs.limit, two_partials ? 2 : 1, two_partials ? "s" : ""));
  if (cluster != 1 && cluster != 2 && cluster != 4)
    reject(fmt::format("R11: cluster {}x{} has {} CTAs (must be 1, 2 or 4)", c.cluster_m, c.cluster_n, cluster));
  if (c.group < 1 || c.group > 64) reject(fmt::format("R12: rasterization group = {} must be in 1..64", c.group));
  if (c.cluster_m < 1 || c.cluster_n < 1 || (c.block_n / c.cluster_m) % 8 != 0 || c.block_n % c.cluster_m != 0 ||
      (c.block_m / c.cluster_n) % 8 != 0 || c.block_m % c.cluster_n != 0)
    reject(fmt::format(
        "R13: multicast slices BLOCK_N / cluster_m = {} / {} and BLOCK_M / cluster_n = {} / {} must be multiples of "
        "8 rows",
        c.block_n, c.cluster_m, c.block_m, c.cluster_n));
  if (tma_epilogue && c.block_n % 8 != 0)
    reject(fmt::format("R14: the TMA-store epilogue needs BLOCK_N = {} to be a multiple of 8 (16-byte staging rows)",
                       c.block_n));
  if (c.split_k < 1 || c.split_k > kMaxSplitK)
    reject(fmt::format("R15: split-K = {} must be in 1..{}", c.split_k, kMaxSplitK));
  if (c.sms < 0) reject(fmt::format("R16: persistent grid size sms = {} must be >= 0 (0 = all SMs)", c.sms));
  if (c.mainloop != Mainloop::k1g && c.mainloop != Mainloop::k2g && c.mainloop != Mainloop::k2o && !pingpong)
    reject(fmt::format("R17: mainloop {} must be one of 1g, 2g, 2o, pp", int(c.mainloop)));
  if (c.promote_every < 1 || c.promote_every * c.block_k > kMaxPromoteSpanK)
    reject(fmt::format(
        "R18: promote_every P = {} must be >= 1 with P x BLOCK_K = {} <= {} (tensor-core partial sums of at most {} "
        "products)",
        c.promote_every, c.promote_every * c.block_k, kMaxPromoteSpanK, kMaxPromoteSpanK));
  if (spec.accum == Accum::kPromote && c.promote_every != 1)
    reject(fmt::format("R19: promote accumulation promotes every k-block (promote_every must be 1, is {})",
                       c.promote_every));
  if (two_groups && c.promote_every != 1)
    reject(fmt::format(
        "R20: the two-group mainloop (2g, 2o) promotes every k-block (promote_every must be 1, is {}; P > 1 runs with "
        "1g)",
        c.promote_every));
  if (block_scaled && (spec.accum != Accum::kPromote ||
                       !(c.block_k == 128 || (c.block_k == 256 && c.mainloop == Mainloop::k1g))))
    reject(fmt::format(
        "R21: scale mode {} needs promote accumulation and BLOCK_K = 128 (one promotion per 128-wide k granule) or "
        "BLOCK_K = 256 with the 1g mainloop (two promotions per k-block); this is {} accumulation with BLOCK_K = {} "
        "and mainloop {}",
        to_string(spec.scale), to_string(spec.accum), c.block_k, to_string(c.mainloop)));
  if (block_scaled && c.mainloop == Mainloop::k2o)
    reject(fmt::format("R22: scale mode {} runs with the 1g or 2g mainloop, not 2o", to_string(spec.scale)));
  if (tma_epilogue && spec.d == DType::kE4M3 && c.block_n % 16 != 0)
    reject(fmt::format(
        "R23: the TMA-store epilogue with e4m3 output needs BLOCK_N = {} to be a multiple of 16 (staging rows of "
        "BLOCK_N bytes must be 16-byte multiples, the TMA box rule)",
        c.block_n));
  // Per-tensor scales only: pp keeps its whole accumulator live through the epilogue, and the channel scales'
  // registers on top of it spilled (128x160 .. 128x176 with e4m3 + bias + GELU, NVRTC, review of 2026-11-29).
  // A multicast cluster (2 or 4 CTAs, R11) is allowed (each CTA's stage is read by one of its warpgroups; the CTAs
  // of a cluster walk the same units in the same order): cuBLASLt's fastest FAST_ACCUM kernel on 4096x24576x1536 is a
  // non-cooperative (ping-pong) kernel in a 2-CTA cluster, and pulls a third less from L2 than pp without one
  // (ncu, H200, results/h200/kernel-v2.md). Measured there: pp in 2x1 / 1x2 clusters is no faster on average, but the
  // tuner picks one for some shapes (4096x32768x512).
  if (pingpong && (spec.accum != Accum::kFast || spec.scale != ScaleMode::kPerTensor || c.num_math_wg != 2 || split_k))
    reject(fmt::format(
        "R24: the ping-pong mainloop (pp) needs fast accumulation, per-tensor scales, two consumer warpgroups and no "
        "split-K; this is {} accumulation with {} scales, {} consumer warpgroups and split-K {}",
        to_string(spec.accum), to_string(spec.scale), c.num_math_wg, c.split_k));
  // A cluster split launches the split_k CTAs of a tile as one cluster (a portable cluster has at most 8) and
  // its ranks are the splits, so no multicast cluster; 2o and pp start the next tile inside the reduction's
  // place in the loop and are not built for it.
  if (c.split_cluster && (c.split_k < 2 || c.split_k > 8 || cluster != 1 ||
                          (c.mainloop != Mainloop::k1g && c.mainloop != Mainloop::k2g)))
    reject(fmt::format(
        "R25: a cluster split (sk<S>c) needs S = split_k in 2..8 (the CTAs of one cluster), cluster 1x1 and the 1g "
        "or 2g mainloop; this is split-K {}, cluster {}x{} and mainloop {}",
        c.split_k, c.cluster_m, c.cluster_n, to_string(c.mainloop)));
  // Swap AB (the kernel computes D^T and stores it transposed with stmatrix .trans, kernels/gemm/
  // epilogue_tma_swap.cuh): only that TMA-store epilogue exists, for 16-bit output; a bias would be per row of the
  // kernel's tile and block scales would put A's per-row scales on the kernel's B side, neither built; pp stages
  // through a band ring the swapped store does not use.
  if (c.swap_ab && (!tma_epilogue || spec.d != DType::kBF16 || spec.bias != Bias::kNone ||
                    (spec.scale != ScaleMode::kPerTensor && spec.scale != ScaleMode::kChannel) || pingpong))
    reject(fmt::format(
        "R26: swap AB needs the TMA-store epilogue, bf16 output, no bias, per-tensor or channel scales and a mainloop "
        "other than pp; this is the {} epilogue, {} output, bias {}, {} scales and mainloop {}",
        to_string(c.epilogue), to_string(spec.d), to_string(spec.bias), to_string(spec.scale), to_string(c.mainloop)));
  return r;
}

int epilogue_regs(DType d, Bias bias, Act act, ScaleMode scale) {
  if (!is_block_scaled(scale)) return 0;  // measured: no spills at the R10 limit (fp8_gemm_traits.cuh)
  return (bias != Bias::kNone ? 2 : 0) + (d == DType::kE4M3 ? 4 : 0) + (act == Act::kGeluTanh ? 4 : 0);
}

std::string problem_fit(const KernelConfig& c, const Problem& p) {
  const int bytes = dtype_bytes(p.d);
  // The swapped epilogue stores whole 128-byte slices of D's rows with TMA, which writes whole 16-byte units: past a
  // column count that is not a multiple of 8 it would write D's padding (the plain epilogue writes such a tail itself).
  if (c.swap_ab && (p.n * bytes) % 16 != 0)
    return fmt::format(
        "P10: swap AB stores D's rows with TMA only, so N x bytes of D must be a multiple of 16; N = {} {} elements "
        "= {} bytes",
        p.n, to_string(p.d), p.n * bytes);
  if (c.splits_per_cluster() > 1 && effective_splits(c, p.k) != c.split_k)
    return fmt::format(
        "P9: a cluster split (sk{}c) needs all {} splits non-empty, but K = {} has {} k-blocks of {}, which split "
        "into {} (every CTA of the cluster is one split)",
        c.split_k, c.split_k, p.k, ceil_div(p.k, int64_t{c.block_k}), c.block_k, effective_splits(c, p.k));
  if (c.mainloop == Mainloop::kPp && p.k > static_cast<int64_t>(c.promote_every) * c.block_k)
    return fmt::format(
        "P8: the ping-pong mainloop (pp) sums all of K on the tensor cores without promotion, so K = {} must be at "
        "most promote_every x BLOCK_K = {} x {} = {} (fast accumulation's bound on one tensor-core sum, R18)",
        p.k, c.promote_every, c.block_k, c.promote_every * c.block_k);
  // D's tensor map has the same stride limit as A's and B's (validate_problem refuses those for every config; D only
  // goes through TMA with this epilogue). Checked first: past it, ldd x bytes could overflow.
  constexpr int64_t kMaxTmaStride = int64_t(1) << 40;
  if (c.epilogue == Epilogue::kTma && p.ldd >= kMaxTmaStride / bytes)
    return fmt::format(
        "P3: TMA-store epilogue needs D's row stride below 2^40 bytes (TMA rule: global strides must be < 2^40 "
        "bytes); ldd = {} {} elements = {} bytes",
        p.ldd, to_string(p.d),
        p.ldd > std::numeric_limits<int64_t>::max() / bytes ? std::string("over 2^63") : std::to_string(p.ldd * bytes));
  if (c.epilogue == Epilogue::kTma && (p.ldd * bytes) % 16 != 0)
    return fmt::format(
        "P3: TMA-store epilogue needs D rows of 16-byte multiples; ldd = {} {} elements = {} bytes is not a multiple "
        "of 16",
        p.ldd, to_string(p.d), p.ldd * bytes);
  return {};
}

std::string config_rule_violation(const KernelConfig& c, const Problem& p) {
  std::string why = evaluate_resources(KernelSpec::of(c, p)).rejection;
  return why.empty() ? problem_fit(c, p) : why;
}

int deepest_stages(KernelSpec spec, int cap, const std::function<bool(const KernelSpec&)>& legal) {
  for (int s = cap; s >= 2; --s) {
    spec.config.num_stages = s;
    if (legal ? legal(spec) : evaluate_resources(spec).ok()) return s;
  }
  return 0;
}

}  // namespace dgt
