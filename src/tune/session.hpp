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
#include "tune/compile_queue.hpp"
#include "tune/device_bench.hpp"
#include "tune/measurer.hpp"
#include "tune/session_options.hpp"
#include "tune/sweep_options.hpp"

namespace dgt {


/// Thrown by the in-process sweep (`sweep --in-process`) and run_one after a candidate poisoned the CUDA
/// context (sticky error) or hung (watchdog). Its trial is already stored as crashed/timeout, so a rerun
/// resumes after it. The default sweep measures in worker processes instead (src/worker/) and goes on.
struct ContextLost : Error {
  ContextLost(const std::string& msg) : Error(ErrorKind::kCuda, msg) {}
};

class TuningSession {
 public:
  /// Opens the device (must be sm_90), the DB and the cache; compiles the utility module. Throws
  /// Error(kUsage) when hot_graph_rounds < 1.
  explicit TuningSession(SessionOptions options);
  ~TuningSession();

  const DeviceInfo& device() const { return bench_->device(); }
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
  class GpuMeasurer;  // the sweep loop's Measurer (tune/measurer.hpp) on this session's GPU, in this process

  SessionOptions options_;
  std::unique_ptr<TuningDb> db_;
  std::unique_ptr<jit::CubinCache> cache_;
  std::unique_ptr<DeviceBench> bench_;
  DeviceFingerprint fingerprint_;
  DeviceScope scope_;
  std::unique_ptr<CompileQueue> compiles_;  ///< NVRTC ahead of the device, on a pool
};

}  // namespace dgt
