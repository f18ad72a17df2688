// dgtune run-time loader: launch the tuned FP8 GEMM winner for a shape from application code.
//
//   dgt::Gemm gemm;                       // DB from $DGTUNE_DB (none: untuned, default configs)
//   gemm.run(A, B, D, M, N, K, lda, ldb, ldd, scale_a, scale_b, stream);
//
// D[M,N] (BF16 by default, row-major, ldd) = (*scale_a) * (*scale_b) * A[M,K] * B[N,K]^T, with A and B FP8
// (e4m3 or e5m2), both K-major (row-major M x K and N x K, leading dimensions lda, ldb in elements),
// FP32 accumulation. Finer scaling (per channel, DeepSeek-V3's 1x128 / 128x128 blocks) is a trailing
// argument: dgt::Fp8Scaling says what scale_a and scale_b then point to. FP32 or e4m3 output (with an output
// scale and amax), a BF16 bias and ReLU / GELU go in dgt::GemmRunOptions:
//   dgt::GemmRunOptions o;  o.output = dgt::OutputType::kE4M3;  o.scale_d = sd;  o.amax = amax;
//   o.bias = bias;  o.act = dgt::Activation::kGeluTanh;
//   gemm.run(A, B, D, M, N, K, lda, ldb, ldd, scale_a, scale_b, stream, o);
// All pointers are device
// pointers; A and B must be 16-byte aligned and lda, ldb multiples of 16 (TMA rules); when the chosen
// config stores D with TMA (epilogue "tma"), D must be 16-byte aligned too (a stored winner that needs
// ldd % 8 == 0 is only chosen when ldd fits).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dgtune/api.hpp"
#include "dgtune/error.hpp"

// The block below is compared verbatim with the text `dgtune export --format cpp` writes: keep clang-format out.
// clang-format off
// BEGIN dgtune tuned-table types (written verbatim into headers made by `dgtune export --format cpp`)
#ifndef DGTUNE_TUNED_TABLE_TYPES
#define DGTUNE_TUNED_TABLE_TYPES
namespace dgt {
/// One exported winner: the problem key fields and the config key of its winner.
struct TunedEntry {
  long long m, n, k, lda, ldb, ldd;
  const char* a;            ///< "e4m3" | "e5m2"
  const char* b;            ///< "e4m3" | "e5m2"
  const char* accum;        ///< "promote" | "fast"
  const char* config_key;   ///< KernelConfig key, e.g. "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0"
  double tuned_us;          ///< median time stored with the winner
  const char* kernel_hash;  ///< kernel-source hash of the environment the winner was measured under
  const char* protocol;     ///< protocol name, e.g. "hot-graph-v1"; nullptr (older headers): "cold-l2-v1"
  const char* scale;        ///< "per-tensor" | "channel" | "block" | "block1d1d"; nullptr (older headers): "per-tensor"
  const char* d;            ///< output type "bf16" | "f32" | "e4m3"; nullptr (older headers): "bf16"
  const char* bias;         ///< "none" | "bf16"; nullptr (older headers): "none"
  const char* act;          ///< "none" | "relu" | "gelu_tanh"; nullptr (older headers): "none"
};
/// A table of winners of one hardware identity (GemmOptions::table).
struct TunedTable {
  const char* hw_key;          ///< HardwareIdentity::key() the winners belong to
  const char* device_name;
  const char* kernel_hash;     ///< kernel-source hash of the dgtune that exported the table
  const char* dgtune_version;  ///< version of the dgtune that exported the table
  const TunedEntry* entries;   ///< `count` entries (nullptr when count == 0)
  unsigned long long count;
};
}  // namespace dgt
#endif
// END dgtune tuned-table types
// clang-format on
// A header exported by a dgtune older than TunedEntry::protocol, included BEFORE this file, defines TunedEntry
// without it, while the library reads entries with it: such a header must be re-exported. This fails to compile
// then (no member `protocol`) instead of reading past the entries. (Included after this file, an old header's
// entries are read with protocol = nullptr, i.e. "cold-l2-v1".)
static_assert(sizeof(&dgt::TunedEntry::protocol) > 0, "re-export the tuned-table header with this dgtune");
// The same for TunedEntry::scale (the scale mode of each entry), added after `protocol`.
static_assert(sizeof(&dgt::TunedEntry::scale) > 0, "re-export the tuned-table header with this dgtune");
// The same for TunedEntry::d, ::bias and ::act (output type and epilogue), added after `scale`.
static_assert(sizeof(&dgt::TunedEntry::act) > 0, "re-export the tuned-table header with this dgtune");

