// The sweep's cold-l2-v1 timer (docs/measurement.md): adaptive sampling of one launch at a time after an L2
// flush; stored with every trial. The protocol's settings are a MeasureProtocol (bench/measure_protocol.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/l2_flush.hpp"
#include "bench/measure_protocol.hpp"
#include "core/error.hpp"
#include "device/buffer.hpp"
#include "device/device_info.hpp"
#include "launch/util_kernels.hpp"
#include "records/records.hpp"
#include "stats/sample_stats.hpp"

namespace dgt {

/// Thrown when a launch does not finish within the watchdog (ErrorKind::kTimeout): the context is unusable
/// afterwards. message() is the text stored with a timed-out trial.
class WatchdogTimeout : public Error {
 public:
  explicit WatchdogTimeout(std::string message) : Error(ErrorKind::kTimeout, std::move(message)) {}
};

/// Waits for all work queued on `stream`, polling an event, and throws WatchdogTimeout when it is
/// still running after watchdog_seconds (or Error(kCuda) when the stream reports an error).
void wait_for_stream(cudaStream_t stream, double watchdog_seconds);

/// Times launches under the cold-L2 protocol cold-l2-v1. Per sample, queued back to back on one stream:
/// flush (L2Flush), event, one launch, event. Launch latency hides behind the queued flush; the operands come
/// from HBM. Samples come in batches of 10 until min_samples are taken and the median's relative standard
/// error is under target_rse, or max_samples / max_seconds is reached. The SM clock is probed before and after
/// (clock64 cycles over %globaltimer ns).
class Timer {
 public:
  /// `protocol` must be MeasureProtocol::cold_l2_adaptive() (possibly with other settings): Error(kUsage) from
  /// validate() otherwise, Error(kInternal) for an engine protocol.
  Timer(const UtilKernels& util, const DeviceInfo& device, MeasureProtocol protocol, cudaStream_t stream);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  const MeasureProtocol& protocol() const { return protocol_; }

  /// Measures `launch` (which must enqueue exactly one kernel on the stream it is given).
  /// Throws WatchdogTimeout, or Error(kCuda) when a launch fails (the caller decides whether the
  /// error is sticky).
  Timing measure(const std::function<void(cudaStream_t)>& launch);

  /// Mean SM clock in MHz over a ~spin_us busy wait (synchronises the stream).
  double probe_clock_mhz(double spin_us = 100);

  /// Waits for all work on the stream, with the watchdog. Throws WatchdogTimeout or Error(kCuda).
  void sync();

 private:
  const UtilKernels& util_;
  DeviceInfo device_;
  MeasureProtocol protocol_;
  cudaStream_t stream_;
  L2Flush flush_;
  DeviceBuffer clock_buf_;
  std::vector<cudaEvent_t> start_, stop_;
};

}  // namespace dgt
