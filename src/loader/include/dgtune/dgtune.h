/* dgtune's C API: the tuned FP8 GEMM of libdgtune_runtime for languages and packages that cannot call C++ (ctypes,
 * cffi, other FFIs). The same loader as dgt::Gemm (<dgtune/gemm.hpp>): the same DB rule, identity rule, thread
 * safety and launch-path guarantees. Link: -ldgtune_runtime (pkg-config dgtune, or find_package(dgtune) and
 * dgtune::runtime).
 *
 *   dgt_gemm* g = NULL;
 *   if (dgt_gemm_create(NULL, &g) != DGT_OK) { fprintf(stderr, "%s\n", dgt_last_error()); return 1; }
 *   dgt_gemm_run(g, A, B, D, M, N, K, lda, ldb, ldd, scale_a, scale_b, stream, NULL);
 *   dgt_gemm_destroy(g);
 *
 * D[M,N] = scale_a * scale_b * A[M,K] * B[N,K]^T: A, B FP8 (e4m3 or e5m2), K-major, leading dimensions in elements;
 * D row-major with leading dimension ldd in elements of the output type (BF16 by default). All pointers are device
 * pointers; `stream` is a cudaStream_t (NULL: the legacy default stream). Every function returns DGT_OK or the kind
 * of the error; dgt_last_error() then holds its message (per thread). No function throws. */
#ifndef DGTUNE_DGTUNE_H
#define DGTUNE_DGTUNE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define DGT_C_API
#else
#define DGT_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** DGT_OK, or 1 + the dgt::ErrorKind of the failure (dgtune/error.hpp, same order). */
typedef enum dgt_status {
  DGT_OK = 0,
  DGT_ERR_USAGE = 1,     /**< an argument out of range (an enum value, a NULL handle, an unknown protocol) */
  DGT_ERR_INVALID = 2,   /**< the problem or config breaks a rule (TMA alignment of a leading dimension, ...) */
  DGT_ERR_CUDA = 3,      /**< CUDA runtime */
  DGT_ERR_DRIVER = 4,    /**< CUDA driver API */
  DGT_ERR_NVRTC = 5,     /**< run-time compilation of a kernel */
  DGT_ERR_CUBLAS = 6,    /**< cuBLASLt */
  DGT_ERR_SQLITE = 7,    /**< tuning database */
  DGT_ERR_IO = 8,        /**< files, cache directory */
  DGT_ERR_NO_DEVICE = 9, /**< no CUDA device usable (no driver, no GPU, not sm_90) */
  DGT_ERR_TIMEOUT = 10,  /**< a launch still running after its watchdog */
  DGT_ERR_INTERNAL = 11  /**< a broken invariant inside dgtune, or an exception that is not a dgt::Error */
} dgt_status;

/** dgt::GemmOptions. A zeroed struct (or NULL) gives the defaults. */
typedef struct dgt_gemm_options {
  const char* db_path;   /**< NULL or "": $DGTUNE_DB, else untuned (see docs/loader.md) */
  const char* cache_dir; /**< NULL or "": $DGTUNE_CACHE_DIR, else the per-user cache directory */
  int device;            /**< CUDA ordinal; -1: the calling thread's current device. A zeroed struct means 0 */
  const char* protocol;  /**< NULL or "": "cold-l2"; or "hot-graph" */
  /** NULL or "": $DGTUNE_BUNDLE, else none; a kernel bundle directory (`dgtune export --format bundle`) whose
   *  cubins are loaded before the cubin cache and NVRTC (dgt::GemmOptions::bundle). Added last: code compiled
   *  against an older dgtune.h passes a shorter struct, so rebuild it against this header. */
  const char* bundle;
} dgt_gemm_options;

/** dgt::GemmRunOptions. A zeroed struct (or NULL) gives the defaults: e4m3 x e4m3 -> bf16, FP32 promotion,
 *  per-tensor scales, no bias, no activation. */
typedef struct dgt_run_options {
  int a_format;        /**< 0 e4m3, 1 e5m2 */
  int b_format;        /**< 0 e4m3, 1 e5m2 */
  int fast_accum;      /**< 0: FP32 promotion per k-block; 1: tensor-core accumulation */
  int scale;           /**< 0 per-tensor, 1 channel, 2 block (1x128 / 128x128), 3 block1d1d (dgt::Fp8Scaling) */
  int output;          /**< 0 bf16, 1 f32, 2 e4m3 (then scale_d is required) */
  const void* bias;    /**< NULL, or N BF16 values added to every row */
  int act;             /**< 0 none, 1 relu, 2 gelu_tanh */
  const float* scale_d; /**< e4m3 output: one FP32 output scale (device) */
  float* amax;         /**< e4m3 output, optional: one FP32 written with max |result| (device) */
} dgt_run_options;

/** An opaque dgt::Gemm. */
typedef struct dgt_gemm dgt_gemm;

/** Creates a loader (opens the device and the DB read-only). On failure *out is NULL. */
DGT_C_API dgt_status dgt_gemm_create(const dgt_gemm_options* options, dgt_gemm** out);
/** Destroys a loader made by dgt_gemm_create (NULL is ignored). Launches it enqueued must have finished. */
DGT_C_API void dgt_gemm_destroy(dgt_gemm* gemm);

/** Enqueues the GEMM on `stream` (dgt::Gemm::run). */
DGT_C_API dgt_status dgt_gemm_run(dgt_gemm* gemm, const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k,
                                  int64_t lda, int64_t ldb, int64_t ldd, const float* scale_a, const float* scale_b,
                                  void* stream, const dgt_run_options* options);

