// One grouped (MoE) GEMM measured now against its baselines in interleaved rounds, on one device with one kernel cache
// for many problems: the engine of `dgtune compare --grouped` (one explicit config for every problem) and of
// `dgtune compare` / `dgtune gate` on a shapes file's grouped lines (the loader's choice per line). The sides, in this
// order (eval/grouped_compare_tables.hpp names their indices):
//   grouped    - the grouped kernel of the config;
//   loop       - one cuBLASLt call per non-empty group with its real row count (bench/group_loop.hpp);
//   dense      - (optional) the dgtune dense kernel on one GEMM of the same FLOPs: M = sum of the real rows, N, K;
//   grouped-vs - (optional) the grouped kernel of a second config on the same operands.
// The grouped kernel's, the loop's and grouped-vs's outputs are verified after the rounds (eval/grouped_compare.hpp
// says how). GPU only.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "bench/measure_protocol.hpp"
#include "device/device_info.hpp"
#include "device/stream.hpp"
#include "eval/grouped_compare_tables.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "records/records.hpp"

namespace dgt {

/// The configs of one grouped measurement.
struct GroupedSides {
  KernelConfig config;                       ///< the grouped kernel's (its grouped rules checked by the caller)
  bool dense = true;                         ///< time the dense side (the gate leaves it out: it gates the loop only)
  std::optional<KernelConfig> dense_config;  ///< the dense side's; empty: default_config of the dense problem
  std::optional<KernelConfig> vs_config;     ///< the grouped-vs side's; empty: no such side
};

/// One device, one cubin cache, one kernel cache and one stream, for many grouped problems.
class GroupedMeasurer {
 public:
  /// Opens the device (Error(kNoDevice) without an sm_90 GPU), the cubin cache (`cache_dir`, empty: the default one)
  /// and the utility kernels. `protocol`: cold-l2-v2, hot-graph-v1 or isolated-v1/v2 (validated by the caller).
  GroupedMeasurer(int device, const std::string& cache_dir, MeasureProtocol protocol, uint64_t seed = 20261129);
  ~GroupedMeasurer();
  GroupedMeasurer(const GroupedMeasurer&) = delete;
  GroupedMeasurer& operator=(const GroupedMeasurer&) = delete;

  const DeviceInfo& device() const { return device_; }
  const DeviceFingerprint& fingerprint() const { return fingerprint_; }
  const MeasureProtocol& protocol() const { return protocol_; }

  /// Builds the sides of `g` (compiles or loads the kernels, fills the operands from the seed, plans the loop) and measures protocol().rounds interleaved rounds, then the output checks. The result's
  /// config_key, dense_config_key (empty without the dense side), vs_config_key, protocol_name and loop fields are
  /// filled; name, config_source and tuned_key are the caller's. Throws what building throws: Error(kCublas) when
  /// cuBLASLt cannot run a group, Error(kNvrtc) / Error(kInvalid) when a kernel cannot be built, CUDA errors. A wrong
  /// output is not thrown: it is the side's check (SideSummary::check).
  GroupedCompareShape measure(const GroupedProblem& g, const GroupedSides& sides);

 private:
  MeasureProtocol protocol_;
  uint64_t seed_;
  DeviceInfo device_;
  DeviceFingerprint fingerprint_;
  std::unique_ptr<jit::CubinCache> cubins_;
  std::unique_ptr<UtilKernels> util_;
  std::unique_ptr<KernelCache> kernels_;  // after cubins_: destroyed before it
  std::unique_ptr<CudaStream> stream_;
};

}  // namespace dgt
