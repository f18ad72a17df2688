#include "cli/sweep_run.hpp"

#include <spdlog/spdlog.h>

#include "core/paths.hpp"
#include "tune/interrupt.hpp"
#include "worker/worker_sweep.hpp"

namespace dgt::cli {

std::pair<std::vector<ShapeOutcome>, std::string> sweep_in_process(const SessionOptions& so,
                                                                   const std::vector<ShapeEntry>& shapes,
                                                                   const SweepOptions& sweep) {
  TuningSession session(so);
  install_interrupt_handler();  // Ctrl-C: stop after the current trial, exit 130
  auto outcomes = session.sweep(shapes, sweep);
  return {std::move(outcomes), session.device().name};
}

std::pair<std::vector<ShapeOutcome>, std::string> sweep_in_workers(const SessionOptions& so,
                                                                   const std::vector<int>& devices,
                                                                   const std::vector<ShapeEntry>& shapes,
                                                                   const SweepOptions& sweep) {
  WorkerSweepOptions wo;
  wo.session = so;
  wo.devices = devices;
  wo.worker_argv = {this_executable_path(), "worker"};
  install_interrupt_handler();  // Ctrl-C: stop after the current trial, exit 130 (workers ignore it)
  WorkerSweepResult r = sweep_with_workers(wo, shapes, sweep);
  if (r.worker_restarts > 0)
    spdlog::warn("{} candidate{} crashed or hung a worker (stored as crashed/timeout); a new worker took over each time",
                 r.worker_restarts, r.worker_restarts == 1 ? "" : "s");
  std::string name = r.devices.at(0).name;
  if (r.devices.size() > 1) name += fmt::format(" x {}", r.devices.size());
  return {std::move(r.outcomes), name};
}

}  // namespace dgt::cli
