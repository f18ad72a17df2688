// The worker process's backend on a GPU: the DeviceBench (tune/device_bench.hpp) of one device, with the
// cubins the parent compiled into the shared cache.
#pragma once

#include <memory>

#include "jit/cubin_cache.hpp"
#include "tune/device_bench.hpp"
#include "worker/serve.hpp"

namespace dgt {

class GpuWorkerBackend final : public WorkerBackend {
 public:
  /// Opens device options.device and the cache options.cache_dir (usable_cache_dir). Throws what
  /// DeviceBench throws (no device, not sm_90, ...).
  explicit GpuWorkerBackend(const SessionOptions& options);
  DeviceFingerprint fingerprint() const override;
  void begin_shape(const Problem& p) override { bench_->begin_shape(p); }
  void begin_grouped_shape(const GroupedProblem& g) override { bench_->begin_grouped_shape(g); }
  std::pair<BaselineRecord, BaselineRecord> baselines() override { return bench_->baselines(); }
  /// Compiles through the cache (a hit: the parent compiled it ahead) and measures with the bench.
  TrialRecord measure(const KernelSpec& spec) override;
  bool context_lost() const override { return bench_->context_lost(); }

 private:
  std::unique_ptr<jit::CubinCache> cache_;
  std::unique_ptr<DeviceBench> bench_;
};

}  // namespace dgt