namespace dgt {

/// FP8 operand formats (OCP): e4m3 (max 448) and e5m2 (max 57344).
enum class Fp8Format { kE4M3, kE5M2 };

/// How A and B are scaled: what `scale_a` and `scale_b` of Gemm::run point to. Every scale is an FP32
/// (float) in device memory; both pointers must be 16-byte aligned. G = ceil(K / 128) is the number of
/// 128-wide granules of K; round_up(x, 4) pads a row of floats to a multiple of 16 bytes (the rule TMA and
/// cuBLASLt apply to scale arrays); the padding floats may be read (block modes copy whole rows) but never
/// affect D, so they may hold anything. The 2-D arrays are MN-major:
/// the scales of one k granule for consecutive rows (M or N) are contiguous.
///  - kPerTensor: scale_a and scale_b are 1 float each. D[m,n] = sa * sb * sum_k A[m,k] B[n,k].
///  - kChannel: scale_a is M floats (one per row of A, e.g. per token), scale_b is N floats (one per row of B,
///    i.e. per output column). D[m,n] = sa[m] * sb[n] * sum_k A[m,k] B[n,k] (applied in the epilogue; either
///    accumulation mode).
///  - kBlock (DeepGEMM's 1D2D scaling, forward GEMMs): scale_a is G rows of round_up(M, 4) floats, sa(g, m)
///    at scale_a[g * round_up(M, 4) + m], the scale of A[m, 128g .. 128g+127]; scale_b is ceil(N / 128) rows of
///    round_up(G, 4) floats, sb(j, g) at scale_b[j * round_up(G, 4) + g], the scale of the 128 x 128 block
///    B[128j .. 128j+127, 128g .. 128g+127]. D[m,n] = sum_g sa(g, m) * sb(n / 128, g) * sum_{k in granule g}
///    A[m,k] B[n,k].
///  - kBlock1d1d (weight-gradient GEMMs): scale_a as kBlock; scale_b is G rows of round_up(N, 4) floats,
///    sb(g, n) at scale_b[g * round_up(N, 4) + n], the scale of B[n, 128g .. 128g+127].
///    D[m,n] = sum_g sa(g, m) * sb(g, n) * sum_{k in granule g} A[m,k] B[n,k].
/// The block modes apply the scales as each granule's tensor-core partial sum is promoted to FP32, so they
/// need fast_accum = false (Gemm::run throws dgt::Error(kInvalid) otherwise) and run configs with BLOCK_K =
/// 128 or 256; a scale pointer that is not 16-byte aligned is refused with dgt::Error(kInvalid). The scale mode is part of the tuned problem: a winner tuned per-tensor is never used for a block-scaled
/// call (tune with `scale=block` in the shapes file). Sources: DeepSeek-V3 technical report, "Fine-Grained
/// Quantization" (1x128 activation tiles, 128x128 weight blocks); deepseek-ai/DeepGEMM README (the scaling-factor
/// layouts, MN-major and padded to 16 bytes, that this follows).
enum class Fp8Scaling { kPerTensor, kChannel, kBlock, kBlock1d1d };

/// Output type of D: kBF16 (default), kF32, or kE4M3 = D = e4m3(scale_d x result), rounded
/// to nearest even and saturated at +-448 (+-Inf too; NaN stays NaN).
enum class OutputType { kBF16, kF32, kE4M3 };

/// Activation applied after the bias: none, ReLU (max(x, 0), NaN kept) or GELU in cuBLASLt's tanh form
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
enum class Activation { kNone, kRelu, kGeluTanh };

/// Everything about one call beyond the pointers and the shape (an options struct instead of a
/// growing argument list). Per element, on the FP32 accumulator:
///   r = act(scales x acc + bias[n]);  D[m,n] = bf16(r) | r | e4m3(scale_d x r);  *amax = max |r|.
/// The formats, accumulation, scaling, output type, whether there is a bias and the activation are part
/// of the tuned problem (a winner is looked up for exactly this combination; tune it with the shapes-file
/// keys d=, bias=, act=). Gemm::run throws dgt::Error(kInvalid) naming the field when a combination is bad:
/// output e4m3 without scale_d, amax without e4m3 output, a misaligned bias (2 bytes) or amax (4 bytes),
/// a block scale mode with fast_accum; kUsage for an enum value outside its range.
struct GemmRunOptions {
  Fp8Format a_format = Fp8Format::kE4M3;
  Fp8Format b_format = Fp8Format::kE4M3;
  bool fast_accum = false;                   ///< tensor-core accumulation over all of K (see Gemm::run)
  Fp8Scaling scale = Fp8Scaling::kPerTensor;  ///< what scale_a / scale_b point to
  OutputType output = OutputType::kBF16;     ///< type of D (ldd in elements of this type)
  const void* bias = nullptr;  ///< device pointer to N BF16 values added to every row of D; nullptr: no bias
  Activation act = Activation::kNone;
  const float* scale_d = nullptr;  ///< kE4M3 only, required: device pointer to one FP32 output scale
  /// kE4M3 only, optional: device pointer to one FP32 that every launch sets to max |r| over M x N (before
  /// scale_d), deterministically; launches sharing it must be ordered on one stream (the kernel combines
  /// CTA maxima in this Gemm's per-family scratch, see GemmOperands in launch/gemm_kernel.hpp).
  float* amax = nullptr;
};

/// What `Gemm` runs for a shape and why.
struct GemmChoice {
  /// dgtune kernel config, e.g. "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0": what runs when backend is
  /// "dgtune", and the kernel's own choice (what would run with GemmOptions::cublaslt = false) when it is "cublaslt".
  std::string config_key;
  /// Where the config came from: "db" (winner of this shape under GemmOptions::protocol's kind; also from
  /// GemmOptions::table), "db-other-protocol" (winner of this shape tuned under the other protocol kind), "ladder"
  /// (M lies between two tuned M of the same N, K: the upper neighbour's winner, or from a DB the neighbours' config
  /// predicted fastest at M, docs/loader.md "The ladder rule"), "nearest" (M outside the tuned M:
  /// the nearest end), "ladder-other-protocol", "nearest-other-protocol" (the same under the other protocol kind;
  /// its ladder comes first past the preferred kind's largest tuned M where the other kind's tuned M lie on both
  /// sides of M), "default" (no tuned entry at all).
  std::string source;
  double tuned_us = 0;   ///< median time stored with the config that runs, at the M it came from (0 for "default")
  std::string protocol;  ///< protocol the winner was timed under, e.g. "cold-l2-v1", "hot-graph-v1" ("" for "default")
  /// "dgtune" (the kernel above) or "cublaslt": at a tuned M, cuBLASLt's stored algorithm beat every dgtune config in
  /// that M's sweep; off a tuned M, cuBLASLt's heuristic was measured faster by the ladder probe (`probe` below), or,
  /// without a probe, is expected to be faster (the ladder rule's check: the kernel predicted more than 2% slower;
  /// where it cannot predict, the heuristic's median at the winner's M beat the winner); or the problem has no tuned
  /// entry and cuBLASLt's heuristic runs (docs/loader.md). A call whose pointers
  /// the cuBLASLt algorithm cannot take (alignment) runs the kernel of config_key.
  std::string backend = "dgtune";
  /// backend "cublaslt": "stored algo=.. tile=.. stages=.. splitk=.. swizzle=.. cluster=.. reduction=.." (the sweep's
  /// algorithm, replayed) or "heuristic algo=..." (cuBLASLt's heuristic top-1); "" for backend "dgtune".
  std::string cublaslt_algo;
  /// What the ladder probe measured (GemmOptions::probe_ladder), e.g. "cuBLASLt more than 1% faster in 3 of 15 rounds
  /// (best: kernel 12.61 us, cuBLASLt 12.70 us, heuristic result 2 of 4; cold-l2, 9 operand copies; probe 6.2 ms)":
  /// the cuBLASLt side is the one of the heuristic's first four algorithms with the smallest total time, the last
  /// figure the probe's wall time with cuBLASLt's heuristic query; the backend above is the probe's pick (cuBLASLt,
  /// that algorithm, when the count is more than half the rounds). "" where no probe ran (a tuned M, no tuned entry, an exported table, e4m3 output,
  /// cuBLASLt off or unable to run the problem, operands past 1 GiB, a first call inside graph capture, or a probe
  /// that failed).
  std::string probe;
};

/// A problem a Gemm ran without any tuned entry (GemmChoice::source "default"), as `dgtune sweep` takes it.
struct UntunedShape {
  std::string line;          ///< shapes-file line: "M N K" and the non-default fields (a, b, scale, accum, d, ...)
  unsigned long long calls;  ///< run() calls for it so far
};

/// What a call does inside CUDA-graph capture when its problem was not warmed up (Gemm::warmup): the loader never
/// compiles, allocates device memory or reads the DB while the call's stream is capturing.
enum class CaptureMiss {
  /// cuBLASLt's heuristic top-1 runs the call, without a workspace (counted in GemmStats::capture_fallbacks); a
  /// problem cuBLASLt cannot run (e4m3 output, e5m2 x e5m2) throws as kError does.
  kCublasLt,
  /// dgt::Error(kUsage) naming the problem and Gemm::warmup, before anything is enqueued on the stream (the
  /// capture itself is left to the caller).
  kError,
};

/// Counters of one Gemm since it was constructed (Gemm::stats); every field only grows.
struct GemmStats {
  unsigned long long nvrtc_compiles = 0;  ///< kernels compiled with NVRTC (cubin-cache misses)
  unsigned long long cache_loads = 0;     ///< kernels loaded from the on-disk cubin cache without compiling
  unsigned long long bundle_loads = 0;    ///< kernels loaded from the kernel bundle (GemmOptions::bundle)
  unsigned long long db_reads = 0;        ///< queries of the tuning DB (at most three per problem family)
  unsigned long long device_allocs = 0;   ///< device allocations (split-K scratch, cuBLASLt workspaces)
  unsigned long long resolved = 0;        ///< shapes resolved (a first call, choose or warm-up of a shape)
  /// Calls inside graph capture of a problem that was not warmed up, run by cuBLASLt (CaptureMiss::kCublasLt).
  unsigned long long capture_fallbacks = 0;
  unsigned long long ladder_probes = 0;  ///< ladder probes run (GemmOptions::probe_ladder; one per M off a tuned M)
};

/// One problem family for Gemm::warmup: everything of a call but M, at the M values `m`. `options` gives the formats,
/// accumulation, scaling, output type, whether there is a bias (a non-null `bias`; it is never read) and the
/// activation, as for Gemm::choose.
struct WarmupProblem {
  int64_t n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  GemmRunOptions options;
  std::vector<int64_t> m;  ///< empty: the default M ladder (1 .. 16384, `dgtune shapes --m-ladder`)
};

/// What a warm-up did.
struct WarmupReport {
  size_t families = 0;  ///< problem families warmed
  size_t shapes = 0;    ///< shapes resolved (families x M, tuned M included)
  size_t kernels = 0;   ///< distinct dgtune kernels loaded by this Gemm afterwards
  unsigned long long nvrtc_compiles = 0;  ///< NVRTC compiles during this warm-up
  double seconds = 0;                     ///< wall time of this warm-up
};

struct GemmOptions {
  std::string db_path;    ///< empty: $DGTUNE_DB, else no DB (never a path below the working directory); no DB, or a
                          ///< missing, damaged, foreign or other-schema file, means "no tuning data" (one warning
                          ///< naming where it looked, default configs)
  std::string cache_dir;  ///< empty: $DGTUNE_CACHE_DIR, else $XDG_CACHE_HOME/dgtune, else ~/.cache/dgtune;
                          ///< one that cannot be written falls back to the next, then to a per-user temp
                          ///< directory, with one warning
  int device = -1;        ///< -1: the calling thread's current device
  /// A table made by `dgtune export --format cpp` (a constexpr `TunedTable` in the generated header):
  /// when set, winners come from it and no DB is opened (db_path is ignored; a build without SQLite
  /// works). Kernels are still compiled by NVRTC at run time (through the cubin cache), so the
  /// deployment needs NVRTC. The identity rule is the DB's: entries of another hardware identity are
  /// not used, an entry of another kernel hash only while its config is still legal.
  const TunedTable* table = nullptr;
  /// Which winners to prefer: "cold-l2" (default; tuned by `dgtune sweep`, operands from HBM, one launch at a
  /// time) or "hot-graph" (tuned by `dgtune sweep --protocol hot-graph`: warm L2, back-to-back launches in a
  /// CUDA graph, what a serving stack replaying graphs sees). A shape's winner under this kind (any version)
  /// is taken first, then its winner under the other kind (source "db-other-protocol"), then another M by the
  /// ladder rule (this kind, then the other; the other first past this kind's largest tuned M where the other kind's
  /// tuned M lie on both sides of M), then the default config. Same rule for `table`. Any other value: the
  /// constructor throws dgt::Error(kUsage).
  std::string protocol = "cold-l2";
  /// true (default): cuBLASLt may run a problem (GemmChoice::backend "cublaslt") when its stored algorithm was faster
  /// than every dgtune config in the sweep, and a problem with no tuned entry runs cuBLASLt's heuristic choice
  /// instead of dgt::default_config (so an untuned problem is never slower than calling cuBLASLt). false: dgtune's
  /// kernel always runs (the behaviour before cuBLASLt was a backend). Problems cuBLASLt cannot run (e5m2 x e5m2,
  /// e4m3 output, sizes it refuses) always run dgtune's kernel.
  bool cublaslt = true;
  /// true (default): at the first call (or choose, or warm-up) of an M that no sweep tuned for a tuned N, K (GemmChoice
  /// sources "ladder", "nearest" and their "-other-protocol" forms, from a DB: not with `table`), the kernel the ladder
  /// rule picked and the first four algorithms of cuBLASLt's heuristic are each timed in 15 rounds on operands the
  /// Gemm allocates for the purpose (up to 76 rotated copies of A and B that span twice the L2 under "cold-l2", one
  /// copy back to back under "hot-graph"; the copies at most 1 GiB; a problem whose A, B and D take more is not probed;
  /// all freed before the call returns), and the algorithm with the smallest total runs when it was more than 1%
  /// faster than the kernel in more than half of the rounds, else the kernel (GemmChoice::probe says what was
  /// measured; docs/loader.md "The ladder probe"). That first call synchronises the device and costs milliseconds. The probe's allocations are not counted in
  /// GemmStats::device_allocs (GemmStats::ladder_probes counts probes). false: the ladder rule's prediction alone
  /// decides (the behaviour before the probe). No effect with cublaslt = false, for e4m3 output, and never inside graph
  /// capture (a first call there is decided by the prediction).
  bool probe_ladder = true;
  /// Where to write the problems that ran without a tuned entry, as a shapes file (Gemm::write_untuned), when the
  /// Gemm is destroyed; empty: $DGTUNE_RECORD_UNTUNED, else nowhere. A file that cannot be written is logged, never
  /// thrown. Each Gemm replaces the file: with several Gemm objects (one per device) give each its own path, or the
  /// last one destroyed wins.
  std::string record_untuned;
  /// A call inside CUDA-graph capture whose problem family was not warmed up (see CaptureMiss; default kCublasLt).
  CaptureMiss capture_miss = CaptureMiss::kCublasLt;
  /// A kernel bundle directory made by `dgtune export --format bundle --out DIR` (docs/loader.md "Kernel bundles");
  /// empty: $DGTUNE_BUNDLE, else none. Kernels are taken from the bundle first, then from the cubin cache
  /// (cache_dir), then compiled with NVRTC; the bundle is only read (never written or locked: it may be read-only and
  /// shared). The first NVRTC compile of a Gemm that has a bundle logs one warning naming the kernel and the bundle;
  /// GemmStats::bundle_loads counts the kernels the bundle served. The constructor throws dgt::Error naming the file,
  /// the field and the values expected and found when the bundle cannot be read (kIo) or was built by another dgtune
  /// (kInvalid: format version, kernel hash, arch, NVRTC version) or a listed cubin is missing or has another size
  /// (kIo). A cubin whose contents fail the manifest's hash when it is first loaded throws dgt::Error(kIo) from that
  /// call (a warm-up, or the first call of a shape) instead of compiling silently.
  std::string bundle;
};

/// Thread-safe FP8 GEMM launcher backed by the tuning DB. The first call for a shape looks up the
/// winner of (this GPU's hardware identity, problem, GemmOptions::protocol's kind; then the other
/// protocol's) measured with the running kernel version, else one
/// of an older kernel version whose config is still legal (logged once per Gemm), else another tuned M
/// with the same N and K by the ladder rule (docs/loader.md), else the documented default config
/// (dgt::default_config); then it decides whether cuBLASLt runs instead (GemmChoice::backend), and JIT-loads the
/// kernel in any case (it also serves calls whose pointers the cuBLASLt algorithm cannot take) through the cubin
/// cache (compiling on a miss; that first call holds an exclusive lock, so other threads' calls wait
/// for it). Later calls for that shape take a shared lock, encode the TMA descriptors on the host and
/// launch: no device allocation and no synchronisation, so they can be
/// captured in a CUDA graph. A split-K winner, and a cuBLASLt algorithm that needs a workspace, use a scratch
/// buffer owned by this object and shared by the shapes of one problem family (every M of one N, K, leading
/// dimensions and types; allocated on first use or by warmup): calls of one family must then be ordered on one
/// stream. Serving (docs/loader.md "Serving"): warmup() first, then any M of a warmed family is chosen from memory,
/// with no NVRTC compile and no DB read, and inside graph capture no device allocation (GemmOptions::capture_miss
/// says what happens to a family that was not warmed). Outside capture the first call of an M off the family's tuned
/// M also runs the ladder probe (GemmOptions::probe_ladder: device memory allocated and freed, the device
/// synchronised), so warm the M you will call.
class DGT_API Gemm {
 public:
  /// Opens the device and (read-only, loader/loader_db.hpp) the DB: a DB that cannot be used is logged once
  /// and replaced by default configs, never thrown. Throws dgt::Error (kNoDevice, kCuda, kUsage for an
  /// unknown GemmOptions::protocol, kIo when no cubin cache directory is writable, kIo or kInvalid for a kernel bundle
  /// that cannot be used (GemmOptions::bundle), ...) with a message naming what failed.
  explicit Gemm(GemmOptions options = {});
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  /// Enqueues D = scale_a * scale_b * A * B^T on `stream` (a stream of this Gemm's device; call from a
  /// thread whose current device is that device, as with any CUDA library). fast_accum selects tensor-core accumulation
  /// over all of K instead of FP32 promotion per k-block. `scale` says how scale_a and scale_b are laid out
  /// (Fp8Scaling; default one FP32 each) and is part of the shape the winner is looked up for. Throws
  /// dgt::Error(kInvalid) naming the operand and rule when a leading dimension or pointer breaks a TMA rule,
  /// or a block scale mode is asked for with fast_accum.
  void run(const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
           int64_t ldd, const float* scale_a, const float* scale_b, cudaStream_t stream,
           Fp8Format a_format = Fp8Format::kE4M3, Fp8Format b_format = Fp8Format::kE4M3, bool fast_accum = false,
           Fp8Scaling scale = Fp8Scaling::kPerTensor);

