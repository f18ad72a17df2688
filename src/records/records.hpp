// Plain records exchanged between the measurement code and the tuning database.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// Outcome of one measurement: a candidate of the kernel family (trial) or a cuBLASLt baseline. One
/// enum for both. Stored as its to_string() text: "ok", "invalid", "compile_error", "launch_error",
/// "verify_failed", "timeout", "crashed", "unsupported", "error".
enum class TrialStatus {
  kOk,            ///< compiled, launched, verified and timed
  kInvalid,       ///< rejected by the resource model before compiling (reason in error)
  kCompileError,  ///< NVRTC failed or the cubin spills registers
  kLaunchError,   ///< launch refused (e.g. too much shared memory) without harming the context
  kVerifyFailed,  ///< ran, but the output disagrees with the reference
  kTimeout,       ///< did not finish within the watchdog time
  kCrashed,       ///< sticky CUDA error (illegal address ...): the process stopped measuring after it
  kUnsupported,   ///< baselines: the library refused the problem (its status in cublas_status)
  kError,         ///< baselines: the library call failed (its status in cublas_status)
  kClaimed,       ///< trials: a sweep is measuring it right now (owner in error; TuningDb::claim_trial); not a
                  ///< stored measurement: scoped queries skip it, and a claim of a dead process is taken over
};
/// The one status enum of trials and baselines.
using Status = TrialStatus;
const char* to_string(TrialStatus s);
/// Inverse of to_string(TrialStatus). Throws Error(kInternal) on unknown text.
TrialStatus parse_trial_status(std::string_view s);

/// Timing of one kernel under the measurement protocol (bench/protocol.hpp). Times in microseconds.
struct Timing {
  double median_us = 0, p10_us = 0, p90_us = 0;
  int samples = 0;
  double rse = 0;           ///< relative standard error of the median
  double sm_clock_mhz = 0;  ///< mean SM clock over the measurement (clock64 / globaltimer probes)
  bool throttled = false;   ///< the clock fell below 90% of the device's max during the measurement
};

/// Verification of one output against the device reference GEMM.
struct Verification {
  bool ok = false;
  double max_rel_err = 0;   ///< max |d - ref| / max |ref|
  double diff = 0;          ///< 1 - 2*sum(d*ref) / sum(d*d + ref*ref)
  int64_t nan_count = 0;    ///< NaN/Inf elements (unwritten outputs stay NaN-poisoned)
  int64_t pad_touched = 0;  ///< elements written outside the M x N window (in D's padding)
  int64_t ulp_over = 0;     ///< e4m3 output: elements > 1 e4m3 ulp from the identically rounded reference
  double amax_rel_err = 0;  ///< e4m3 output with amax: |amax - reference amax| / reference amax (0 when unchecked)
};

/// Hardware identity: what a stored winner belongs to. Two GPUs of the same model (name, compute
/// capability, SM count, memory size, L2 size) share it, whatever their PCI slot, driver or clocks.
struct HardwareIdentity {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;

  /// 16 lowercase hex digits: FNV-1a 64 of the fields above in declaration order, integers as decimal
  /// text, separated by one 0x1F byte (the fingerprint() encoding). The device table's hw_key column;
  /// changing the encoding orphans every stored winner, so a unit test pins it.
  std::string key() const;
};

/// Software environment a measurement ran under. Recorded with every trial, baseline and sweep row
/// (the environment table), never part of the device identity.
struct SoftwareEnv {
  int driver_version = 0;    ///< cudaDriverGetVersion
  int runtime_version = 0;   ///< cudaRuntimeGetVersion
  int cublaslt_version = 0;  ///< cublasLtGetVersion
  int nvrtc_version = 0;     ///< major*1000 + minor*10
  std::string kernel_hash;   ///< hash of the embedded kernel sources, codegen version and NVRTC flags
  std::string dgtune_version;

