#include "records/records.hpp"

#include <array>
#include <initializer_list>
#include <string_view>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace dgt {

namespace {

constexpr std::array<TrialStatus, 10> kAllStatuses = {
    TrialStatus::kOk,           TrialStatus::kInvalid, TrialStatus::kCompileError, TrialStatus::kLaunchError,
    TrialStatus::kVerifyFailed, TrialStatus::kTimeout, TrialStatus::kCrashed,      TrialStatus::kUnsupported,
    TrialStatus::kError,        TrialStatus::kClaimed,
};

// The separator keeps adjacent fields from sliding into each other; 0x1F (ASCII "unit separator")
// does not occur in device names, version strings or hex hashes.
constexpr char kSep = '\x1f';

/// FNV-1a 64 of the fields joined by kSep, as 16 hex digits (the encoding of every identity key).
std::string hash_fields(std::initializer_list<std::string_view> fields) {
  std::string text;
  bool first = true;
  for (std::string_view f : fields) {
    if (!first) text += kSep;
    text += f;
    first = false;
  }
  return hex16(fnv1a64(text));
}

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
    case TrialStatus::kUnsupported: return "unsupported";
    case TrialStatus::kError: return "error";
    case TrialStatus::kClaimed: return "claimed";
  }
  return "?";
}

TrialStatus parse_trial_status(std::string_view s) {
  for (TrialStatus st : kAllStatuses)
    if (s == to_string(st)) return st;
  DGT_THROW(ErrorKind::kInternal,
            "unknown trial status '{}' (expected ok, invalid, compile_error, launch_error, verify_failed, timeout, "
            "crashed, unsupported, error or claimed)",
            s);
}

std::string DeviceFingerprint::fingerprint() const {
  const std::string ints[] = {std::to_string(cc_major),         std::to_string(cc_minor),
                              std::to_string(sm_count),         std::to_string(memory_bytes),
                              std::to_string(l2_bytes),         std::to_string(max_sm_clock_mhz),
                              std::to_string(driver_version),   std::to_string(runtime_version),
                              std::to_string(cublaslt_version), std::to_string(nvrtc_version)};
  return hash_fields({name, ints[0], ints[1], ints[2], ints[3], ints[4], ints[5], ints[6], ints[7], ints[8], ints[9],
                      kernel_hash, dgtune_version});
}

HardwareIdentity DeviceFingerprint::hardware() const {
  return HardwareIdentity{name, cc_major, cc_minor, sm_count, memory_bytes, l2_bytes};
}

SoftwareEnv DeviceFingerprint::software() const {
  return SoftwareEnv{driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash, dgtune_version};
}

std::string HardwareIdentity::key() const {
  return hash_fields({name, std::to_string(cc_major), std::to_string(cc_minor), std::to_string(sm_count),
                      std::to_string(memory_bytes), std::to_string(l2_bytes)});
}

std::string SoftwareEnv::key() const {
  return hash_fields({std::to_string(driver_version), std::to_string(runtime_version), std::to_string(cublaslt_version),
                      std::to_string(nvrtc_version), kernel_hash, dgtune_version});
}

double tflops_of(const Problem& p, double median_us) {
  return median_us > 0 ? p.flops() / (median_us * 1e-6) / 1e12 : 0;
}

double gbps_of(const Problem& p, double median_us) {
  return median_us > 0 ? p.min_bytes() / (median_us * 1e-6) / 1e9 : 0;
}

void Measurement::set_timing(const Timing& t) {
  timing = t;
  tflops = tflops_of(problem, t.median_us);
  gbps = gbps_of(problem, t.median_us);
}

}  // namespace dgt
