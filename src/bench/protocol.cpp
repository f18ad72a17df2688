#include "bench/protocol.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace dgt {

namespace {
constexpr int kBatch = 10;

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * double(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}
}  // namespace

std::string ProtocolOptions::to_json() const {
  return nlohmann::json{{"name", "cold-l2-v1"},     {"flush", "write+read"},      {"flush_factor_l2", flush_factor},
                        {"warmup", warmup},         {"min_samples", min_samples}, {"max_samples", max_samples},
                        {"target_rse", target_rse}, {"max_seconds", max_seconds}, {"timer", "cudaEvent per launch"},
                        {"statistic", "median"}}
      .dump();
}

SampleStats sample_stats(std::vector<double> v) {
  SampleStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = percentile(v, 0.5);
  s.p10 = percentile(v, 0.1);
  s.p90 = percentile(v, 0.9);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - s.median));
  std::sort(dev.begin(), dev.end());
  const double mad = percentile(dev, 0.5);
  const double sigma = 1.4826 * mad;
  s.rse = s.median > 0 ? 1.2533 * sigma / std::sqrt(double(v.size())) / s.median : 0;
  return s;
}

Timer::Timer(const UtilKernels& util, const DeviceInfo& device, ProtocolOptions options, cudaStream_t stream)
    : util_(util), device_(device), options_(options), stream_(stream) {
  int64_t bytes = static_cast<int64_t>(options_.flush_factor * double(device.l2_bytes));
  bytes = std::max<int64_t>(bytes, 64 << 20) / 16 * 16;
  flush_buf_ = DeviceBuffer(static_cast<size_t>(bytes));
  sink_ = DeviceBuffer(64);
  clock_buf_ = DeviceBuffer(16);
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

void Timer::sync() { wait_for_stream(stream_, options_.watchdog_seconds); }

double Timer::probe_clock_mhz(double spin_us) {
  util_.clock_probe(clock_buf_.as<uint64_t>(), static_cast<uint64_t>(spin_us * 1000), stream_);
  uint64_t host[2] = {0, 0};
  DGT_CHECK_CUDA(cudaMemcpyAsync(host, clock_buf_.get(), sizeof host, cudaMemcpyDeviceToHost, stream_));
  sync();
  return host[0] > 0 ? double(host[1]) / double(host[0]) * 1000.0 : 0.0;
}

Timing Timer::measure(const std::function<void(cudaStream_t)>& launch) {
  for (int i = 0; i < options_.warmup; ++i) launch(stream_);
  DGT_CHECK_CUDA(cudaGetLastError());
  sync();
  const double clock_before = probe_clock_mhz();

  std::vector<double> samples;
  auto t0 = std::chrono::steady_clock::now();
  SampleStats st;
  while (true) {
    const int batch = std::min(kBatch, options_.max_samples - static_cast<int>(samples.size()));
    for (int b = 0; b < batch; ++b) {
      util_.flush_l2(flush_buf_.get(), static_cast<int64_t>(flush_buf_.bytes()), sink_.get(), salt_++, stream_);
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
    if (n < options_.min_samples && n < options_.max_samples) continue;
    st = sample_stats(samples);
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st.rse < options_.target_rse || n >= options_.max_samples || spent > options_.max_seconds) break;
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