/** The config the loader runs for this problem and why (dgt::Gemm::choose), loading (and, on a cold cache,
 *  compiling) its kernel: config_key and source get NUL-terminated text, cut to their capacity (either may be
 *  NULL). tuned_us (may be NULL) gets the stored median time, 0 for an untuned problem. */
DGT_C_API dgt_status dgt_gemm_choose(dgt_gemm* gemm, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                     int64_t ldd, const dgt_run_options* options, char* config_key,
                                     size_t config_key_capacity, char* source, size_t source_capacity,
                                     double* tuned_us);

/** dgt::Gemm::warmup of the problem families of `count` problems (problems[i] = {m, n, k, lda, ldb, ldd}; one family
 *  per distinct n, k, lda, ldb, ldd, at the m values given for it, plus its tuned M): loads (compiling on a cold
 *  cache) every kernel the loader can choose there, so that later dgt_gemm_run calls for any M of those families do
 *  no compilation, no allocation and no DB read (safe inside CUDA-graph capture). */
DGT_C_API dgt_status dgt_gemm_warmup(dgt_gemm* gemm, const int64_t (*problems)[6], size_t count,
                                     const dgt_run_options* options);

/** dgt::GroupedGemmProblem (<dgtune/grouped_gemm.hpp>): the key of one grouped (MoE) GEMM in DeepGEMM's m-grouped
 *  layouts, A, B e4m3 K-major, D bf16, FP32 accumulation promoted per k-block. Every field is known on the host; the
 *  per-group row counts stay on the device (m_indices / masked_m of dgt_grouped_gemm_run). */
typedef struct dgt_grouped_problem {
  int layout;         /**< 0 contiguous (A [M_sum, K], D [M_sum, N], m_indices int32 [M_sum], -1 = padding row);
                           1 masked (A [G, M_max, K], D [G, M_max, N], masked_m int32 [G]) */
  int groups;         /**< G, 1 .. 4096; B is [G, N, K] */
  int64_t m;          /**< contiguous: M_sum; masked: M_max; a positive multiple of 128 */
  int64_t expected_m; /**< masked: expected rows per group (>= 1; sizes the grid only); contiguous: 0 */
  int64_t n;          /**< N of one group */
  int64_t k;          /**< K */
  int scale;          /**< dgt_run_options.scale's values: 0 per-tensor (one float each), 2 block (1x128 activations,
                           128x128 weights, the layouts of dgt::GroupedGemmProblem); 1 and 3 are refused */
} dgt_grouped_problem;

/** dgt::GroupedGemmOptions. A zeroed struct (or NULL) gives the defaults. */
typedef struct dgt_grouped_options {
  int device;            /**< CUDA ordinal; -1: the calling thread's current device. A zeroed struct means 0 */
  const char* cache_dir; /**< NULL or "": $DGTUNE_CACHE_DIR, else the per-user cache directory */
  const char* config;    /**< NULL or "": the tuning DB's winner, else the default rule; else a config key to run */
  /* db_path, protocol and bundle were added after the first three fields: code compiled against an older dgtune.h
   * passes a shorter struct, so rebuild it against this header. */
  const char* db_path;   /**< NULL or "": $DGTUNE_DB, else none (dgt::GroupedGemmOptions::db_path) */
  const char* protocol;  /**< NULL or "": "cold-l2"; or "hot-graph" (which winners to prefer) */
  const char* bundle;    /**< NULL or "": $DGTUNE_BUNDLE, else none (dgt::GroupedGemmOptions::bundle) */
} dgt_grouped_options;

/** An opaque dgt::GroupedGemm. */
typedef struct dgt_grouped_gemm dgt_grouped_gemm;

/** Checks the problem and the config (before the device is touched: DGT_ERR_USAGE for an enum out of range,
 *  DGT_ERR_INVALID naming the field and the rule), opens the device, compiles or loads the kernel. Create it before
 *  any CUDA-graph capture: dgt_grouped_gemm_run never compiles, allocates, synchronises or reads device memory on the
 *  host, so it may be captured and replayed (with other counts). On failure *out is NULL. */
DGT_C_API dgt_status dgt_grouped_gemm_create(const dgt_grouped_problem* problem, const dgt_grouped_options* options,
                                             dgt_grouped_gemm** out);
/** Destroys a grouped GEMM made by dgt_grouped_gemm_create (NULL is ignored). Launches it enqueued must have
 *  finished, and graphs that captured it must not be replayed afterwards. */
DGT_C_API void dgt_grouped_gemm_destroy(dgt_grouped_gemm* gemm);

/** Enqueues the grouped GEMM on `stream` (dgt::GroupedGemm::run). Device pointers: a, b [G, N, K], d, the scales, and
 *  `layout` = m_indices (contiguous) or masked_m (masked). DGT_ERR_INVALID naming the operand and the rule when a
 *  pointer is NULL or misaligned (a, b, d and block scales 16 bytes; per-tensor scales and layout 4 bytes); nothing
 *  is enqueued then. */
DGT_C_API dgt_status dgt_grouped_gemm_run(const dgt_grouped_gemm* gemm, const void* a, const void* b, void* d,
                                          const float* scale_a, const float* scale_b, const int32_t* layout,
                                          void* stream);

/** The config the grouped GEMM runs and why (dgt::GroupedGemmChoice::source: "explicit", "db", "ladder", "nearest",
 *  their "-other-protocol" forms, or "default"), as NUL-terminated text cut to the capacity (either buffer may be
 *  NULL). */
DGT_C_API dgt_status dgt_grouped_gemm_config(const dgt_grouped_gemm* gemm, char* config_key,
                                             size_t config_key_capacity, char* source, size_t source_capacity);

/** The message of the last failed call on this thread ("" when none failed). Valid until the next dgt_ call on
 *  this thread. */
DGT_C_API const char* dgt_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* DGTUNE_DGTUNE_H */
