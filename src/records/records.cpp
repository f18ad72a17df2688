#include "records/records.hpp"

#include <array>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace dgt {

namespace {

constexpr std::array<TrialStatus, 7> kAllStatuses = {
    TrialStatus::kOk,           TrialStatus::kInvalid, TrialStatus::kCompileError, TrialStatus::kLaunchError,
    TrialStatus::kVerifyFailed, TrialStatus::kTimeout, TrialStatus::kCrashed,
};

}  // namespace

const char* to_string(TrialStatus s) {
  // These strings are stored in the database: renaming one orphans existing rows.
  switch (s) {
    case TrialStatus::kOk: return "ok";
    case TrialStatus::kInvalid: return "invalid";
    case TrialStatus::kCompileError: return "compile_error";
    case TrialStatus::kLaunchError: return "launch_error";
    case TrialStatus::kVerifyFailed: return "verify_failed";
    case TrialStatus::kTimeout: return "timeout";
    case TrialStatus::kCrashed: return "crashed";
  }
  return "?";
}

TrialStatus parse_trial_status(std::string_view s) {
  for (TrialStatus st : kAllStatuses)
    if (s == to_string(st)) return st;
  DGT_THROW(ErrorKind::kInternal,
            "unknown trial status '{}' (expected ok, invalid, compile_error, launch_error, verify_failed, timeout or "
            "crashed)",
            s);
}

std::string DeviceFingerprint::fingerprint() const {
  // The separator keeps adjacent fields from sliding into each other; 0x1F (ASCII "unit
  // separator") does not occur in device names, version strings or hex hashes.
  constexpr char kSep = '\x1f';
  std::string text = name;  // first field: no separator before it
  auto add = [&](std::string_view field) {
    text += kSep;
    text += field;
  };
  for (int64_t v : {int64_t(cc_major), int64_t(cc_minor), int64_t(sm_count), memory_bytes, l2_bytes,
                    int64_t(max_sm_clock_mhz), int64_t(driver_version), int64_t(runtime_version),
                    int64_t(cublaslt_version), int64_t(nvrtc_version)})
    add(std::to_string(v));
  add(kernel_hash);
  add(dgtune_version);
  return hex16(fnv1a64(text));
}

}  // namespace dgt
