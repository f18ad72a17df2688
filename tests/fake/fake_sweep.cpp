// dgtune_fake_sweep: the sweep loop (tune/sweep_loop.hpp) with a deterministic fake Measurer instead of a
// GPU, for CPU tests of resume, SIGINT, SIGKILL, concurrent sweeps and a full disk
// (tests/unit/test_sweep_robustness.cpp). Same DB code, same loop, same interrupt handling and exit codes
// as `dgtune sweep`: 0 done, 1 error (message on stderr), 130 stopped by SIGINT.
//
//   dgtune_fake_sweep DB LOG CANDIDATES DELAY_MS
//
// Sweeps two fixed shapes, the best CANDIDATES configs of each; every measurement sleeps DELAY_MS and
// appends "measured <problem> <config>" to LOG (O_APPEND: lines of concurrent processes do not mix), or
// "REMEASURED ..." when that trial was already stored (the resume guarantee broken).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "db/tuning_db.hpp"
#include "tune/interrupt.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_loop.hpp"

namespace {

using namespace dgt;

/// Time = a hash of the config key: the same candidate always "measures" the same.
class FakeMeasurer final : public Measurer {
 public:
  static constexpr const char* kFakeProtocol = R"({"name":"fake"})";
  FakeMeasurer(const TuningDb& db, DeviceScope scope, std::string log, int delay_ms)
      : db_(db), scope_(scope), log_(std::move(log)), delay_ms_(delay_ms) {}
  int sm_count() const override { return 132; }
  std::string describe() const override { return "fake measurer"; }
  bool prepare(const KernelSpec&) override { return false; }
  void begin_shape(const Problem& p) override { problem_ = p; }
  std::pair<BaselineRecord, BaselineRecord> baselines() override {
    return {baseline(kProviderCublasDefault, 20.0), baseline(kProviderCublasTuned, 18.0)};
  }
  std::string protocol_name() const override { return "fake"; }
  std::string protocol_json() const override { return kFakeProtocol; }
  TrialRecord measure(const KernelSpec& spec) override {
    const bool stored = db_.has_trial(scope_, problem_, spec.config, "fake");  // claimed rows do not count
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    append(fmt::format("{} {} {} {}\n", stored ? "REMEASURED" : "measured", ::getpid(), problem_.key(),
                       spec.config.key()));
    TrialRecord t;
    t.problem = problem_;
    t.config = spec.config;
    t.status = TrialStatus::kOk;
    t.protocol = kFakeProtocol;
    Verification v;
    v.ok = true;
    t.verification = v;
    t.set_timing(timing(1.0 + double(fnv1a64(spec.config.key()) % 10000) / 100.0));
    return t;
  }

 private:
  static Timing timing(double us) {
    Timing t;
    t.median_us = t.p10_us = t.p90_us = us;
    t.samples = 10;
    return t;
  }
  BaselineRecord baseline(const char* provider, double us) const {
    BaselineRecord b;
    b.problem = problem_;
    b.provider = provider;
    b.protocol = kFakeProtocol;
    b.status = TrialStatus::kOk;
    b.set_timing(timing(us));
    return b;
  }
  void append(const std::string& line) const {
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ssize_t n = ::write(fd, line.data(), line.size());
    (void)n;
    ::close(fd);
  }

  const TuningDb& db_;
  DeviceScope scope_;
  std::string log_;
  int delay_ms_;
  Problem problem_;
};

DeviceFingerprint fake_device() {
  DeviceFingerprint fp;
  fp.name = "Fake H200";
  fp.cc_major = 9;
  fp.sm_count = 132;
  fp.memory_bytes = int64_t(141) << 30;
  fp.l2_bytes = 60 << 20;
  fp.max_sm_clock_mhz = 1980;
  fp.kernel_hash = "fakekernelhash00";
  fp.dgtune_version = "fake";
  fp.pci_bus_id = "0000:00:00.0";
  return fp;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DB LOG CANDIDATES DELAY_MS\n", argv[0]);
    return 2;
  }
  try {
    TuningDb db(argv[1]);
    const DeviceScope scope = db.upsert_device(fake_device());
    FakeMeasurer measurer(db, scope, argv[2], std::stoi(argv[4]));
    SweepOptions opts;
    opts.max_candidates = std::stoi(argv[3]);
    std::vector<ShapeEntry> shapes(2);
    shapes[0].problem = Problem::dense(4096, 4096, 4096);
    shapes[1].problem = Problem::dense(128, 2112, 7168);
    install_interrupt_handler();
    const auto outcomes = run_sweep(db, scope, measurer, shapes, opts);
    if (stop_requested()) {
      spdlog::warn("sweep stopped by signal {}: run the same command again to resume", stop_signal());
      return kInterruptedExitCode;
    }
    for (const auto& o : outcomes)
      if (!o.complete) {
        spdlog::error("{} incomplete", o.entry.problem.label());
        return 1;
      }
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
