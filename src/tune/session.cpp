#include "tune/session.hpp"

#include <spdlog/spdlog.h>

#include "core/paths.hpp"
#include "db/writer_check.hpp"
#include "device/device_info.hpp"
#include "tune/sweep_loop.hpp"

namespace dgt {

TuningSession::TuningSession(SessionOptions options) : options_(std::move(options)) {
  if (options_.kind == ProtocolKind::kHotGraph) options_.hot_graph().validate();  // before the GPU is opened
  // The DB is checked read-only first (a damaged, newer or unwritable file is refused, untouched), then the GPU must
  // exist before the cubin cache directory is created; the DB is opened for writing (created, or migrated) only
  // once the GPU is set up.
  check_db_writable(options_.db_path, options_.db_flag);
  require_device(options_.device);
  cache_ = std::make_unique<jit::CubinCache>(usable_cache_dir(options_.cache_dir));
  bench_ = std::make_unique<DeviceBench>(options_, *cache_);
  db_ = std::make_unique<TuningDb>(options_.db_path);
  fingerprint_ = make_fingerprint(bench_->device());
  scope_ = db_->upsert_device(fingerprint_);
  compiles_ = std::make_unique<CompileQueue>(*cache_, options_.compile_threads);
}

TuningSession::~TuningSession() {
  compiles_.reset();  // running compiles finish before the cache goes away
}

/// Stops the in-process sweep after a candidate that lost the context: its trial is stored first.
[[noreturn]] static void throw_context_lost(TuningDb& db, const DeviceScope& scope, const TrialRecord& t) {
  db.put_trial(scope, t);
  throw ContextLost(fmt::format(
      "candidate {} on {} {}: {}. Its trial is stored as {}; the CUDA context is unusable, so this run stops "
      "here. Run the same command again to continue with the other candidates (a sweep without --in-process "
      "measures in worker processes and goes on by itself).",
      t.config.key(), t.problem.label(), t.status == TrialStatus::kTimeout ? "hung" : "crashed", t.error,
      to_string(t.status)));
}

/// The sweep loop's Measurer on this session's GPU: compile ahead on the pool, verify and time with the
/// session's bench, cuBLASLt baselines on the same buffers.
class TuningSession::GpuMeasurer final : public Measurer {
 public:
  explicit GpuMeasurer(TuningSession& s) : s_(s) {}
  int sm_count() const override { return s_.device().sm_count; }
  std::string describe() const override {
    return fmt::format("in process, {} compile threads, cache {}", s_.compiles_->threads(), s_.cache_->dir());
  }
  bool prepare(const EvaluatedSpec& spec) override { return s_.compiles_->prepare(spec); }
  bool prepare_grouped(const EvaluatedSpec& spec, GroupKind kind) override {
    return s_.compiles_->prepare_grouped(spec, kind);
  }
  void begin_shape(const Problem& p) override { s_.bench_->begin_shape(p); }
  void begin_grouped_shape(const GroupedProblem& g) override { s_.bench_->begin_grouped_shape(g); }
  std::pair<BaselineRecord, BaselineRecord> baselines() override { return s_.bench_->baselines(); }
  std::string protocol_name() const override { return s_.options_.protocol_name(); }
  std::string protocol_json() const override { return s_.options_.protocol_json(); }
  TrialRecord measure(const EvaluatedSpec& spec) override {
    if (const GroupedProblem* g = s_.bench_->grouped_problem()) {
      // The queue's grouped kernel (compiled ahead); the bench then loads it from the cubin cache.
      const CompileResult compiled = s_.compiles_->get_grouped(spec, g->kind);
      if (auto early = grouped_pre_device_trial(spec, g->keyed(), compiled, s_.options_.protocol_json()))
        return *early;
      TrialRecord t = s_.bench_->measure(spec, CompileResult{});
      note_grouped_compile(t, compiled);
      if (s_.bench_->context_lost()) throw_context_lost(*s_.db_, s_.scope_, t);
      return t;
    }
    TrialRecord t = s_.bench_->measure(spec, s_.compiles_->get(spec));
    if (s_.bench_->context_lost()) throw_context_lost(*s_.db_, s_.scope_, t);
    return t;
  }

 private:
  TuningSession& s_;
};

std::vector<ShapeOutcome> TuningSession::sweep(const std::vector<ShapeEntry>& shapes, const SweepOptions& opts) {
  GpuMeasurer measurer(*this);
  return run_sweep(*db_, scope_, measurer, shapes, opts);
}

TrialRecord TuningSession::run_one(const Problem& p, const KernelConfig& c, bool with_baselines,
                                   std::optional<std::pair<BaselineRecord, BaselineRecord>>* baselines) {
  validate_problem(p);
  const EvaluatedSpec spec = EvaluatedSpec::evaluate(KernelSpec::of(c, p));  // once: compile, record, launch
  bench_->begin_shape(p);
  if (with_baselines) {
    auto pair = bench_->baselines();
    db_->put_baseline(scope_, pair.first);
    db_->put_baseline(scope_, pair.second);
    if (baselines) *baselines = pair;
  }
  TrialRecord t = bench_->measure(spec, compiles_->get(spec));
  if (bench_->context_lost()) throw_context_lost(*db_, scope_, t);
  db_->put_trial(scope_, t);
  return t;
}

}  // namespace dgt
