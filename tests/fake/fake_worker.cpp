// dgtune_fake_worker: the worker side of the worker process (worker/serve.hpp) with a deterministic fake
// backend instead of a GPU, for CPU tests of crash and hang isolation and of several lanes
// (tests/unit/test_worker.cpp). Requests on stdin, replies on fd 3, as `dgtune worker`.
//
//   dgtune_fake_worker PCI_BUS_ID
//
// Environment: FAKE_WORKER_FAULTS = comma-separated "crash:KEY" (raise SIGSEGV while measuring config KEY),
// "hang:KEY" (sleep forever), "lose:KEY" (a crashed record with context_lost, as a sticky CUDA error);
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
#include "core/hash.hpp"
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

Timing timing(double us) {
  Timing t;
  t.median_us = t.p10_us = t.p90_us = us;
  t.samples = 10;
  return t;
}

class FakeBackend final : public WorkerBackend {
 public:
  explicit FakeBackend(std::string pci) : pci_(std::move(pci)) {}
  DeviceFingerprint fingerprint() const override {
    DeviceFingerprint fp;
    fp.name = "Fake H200";
    fp.cc_major = 9;
    fp.sm_count = 132;
    fp.memory_bytes = int64_t(141) << 30;
    fp.l2_bytes = 60 << 20;
    fp.max_sm_clock_mhz = 1980;
    fp.kernel_hash = "fakekernelhash00";
    fp.dgtune_version = "fake";
    fp.pci_bus_id = pci_;
    return fp;
  }
  void begin_shape(const Problem& p) override { problem_ = p; }
  std::pair<BaselineRecord, BaselineRecord> baselines() override {
    return {baseline(kProviderCublasDefault, 20.0), baseline(kProviderCublasTuned, 18.0)};
  }
  TrialRecord measure(const KernelSpec& spec) override {
    const std::string key = spec.config.key();
    if (listed("crash", key)) std::raise(SIGSEGV);
    if (listed("hang", key))
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    if (const std::string ms = env("FAKE_WORKER_DELAY_MS"); !ms.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(ms)));
    if (const std::string log = env("FAKE_WORKER_LOG"); !log.empty()) {
      const std::string line = "measured " + pci_ + " " + problem_.key() + " " + key + "\n";
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ssize_t n = ::write(fd, line.data(), line.size());
        (void)n;
        ::close(fd);
      }
    }
    TrialRecord t;
    t.problem = problem_;
    t.config = spec.config;
    t.protocol = R"({"name":"fake"})";
    if (listed("lose", key)) {
      lost_ = true;
      t.status = TrialStatus::kCrashed;
      t.error = "unspecified launch failure (fake sticky error)";
      return t;
    }
    t.status = TrialStatus::kOk;
    Verification v;
    v.ok = true;
    t.verification = v;
    t.set_timing(timing(1.0 + double(fnv1a64(key) % 10000) / 100.0));
    return t;
  }
  bool context_lost() const override { return lost_; }

 private:
  BaselineRecord baseline(const char* provider, double us) const {
    BaselineRecord b;
    b.problem = problem_;
    b.provider = provider;
    b.protocol = R"({"name":"fake"})";
    b.status = TrialStatus::kOk;
    b.set_timing(timing(us));
    return b;
  }
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
  if (const std::string log = env("FAKE_WORKER_LOG"); !log.empty()) {  // who started: the SIGINT test checks they end
    const std::string line = "worker " + std::to_string(::getpid()) + "\n";
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ssize_t n = ::write(fd, line.data(), line.size());
      (void)n;
      ::close(fd);
    }
  }
  FakeBackend backend(argv[1]);
  return serve_worker(backend, 0, 3);
}
