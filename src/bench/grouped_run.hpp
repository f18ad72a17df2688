// dgtune run on a grouped problem: compile, verify and time one grouped kernel (no DB: the tuner does not know
// grouped problems yet).
#pragma once

#include <cstdint>
#include <string>

#include "bench/measure_protocol.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "records/records.hpp"

namespace dgt {

struct GroupedRunOptions {
  int device = 0;
  std::string cache_dir;  ///< empty = the default cubin cache
  MeasureProtocol protocol = MeasureProtocol::cold_l2_adaptive();  ///< the Timer's cold-L2 protocol (cold-l2-v1)
  uint64_t seed = 20261129;
  bool time = true;  ///< false: verify only
};

struct GroupedRunResult {
  std::string kernel;       ///< spec key + "_contiguous" / "_masked"
  std::string device_name;
  int grid = 0;             ///< CTAs launched
  Verification verification;
  Timing timing;            ///< empty when not timed or not verified
  double tflops = 0;        ///< 2 x sum(m_g) x N x K / median time (real rows only)
};

/// Opens the device (sm_90), compiles (or takes from the cubin cache) and loads the grouped kernel of `c` for `g`,
/// fills the operands (bench/grouped_data.hpp: NaN padding rows, a sentinel D), launches once and verifies every
/// group against the reference; when verified and `time`, times it with the cold-L2 Timer (bench/protocol.hpp).
/// The caller checks `c` against `g` first (space/grouped_rules.hpp grouped_config_violation: a bad config is bad
/// input, refused before the GPU is opened). Throws Error(kInvalid) for a config that breaks a grouped or resource
/// rule anyway, Error(kNoDevice) without an sm_90 device, Error(kNvrtc/kDriver/kCuda) from compiling, loading or
/// running.
GroupedRunResult run_grouped(const GroupedProblem& g, const KernelConfig& c, const GroupedRunOptions& options);

}  // namespace dgt
