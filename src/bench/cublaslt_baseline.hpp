// cuBLASLt baseline: the same problem, buffers, verification and timer as our kernel.
//
// Three steps, separable so that cuBLASLt "default" and "tuned" can be sides of an interleaved
// round-robin (bench/device_sides.hpp) next to our kernel:
//   1. CublasLtPlan: descriptors of one problem on one ProblemData's buffers and the algorithms the
//      heuristic returned (asked for CublasLtBaseline::max_algos(), default 32; the count is kept).
//   2. select_algorithms: verifies every returned algorithm and screens the verified ones with a
//      timing function; default = heuristic rank 0, tuned = the fastest.
//   3. CublasLtPlan::launcher(i): a launch closure of algorithm i (one cublasLtMatmul call).
// CublasLtBaseline::measure() chains 1 and 2 with the sweep's Timer (cold-l2-v1).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/problem_data.hpp"
#include "bench/protocol.hpp"
#include "launch/cublaslt_matmul.hpp"
#include "records/records.hpp"

struct cublasLtContext;

namespace dgt {

class CublasLtPlan;

/// Runs cuBLASLt FP8 GEMMs with the descriptors of launch/cublaslt_matmul.hpp (the "TN" mapping of our
/// row-major D = A B^T; scales by device pointer, FP32 compute, beta = 0).
/// Accumulation matches the problem: CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1 for Accum::kFast, 0 (periodic
/// promotion, cuBLASLt's default) for kPromote. Output and epilogue as the problem says: D
/// of type bf16 / f32 / e4m3 (e4m3: C BF16, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER = scale_d and
/// AMAX_D_POINTER = the ProblemData's amax), CUBLASLT_EPILOGUE_BIAS / RELU_BIAS / GELU_BIAS (or RELU /
/// GELU without bias) with a BF16 bias of N; a combination cuBLASLt refuses (heuristic or launch
/// NOT_SUPPORTED) is stored as unsupported with its status. Owns the handle and one 32 MiB workspace, shared by
/// every plan (their launches must be ordered on one stream).
class CublasLtBaseline {
 public:
  static constexpr int kHeuristicRequest = 32;  ///< algorithms asked of cublasLtMatmulAlgoGetHeuristic

  explicit CublasLtBaseline(int max_algos = kHeuristicRequest);
  ~CublasLtBaseline();
  CublasLtBaseline(const CublasLtBaseline&) = delete;
  CublasLtBaseline& operator=(const CublasLtBaseline&) = delete;

  int max_algos() const { return max_algos_; }

  /// Plans the problem, verifies and times each returned algorithm with `timer`, and returns
  /// {default, tuned}. A refusal (heuristic or launch NOT_SUPPORTED, e.g. dimensions not multiples
  /// of 16) is returned as status "unsupported" with cuBLASLt's status, never thrown. The algo text
  /// ends with "rank=R returned=N requested=32".
  std::pair<BaselineRecord, BaselineRecord> measure(const ProblemData& data, Timer& timer, cudaStream_t s);

 private:
  friend class CublasLtPlan;
  size_t workspace_bytes_ = 32u << 20;
  DeviceBuffer workspace_;  // before handle_: allocated first, freed last
  cublasLtContext* handle_ = nullptr;
  int max_algos_;
};

/// One problem on one ProblemData's buffers: the matmul descriptors and the heuristic's algorithms.
/// Keeps references to the CublasLtBaseline and the ProblemData: both must outlive the plan and
/// every launcher made from it.
class CublasLtPlan {
 public:
  /// Builds the descriptors and asks the heuristic for lt.max_algos() algorithms. Never throws for a
  /// refusal: supported() is then false and error() says why. Throws Error(kCublas) when building
  /// a descriptor fails.
  CublasLtPlan(CublasLtBaseline& lt, const ProblemData& data);
  ~CublasLtPlan();
  CublasLtPlan(const CublasLtPlan&) = delete;
  CublasLtPlan& operator=(const CublasLtPlan&) = delete;

  const ProblemData& data() const;
  bool supported() const { return returned() > 0; }
  int heuristic_status() const;  ///< cublasStatus_t of cublasLtMatmulAlgoGetHeuristic
  int requested() const;         ///< algorithms asked for
  int returned() const;          ///< algorithms the heuristic returned (0 when refused)
  const std::string& error() const;

  /// "algo=ID tile=T stages=S splitk=K swizzle=W cluster=C reduction=X rank=i returned=N requested=R".
  std::string describe(int i) const;
  /// Algorithm i as its 64 bytes (what the tuning DB stores and the loader replays) and the workspace it needs.
  CublasLtAlgoBytes algo(int i) const;
  size_t workspace_bytes(int i) const;
  /// Enqueues one cublasLtMatmul with algorithm i (0 <= i < returned()); returns its cublasStatus_t
  /// (0 = success). Never throws.
  int launch(int i, cudaStream_t s) const;
  /// launch(i, s) as a Side's launch closure: throws Error(kCublas) when the call fails.
  std::function<void(cudaStream_t)> launcher(int i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What select_algorithms found.
struct CublasLtChoice {
  BaselineRecord def;     ///< provider cublaslt-default: heuristic rank 0 (status/verification/timing)
  BaselineRecord tuned;   ///< provider cublaslt-tuned: the fastest verified algorithm (= def when none is ok)
  int default_algo = -1;  ///< index into the plan; -1 when rank 0 is not usable (def.status != "ok")
  int tuned_algo = -1;    ///< -1 when no algorithm is usable
  std::vector<BaselineRecord> screened;  ///< one per returned algorithm, in rank order (provider "cublaslt-rank<R>")
};

/// Times one launch closure (which enqueues one call on the stream it is given) for screening.
using ScreenTimer = std::function<Timing(const std::function<void(cudaStream_t)>&)>;

/// Verifies every algorithm of the plan (poison D, launch, verify) and times the verified ones with
/// `time`; records get `protocol` as their protocol text. The plan must be supported() or the
/// result is two "unsupported" records with the heuristic's status.
CublasLtChoice select_algorithms(const CublasLtPlan& plan, const ScreenTimer& time, const std::string& protocol,
                                 cudaStream_t s);
/// Same, screened with the sweep's Timer (cold-l2-v1, adaptive sample count).
CublasLtChoice select_algorithms(const CublasLtPlan& plan, Timer& timer, cudaStream_t s);

}  // namespace dgt
