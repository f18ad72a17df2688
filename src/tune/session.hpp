// A tuning session: one device, one tuning DB, one cubin cache. Runs sweeps and single candidates.
#pragma once

#include <cuda_runtime_api.h>

#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/cublaslt_baseline.hpp"
#include "bench/measure_protocol.hpp"
#include "bench/problem_data.hpp"
#include "bench/protocol.hpp"
#include "core/error.hpp"
#include "db/tuning_db.hpp"
#include "device/device_info.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/environment.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"
#include "problem/shapes_file.hpp"
#include "space/search_space.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_options.hpp"

namespace dgt {

struct SessionOptions {
  std::string db_path;    ///< resolved by the caller (resolve_db_path)
  std::string cache_dir;  ///< empty = default_cache_dir()
  int device = 0;
  /// What candidates and baselines are timed under (`dgtune sweep --protocol`):
  ///   kColdL2: the adaptive single-side Timer with `protocol` (stored as "cold-l2-v1"; every trial stored
  ///            before sweeps had a choice was timed so, which keeps their resume valid);
  ///   kHotGraph: the interleaved engine's hot-graph protocol (bench/device_sides.hpp) with one side and
  ///            `hot_graph_rounds` rounds: warm-up, a CUDA graph of graph_launches back-to-back launches,
  ///            time per launch = replay / graph_launches, warm L2; a candidate's output is verified again
  ///            after a replay (stored as "hot-graph-v1").
  /// Trials, baselines, sweep states and winners are stored per protocol name.
  ProtocolKind kind = ProtocolKind::kColdL2;
  ProtocolOptions protocol;   ///< kColdL2: the Timer's settings
  int hot_graph_rounds = 10;  ///< kHotGraph: rounds (samples) per candidate and per cuBLASLt algorithm, >= 1

  /// The engine protocol of kHotGraph (MeasureProtocol::hot_graph() with hot_graph_rounds rounds).
  MeasureProtocol hot_graph() const;
  /// The protocol name trials are stored and resumed under: "cold-l2-v1" or "hot-graph-v1".
  std::string protocol_name() const;
  /// The protocol JSON stored with every trial and baseline (ProtocolOptions / MeasureProtocol::to_json()).
  std::string protocol_json() const;
  uint64_t seed = 20261129;  ///< input fill seed (per problem: seed ^ hash(problem key))
  int compile_threads = 0;   ///< 0 = all cores
};

/// Thrown after a candidate poisoned the CUDA context (sticky error) or hung (watchdog). Its trial
/// is already stored as crashed/timeout, so a rerun resumes after it.
struct ContextLost : Error {
  ContextLost(const std::string& msg) : Error(ErrorKind::kCuda, msg) {}
};

class TuningSession {
 public:
  /// Opens the device (must be sm_90), the DB and the cache; compiles the utility module. Throws
  /// Error(kUsage) when hot_graph_rounds < 1.
  explicit TuningSession(SessionOptions options);
  ~TuningSession();

  const DeviceInfo& device() const { return device_; }
  const DeviceFingerprint& fingerprint() const { return fingerprint_; }
  TuningDb& db() { return *db_; }
  /// Device (hardware identity) and environment rows every measurement of this session is stored under.
  const DeviceScope& scope() const { return scope_; }

  /// Sweeps every shape (validated up front by the caller) through run_sweep (tune/sweep_loop.hpp) with
  /// this GPU as the Measurer. Compilation of all needed kernels runs on a thread pool, ahead of the GPU;
  /// each candidate is claimed, verified, then timed under the session's protocol, and stored in its own
  /// transaction. Trials and baselines already stored under that protocol are skipped (those of the other
  /// protocol are not: they answer another question); candidates another sweep on the same DB claimed
  /// are left to it. Stops after the current trial when stop_requested() (tune/interrupt.hpp).
  std::vector<ShapeOutcome> sweep(const std::vector<ShapeEntry>& shapes, const SweepOptions& options);

  /// Compiles, verifies and times one config on one problem and stores the trial (replacing an
  /// earlier one). Returns the trial; baselines too when `with_baselines`.
  TrialRecord run_one(const Problem& p, const KernelConfig& c, bool with_baselines,
                      std::optional<std::pair<BaselineRecord, BaselineRecord>>* baselines = nullptr);

 private:
  class GpuMeasurer;  // the sweep loop's Measurer (tune/measurer.hpp) on this session's GPU
  struct CompileResult {
    std::optional<jit::CompiledKernel> kernel;
    std::string error;
  };
  std::shared_future<CompileResult> compile_async(const KernelSpec& spec);
  TrialRecord measure_candidate(const ProblemData& data, const KernelSpec& spec, const CompileResult& compiled);
  /// cuBLASLt default and tuned under the session's protocol.
  std::pair<BaselineRecord, BaselineRecord> time_baselines(const ProblemData& data);
  uint64_t seed_for(const Problem& p) const;

  SessionOptions options_;
  DeviceInfo device_;
  DeviceFingerprint fingerprint_;
  std::unique_ptr<TuningDb> db_;
  DeviceScope scope_;
  std::unique_ptr<jit::CubinCache> cache_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<UtilKernels> util_;
  std::unique_ptr<Timer> timer_;
  std::unique_ptr<CublasLtBaseline> cublas_;
  std::unique_ptr<class ThreadPool> pool_;
  /// Compiles in flight or done, by KernelSpec::compiled_key(). They stay here rather than in the
  /// KernelCache: compiling ahead on a pool and recording a failed compile as a trial (instead of
  /// throwing) is the tuner's policy; the cache loads what they produce (get(spec, compiled)).
  std::map<std::string, std::shared_future<CompileResult>> compiles_;
  std::unique_ptr<KernelCache> kernels_;  ///< loaded modules and kernels, split-K scratch
};

}  // namespace dgt
