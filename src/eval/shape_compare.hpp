// Measure one shape now: what the loader would run (its stored winner by the identity rule, else the
// nearest, else the default config) against cuBLASLt default and tuned, in interleaved rounds of the
// measurement engine (bench/device_sides.hpp), every side verified before timing and after the rounds.
// The result is a ShapeMeasurement: `dgtune compare` reads its engine result (every sample with its
// position, clock and flag, and each side's output check); `dgtune gate` keeps its round-aligned samples
// (gate::record_of, eval/gate_record.hpp). GPU only.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/cublaslt_baseline.hpp"
#include "bench/measure_protocol.hpp"
#include "bench/problem_data.hpp"
#include "bench/rounds.hpp"
#include "db/tuning_db_reader.hpp"
#include "device/device_info.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"
#include "problem/shapes_file.hpp"
#include "records/records.hpp"

namespace dgt {

/// One shape measured now.
struct ShapeMeasurement {
  Problem problem;
  std::string name;           ///< the shapes file's name= (may be empty)
  std::string config_key;     ///< what the loader's choice (or the --search screen) ran
  std::string config_source;  ///< "db" | "db-other-protocol" | "ladder" | "nearest" | "ladder-other-protocol" | "nearest-other-protocol" | "default" |
                              ///< "search-top<K>"
  /// "ok": measured and every side verified; "verify_failed": our kernel's output is wrong (before timing or after
  /// replay); "error": measuring failed (CUDA, NVRTC, cuBLASLt refusal, no complete round); `error` says why.
  std::string status = "ok";
  std::string error;
  std::string tuned_algo;    ///< cuBLASLt-tuned's algorithm text ("unsupported: ..." when cuBLASLt refuses the shape)
  std::string default_algo;  ///< cuBLASLt-default's, when it was a side
  /// The engine's result whenever the rounds ran (also when a check after replay failed): sides kSideDgtune,
  /// cublaslt-tuned[, cublaslt-default][, extra configs][, copy limit].
  std::optional<RoundsResult> rounds;
  int heuristic_count = 0;  ///< algorithms cuBLASLt's heuristic returned

  bool ok() const { return status == "ok"; }
};

/// One round in which every GEMM side a gate needs has a sample: dgtune and, when the measurement has them,
/// cuBLASLt-tuned and cuBLASLt-default (null when the side does not exist).
struct AlignedRound {
  int round = 0;
  const Sample* ours = nullptr;
  const Sample* tuned = nullptr;
  const Sample* def = nullptr;
};
/// The complete rounds of `m.rounds` in round order (empty without rounds). Pointers into m.rounds.
std::vector<AlignedRound> aligned_rounds(const ShapeMeasurement& m);

struct ShapeCompareOptions {
  std::string db_path;    ///< tuning DB the loader's choice is read from (read-only); missing: defaults
  std::string cache_dir;  ///< empty = default_cache_dir()
  int device = 0;
  MeasureProtocol protocol;    ///< rounds inside
  uint64_t seed = 20261129;    ///< input fill seed (per problem: seed ^ hash of the problem key)
  bool cublas_default = true;  ///< also measure cuBLASLt's heuristic top-1 as a side
  /// Further configs timed as extra sides of the same rounds (label = config key), after the standard
  /// sides: e.g. an old and a new kernel schedule side by side with cuBLASLt. Each is verified before
  /// timing; one that cannot be built or does not verify is left out with a warning.
  std::vector<KernelConfig> extra_configs;
  /// `dgtune gate --search K`: instead of the loader's choice, the cost model's top K candidates of the
  /// built-in default space (rank_by_estimate) are compiled (in parallel), verified and screened with
  /// the protocol (screen_rounds interleaved rounds, all K in one run); the fastest verified one is the
  /// shape's config, source "search-top<K>". 0 = the loader's choice.
  int search_top_k = 0;
  int screen_rounds = 5;
  /// `dgtune compare --copy-limit`: one more side, last in the rounds, label kSideCopyLimit
  /// (bench/copy_limit_side.hpp): a streaming read of A and B and write of D on the same buffers, the
  /// lower bound any GEMM of the shape is compared with. Not verified as a GEMM. Off for the gate (its
  /// recorded baselines were measured without it).
  bool copy_limit = false;
};

/// A GEMM side a caller adds to measure() (`compare --m-grid`: dgt::Gemm::run, the loader's dispatch), built on the
/// shape's buffers once they exist.
struct DataSide {
  std::string label;  ///< must differ from the standard sides' labels
  /// Enqueues one GEMM of data.problem() on data's operands (A, B, scales, epilogue operands) into data's D on the
  /// stream; throws on failure. As every Side (bench/device_sides.hpp): graph-capturable, no allocation or
  /// synchronisation once it has run once (measure() runs it once to verify before the engine's warm-up).
  std::function<void(const ProblemData& data, cudaStream_t stream)> launch;
};

/// What a caller changes in one measure() (`compare --m-grid`); empty: measure() as `compare` and `gate` use it.
struct MeasureAdditions {
  /// Runs as side kSideDgtune instead of choose()'s (or the search's) choice: {config, source}.
  std::optional<std::pair<KernelConfig, std::string>> config;
  /// Timed in the same rounds right after cuBLASLt's sides (before --config extras and the copy limit), each verified
  /// before timing and after the rounds like kSideDgtune: a wrong output fails the shape ("verify_failed"); a side
  /// that throws a dgt::Error other than a CUDA one before timing fails it ("error"). Also timed when cuBLASLt refuses
  /// the shape (then beside kSideDgtune alone).
  std::vector<DataSide> sides;
};

/// One device, one read-only DB, one kernel cache and cuBLASLt handle, for many shapes.
class ShapeComparer {
 public:
  /// Opens the device (sm_90 required: Error(kNoDevice) otherwise), the DB read-only when it exists,
  /// the cubin cache and the utility kernels.
  explicit ShapeComparer(ShapeCompareOptions options);
  ~ShapeComparer();
  ShapeComparer(const ShapeComparer&) = delete;
  ShapeComparer& operator=(const ShapeComparer&) = delete;

