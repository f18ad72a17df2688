// A tuning DB's smallest real content for the unit tests of DB files (open rules, robustness): one fake H200 and
// one verified ok trial, written through the tuner's writer.
#pragma once

#include <cstdint>
#include <string>

#include "db/tuning_db.hpp"
#include "problem/kernel_config.hpp"
#include "records/records.hpp"

namespace dgt::test {

/// A verified ok trial of `config` on `p` timed at `us` (median, p10 and p90; 10 samples): what a fake measurer returns.
inline TrialRecord ok_trial(const Problem& p, const KernelConfig& config, double us = 3.0) {
  TrialRecord t;
  t.problem = p;
  t.config = config;
  t.status = TrialStatus::kOk;
  Timing tm;
  tm.median_us = tm.p10_us = tm.p90_us = us;
  tm.samples = 10;
  t.set_timing(tm);
  Verification v;
  v.ok = true;
  t.verification = v;
  return t;
}

/// Stores ok_trial(p, config, us) under device `s`.
inline void put_ok_trial(TuningDb& db, const DeviceScope& s, const Problem& p, const KernelConfig& config,
                         double us = 3.0) {
  db.put_trial(s, ok_trial(p, config, us));
}

/// An H200's identity as the tuner records it (sm_90, 132 SMs, 141 GB, 60 MiB L2, driver 12080) with `kernel_hash`.
inline DeviceFingerprint h200_fingerprint(const std::string& kernel_hash) {
  DeviceFingerprint d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.driver_version = 12080;
  d.kernel_hash = kernel_hash;
  d.dgtune_version = "0.3.0";
  return d;
}

/// Stores one ok trial of M x 512 x 1024 (config 128x128x128 s4, 3 us) on a device "Fake H200" (sm_90, 132 SMs).
inline void add_ok_trial(TuningDb& db, int64_t m) {
  DeviceFingerprint fp;
  fp.name = "Fake H200";
  fp.cc_major = 9;
  fp.sm_count = 132;
  fp.kernel_hash = "k";
  const DeviceScope s = db.upsert_device(fp);
  put_ok_trial(db, s, Problem::dense(m, 512, 1024), KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1"));
}

}  // namespace dgt::test
