#include "worker/gpu_backend.hpp"

#include "core/paths.hpp"
#include "launch/environment.hpp"

namespace dgt {

GpuWorkerBackend::GpuWorkerBackend(const SessionOptions& options)
    : cache_(std::make_unique<jit::CubinCache>(usable_cache_dir(options.cache_dir))),
      bench_(std::make_unique<DeviceBench>(options, *cache_)) {}

DeviceFingerprint GpuWorkerBackend::fingerprint() const { return make_fingerprint(bench_->device()); }

// The worker is given a config, not the parent's report: it evaluates the spec once, for the compile, the
// record and the launch.
TrialRecord GpuWorkerBackend::measure(const KernelSpec& spec) {
  const EvaluatedSpec candidate = EvaluatedSpec::evaluate(spec);
  // A grouped shape's kernel is loaded by the bench from the cubin cache, where the parent's queue compiled it ahead
  // (compile_now would compile the dense kernel).
  return bench_->measure(candidate, bench_->grouped() ? CompileResult{} : compile_now(*cache_, candidate));
}

}  // namespace dgt
