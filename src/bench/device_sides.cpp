#include "bench/device_sides.hpp"

#include <algorithm>

#include "bench/isolated_sides.hpp"
#include "bench/protocol.hpp"
#include "core/error.hpp"

namespace dgt {

DeviceSides::DeviceSides(const UtilKernels& util, const DeviceInfo& device, const MeasureProtocol& protocol,
                         cudaStream_t stream, std::vector<Side> sides)
    : util_(util), device_(device), protocol_(protocol), stream_(stream), sides_(std::move(sides)) {
  protocol_.validate();
  if (protocol_.adaptive)
    DGT_THROW(ErrorKind::kInternal, "the interleaved engine runs cold-l2-v2 or hot-graph-v1, not {}", protocol_.name());
  if (protocol_.kind == ProtocolKind::kIsolated)
    DGT_THROW(ErrorKind::kInternal, "the interleaved engine does not run {} (bench/isolated_sides.hpp does)",
              protocol_.name());
  if (sides_.empty()) DGT_THROW(ErrorKind::kInternal, "DeviceSides: no sides");
  for (const Side& s : sides_)
    if (!s.launch) DGT_THROW(ErrorKind::kInternal, "DeviceSides: side '{}' has no launch function", s.label);
  const size_t k = sides_.size();
  if (protocol_.kind == ProtocolKind::kColdL2) flush_.emplace(util_, device.l2_bytes, protocol_);
  clocks_ = DeviceBuffer((k + 2) * 2 * sizeof(uint64_t));  // slot k: the lead-in wait, slot k + 1: gaps and tail
  graphs_.assign(k, nullptr);
  start_.assign(k, nullptr);
  stop_.assign(k, nullptr);
  for (size_t i = 0; i < k; ++i) {
    DGT_CHECK_CUDA(cudaEventCreate(&start_[i]));
    DGT_CHECK_CUDA(cudaEventCreate(&stop_[i]));
  }
}

DeviceSides::~DeviceSides() {
  for (auto g : graphs_)
    if (g) cudaGraphExecDestroy(g);
  for (auto e : start_)
    if (e) cudaEventDestroy(e);
  for (auto e : stop_)
    if (e) cudaEventDestroy(e);
}

void DeviceSides::sync() { wait_for_stream(stream_, protocol_.watchdog_seconds); }

void DeviceSides::capture(size_t side) {
  cudaGraph_t graph = nullptr;
  DGT_CHECK_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    for (int n = 0; n < protocol_.graph_launches; ++n) sides_[side].launch(stream_);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream_, &broken);  // leave the stream out of capture mode
    if (broken) cudaGraphDestroy(broken);
    (void)cudaGetLastError();
    throw;
  }
  DGT_CHECK_CUDA(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t rc = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  DGT_CHECK_CUDA(rc);
  graphs_[side] = exec;
}

void DeviceSides::prepare() {
  // Warm-up first (module loads, lazy library initialisation, clocks ramp-up): nothing of that
  // may happen inside a capture.
  for (const Side& s : sides_)
    for (int i = 0; i < protocol_.warmup; ++i) s.launch(stream_);
  DGT_CHECK_CUDA(cudaGetLastError());
  sync();
  if (protocol_.kind == ProtocolKind::kHotGraph) {
    for (size_t i = 0; i < sides_.size(); ++i)
      if (!graphs_[i]) capture(i);
    for (size_t i = 0; i < sides_.size(); ++i) {
      DGT_CHECK_CUDA(cudaGraphUpload(graphs_[i], stream_));
      DGT_CHECK_CUDA(cudaGraphLaunch(graphs_[i], stream_));  // first replay, untimed
    }
    DGT_CHECK_CUDA(cudaGetLastError());
    sync();
  }
  prepared_ = true;
}

void DeviceSides::replay(int side) {
  if (!prepared_) DGT_THROW(ErrorKind::kInternal, "DeviceSides::replay before prepare()");
  const size_t i = static_cast<size_t>(side);
  if (protocol_.kind == ProtocolKind::kHotGraph)
    DGT_CHECK_CUDA(cudaGraphLaunch(graphs_.at(i), stream_));
  else
    sides_.at(i).launch(stream_);
}

