// DeviceBench's finals (tune/finals.hpp): a dense shape's best candidates and cuBLASLt's stored algorithms timed
// together in interleaved rounds on the shape's buffers, as `dgtune compare` times its sides.
#include <spdlog/spdlog.h>

#include "bench/cublaslt_baseline.hpp"
#include "bench/device_sides.hpp"
#include "core/error.hpp"
#include "tune/device_bench.hpp"

namespace dgt {

namespace {
/// The record's timing and check from its side: ok with the side's timing (every sample, as compare's medians), or
/// kVerifyFailed without one when the output failed the check after the rounds.
void take_side(Measurement& m, const SideSummary& side, const std::string& protocol_json) {
  m.protocol = protocol_json;
  m.created_at.clear();
  m.error.clear();
  if (side.check) m.verification = side.check;
  if (side.check && !side.check->ok) {
    m.status = TrialStatus::kVerifyFailed;
    m.error = fmt::format("after the finals' rounds: max_rel_err {:.3g}, diff {:.3g}, NaN/Inf {}, writes outside D {}",
                          side.check->max_rel_err, side.check->diff, side.check->nan_count, side.check->pad_touched);
    m.timing.reset();
    m.tflops = m.gbps = 0;
    return;
  }
  m.status = TrialStatus::kOk;
  m.set_timing(side.timing());
}
}  // namespace

FinalsResult DeviceBench::finals(const FinalsRequest& request, const std::vector<CompileResult>& compiled) {
  if (grouped_ || !data_) DGT_THROW(ErrorKind::kInternal, "DeviceBench::finals needs a dense shape (begin_shape)");
  if (lost_) DGT_THROW(ErrorKind::kCuda, "the CUDA context of device {} was lost by an earlier candidate", device_.ordinal);
  if (compiled.size() != request.finalists.size())
    DGT_THROW(ErrorKind::kInternal, "DeviceBench::finals: {} kernels for {} finalists", compiled.size(),
              request.finalists.size());
  const MeasureProtocol protocol = finals_protocol(request.rounds);
  protocol.validate();
  const ProblemData& data = *data_;
  const Problem& p = data.problem();
  const jit::GemmOperands ops = data.operands();

  // The kernels first, then their split-K scratch: the shared arena grows to the largest need in the first pass, so
  // the second pass hands every finalist the same (no longer reallocated) arena. Sides run one at a time on one
  // stream, as the sweep's candidates do.
  const size_t n = request.finalists.size();
  std::vector<std::shared_ptr<jit::GemmKernel>> kernels(n);
  std::vector<jit::GemmWorkspace> ws(n);
  for (size_t i = 0; i < n; ++i) {
    const KernelConfig& c = request.finalists[i].config;
    if (!compiled[i].kernel)
      DGT_THROW(ErrorKind::kNvrtc, "finalist {} of {} has no kernel: {}", c.key(), p.label(), compiled[i].error);
    kernels[i] = kernels_->get(EvaluatedSpec::evaluate(KernelSpec::of(c, p)), *compiled[i].kernel);
    (void)kernels_->workspace(*kernels[i], p);
  }
  for (size_t i = 0; i < n; ++i) ws[i] = kernels_->workspace(*kernels[i], p);

  std::vector<Side> sides;
  for (size_t i = 0; i < n; ++i)
    sides.push_back(Side{request.finalists[i].config.key(),
                         [k = kernels[i].get(), w = &ws[i], &p, ops](cudaStream_t s) { k->launch(p, ops, s, w); }});
  // cuBLASLt's stored algorithms, found among what the heuristic returns for this problem now (the sweep stored them
  // from the same list; a baseline whose algorithm is no longer returned is left out, with a notice).
  CublasLtPlan plan(*cublas_, data);
  std::vector<const BaselineRecord*> replayed;
  for (const BaselineRecord& b : request.baselines) {
    int found = -1;
    for (int i = 0; i < plan.returned() && found < 0; ++i) {
      const CublasLtAlgoBytes bytes = plan.algo(i);
      if (b.algo_data.size() == bytes.size() && std::equal(bytes.begin(), bytes.end(), b.algo_data.begin())) found = i;
    }
    if (found < 0) {
      spdlog::warn("  finals of {}: cuBLASLt no longer returns the stored {} algorithm ({}); left out", p.label(),
                   b.provider, b.algo);
      continue;
    }
    sides.push_back(Side{b.provider, plan.launcher(found)});
    replayed.push_back(&b);
  }

  const OutputCheck check{[&](cudaStream_t s) { data.poison_output(s); },
                          [&](cudaStream_t s) { return data.verify(s); }};
  RoundsResult r;
  try {
    r = measure_sides(*util_, device_, protocol, stream_, std::move(sides), &check);
  } catch (const WatchdogTimeout&) {
    lost_ = true;
    throw;
  } catch (const Error&) {
    if (sticky_error()) lost_ = true;
    throw;
  }
  FinalsResult out;
  const std::string json = protocol.to_json();
  for (size_t i = 0; i < n; ++i) {
    TrialRecord t = request.finalists[i];
    take_side(t, r.sides.at(i), json);
    out.trials.push_back(std::move(t));
  }
  for (size_t j = 0; j < replayed.size(); ++j) {
    BaselineRecord b = *replayed[j];
    take_side(b, r.sides.at(n + j), json);
    out.baselines.push_back(std::move(b));
  }
  return out;
}

}  // namespace dgt
