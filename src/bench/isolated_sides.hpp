// The isolated protocols on the GPU (docs/measurement.md): absolute time per launch of one kernel running alone.
// isolated-v1: back to back after a clean L2 flush, the way a single-kernel benchmark loop measures it. isolated-v2:
// one launch after each zero fill of 8e9 bytes, the way DeepGEMM's benchmark measures its published numbers. The
// sides are measured one after another, never interleaved: the numbers are for absolute TFLOPS and clocks; ratios
// between sides are not paired in time (the rounds of cold-l2-v2 are the protocol for ratios).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "bench/device_sides.hpp"
#include "bench/measure_protocol.hpp"
#include "bench/rounds.hpp"
#include "device/device_info.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

/// Measures each side alone under `protocol` (kind kIsolated, validated here: Error(kUsage) / Error(kInternal)
/// otherwise), the sides in list order. isolated-v2 (protocol.fill_bytes > 0): per side, protocol.warmup untimed
/// samples and protocol.rounds timed ones, queued 32 at a time between synchronisations, each a zero fill of
/// fill_bytes by a kernel on the SMs (Error(kUsage) naming the protocol when they cannot be allocated), event, one
/// launch, event, clock probe. isolated-v1, per side: protocol.warmup launches, synchronised; then protocol.rounds
/// samples, each queued as: lead-in busy wait (lead_in_us, so the host queues the sample ahead of the GPU), L2 flush
/// (write+read of flush_factor x L2), event, protocol.launches_per_sample launches, event, clock probe
/// (clock_probe_us on one SM, right after the stop event), then one synchronisation (watchdog). A sample's time is
/// elapsed / launches_per_sample; its clock is the probe's. Samples are flagged below clock_floor x
/// device.max_sm_clock_mhz as in the engine. The result has the engine's shape: labels, samples (side by side, in
/// the order they ran; Sample::round is the sample's index within its side, Sample::position the side's place in
/// the run), summaries, result.protocol = protocol.to_json(); with `check`, each checked side's output is verified
/// after one more untimed sample (poisoned first by check->prepare). Throws WatchdogTimeout or the sides' errors.
RoundsResult measure_isolated(const UtilKernels& util, const DeviceInfo& device, const MeasureProtocol& protocol,
                              cudaStream_t stream, const std::vector<Side>& sides, const OutputCheck* check = nullptr);

}  // namespace dgt
