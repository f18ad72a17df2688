#include "worker/serve.hpp"

#include <csignal>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "worker/wire.hpp"

namespace dgt {

using nlohmann::json;

namespace {
json error_reply(const std::exception& e) {
  const auto* err = dynamic_cast<const Error*>(&e);
  return json{{"ok", false},
              {"error", err ? err->message() : std::string(e.what())},
              {"kind", error_kind_name(err ? err->kind() : ErrorKind::kInternal)}};
}
}  // namespace

int refuse_worker_start(int out_fd, const std::exception& e) {
  try {
    write_message(out_fd, error_reply(e));
  } catch (const std::exception&) {
  }
  return 1;
}

int serve_worker(WorkerBackend& backend, int in_fd, int out_fd) {
  // The parent handles Ctrl-C (it stops after the candidate in progress and then ends its workers with
  // "quit"); a worker that died of the terminal's SIGINT would be reported as a crashed candidate.
  std::signal(SIGINT, SIG_IGN);
  // Likewise SIGTERM and SIGHUP (a Slurm scancel or a systemd stop signals every process of the job): the parent
  // stops after the trial in progress and ends its workers with "quit"; a worker that died of the signal would
  // be stored as a crashed candidate.
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  write_message(out_fd, json{{"ok", true}, {"hello", {{"fingerprint", backend.fingerprint()}}}});
  LineReader in(in_fd);
  for (;;) {
    json req;
    if (in.read(&req, std::chrono::hours(24 * 365)) != LineReader::Result::kMessage) return 0;  // parent gone
    const std::string op = req.value("op", "");
    if (op == "quit") return 0;
    json reply;
    bool lost = false;
    try {
      if (op == "begin_shape" && req.contains("grouped")) {
        // The grouped text form with every count listed (WorkerMeasurer): the same problem as the parent's.
        backend.begin_grouped_shape(parse_grouped_problem(req.at("grouped").get<std::string>(), "worker request"));
        reply = json{{"ok", true}};
      } else if (op == "begin_shape") {
        backend.begin_shape(req.at("problem").get<Problem>());
        reply = json{{"ok", true}};
      } else if (op == "baselines") {
        auto [def, tuned] = backend.baselines();
        reply = json{{"ok", true}, {"default", def}, {"tuned", tuned}};
      } else if (op == "measure") {
        const Problem p = req.at("problem").get<Problem>();
        const TrialRecord t = backend.measure(KernelSpec::of(req.at("config").get<KernelConfig>(), p));
        lost = backend.context_lost();
        reply = json{{"ok", true}, {"trial", t}, {"context_lost", lost}};
      } else {
        DGT_THROW(ErrorKind::kInternal, "unknown worker request '{}'", op);
      }
    } catch (const std::exception& e) {
      reply = error_reply(e);
      lost = backend.context_lost();
    }
    write_message(out_fd, reply);
    if (lost) return 0;  // the CUDA context is unusable: the parent starts a new worker
  }
}

}  // namespace dgt
