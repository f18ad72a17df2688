// dgtune run-time loader: launch the tuned FP8 GEMM winner for a shape from application code.
//
//   dgt::Gemm gemm;                       // DB from $DGTUNE_DB or results/tuning.db
//   gemm.run(A, B, D, M, N, K, lda, ldb, ldd, scale_a, scale_b, stream);
//
// D[M,N] (BF16, row-major, ldd) = (*scale_a) * (*scale_b) * A[M,K] * B[N,K]^T, with A and B FP8
// (e4m3 or e5m2), both K-major (row-major M x K and N x K, leading dimensions lda, ldb in elements),
// FP32 accumulation. All pointers are device pointers; A and B must be 16-byte aligned and lda, ldb
// multiples of 16 (TMA rules); when the chosen config stores D with TMA (epilogue "tma"), D must be
// 16-byte aligned too (a stored winner that needs ldd % 8 == 0 is only chosen when ldd fits).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

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

namespace dgt {

/// FP8 operand formats (OCP): e4m3 (max 448) and e5m2 (max 57344).
enum class Fp8Format { kE4M3, kE5M2 };

/// What `Gemm` runs for a shape and why.
struct GemmChoice {
  std::string config_key;  ///< kernel config, e.g. "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0"
  /// "db" (winner of this shape under GemmOptions::protocol's kind; also from GemmOptions::table),
  /// "db-other-protocol" (winner of this shape tuned under the other protocol kind), "nearest" (winner of the
  /// same N, K), "nearest-other-protocol", "default"
  std::string source;
  double tuned_us = 0;   ///< median time stored with the winner (0 for "default")
  std::string protocol;  ///< protocol the winner was timed under, e.g. "cold-l2-v1", "hot-graph-v1" ("" for "default")
};

struct GemmOptions {
  std::string db_path;    ///< empty: $DGTUNE_DB, else results/tuning.db; a missing, damaged, foreign or other-schema
                          ///< file means "no tuning data" (one warning, default configs)
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
  /// is taken first, then its winner under the other kind (source "db-other-protocol"), then the nearest M
  /// (this kind, then the other), then the default config. Same rule for `table`. Any other value: the
  /// constructor throws dgt::Error(kUsage).
  std::string protocol = "cold-l2";
};

/// Thread-safe FP8 GEMM launcher backed by the tuning DB. The first call for a shape looks up the
/// winner of (this GPU's hardware identity, problem, GemmOptions::protocol's kind; then the other
/// protocol's) measured with the running kernel version, else one
/// of an older kernel version whose config is still legal (logged once per Gemm), else the nearest
/// tuned M with the same N and K (README "Tuning database": the loader rule), else the documented
/// default config (dgt::default_config), then JIT-loads it through the cubin
/// cache (compiling on a miss; that first call holds an exclusive lock, so other threads' calls wait
/// for it). Later calls for that shape take a shared lock, encode the TMA descriptors on the host and
/// launch: no device allocation and no synchronisation, so they can be
/// captured in a CUDA graph. A split-K winner uses a scratch buffer owned by this object for that shape
/// (allocated on first use): calls for one shape must then be ordered on one stream.
class Gemm {
 public:
  /// Opens the device and (read-only, loader/loader_db.hpp) the DB: a DB that cannot be used is logged once
  /// and replaced by default configs, never thrown. Throws dgt::Error (kNoDevice, kCuda, kUsage for an
  /// unknown GemmOptions::protocol, kIo when no cubin cache directory is writable, ...) with a message naming
  /// what failed.
  explicit Gemm(GemmOptions options = {});
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  /// Enqueues D = scale_a * scale_b * A * B^T on `stream` (a stream of this Gemm's device; call from a
  /// thread whose current device is that device, as with any CUDA library). fast_accum selects tensor-core accumulation
  /// over all of K instead of FP32 promotion per k-block. Throws dgt::Error(kInvalid) naming the
  /// operand and rule when a leading dimension or pointer breaks a TMA rule.
  void run(const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
           int64_t ldd, const float* scale_a, const float* scale_b, cudaStream_t stream,
           Fp8Format a_format = Fp8Format::kE4M3, Fp8Format b_format = Fp8Format::kE4M3, bool fast_accum = false);

  /// The config `run` uses (or would use) for this shape; loads it on first use like `run`.
  GemmChoice choose(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd,
                    Fp8Format a_format = Fp8Format::kE4M3, Fp8Format b_format = Fp8Format::kE4M3,
                    bool fast_accum = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dgt
