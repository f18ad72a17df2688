// One GPU as a measuring instrument: input data of one shape, the cold-L2 Timer or the hot-graph engine,
// cuBLASLt baselines on the same buffers, and the verify-then-time sequence of one candidate. No DB: the
// in-process sweep (TuningSession) and the worker process (src/worker/) store what it returns.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "bench/cublaslt_baseline.hpp"
#include "bench/grouped_data.hpp"
#include "bench/device_sides.hpp"
#include "bench/problem_data.hpp"
#include "bench/protocol.hpp"
#include "device/device_info.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "records/records.hpp"
#include "tune/compile_queue.hpp"
#include "tune/session_options.hpp"

namespace dgt {

/// Seconds the first (verification) launch of a candidate may run before it counts as hung: 20x the
/// cost model's estimate (space/cost_model.hpp) and at least 2 s (README, "Crashing and hanging
/// candidates"). Later launches, timed under the protocol, keep the protocol's watchdog.
double candidate_timeout_s(const KernelSpec& spec, const Problem& p, int sm_count);

class DeviceBench {
 public:
  /// Opens device `options.device` (must be sm_90: Error(kUsage) otherwise), a non-blocking stream, the
  /// utility module, the Timer and cuBLASLt. `cache` must outlive the bench.
  DeviceBench(const SessionOptions& options, const jit::CubinCache& cache);
  ~DeviceBench();
  DeviceBench(const DeviceBench&) = delete;
  DeviceBench& operator=(const DeviceBench&) = delete;

  const DeviceInfo& device() const { return device_; }

  /// Allocates and fills the inputs of `p` (seed: options.seed ^ hash(p.key())) and computes its reference;
  /// the previous shape's buffers are freed first.
  void begin_shape(const Problem& p);
  /// A grouped shape (tune/device_bench_grouped.cpp): allocates and fills the operands of `g`
  /// (bench/grouped_data.hpp; seed: options.seed ^ hash(g.keyed().key())), freeing the previous shape's first.
  /// Until the next begin_*shape, baselines() times the per-group cuBLASLt loop and measure() the grouped kernel.
  void begin_grouped_shape(const GroupedProblem& g);
  /// True between begin_grouped_shape() and the next begin_shape().
  bool grouped() const { return grouped_ != nullptr; }
  /// The current grouped shape's problem (with its counts), or null when the current shape is dense.
  const GroupedProblem* grouped_problem() const { return grouped_ ? &grouped_->problem() : nullptr; }
  /// cuBLASLt default and tuned for the current shape under the session's protocol. A grouped shape has one
  /// cuBLASLt baseline, the per-group loop of heuristic top-1 calls (bench/group_loop.hpp), verified per group
  /// like a candidate and timed under the same protocol: it is the "default" record; the "tuned" record is
  /// kUnsupported, saying so (there is no tuned loop).
  std::pair<BaselineRecord, BaselineRecord> baselines();
  /// Verifies, then times one candidate of the current shape. Every outcome is a record: pre_device_trial's
  /// (invalid, compile error), kLaunchError, kVerifyFailed, kOk; kCrashed (a sticky CUDA error) or kTimeout
  /// (a launch still running after candidate_timeout_s, or later after the protocol's watchdog) also set
  /// context_lost(): the CUDA context is unusable and this process must end before measuring anything else.
  /// A grouped shape ignores `compiled` (the dense kernel's): the grouped kernel is loaded here through the cubin
  /// cache (KernelCache::get_grouped: a hit when the sweep's compile queue compiled it ahead, else NVRTC now), an
  /// NVRTC failure is kCompileError, a grouped rule (G1-G3) kInvalid; then it is
  /// verified per group (GroupedData::verify) and timed like a dense candidate, TFLOPS over the real rows.
  TrialRecord measure(const EvaluatedSpec& candidate, const CompileResult& compiled);
  /// True after a candidate crashed or hung (see measure()).
  bool context_lost() const { return lost_; }

 private:
  uint64_t seed_for(const Problem& p) const;
  std::pair<BaselineRecord, BaselineRecord> grouped_baselines();
  TrialRecord measure_grouped(const EvaluatedSpec& candidate);
  /// The protocol a measurement stores, and the launch timed under it (cold-l2 Timer or hot-graph engine), with
  /// `check` run after a replay under hot-graph. Sticky CUDA errors and watchdog timeouts propagate.
  Timing time_launch(const Side& side, const OutputCheck* check, std::optional<Verification>* replay_check);
  /// A candidate that lost the CUDA context (kCrashed: a sticky error; kTimeout: the watchdog): sets lost_ and gives
  /// `t` that status and message, without a timing.
  TrialRecord lose(TrialRecord& t, TrialStatus status, const std::string& what);
  /// After a failed call: true for a sticky CUDA error (illegal address, trap, ...: every later call reports it);
  /// a refused launch (driver error before anything ran) leaves the context healthy, and its error is cleared.
  static bool sticky_error();
  /// The candidate's first launch, waited for under candidate_timeout_s (`timeout_s`): true when it ran; else `t` holds
  /// the outcome (kTimeout or kCrashed through lose(), or kLaunchError for a refused launch).
  bool first_launch(TrialRecord& t, const std::function<void(cudaStream_t)>& launch, double timeout_s);

  SessionOptions options_;
  DeviceInfo device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<UtilKernels> util_;
  std::unique_ptr<Timer> timer_;
  std::unique_ptr<CublasLtBaseline> cublas_;
  std::unique_ptr<KernelCache> kernels_;  ///< loaded modules and kernels, split-K scratch
  std::unique_ptr<ProblemData> data_;
  std::unique_ptr<GroupedData> grouped_;  ///< a grouped shape's operands (begin_grouped_shape)
  bool lost_ = false;
};

}  // namespace dgt
