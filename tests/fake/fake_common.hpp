// What the fake measurers of the CPU tests share (tests/fake/fake_sweep.cpp in process, tests/fake/fake_worker.cpp
// as a worker process): the fake device, the deterministic fake "measurement" of a candidate and of the cuBLASLt
// baselines, and O_APPEND log lines (lines of concurrent processes do not mix).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "core/hash.hpp"
#include "problem/kernel_config.hpp"
#include "records/records.hpp"

namespace dgt::fake {

inline constexpr const char* kProtocol = R"({"name":"fake"})";

/// An H200-like device; `pci` tells the GPUs of a fake node apart (they share the hardware identity).
inline DeviceFingerprint device(const std::string& pci = "0000:00:00.0") {
  DeviceFingerprint fp;
  fp.name = "Fake H200";
  fp.cc_major = 9;
  fp.sm_count = 132;
  fp.memory_bytes = int64_t(141) << 30;
  fp.l2_bytes = 60 << 20;
  fp.max_sm_clock_mhz = 1980;
  fp.kernel_hash = "fakekernelhash00";
  fp.dgtune_version = "fake";
  fp.pci_bus_id = pci;
  return fp;
}

inline Timing timing(double us) {
  Timing t;
  t.median_us = t.p10_us = t.p90_us = us;
  t.samples = 10;
  return t;
}

/// An ok, verified trial whose time is a hash of the config key: the same candidate always "measures" the same.
inline TrialRecord trial(const Problem& p, const KernelSpec& spec) {
  TrialRecord t;
  t.problem = p;
  t.config = spec.config;
  t.status = TrialStatus::kOk;
  t.protocol = kProtocol;
  Verification v;
  v.ok = true;
  t.verification = v;
  t.set_timing(timing(1.0 + double(fnv1a64(spec.config.key()) % 10000) / 100.0));
  return t;
}

/// cuBLASLt default (20 us) and tuned (18 us) of `p`, each with 64 placeholder bytes of algorithm.
inline std::pair<BaselineRecord, BaselineRecord> baselines(const Problem& p) {
  auto one = [&](const char* provider, double us) {
    BaselineRecord b;
    b.problem = p;
    b.provider = provider;
    b.protocol = kProtocol;
    b.status = TrialStatus::kOk;
    b.set_timing(timing(us));
    b.algo_data.assign(64, 7);  // an algorithm, as the real baseline stores one (schema 10)
    return b;
  };
  return {one(kProviderCublasDefault, 20.0), one(kProviderCublasTuned, 18.0)};
}

/// Appends `line` to the file at `path` (nothing when `path` is empty or cannot be opened).
inline void append_line(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t n = ::write(fd, line.data(), line.size());
  (void)n;
  ::close(fd);
}

}  // namespace dgt::fake
