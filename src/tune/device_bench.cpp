#include "tune/device_bench.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "bench/device_sides.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "space/cost_model.hpp"

namespace dgt {

double candidate_timeout_s(const KernelSpec& spec, const Problem& p, int sm_count) {
  return std::max(2.0, 20.0 * estimate_us(spec, p, sm_count) * 1e-6);
}

DeviceBench::DeviceBench(const SessionOptions& options, const jit::CubinCache& cache) : options_(options) {
  if (options_.kind == ProtocolKind::kHotGraph) options_.hot_graph().validate();
  device_ = open_sm90_device(options_.device);
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  util_ = std::make_unique<UtilKernels>(cache, device_.sm_count);
  timer_ = std::make_unique<Timer>(*util_, device_, options_.protocol, stream_);
  cublas_ = std::make_unique<CublasLtBaseline>();
  kernels_ = std::make_unique<KernelCache>(cache, device_.sm_count);
}

DeviceBench::~DeviceBench() {
  data_.reset();
  kernels_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

uint64_t DeviceBench::seed_for(const Problem& p) const { return options_.seed ^ fnv1a64(p.key()); }

void DeviceBench::begin_shape(const Problem& p) {
  if (lost_) DGT_THROW(ErrorKind::kCuda, "the CUDA context of device {} was lost by an earlier candidate", device_.ordinal);
  data_.reset();  // one problem's buffers at a time
  grouped_.reset();
  data_ = std::make_unique<ProblemData>(p, *util_, seed_for(p), stream_);
}

std::pair<BaselineRecord, BaselineRecord> DeviceBench::baselines() {
  if (grouped_) return grouped_baselines();
  if (!data_) DGT_THROW(ErrorKind::kInternal, "DeviceBench::baselines before begin_shape");
  if (options_.kind == ProtocolKind::kColdL2) return cublas_->measure(*data_, *timer_, stream_);
  // Every returned algorithm is verified, then screened under hot-graph: "tuned" is the fastest under the
  // protocol the sweep tunes for, as in `compare --protocol hot-graph`.
  const MeasureProtocol mp = options_.hot_graph();
  CublasLtPlan plan(*cublas_, *data_);
  CublasLtChoice c =
      select_algorithms(plan, screen_timer(*util_, device_, mp, stream_, mp.rounds), mp.to_json(), stream_);
  return {std::move(c.def), std::move(c.tuned)};
}

TrialRecord DeviceBench::lose(TrialRecord& t, TrialStatus status, const std::string& what) {
  lost_ = true;
  t.status = status;
  t.error = what;
  t.timing.reset();
  return t;
}

bool DeviceBench::sticky_error() {
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess && is_sticky_cuda_error(static_cast<int>(err))) return true;
  (void)cudaGetLastError();
  return false;
}

bool DeviceBench::first_launch(TrialRecord& t, const std::function<void(cudaStream_t)>& launch, double timeout_s) {
  try {
    launch(stream_);
    wait_for_stream(stream_, timeout_s);
  } catch (const WatchdogTimeout& e) {
    lose(t, TrialStatus::kTimeout, e.what());
    return false;
  } catch (const Error& e) {
    if (sticky_error()) {
      lose(t, TrialStatus::kCrashed, e.what());
      return false;
    }
    t.status = TrialStatus::kLaunchError;
    t.error = e.what();
    return false;
  }
  return true;
}

TrialRecord DeviceBench::measure(const EvaluatedSpec& candidate, const CompileResult& compiled) {
  if (grouped_) return measure_grouped(candidate);
  if (!data_) DGT_THROW(ErrorKind::kInternal, "DeviceBench::measure before begin_shape");
  if (lost_) DGT_THROW(ErrorKind::kCuda, "the CUDA context of device {} was lost by an earlier candidate", device_.ordinal);
  const ProblemData& data = *data_;
  const Problem& p = data.problem();
  const KernelSpec& spec = candidate.spec;
  TrialRecord t = trial_before_launch(candidate, p, compiled, options_.protocol_json());
  if (t.status != TrialStatus::kOk) return t;  // invalid or not compiled: no launch

  std::shared_ptr<jit::GemmKernel> kernel;
  jit::GemmWorkspace ws;
  try {
    kernel = kernels_->get(candidate, *compiled.kernel);
    ws = kernels_->workspace(*kernel, p);
    // The driver's numbers are authoritative: on the H200 the NVRTC log lacked ptxas' register line
    // for most kernels (results/h200/first-sweeps-2026-11-29.md), while cuFuncGetAttribute always answers.
    t.registers = kernel->kernel().registers;
    if (kernel->kernel().local_bytes > 0) {
      t.status = TrialStatus::kCompileError;
      t.error = fmt::format(
          "{} bytes of local memory per thread (spills or stack): the resource model under-counts registers",
          kernel->kernel().local_bytes);
      return t;
    }
  } catch (const Error& e) {
    t.status = TrialStatus::kLaunchError;
    t.error = e.what();
    return t;
  }

  const jit::GemmOperands ops = data.operands();
  auto launch = [&](cudaStream_t s) { kernel->launch(p, ops, s, &ws); };
  data.poison_output(stream_);
  if (!first_launch(t, launch, candidate_timeout_s(spec, p, device_.sm_count))) return t;
  t.verification = data.verify(stream_);
  if (!t.verification->ok) {
    t.status = TrialStatus::kVerifyFailed;
    t.error = fmt::format(
        "max_rel_err {:.3g} (limit {:.3g}), diff {:.3g} (limit {:.3g}), NaN/Inf {}, writes outside D {}",
        t.verification->max_rel_err, VerifyThresholds::for_problem(p).max_rel_err, t.verification->diff,
        VerifyThresholds::for_problem(p).max_diff, t.verification->nan_count, t.verification->pad_touched);
    t.error += epilogue_failure_text(*t.verification);
    return t;
  }
  if (options_.kind == ProtocolKind::kColdL2) {
    try {
      t.set_timing(timer_->measure(launch));
    } catch (const WatchdogTimeout& e) {
      return lose(t, TrialStatus::kTimeout, e.what());
    } catch (const Error& e) {
      return lose(t, TrialStatus::kCrashed, e.what());
    }
    t.status = TrialStatus::kOk;
    return t;
  }

  // hot-graph: the engine's code (one side), so the sweep's numbers mean what `compare --protocol
  // hot-graph` measures. Replays run graph_launches launches back to back without the poison between
  // them, so the output is checked again after one replay (a kernel that only works from a clean D or
  // a fresh split-K workspace fails here).
  const OutputCheck check{[&](cudaStream_t s) { data.poison_output(s); },
                          [&](cudaStream_t s) { return data.verify(s); }};
  RoundsResult r;
  try {
    r = measure_sides(*util_, device_, options_.hot_graph(), stream_, {Side{spec.config.key(), launch}}, &check);
  } catch (const WatchdogTimeout& e) {
    return lose(t, TrialStatus::kTimeout, e.what());
  } catch (const Error& e) {
    if (sticky_error()) return lose(t, TrialStatus::kCrashed, e.what());
    t.status = TrialStatus::kLaunchError;
    t.error = fmt::format("hot-graph capture or replay failed: {}", e.what());
    return t;
  }
  const SideSummary& side = r.sides.at(0);
  if (side.check && !side.check->ok) {
    t.verification = side.check;
    t.status = TrialStatus::kVerifyFailed;
    t.error = fmt::format(
        "after a graph replay of {} launches: max_rel_err {:.3g}, diff {:.3g}, NaN/Inf {}, writes outside D {}",
        options_.hot_graph().graph_launches, side.check->max_rel_err, side.check->diff, side.check->nan_count,
        side.check->pad_touched);
    return t;
  }
  if (side.check) t.verification = side.check;
  t.set_timing(side.timing());
  t.status = TrialStatus::kOk;
  return t;
}

}  // namespace dgt
