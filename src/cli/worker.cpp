// dgtune worker: the measuring half of a sweep, run by the sweep itself (src/worker/), one process per GPU.
// Not for users (hidden from --help): requests on stdin, replies on --reply-fd (worker/wire.hpp).
#include <cstdlib>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "worker/gpu_backend.hpp"
#include "worker/wire.hpp"

namespace dgt::cli {

namespace {
struct Args {
  std::string config;  ///< SessionOptions as JSON (worker/wire.hpp)
  int reply_fd = 3;
};

int run(const Args& a) {
  SessionOptions so;
  std::unique_ptr<GpuWorkerBackend> backend;
  try {
    so = nlohmann::json::parse(a.config).get<SessionOptions>();
    spdlog::set_pattern(fmt::format("[%H:%M:%S] %^%l%$ [worker gpu {}] %v", so.device));
    backend = std::make_unique<GpuWorkerBackend>(so);
  } catch (const std::exception& e) {
    return refuse_worker_start(a.reply_fd, e);
  }
  const int rc = serve_worker(*backend, 0, a.reply_fd);
  // After a lost context (a kernel may still be spinning) the CUDA teardown in the destructors could block:
  // end the process at once and let the driver reclaim the context.
  if (backend->context_lost()) {
    spdlog::default_logger()->flush();
    std::_Exit(rc);
  }
  return rc;
}
}  // namespace

void add_worker(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(app, action, "worker", "internal: the measuring process of a sweep", run);
  cmd.group("");  // hidden: started by `dgtune sweep`, never by users
  cmd.add_option("--config", a.config, "session options as JSON")->required();
  cmd.add_option("--reply-fd", a.reply_fd, "file descriptor the replies go to");
}

}  // namespace dgt::cli
