// `dgtune sweep` on one or several GPUs through worker processes: one worker per device, one compile
// queue and one DB file in this (parent) process. The parent never creates a CUDA context, so no candidate
// can take it down; a crashed or hung candidate costs a worker restart, not the sweep.
#pragma once

#include <string>
#include <vector>

#include "problem/shapes_file.hpp"
#include "tune/session_options.hpp"
#include "tune/sweep_options.hpp"
#include "worker/worker_measurer.hpp"

namespace dgt {

struct WorkerSweepOptions {
  SessionOptions session;    ///< db_path, cache_dir, protocol, seed, compile_threads (session.device unused)
  std::vector<int> devices;  ///< CUDA ordinals, one worker each, at least one
  /// The worker's command line before its own flags: {path of dgtune, "worker"} (see worker_command()).
  std::vector<std::string> worker_argv;
  WorkerLimits limits;
};

/// The command of the worker on `device`: `worker_argv` + --config (options as JSON, device set).
WorkerCommand worker_command(const std::vector<std::string>& worker_argv, SessionOptions options, int device);

/// What a worker sweep did: per-shape outcomes and the devices it measured on.
struct WorkerSweepResult {
  std::vector<ShapeOutcome> outcomes;
  std::vector<DeviceFingerprint> devices;  ///< in the order of WorkerSweepOptions::devices
  int worker_restarts = 0;                 ///< over all devices (one per crashed or hung candidate)
};

/// Starts the workers (a device that cannot be used fails here, before a new DB file is created; an existing
/// DB is checked before any worker starts), refuses devices of different hardware identities (Error(kUsage):
/// a winner belongs to one kind of GPU, so sweep each kind separately), then runs run_sweep with one lane
/// per device (tune/sweep_loop.hpp). Throws what run_sweep throws.
WorkerSweepResult sweep_with_workers(const WorkerSweepOptions& options, const std::vector<ShapeEntry>& shapes,
                                     const SweepOptions& sweep);

/// Parses --devices: "all" (every device cuda_device_count() reports) or a comma-separated list of distinct decimal
/// ordinals ("0,1,3"). The text is checked first: Error(kUsage) (exit 2) names a bad or repeated item and the rule.
/// Then the devices: a list naming a device that does not exist, or "all" without any, is Error(kNoDevice) (exit 1),
/// the answer `--device N` gives for the same missing GPU.
std::vector<int> parse_devices(const std::string& text, int device_count);

}  // namespace dgt