std::vector<RawSample> DeviceSides::run_round(std::span<const int> order) {
  if (!prepared_) DGT_THROW(ErrorKind::kInternal, "DeviceSides::run_round before prepare()");
  const size_t k = sides_.size();
  if (order.size() > k)
    DGT_THROW(ErrorKind::kInternal, "DeviceSides::run_round: {} entries for {} sides", order.size(), k);
  for (int s : order)
    if (s < 0 || static_cast<size_t>(s) >= k) DGT_THROW(ErrorKind::kInternal, "DeviceSides::run_round: side {}", s);
  const bool hot = protocol_.kind == ProtocolKind::kHotGraph;
  uint64_t* clocks = clocks_.as<uint64_t>();
  const auto probe_ns = static_cast<uint64_t>(protocol_.clock_probe_us * 1000);
  if (protocol_.lead_in_us > 0)
    util_.clock_probe(clocks + 2 * k, static_cast<uint64_t>(protocol_.lead_in_us * 1000), stream_);
  const auto gap_ns = static_cast<uint64_t>(protocol_.gap_us * 1000);
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t side = static_cast<size_t>(order[i]);
    if (!hot) flush_->enqueue(stream_);
    // The study's idle gap: a one-SM busy wait (near-idle power, exact in GPU time, no host sync in the round).
    if (gap_ns > 0) util_.clock_probe(clocks + 2 * (k + 1), gap_ns, stream_);
    DGT_CHECK_CUDA(cudaEventRecord(start_[i], stream_));
    if (hot)
      DGT_CHECK_CUDA(cudaGraphLaunch(graphs_[side], stream_));
    else
      sides_[side].launch(stream_);
    DGT_CHECK_CUDA(cudaEventRecord(stop_[i], stream_));
    util_.clock_probe(clocks + 2 * i, probe_ns, stream_);
  }
  // cold-l2-v3's queue tail: the last samples too run with work queued behind them (measure_protocol.hpp).
  const auto tail_ns = static_cast<uint64_t>(protocol_.tail_kernel_us * 1000);
  for (int t = 0; t < protocol_.tail_kernels; ++t) util_.clock_probe(clocks + 2 * (k + 1), tail_ns, stream_);
  DGT_CHECK_CUDA(cudaGetLastError());
  sync();
  std::vector<uint64_t> host(2 * order.size(), 0);
  DGT_CHECK_CUDA(cudaMemcpyAsync(host.data(), clocks, host.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream_));
  sync();

  const double per = hot ? double(protocol_.graph_launches) : 1.0;
  std::vector<RawSample> out(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    float ms = 0;
    DGT_CHECK_CUDA(cudaEventElapsedTime(&ms, start_[i], stop_[i]));
    out[i].time_us = double(ms) * 1000.0 / per;
    out[i].sm_clock_mhz = clock_probe_mhz(&host[2 * i]);
  }
  return out;
}

RoundsResult measure_sides(const UtilKernels& util, const DeviceInfo& device, const MeasureProtocol& protocol,
                           cudaStream_t stream, std::vector<Side> sides, const OutputCheck* check) {
  if (protocol.kind == ProtocolKind::kIsolated) return measure_isolated(util, device, protocol, stream, sides, check);
  DeviceSides engine(util, device, protocol, stream, std::move(sides));
  RoundsOptions opts;
  opts.order = protocol.order;
  opts.rounds = protocol.rounds;
  opts.reference_clock_mhz = device.max_sm_clock_mhz;
  opts.clock_floor = protocol.clock_floor;
  RoundsResult r = run_rounds(engine, opts);
  r.protocol = protocol.to_json();
  if (check) {
    for (int i = 0; i < engine.side_count(); ++i) {
      if (!engine.checks_output(i)) continue;
      if (check->prepare) check->prepare(stream);
      engine.replay(i);
      engine.sync();
      r.sides[static_cast<size_t>(i)].check = check->verify(stream);
    }
  }
  return r;
}

std::function<Timing(const std::function<void(cudaStream_t)>&)> screen_timer(const UtilKernels& util,
                                                                             const DeviceInfo& device,
                                                                             MeasureProtocol protocol,
                                                                             cudaStream_t stream, int rounds) {
  protocol.rounds = rounds;
  // isolated-v2 screens each algorithm with 3 warm-up samples, not 30: every sample costs an 8e9-byte fill, and the
  // screen times up to 32 algorithms.
  if (protocol.fill_bytes > 0) protocol.warmup = std::min(protocol.warmup, 3);
  protocol.validate();
  return [&util, device, protocol, stream](const std::function<void(cudaStream_t)>& launch) {
    return measure_sides(util, device, protocol, stream, {Side{"screen", launch}}).sides[0].timing();
  };
}

}  // namespace dgt
