// Plain records exchanged between the measurement code and the tuning database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// Outcome of one candidate on one problem. Stored as its to_string() text: "ok", "invalid",
/// "compile_error", "launch_error", "verify_failed", "timeout", "crashed".
enum class TrialStatus {
  kOk,            ///< compiled, launched, verified and timed
  kInvalid,       ///< rejected by the resource model before compiling (reason in error)
  kCompileError,  ///< NVRTC failed or the cubin spills registers
  kLaunchError,   ///< launch refused (e.g. too much shared memory) without harming the context
  kVerifyFailed,  ///< ran, but the output disagrees with the reference
  kTimeout,       ///< did not finish within the watchdog time
  kCrashed,       ///< sticky CUDA error (illegal address ...): the process stopped measuring after it
};
const char* to_string(TrialStatus s);
/// Inverse of to_string(TrialStatus). Throws Error(kInternal) on unknown text.
TrialStatus parse_trial_status(std::string_view s);

/// Timing of one kernel under the measurement protocol (bench/protocol.hpp). Times in microseconds.
struct Timing {
  double median_us = 0, p10_us = 0, p90_us = 0;
  int samples = 0;
  double rse = 0;               ///< relative standard error of the median
  double sm_clock_mhz = 0;      ///< mean SM clock over the measurement (clock64 / globaltimer probes)
  bool throttled = false;       ///< the clock fell below 90% of the device's max during the measurement
};

/// Verification of one output against the device reference GEMM.
struct Verification {
  bool ok = false;
  double max_rel_err = 0;       ///< max |d - ref| / max |ref|
  double diff = 0;              ///< 1 - 2*sum(d*ref) / sum(d*d + ref*ref)
  int64_t nan_count = 0;        ///< NaN/Inf elements (unwritten outputs stay NaN-poisoned)
  int64_t pad_touched = 0;      ///< elements written outside the M x N window (in D's padding)
};

/// Everything that identifies the device and the software a trial was measured with.
/// fingerprint() hashes every field; rows of another fingerprint are ignored, never deleted.
struct DeviceFingerprint {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int max_sm_clock_mhz = 0;
  int driver_version = 0;       ///< cudaDriverGetVersion
  int runtime_version = 0;      ///< cudaRuntimeGetVersion
  int cublaslt_version = 0;     ///< cublasLtGetVersion
  int nvrtc_version = 0;        ///< major*1000 + minor*10
  std::string kernel_hash;      ///< hash of the embedded kernel sources, codegen version and NVRTC flags
  std::string dgtune_version;

  /// 16 lowercase hex digits: FNV-1a 64 (core/hash.hpp) of every field above in declaration order,
  /// integers as decimal text, fields separated by one 0x1F byte (so ("ab","c") != ("a","bc")).
  /// Changing this encoding orphans every stored trial, so a unit test pins it.
  std::string fingerprint() const;
};

/// One candidate measured on one problem (a row of the trial table).
struct TrialRecord {
  Problem problem;
  KernelConfig config;
  TrialStatus status = TrialStatus::kOk;
  std::string error;            ///< empty when ok
  double compile_ms = 0;
  int registers = 0;
  int spill_bytes = 0;          ///< spill stores + spill loads reported by ptxas
  int smem_bytes = 0;           ///< dynamic shared memory the launch requests
  std::optional<Timing> timing; ///< only when status == kOk
  std::optional<Verification> verification;
  double tflops = 0, gbps = 0;
  std::string protocol;         ///< JSON text of the measurement protocol
  std::string created_at;       ///< ISO 8601 UTC, filled by the DB when empty
};

/// Baseline providers that WinnerRow reports beside the winner.
inline constexpr const char* kProviderCublasDefault = "cublaslt-default";  ///< heuristic top-1
inline constexpr const char* kProviderCublasTuned = "cublaslt-tuned";      ///< fastest returned heuristic

/// One cuBLASLt measurement (provider "cublaslt-default" = heuristic top-1, "cublaslt-tuned" =
/// fastest of the returned heuristics).
struct BaselineRecord {
  Problem problem;
  std::string provider;
  std::string status;           ///< "ok", "unsupported", "verify_failed", "error"
  int cublas_status = 0;        ///< cuBLASLt status when unsupported/error
  std::string error;
  std::string algo;             ///< algorithm description (id, tile, stages, split-K ...)
  std::optional<Timing> timing;
  std::optional<Verification> verification;
  double tflops = 0, gbps = 0;
  std::string protocol;
  std::string created_at;
};

}  // namespace dgt
