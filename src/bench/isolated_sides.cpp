#include "bench/isolated_sides.hpp"

#include "bench/l2_flush.hpp"
#include "bench/protocol.hpp"
#include "core/error.hpp"
#include "device/buffer.hpp"

namespace dgt {

namespace {

/// One event pair, destroyed with the scope.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    DGT_CHECK_CUDA(cudaEventCreate(&start));
    DGT_CHECK_CUDA(cudaEventCreate(&stop));
  }
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

}  // namespace

RoundsResult measure_isolated(const UtilKernels& util, const DeviceInfo& device, const MeasureProtocol& protocol,
                              cudaStream_t stream, const std::vector<Side>& sides, const OutputCheck* check) {
  if (protocol.kind != ProtocolKind::kIsolated)
    DGT_THROW(ErrorKind::kInternal, "measure_isolated runs isolated-v1, not {}", protocol.name());
  protocol.validate();
  if (sides.empty()) DGT_THROW(ErrorKind::kInternal, "measure_isolated: no sides");
  for (const Side& s : sides)
    if (!s.launch) DGT_THROW(ErrorKind::kInternal, "measure_isolated: side '{}' has no launch function", s.label);
  auto sync = [&] { wait_for_stream(stream, protocol.watchdog_seconds); };

  L2Flush flush(util, device.l2_bytes, protocol);
  DeviceBuffer clocks(4 * sizeof(uint64_t));  // [0..1]: the probe after a sample, [2..3]: the lead-in wait
  uint64_t* probe = clocks.as<uint64_t>();
  EventPair ev;

  RoundsResult r;
  r.protocol = protocol.to_json();
  r.rounds = protocol.rounds;
  r.reference_clock_mhz = device.max_sm_clock_mhz;
  r.clock_floor_mhz = device.max_sm_clock_mhz > 0 ? protocol.clock_floor * device.max_sm_clock_mhz : 0.0;
  for (const Side& s : sides) r.labels.push_back(s.label);
  r.samples.reserve(sides.size() * static_cast<size_t>(protocol.rounds));

  const auto probe_ns = static_cast<uint64_t>(protocol.clock_probe_us * 1000);
  const auto lead_in_ns = static_cast<uint64_t>(protocol.lead_in_us * 1000);
  for (size_t side = 0; side < sides.size(); ++side) {
    const Side& s = sides[side];
    for (int i = 0; i < protocol.warmup; ++i) s.launch(stream);
    DGT_CHECK_CUDA(cudaGetLastError());
    sync();
    for (int n = 0; n < protocol.rounds; ++n) {
      if (lead_in_ns > 0) util.clock_probe(probe + 2, lead_in_ns, stream);
      flush.enqueue(stream);
      DGT_CHECK_CUDA(cudaEventRecord(ev.start, stream));
      for (int l = 0; l < protocol.launches_per_sample; ++l) s.launch(stream);
      DGT_CHECK_CUDA(cudaEventRecord(ev.stop, stream));
      util.clock_probe(probe, probe_ns, stream);
      DGT_CHECK_CUDA(cudaGetLastError());
      sync();
      uint64_t host[2] = {0, 0};
      DGT_CHECK_CUDA(cudaMemcpyAsync(host, probe, sizeof(host), cudaMemcpyDeviceToHost, stream));
      sync();
      float ms = 0;
      DGT_CHECK_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
      Sample x;
      x.side = static_cast<int>(side);
      x.round = n;
      x.position = static_cast<int>(side);
      x.time_us = double(ms) * 1000.0 / double(protocol.launches_per_sample);
      x.sm_clock_mhz = host[0] > 0 ? double(host[1]) / double(host[0]) * 1000.0 : 0.0;
      x.flagged = r.clock_floor_mhz > 0 && x.sm_clock_mhz > 0 && x.sm_clock_mhz < r.clock_floor_mhz;
      r.samples.push_back(x);
    }
  }
  summarise(r);
  if (check) {
    for (size_t side = 0; side < sides.size(); ++side) {
      if (!sides[side].check_output) continue;
      if (check->prepare) check->prepare(stream);
      sides[side].launch(stream);
      sync();
      r.sides[side].check = check->verify(stream);
    }
  }
  return r;
}

}  // namespace dgt
