// dgtune_fake_worker: the worker side of the worker process (worker/serve.hpp) with a deterministic fake
// backend instead of a GPU, for CPU tests of crash and hang isolation and of several lanes
// (tests/unit/test_worker.cpp). Requests on stdin, replies on fd 3, as `dgtune worker`.
//
//   dgtune_fake_worker PCI_BUS_ID
//
// Environment: FAKE_WORKER_FAULTS = comma-separated "crash:KEY" (raise SIGSEGV while measuring config KEY),
// "hang:KEY" (sleep forever), "kill:KEY" (SIGKILL, as from outside), "lose:KEY" (a crashed record with context_lost, as a sticky CUDA error);
// FAKE_WORKER_START = "fail" (refuse to start with a kNoDevice error) or "silent" (never send the hello line);
// FAKE_WORKER_DELAY_MS: sleep per measurement; FAKE_WORKER_LOG: append "measured PCI PROBLEM CONFIG" lines, and
// "worker PID" when it starts.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "fake_common.hpp"
#include "worker/serve.hpp"

namespace {

using namespace dgt;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool listed(const std::string& kind, const std::string& key) {
  const std::string list = "," + env("FAKE_WORKER_FAULTS") + ",";
  return list.find("," + kind + ":" + key + ",") != std::string::npos;
}

class FakeBackend final : public WorkerBackend {
 public:
  explicit FakeBackend(std::string pci) : pci_(std::move(pci)) {}
  DeviceFingerprint fingerprint() const override { return fake::device(pci_); }
  void begin_shape(const Problem& p) override { problem_ = p; }
  /// A grouped shape: measured like a dense one under its key; the log says which counts the worker was sent.
  void begin_grouped_shape(const GroupedProblem& g) override {
    problem_ = g.keyed();
    fake::append_line(env("FAKE_WORKER_LOG"), "grouped " + pci_ + " " + g.rows_list() + "\n");
  }
  std::pair<BaselineRecord, BaselineRecord> baselines() override { return fake::baselines(problem_); }
  TrialRecord measure(const KernelSpec& spec) override {
    const std::string key = spec.config.key();
    if (listed("crash", key)) std::raise(SIGSEGV);
    if (listed("kill", key)) std::raise(SIGKILL);  // as the OOM killer or a scheduler would
    if (listed("hang", key))
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    if (const std::string ms = env("FAKE_WORKER_DELAY_MS"); !ms.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(ms)));
    fake::append_line(env("FAKE_WORKER_LOG"), "measured " + pci_ + " " + problem_.key() + " " + key + "\n");
    TrialRecord t = fake::trial(problem_, spec);
    if (listed("lose", key)) {
      lost_ = true;
      t.status = TrialStatus::kCrashed;
      t.error = "unspecified launch failure (fake sticky error)";
      t.timing.reset();
      t.verification.reset();
      t.tflops = t.gbps = 0;
    }
    return t;
  }
  bool context_lost() const override { return lost_; }

 private:
  std::string pci_;
  Problem problem_;
  bool lost_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PCI_BUS_ID\n", argv[0]);
    return 2;
  }
  if (env("FAKE_WORKER_START") == "fail")
    return refuse_worker_start(3, Error(ErrorKind::kNoDevice, "fake: no CUDA device found"));
  if (env("FAKE_WORKER_START") == "silent")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  fake::append_line(env("FAKE_WORKER_LOG"), "worker " + std::to_string(::getpid()) + "\n");  // who started
  FakeBackend backend(argv[1]);
  return serve_worker(backend, 0, 3);
}
