#include "worker/gpu_backend.hpp"

#include "core/paths.hpp"
#include "launch/environment.hpp"

namespace dgt {

GpuWorkerBackend::GpuWorkerBackend(const SessionOptions& options)
    : cache_(std::make_unique<jit::CubinCache>(usable_cache_dir(options.cache_dir))),
      bench_(std::make_unique<DeviceBench>(options, *cache_)) {}

DeviceFingerprint GpuWorkerBackend::fingerprint() const { return make_fingerprint(bench_->device()); }

TrialRecord GpuWorkerBackend::measure(const KernelSpec& spec) { return bench_->measure(spec, compile_now(*cache_, spec)); }

}  // namespace dgt
