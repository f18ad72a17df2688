#include "bench/protocol.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/error.hpp"

namespace dgt {

namespace {
constexpr int kBatch = 10;
}  // namespace

Timer::Timer(const UtilKernels& util, const DeviceInfo& device, MeasureProtocol protocol, cudaStream_t stream)
    : util_(util),
      device_(device),
      protocol_((protocol.validate(), protocol)),
      stream_(stream),
      flush_(util, device.l2_bytes, protocol_),
      clock_buf_(16) {
  if (!protocol_.adaptive)
    DGT_THROW(ErrorKind::kInternal, "Timer runs cold-l2-v1 (the adaptive timer), not {}", protocol_.name());
  start_.resize(kBatch);
  stop_.resize(kBatch);
  for (int i = 0; i < kBatch; ++i) {
    DGT_CHECK_CUDA(cudaEventCreate(&start_[i]));
    DGT_CHECK_CUDA(cudaEventCreate(&stop_[i]));
  }
}

Timer::~Timer() {
  for (auto e : start_) cudaEventDestroy(e);
  for (auto e : stop_) cudaEventDestroy(e);
}

void wait_for_stream(cudaStream_t stream, double watchdog_seconds) {
  cudaEvent_t done;
  DGT_CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  DGT_CHECK_CUDA(cudaEventRecord(done, stream));
  auto t0 = std::chrono::steady_clock::now();
  while (true) {
    cudaError_t rc = cudaEventQuery(done);
    if (rc == cudaSuccess) break;
    if (rc != cudaErrorNotReady) {
      cudaEventDestroy(done);
      DGT_CHECK_CUDA(rc);
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > watchdog_seconds) {
      // Deliberately leak the event: the context is stuck and will be torn down with the process.
      throw WatchdogTimeout("kernel still running after " + std::to_string(watchdog_seconds) + " s (watchdog)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  cudaEventDestroy(done);
}

void Timer::sync() { wait_for_stream(stream_, protocol_.watchdog_seconds); }

double Timer::probe_clock_mhz(double spin_us) {
  util_.clock_probe(clock_buf_.as<uint64_t>(), static_cast<uint64_t>(spin_us * 1000), stream_);
  uint64_t host[2] = {0, 0};
  DGT_CHECK_CUDA(cudaMemcpyAsync(host, clock_buf_.get(), sizeof host, cudaMemcpyDeviceToHost, stream_));
  sync();
  return clock_probe_mhz(host);
}

Timing Timer::measure(const std::function<void(cudaStream_t)>& launch) {
  for (int i = 0; i < protocol_.warmup; ++i) launch(stream_);
  DGT_CHECK_CUDA(cudaGetLastError());
  sync();
  const double clock_before = probe_clock_mhz();

  std::vector<double> samples;
  auto t0 = std::chrono::steady_clock::now();
  SampleStats st;
  while (true) {
    const int batch = std::min(kBatch, protocol_.max_samples - static_cast<int>(samples.size()));
    for (int b = 0; b < batch; ++b) {
      flush_.enqueue(stream_);
      DGT_CHECK_CUDA(cudaEventRecord(start_[b], stream_));
      launch(stream_);
      DGT_CHECK_CUDA(cudaEventRecord(stop_[b], stream_));
    }
    DGT_CHECK_CUDA(cudaGetLastError());
    sync();
    for (int b = 0; b < batch; ++b) {
      float ms = 0;
      DGT_CHECK_CUDA(cudaEventElapsedTime(&ms, start_[b], stop_[b]));
      samples.push_back(double(ms) * 1000.0);
    }
    const int n = static_cast<int>(samples.size());
    if (n < protocol_.min_samples && n < protocol_.max_samples) continue;
    st = sample_stats(samples);
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st.rse < protocol_.target_rse || n >= protocol_.max_samples || spent > protocol_.max_seconds) break;
  }
  const double clock_after = probe_clock_mhz();

  Timing t;
  t.median_us = st.median;
  t.p10_us = st.p10;
  t.p90_us = st.p90;
  t.samples = static_cast<int>(samples.size());
  t.rse = st.rse;
  t.sm_clock_mhz = 0.5 * (clock_before + clock_after);
  t.throttled = device_.max_sm_clock_mhz > 0 && std::min(clock_before, clock_after) < 0.9 * device_.max_sm_clock_mhz;
  return t;
}

}  // namespace dgt