  /// 16 lowercase hex digits, the same encoding as HardwareIdentity::key() over the fields above
  /// (the environment table's env_key column; pinned by a unit test).
  std::string key() const;
};

/// Everything known about the device and the software a measurement runs with: the hardware
/// identity, the software environment, and facts kept beside them (max SM clock, PCI bus id).
struct DeviceFingerprint {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int max_sm_clock_mhz = 0;
  int driver_version = 0;    ///< cudaDriverGetVersion
  int runtime_version = 0;   ///< cudaRuntimeGetVersion
  int cublaslt_version = 0;  ///< cublasLtGetVersion
  int nvrtc_version = 0;     ///< major*1000 + minor*10
  std::string kernel_hash;   ///< hash of the embedded kernel sources, codegen version and NVRTC flags
  std::string dgtune_version;
  std::string pci_bus_id;  ///< e.g. "0000:3b:00.0": stored with every trial and baseline; not hashed

  HardwareIdentity hardware() const;
  SoftwareEnv software() const;

  /// 16 lowercase hex digits: FNV-1a 64 (core/hash.hpp) of every field from name to dgtune_version in
  /// declaration order (pci_bus_id excluded), integers as decimal text, fields separated by one 0x1F
  /// byte (so ("ab","c") != ("a","bc")). Schema v1/v2 keyed device rows by it; since v3 it only
  /// names the whole (hardware, software) pair in `dgtune info`. A unit test pins it.
  std::string fingerprint() const;
};

/// Throughput of one GEMM of `p` taking `median_us`: the one place TFLOPS and GB/s are computed.
/// TFLOPS = 2*M*N*K / t; GB/s = Problem::min_bytes() / t (A, B read once, D written once).
double tflops_of(const Problem& p, double median_us);
double gbps_of(const Problem& p, double median_us);

/// What trials and baselines share: one measurement of one problem under the protocol.
struct Measurement {
  Problem problem;
  TrialStatus status = TrialStatus::kOk;
  std::string error;             ///< empty when ok
  std::optional<Timing> timing;  ///< only when status == kOk
  std::optional<Verification> verification;
  double tflops = 0, gbps = 0;  ///< from the timing (set_timing), 0 without one
  std::string protocol;         ///< JSON text of the measurement protocol
  std::string created_at;       ///< ISO 8601 UTC, filled by the DB when empty

  /// Stores the timing and the TFLOPS and GB/s computed from it (tflops_of, gbps_of).
  void set_timing(const Timing& t);
};

/// One candidate measured on one problem (a row of the trial table).
struct TrialRecord : Measurement {
  KernelConfig config;
  double compile_ms = 0;
  int registers = 0;
  int spill_bytes = 0;  ///< spill stores + spill loads reported by ptxas
  int smem_bytes = 0;   ///< dynamic shared memory the launch requests
};

/// Baseline providers that WinnerRow reports beside the winner.
inline constexpr const char* kProviderCublasDefault = "cublaslt-default";  ///< heuristic top-1
/// The label of dgtune's own kernel among the sides of an interleaved measurement (compare, gate).
inline constexpr const char* kSideDgtune = "dgtune";
inline constexpr const char* kProviderCublasTuned = "cublaslt-tuned";      ///< fastest returned heuristic

/// One cuBLASLt measurement (provider "cublaslt-default" = heuristic top-1, "cublaslt-tuned" =
/// fastest of the returned heuristics). status: kOk, kUnsupported, kVerifyFailed or kError.
struct BaselineRecord : Measurement {
  std::string provider;
  int cublas_status = 0;  ///< cuBLASLt status when unsupported/error
  std::string algo;       ///< algorithm description (id, tile, stages, split-K ...)
  /// The cublasLtMatmulAlgo_t itself (64 bytes; empty when no algorithm ran), replayable by the same cuBLASLt
  /// version (launch/cublaslt_matmul.hpp), and the workspace it needs in bytes.
  std::vector<uint8_t> algo_data;
  int64_t workspace_bytes = 0;
};

}  // namespace dgt
