// The measurement protocol (README.md, "How measurements are made"); stored with every trial.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "device/buffer.hpp"
#include "device/device_info.hpp"
#include "launch/util_kernels.hpp"
#include "records/records.hpp"

namespace dgt {

/// Settings of the cold-L2 protocol. Defaults are the ones every stored trial and baseline uses
/// unless the command line changes them (the JSON goes into the `protocol` column).
struct ProtocolOptions {
  int warmup = 3;  ///< untimed launches first (module load, clocks ramp-up)
  int min_samples = 10;
  int max_samples = 300;
  double target_rse = 0.01;      ///< stop when the relative standard error of the median is below this
  double max_seconds = 2.0;      ///< ... or when this much wall time was spent sampling
  double watchdog_seconds = 20;  ///< a launch still running after this is a timeout
  double flush_factor = 2.0;     ///< flush buffer = flush_factor x L2 size

  /// {"name":"cold-l2-v1", ...every field...}.
  std::string to_json() const;
};

/// Robust statistics of a sample of times (microseconds).
struct SampleStats {
  double median = 0, p10 = 0, p90 = 0;
  double rse = 0;  ///< 1.2533 * (1.4826 * MAD) / sqrt(n) / median: standard error of the median, robust to outliers
};

/// Percentiles by linear interpolation between order statistics. Empty input -> all zeros.
SampleStats sample_stats(std::vector<double> samples_us);

/// Thrown when a launch does not finish within the watchdog: the context is unusable afterwards.
struct WatchdogTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Waits for all work queued on `stream`, polling an event, and throws WatchdogTimeout when it is
/// still running after watchdog_seconds (or Error(kCuda) when the stream reports an error).
void wait_for_stream(cudaStream_t stream, double watchdog_seconds);

/// Times launches under the cold-L2 protocol. Per sample, queued back to back on one stream:
/// flush (write, then read, a buffer of flush_factor x L2 so L2 holds only clean unrelated lines),
/// event, one launch, event. Launch latency hides behind the queued flush; the operands come from
/// HBM. Samples come in batches of 10 until min_samples are taken and the median's relative standard
/// error is under target_rse, or max_samples / max_seconds is reached. The SM clock is probed before
/// and after (clock64 cycles over %globaltimer ns).
class Timer {
 public:
  Timer(const UtilKernels& util, const DeviceInfo& device, ProtocolOptions options, cudaStream_t stream);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  const ProtocolOptions& options() const { return options_; }

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
  ProtocolOptions options_;
  cudaStream_t stream_;
  DeviceBuffer flush_buf_, sink_, clock_buf_;
  std::vector<cudaEvent_t> start_, stop_;
  uint32_t salt_ = 1;
};

}  // namespace dgt
