#include "tune/session.hpp"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "bench/device_sides.hpp"
#include "core/hash.hpp"
#include "core/paths.hpp"
#include "core/thread_pool.hpp"
#include "jit/codegen.hpp"
#include "space/resource_model.hpp"
#include "tune/interrupt.hpp"
#include "tune/sweep_loop.hpp"

namespace dgt {

MeasureProtocol SessionOptions::hot_graph() const {
  MeasureProtocol p = MeasureProtocol::hot_graph();
  p.rounds = hot_graph_rounds;
  return p;
}

std::string SessionOptions::protocol_name() const {
  return kind == ProtocolKind::kColdL2 ? std::string(kSweepTimerProtocol) : hot_graph().name();
}

std::string SessionOptions::protocol_json() const {
  return kind == ProtocolKind::kColdL2 ? protocol.to_json() : hot_graph().to_json();
}

TuningSession::TuningSession(SessionOptions options) : options_(std::move(options)) {
  if (options_.kind == ProtocolKind::kHotGraph) options_.hot_graph().validate();  // before the GPU is opened
  // An existing DB first: a damaged or newer file is refused (untouched) before the GPU is set up; a new
  // one is created only once the GPU is known to be usable.
  std::error_code ec;
  if (std::filesystem::exists(options_.db_path, ec)) db_ = std::make_unique<TuningDb>(options_.db_path);
  device_ = open_sm90_device(options_.device);
  if (!db_) db_ = std::make_unique<TuningDb>(options_.db_path);
  fingerprint_ = make_fingerprint(device_);
  scope_ = db_->upsert_device(fingerprint_);
  cache_ = std::make_unique<jit::CubinCache>(usable_cache_dir(options_.cache_dir));
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  util_ = std::make_unique<UtilKernels>(*cache_, device_.sm_count);
  timer_ = std::make_unique<Timer>(*util_, device_, options_.protocol, stream_);
  cublas_ = std::make_unique<CublasLtBaseline>();
  pool_ = std::make_unique<ThreadPool>(options_.compile_threads);
  kernels_ = std::make_unique<KernelCache>(*cache_, device_.sm_count);
}

TuningSession::~TuningSession() {
  if (pool_ && stop_requested()) pool_->discard_queued();  // a stopped sweep does not wait for its compile queue
  pool_.reset();                                           // finish running compiles before the cache goes away
  if (stream_) cudaStreamDestroy(stream_);
}

uint64_t TuningSession::seed_for(const Problem& p) const { return options_.seed ^ fnv1a64(p.key()); }

std::shared_future<TuningSession::CompileResult> TuningSession::compile_async(const KernelSpec& spec) {
  const std::string key = spec.compiled_key();
  auto it = compiles_.find(key);
  if (it != compiles_.end()) return it->second;
  const jit::CubinCache* cache = cache_.get();
  auto fut = pool_->submit([cache, spec]() {
    CompileResult r;
    try {
      r.kernel = cache->get_or_compile(jit::generate_gemm(spec));
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    return r;
  });
  auto shared = fut.share();
  compiles_.emplace(key, shared);
  return shared;
}

TrialRecord TuningSession::measure_candidate(const ProblemData& data, const KernelSpec& spec,
                                             const CompileResult& compiled) {
  const Problem& p = data.problem();
  TrialRecord t;
  t.problem = p;
  t.config = spec.config;
  t.protocol = options_.protocol_json();
  const ResourceReport res = evaluate_resources(spec);
  t.smem_bytes = res.smem.total;
  if (!res.ok()) {
    t.status = TrialStatus::kInvalid;
    t.error = res.rejection;
    return t;
  }
  if (!compiled.kernel) {
    t.status = TrialStatus::kCompileError;
    t.error = compiled.error;
    return t;
  }
  t.compile_ms = compiled.kernel->compile_ms;
  t.registers = compiled.kernel->registers;
  t.spill_bytes = compiled.kernel->spill_bytes;
  if (t.spill_bytes > 0) {
    t.status = TrialStatus::kCompileError;
    t.error = fmt::format("ptxas spills {} bytes (stack {} bytes): the resource model under-counts registers",
                          t.spill_bytes, compiled.kernel->stack_bytes);
    return t;
  }

  std::shared_ptr<jit::GemmKernel> kernel;
  jit::GemmWorkspace ws;
  try {
    kernel = kernels_->get(spec, *compiled.kernel);
    ws = kernels_->workspace(*kernel, p);
    // The driver's numbers are authoritative: on the H200 the NVRTC log lacked ptxas' register line
    // for most kernels (results/h200/issue3-sweeps.md), while cuFuncGetAttribute always answers.
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
  auto context_lost = [&](TrialStatus status, const std::string& what) {
    t.status = status;
    t.error = what;
    db_->put_trial(scope_, t);
    throw ContextLost(fmt::format(
        "candidate {} on {} {}: {}. Its trial is stored as {}; the CUDA context is unusable, so "
        "this run stops here. Run the same command again to continue with the other candidates.",
        spec.config.key(), p.label(), status == TrialStatus::kTimeout ? "hung" : "crashed", what, to_string(status)));
  };

  data.poison_output(stream_);
  try {
    launch(stream_);
    timer_->sync();
  } catch (const WatchdogTimeout& e) {
    context_lost(TrialStatus::kTimeout, e.what());
  } catch (const Error& e) {
    // A sticky error (illegal address, ...) is reported again by every later call; a refused launch
    // (driver error before anything ran) leaves the context healthy.
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess && is_sticky_cuda_error(static_cast<int>(err)))
      context_lost(TrialStatus::kCrashed, e.what());
    (void)cudaGetLastError();
    t.status = TrialStatus::kLaunchError;
    t.error = e.what();
    return t;
  }
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
      context_lost(TrialStatus::kTimeout, e.what());
    } catch (const Error& e) {
      context_lost(TrialStatus::kCrashed, e.what());
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
    context_lost(TrialStatus::kTimeout, e.what());
  } catch (const Error& e) {
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess && is_sticky_cuda_error(static_cast<int>(err)))
      context_lost(TrialStatus::kCrashed, e.what());
    (void)cudaGetLastError();
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

std::pair<BaselineRecord, BaselineRecord> TuningSession::time_baselines(const ProblemData& data) {
  if (options_.kind == ProtocolKind::kColdL2) return cublas_->measure(data, *timer_, stream_);
  // Every returned algorithm is verified, then screened under hot-graph: "tuned" is the fastest under the
  // protocol the sweep tunes for, as in `compare --protocol hot-graph`.
  const MeasureProtocol mp = options_.hot_graph();
  CublasLtPlan plan(*cublas_, data);
  CublasLtChoice c =
      select_algorithms(plan, screen_timer(*util_, device_, mp, stream_, mp.rounds), mp.to_json(), stream_);
  return {std::move(c.def), std::move(c.tuned)};
}

/// The sweep loop's Measurer on this session's GPU: compile ahead on the pool, verify and time with the
/// session's timer, cuBLASLt baselines on the same buffers.
class TuningSession::GpuMeasurer final : public Measurer {
 public:
  explicit GpuMeasurer(TuningSession& s) : s_(s) {}
  int sm_count() const override { return s_.device_.sm_count; }
  std::string describe() const override {
    return fmt::format("{} compile threads, cache {}", s_.pool_->size(), s_.cache_->dir());
  }
  bool prepare(const KernelSpec& spec) override {
    const bool queued = !s_.compiles_.count(spec.compiled_key());
    s_.compile_async(spec);
    return queued;
  }
  void begin_shape(const Problem& p) override {
    data_.reset();  // one problem's buffers at a time
    data_ = std::make_unique<ProblemData>(p, *s_.util_, s_.seed_for(p), s_.stream_);
  }
  std::pair<BaselineRecord, BaselineRecord> baselines() override {
    return s_.time_baselines(*data_);
  }
  std::string protocol_name() const override { return s_.options_.protocol_name(); }
  std::string protocol_json() const override { return s_.options_.protocol_json(); }
  TrialRecord measure(const KernelSpec& spec) override {
    return s_.measure_candidate(*data_, spec, s_.compile_async(spec).get());
  }

 private:
  TuningSession& s_;
  std::unique_ptr<ProblemData> data_;
};

std::vector<ShapeOutcome> TuningSession::sweep(const std::vector<ShapeEntry>& shapes, const SweepOptions& opts) {
  GpuMeasurer measurer(*this);
  return run_sweep(*db_, scope_, measurer, shapes, opts);
}

TrialRecord TuningSession::run_one(const Problem& p, const KernelConfig& c, bool with_baselines,
                                   std::optional<std::pair<BaselineRecord, BaselineRecord>>* baselines) {
  validate_problem(p);
  const KernelSpec spec = KernelSpec::of(c, p);
  ProblemData data(p, *util_, seed_for(p), stream_);
  if (with_baselines) {
    auto pair = time_baselines(data);
    db_->put_baseline(scope_, pair.first);
    db_->put_baseline(scope_, pair.second);
    if (baselines) *baselines = pair;
  }
  const ResourceReport res = evaluate_resources(spec);
  CompileResult compiled;
  if (res.ok()) compiled = compile_async(spec).get();
  TrialRecord t = measure_candidate(data, spec, compiled);
  db_->put_trial(scope_, t);
  return t;
}

}  // namespace dgt
