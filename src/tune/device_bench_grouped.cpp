// DeviceBench on a grouped (MoE) shape: the grouped kernel and the per-group cuBLASLt loop on one set of grouped
// operands (bench/grouped_data.hpp), verified per group and timed under the sweep's protocol, as `dgtune run
// --grouped` and `dgtune compare --grouped` do. The dense half is tune/device_bench.cpp.
#include <chrono>

#include <spdlog/spdlog.h>

#include "bench/group_loop.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "space/grouped_rules.hpp"
#include "tune/device_bench.hpp"

namespace dgt {

namespace {
/// TFLOPS over the real rows (2 x sum m_g x N x K), not the padded 2-D view set_timing() counts.
double grouped_tflops(const GroupedProblem& g, const Timing& t) {
  return t.median_us > 0 ? g.flops() / (t.median_us * 1e-6) / 1e12 : 0.0;
}
}  // namespace

void DeviceBench::begin_grouped_shape(const GroupedProblem& g) {
  if (lost_) DGT_THROW(ErrorKind::kCuda, "the CUDA context of device {} was lost by an earlier candidate", device_.ordinal);
  data_.reset();  // one problem's buffers at a time
  grouped_.reset();
  grouped_ = std::make_unique<GroupedData>(*util_, g, seed_for(g.keyed()), stream_);
}

Timing DeviceBench::time_launch(const Side& side, const OutputCheck* check, std::optional<Verification>* replay_check) {
  if (options_.kind == ProtocolKind::kColdL2) return timer_->measure(side.launch);
  // hot-graph: the engine's code, one side, the output checked again after a replay (as for dense candidates).
  const RoundsResult r = measure_sides(*util_, device_, options_.hot_graph(), stream_, {side}, check);
  const SideSummary& s = r.sides.at(0);
  if (replay_check) *replay_check = s.check;
  return s.timing();
}

std::pair<BaselineRecord, BaselineRecord> DeviceBench::grouped_baselines() {
  const GroupedProblem& g = grouped_->problem();
  BaselineRecord def;
  def.problem = g.keyed();
  def.provider = kProviderCublasDefault;
  def.protocol = options_.protocol_json();
  BaselineRecord tuned = def;
  tuned.provider = kProviderCublasTuned;
  tuned.status = TrialStatus::kUnsupported;
  tuned.error = "a grouped problem has one cuBLASLt baseline: the per-group loop of heuristic top-1 calls, stored as "
                "cublaslt-default";
  try {
    CublasLtGroupLoop loop(g, grouped_->operands(), stream_);
    def.algo = "per-group loop: " + loop.describe();
    const Side side = loop.side("cublaslt-loop");
    grouped_->reset_d(stream_);
    side.launch(stream_);
    DGT_CHECK_CUDA(cudaStreamSynchronize(stream_));
    // A group run with its count rounded up (cuBLASLt refused the count) writes padding rows, which the sentinel
    // check rightly rejects: such a loop is timed without the check, and its algo text says how many were padded.
    const bool checkable = loop.padded_groups() == 0;
    if (checkable) {
      def.verification = grouped_->verify(*util_, stream_);
      if (!def.verification->ok) {
        def.status = TrialStatus::kVerifyFailed;
        def.error = fmt::format("the per-group cuBLASLt loop's output: max_rel_err {:.3g}, diff {:.3g}, NaN/Inf {}",
                                def.verification->max_rel_err, def.verification->diff, def.verification->nan_count);
        return {def, tuned};
      }
    } else {
      def.algo += fmt::format(" ({} groups run with a count rounded up: not verified)", loop.padded_groups());
    }
    const OutputCheck check{[&](cudaStream_t s) { grouped_->reset_d(s); },
                            [&](cudaStream_t s) { return grouped_->verify(*util_, s); }};
    const Timing t = time_launch(side, checkable ? &check : nullptr, nullptr);
    def.set_timing(t);
    def.tflops = grouped_tflops(g, t);
    def.status = TrialStatus::kOk;
  } catch (const Error& e) {
    def.status = TrialStatus::kError;
    def.error = e.what();
  }
  return {def, tuned};
}

TrialRecord DeviceBench::measure_grouped(const EvaluatedSpec& candidate) {
  if (lost_) DGT_THROW(ErrorKind::kCuda, "the CUDA context of device {} was lost by an earlier candidate", device_.ordinal);
  const GroupedProblem& g = grouped_->problem();
  const KernelSpec& spec = candidate.spec;
  TrialRecord t;
  t.problem = g.keyed();
  t.config = spec.config;
  t.protocol = options_.protocol_json();
  t.status = TrialStatus::kOk;
  t.smem_bytes = candidate.resources.smem.total;
  if (!candidate.resources.ok()) {
    t.status = TrialStatus::kInvalid;
    t.error = candidate.resources.rejection;
    return t;
  }
  if (std::string v = grouped_rule_violation(spec.config); !v.empty()) {
    t.status = TrialStatus::kInvalid;
    t.error = v;
    return t;
  }
  // Loaded through the shared cubin cache, where the sweep's compile queue put it ahead (CompileQueue::
  // prepare_grouped); compiled here only on a miss (`dgtune run`, a queue that was stopped).
  std::shared_ptr<jit::GroupedGemmKernel> kernel;
  const auto c0 = std::chrono::steady_clock::now();
  try {
    kernel = kernels_->get_grouped(KernelSpec::of(spec.config, g.dense_view()), g.kind);
  } catch (const Error& e) {
    t.status = e.kind() == ErrorKind::kNvrtc ? TrialStatus::kCompileError
               : e.kind() == ErrorKind::kInvalid ? TrialStatus::kInvalid
                                                 : TrialStatus::kLaunchError;
    t.error = e.what();
    return t;
  }
  t.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();

  const jit::GroupedOperands ops = grouped_->operands();
  const jit::GroupedGemmKernel* kp = kernel.get();
  const Side side{spec.config.key(), [kp, &g, ops](cudaStream_t s) { kp->launch(g, ops, s); }};
  grouped_->reset_d(stream_);
  if (!first_launch(t, side.launch, candidate_timeout_s(spec, t.problem, device_.sm_count))) return t;
  t.verification = grouped_->verify(*util_, stream_);
  if (!t.verification->ok) {
    t.status = TrialStatus::kVerifyFailed;
    t.error = fmt::format("per group: max_rel_err {:.3g}, diff {:.3g}, NaN/Inf {}, writes outside the real rows {}",
                          t.verification->max_rel_err, t.verification->diff, t.verification->nan_count,
                          t.verification->pad_touched);
    return t;
  }
  const OutputCheck check{[&](cudaStream_t s) { grouped_->reset_d(s); },
                          [&](cudaStream_t s) { return grouped_->verify(*util_, s); }};
  std::optional<Verification> replay;
  Timing timing;
  try {
    timing = time_launch(side, &check, &replay);
  } catch (const WatchdogTimeout& e) {
    return lose(t, TrialStatus::kTimeout, e.what());
  } catch (const Error& e) {
    if (options_.kind == ProtocolKind::kColdL2 || sticky_error()) return lose(t, TrialStatus::kCrashed, e.what());
    t.status = TrialStatus::kLaunchError;
    t.error = fmt::format("hot-graph capture or replay failed: {}", e.what());
    return t;
  }
  if (replay && !replay->ok) {
    t.verification = replay;
    t.status = TrialStatus::kVerifyFailed;
    t.error = fmt::format("after a graph replay: max_rel_err {:.3g}, diff {:.3g}, NaN/Inf {}, writes outside {}",
                          replay->max_rel_err, replay->diff, replay->nan_count, replay->pad_touched);
    return t;
  }
  if (replay) t.verification = replay;
  t.set_timing(timing);
  t.tflops = grouped_tflops(g, timing);
  t.status = TrialStatus::kOk;
  return t;
}

}  // namespace dgt