  const DeviceInfo& device() const { return device_; }
  const DeviceFingerprint& fingerprint() const { return fingerprint_; }

  /// The loader's choice for p with options.protocol's kind preferred (cold-l2's for isolated-v1, which has no
  /// winners of its own; loader/choice.hpp): {config, source
  /// "db" | "db-other-protocol" | "ladder" | "nearest" | "ladder-other-protocol" | "nearest-other-protocol" | "default"}.
  std::pair<KernelConfig, std::string> choose(const Problem& p) const;

  /// The search_top_k screen for p on `data` (see ShapeCompareOptions::search_top_k): {fastest verified
  /// config, "search-top<K>"}. Throws Error(kInvalid) when none of the K candidates builds and verifies;
  /// a lost CUDA context throws.
  std::pair<KernelConfig, std::string> search(const Problem& p, ProblemData& data);

  /// Measures one shape: verify our candidate and cuBLASLt's algorithms, then protocol.rounds interleaved rounds of
  /// {dgtune, cuBLASLt tuned[, cuBLASLt default][, the caller's sides][, extra configs][, copy limit]}, then the
  /// output check after replay. Failures of this shape (compile, verification, cuBLASLt refusal) come back as the
  /// measurement's status ("verify_failed" / "error"), never thrown; a lost CUDA context throws.
  ShapeMeasurement measure(const ShapeEntry& shape) { return measure(shape, MeasureAdditions{}); }
  /// The same with the caller's config and sides (MeasureAdditions); the sides' labels follow the standard ones in
  /// the result.
  ShapeMeasurement measure(const ShapeEntry& shape, const MeasureAdditions& additions);

  /// True when the DB holds winners of this device's hardware identity (else every choice is the default).
  bool has_winners() const { return device_id_.has_value(); }

  /// Compiles (NVRTC into the cubin cache, on all cores) what measure() will build for these shapes:
  /// the loader's choice and the legal extra configs (not the --search candidates: search() compiles
  /// those in parallel itself). Nothing is loaded or launched; failures are left for measure() to
  /// report. Without it a cold cache compiles one kernel at a time inside measure().
  void prefetch(const std::vector<ShapeEntry>& shapes);

  /// The protocol JSON of the measurements (MeasureProtocol::to_json()).
  std::string protocol_json() const { return options_.protocol.to_json(); }

 private:
  ShapeCompareOptions options_;
  DeviceInfo device_;
  DeviceFingerprint fingerprint_;
  std::unique_ptr<TuningDbReader> db_;
  std::optional<int64_t> device_id_;
  std::unique_ptr<jit::CubinCache> cache_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<UtilKernels> util_;
  std::unique_ptr<CublasLtBaseline> cublas_;
  std::unique_ptr<KernelCache> kernels_;
};

}  // namespace dgt
