// Running a sweep from a command (`dgtune sweep`, `dgtune tune-model`): in this process or in worker processes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "problem/shapes_file.hpp"
#include "tune/session.hpp"
#include "tune/sweep_options.hpp"

namespace dgt::cli {

/// Sweeps in this process (`--in-process`): the first crashed or hung candidate ends the run (rerun to go on).
/// Returns the outcomes and the device name. Ctrl-C stops after the current trial (tune/interrupt.hpp).
std::pair<std::vector<ShapeOutcome>, std::string> sweep_in_process(const SessionOptions& so,
                                                                   const std::vector<ShapeEntry>& shapes,
                                                                   const SweepOptions& sweep);

/// Sweeps through one worker process per device of `devices` (src/worker/); returns the outcomes and the devices'
/// name ("NAME" or "NAME x G"). A crashed or hung candidate is stored as such and a new worker goes on.
std::pair<std::vector<ShapeOutcome>, std::string> sweep_in_workers(const SessionOptions& so,
                                                                   const std::vector<int>& devices,
                                                                   const std::vector<ShapeEntry>& shapes,
                                                                   const SweepOptions& sweep);

}  // namespace dgt::cli