  /// The same with every other choice in `options` (output type, bias, activation, scale_d, amax; see
  /// GemmRunOptions). D has `options.output`'s element type; ldd is in its elements.
  void run(const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
           int64_t ldd, const float* scale_a, const float* scale_b, cudaStream_t stream,
           const GemmRunOptions& options);

  /// The config `run` uses (or would use) for this shape and scale mode; loads it on first use like `run` (where
  /// cuBLASLt runs it, its algorithm is launched once on scratch operands, so that a later capture may run it; off a
  /// tuned M the ladder probe runs, GemmOptions::probe_ladder). Never checks for capture: do not call it for a new
  /// shape while this thread or, in cudaStreamCaptureModeGlobal, any thread captures.
  GemmChoice choose(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd,
                    Fp8Format a_format = Fp8Format::kE4M3, Fp8Format b_format = Fp8Format::kE4M3,
                    bool fast_accum = false, Fp8Scaling scale = Fp8Scaling::kPerTensor);
  /// The config for this shape with `options`' formats, scaling, output type, bias (present or not) and
  /// activation (the pointers are not used).
  GemmChoice choose(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd,
                    const GemmRunOptions& options);

  /// Warms up problem families for serving: reads their DB rows (or table entries) once, resolves every M of each
  /// family's list together with its tuned M (compiling or loading every kernel the loader can choose there, the
  /// ladder neighbours included, and every config the ladder rule's re-rank can pick between two tuned M), builds the
  /// cuBLASLt plans and allocates the family's scratch for all of them.
  /// Each M of the lists off the family's tuned M runs the ladder probe (GemmOptions::probe_ladder).
  /// Afterwards any M of a warmed family (on the list or not) is resolved from memory. Throws dgt::Error (kInvalid
  /// for a problem that breaks a rule, naming it; kNvrtc, kDriver, kCuda as a first call would).
  WarmupReport warmup(const std::vector<WarmupProblem>& problems);
  /// warmup() of every problem family this Gemm's DB (or table) holds a winner of for this device, at the default
  /// M ladder. A Gemm without tuning data warms nothing.
  WarmupReport warmup_tuned();
  /// warmup() of the problem families of a shapes file (dgtune sweep's format; e.g. `dgtune shapes --hf-config F
  /// --m-ladder`), each at the M values its lines give. Throws dgt::Error(kUsage) naming file:line for a bad line,
  /// kIo when the file cannot be read.
  WarmupReport warmup_shapes(const std::string& path);

  /// Counters since construction (GemmStats).
  GemmStats stats() const;

  /// The problems run so far without a tuned entry (source "default"), with their call counts, in the order first
  /// seen (PyTorch TunableOp's record-untuned, for dgtune: tune what the application actually called).
  std::vector<UntunedShape> untuned() const;
  /// Writes untuned() as a shapes file (a comment line per problem with its call count, then its line), replacing
  /// `path` atomically. Throws dgt::Error(kIo) naming the path when it cannot be written.
  void write_untuned(const std::string& path) const;

 private:
  struct Impl;
  friend struct GemmAccess;  ///< dgtune's own measuring code (the host-cost benchmark); not part of the API
  std::unique_ptr<Impl> impl_;
};

}  // namespace dgt
