#include "worker/worker_measurer.hpp"

#include <csignal>

#include <spdlog/spdlog.h>

#include "space/cost_model.hpp"
#include "tune/device_bench.hpp"
#include "tune/interrupt.hpp"

namespace dgt {

using nlohmann::json;

namespace {
/// Signals that end a worker from outside rather than by its candidate's fault: the terminal, a job scheduler
/// (Slurm's scancel sends SIGTERM, then SIGKILL), a service manager, the OOM killer. The parent's own SIGKILL after
/// a time limit is not reported as a signal (WorkerProcess::end_signal() is 0 then).
bool ended_from_outside(int sig) { return sig == SIGTERM || sig == SIGHUP || sig == SIGINT || sig == SIGKILL || sig == SIGQUIT; }
}  // namespace

WorkerMeasurer::WorkerMeasurer(WorkerCommand command, WorkerLimits limits, CompileQueue* compiles,
                               std::string protocol_name, std::string protocol_json)
    : command_(std::move(command)),
      limits_(limits),
      compiles_(compiles),
      protocol_name_(std::move(protocol_name)),
      protocol_json_(std::move(protocol_json)) {
  proc_ = std::make_unique<WorkerProcess>(command_, limits_.start);
  fingerprint_ = proc_->hello().at("fingerprint").get<DeviceFingerprint>();
}

WorkerMeasurer::~WorkerMeasurer() = default;

std::string WorkerMeasurer::describe() const {
  return fmt::format("{} worker (pid {}, {} {}){}", command_.label, proc_ ? proc_->pid() : -1, fingerprint_.name,
                     fingerprint_.pci_bus_id,
                     compiles_ ? fmt::format(", {} compile threads in the parent, cache {}", compiles_->threads(),
                                             compiles_->cache().dir())
                               : "");
}

bool WorkerMeasurer::prepare(const EvaluatedSpec& spec) { return compiles_ ? compiles_->prepare(spec) : false; }

bool WorkerMeasurer::prepare_grouped(const EvaluatedSpec& spec, GroupKind kind) {
  return compiles_ ? compiles_->prepare_grouped(spec, kind) : false;
}

void WorkerMeasurer::begin_shape(const Problem& p) {
  problem_ = p;
  grouped_text_.reset();
  shape_sent_ = false;
  ready();  // the inputs of the shape are made now, not inside the first candidate's time limit
}

void WorkerMeasurer::begin_grouped_shape(const GroupedProblem& g) {
  GroupedProblem listed = g;
  listed.rows_text = g.rows_list();  // the counts themselves: the worker parses what the parent measured
  problem_ = g.keyed();
  grouped_text_ = grouped_text(listed);
  grouped_kind_ = g.kind;
  shape_sent_ = false;
  ready();
}

void WorkerMeasurer::drop() {
  if (proc_) proc_->ended_how();
  proc_.reset();
  shape_sent_ = false;
}

void WorkerMeasurer::rethrow(const json& reply) const {
  throw Error(parse_error_kind(reply.value("kind", "internal")),
              fmt::format("{} worker: {}", command_.label, reply.value("error", reply.dump())));
}

WorkerProcess& WorkerMeasurer::ready() {
  if (!proc_) {
    proc_ = std::make_unique<WorkerProcess>(command_, limits_.start);
    ++restarts_;
  }
  if (!shape_sent_ && problem_) {
    json reply;
    json request{{"op", "begin_shape"}, {"problem", *problem_}};
    if (grouped_text_) request["grouped"] = *grouped_text_;
    const auto outcome = proc_->request(request, limits_.shape, &reply);
    if (outcome != WorkerProcess::Outcome::kReply) {
      const std::string how = proc_->ended_how();
      drop();
      DGT_THROW(ErrorKind::kCuda, "the {} worker {} while preparing the inputs of {} ({})", command_.label,
                outcome == WorkerProcess::Outcome::kTimedOut ? "did not answer" : "died", problem_->label(), how);
    }
    if (!reply.value("ok", false)) rethrow(reply);
    shape_sent_ = true;
  }
  return *proc_;
}

std::pair<BaselineRecord, BaselineRecord> WorkerMeasurer::baselines() {
  WorkerProcess& w = ready();
  json reply;
  const auto outcome = w.request(json{{"op", "baselines"}}, limits_.shape, &reply);
  if (outcome != WorkerProcess::Outcome::kReply) {
    const std::string how = w.ended_how();
    drop();
    DGT_THROW(ErrorKind::kCublas, "the {} worker {} while timing the cuBLASLt baselines of {} ({})", command_.label,
              outcome == WorkerProcess::Outcome::kTimedOut ? "did not answer" : "died", problem_->label(), how);
  }
  if (!reply.value("ok", false)) rethrow(reply);
  return {reply.at("default").get<BaselineRecord>(), reply.at("tuned").get<BaselineRecord>()};
}

TrialRecord WorkerMeasurer::measure(const EvaluatedSpec& candidate) {
  if (!problem_) DGT_THROW(ErrorKind::kInternal, "WorkerMeasurer::measure before begin_shape");
  const Problem& p = *problem_;
  const KernelSpec& spec = candidate.spec;
  // Compile here, in the parent: a candidate that does not compile never costs a worker.
  std::optional<CompileResult> grouped_compile;
  if (compiles_ && !grouped_text_) {
    if (auto early = pre_device_trial(candidate, p, compiles_->get(candidate), protocol_json_)) return *early;
  } else if (compiles_) {
    grouped_compile = compiles_->get_grouped(candidate, grouped_kind_);
    if (auto early = grouped_pre_device_trial(candidate, p, *grouped_compile, protocol_json_)) return *early;
  }
  const double timeout_s = candidate_timeout_s(spec, p, fingerprint_.sm_count);
  const auto limit = limits_.candidate + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  const json request{{"op", "measure"}, {"problem", p}, {"config", spec.config}};
  json reply;
  WorkerProcess* w = &ready();
  auto outcome = w->request(request, limit, &reply);
  if (outcome == WorkerProcess::Outcome::kNotSent && (w->ended_how(), !stop_requested()) &&
      !ended_from_outside(w->end_signal())) {
    // It ended between candidates (nothing of this one ran): once more with a new worker.
    spdlog::warn("  the {} worker had ended ({}): starting a new one", command_.label, w->ended_how());
    drop();
    w = &ready();
    outcome = w->request(request, limit, &reply);
  }
  if (outcome == WorkerProcess::Outcome::kReply) {
    if (!reply.value("ok", false)) rethrow(reply);
    TrialRecord t = reply.at("trial").get<TrialRecord>();
    if (grouped_compile) note_grouped_compile(t, *grouped_compile);
    if (reply.value("context_lost", false)) {
      spdlog::warn("  {} {} the {} worker ({}): starting a new worker for the next candidate", spec.config.key(),
                   t.status == TrialStatus::kTimeout ? "hung" : "crashed", command_.label, t.error);
      drop();
    }
    return t;
  }
  const std::string how = w->ended_how();
  const int pid = w->pid();
  const int sig = w->end_signal();
  drop();
  if (outcome != WorkerProcess::Outcome::kTimedOut &&
      (outcome == WorkerProcess::Outcome::kNotSent || stop_requested() || ended_from_outside(sig)))
    // Not this candidate's doing (scancel, the OOM killer, a stop): storing it as crashed would skip it forever.
    DGT_THROW(ErrorKind::kCuda,
              "the {} worker (pid {}) was ended from outside while measuring {} ({}); the candidate is not stored: run "
              "the same command again to measure it",
              command_.label, pid, spec.config.key(), how);
  TrialRecord t;
  t.problem = p;
  t.config = spec.config;
  t.protocol = protocol_json_;
  if (outcome == WorkerProcess::Outcome::kDied) {  // a signal of its own (SIGSEGV, SIGABRT, ...)
    t.status = TrialStatus::kCrashed;
    t.error = fmt::format("the {} worker (pid {}) died while measuring this candidate: {}", command_.label, pid, how);
  } else {
    t.status = TrialStatus::kTimeout;
    t.error = fmt::format("the {} worker (pid {}) did not answer within {:.0f} s and was killed", command_.label, pid,
                          std::chrono::duration<double>(limit).count());
  }
  spdlog::warn("  {}: {}; starting a new worker for the next candidate", spec.config.key(), t.error);
  return t;
}

}  // namespace dgt
