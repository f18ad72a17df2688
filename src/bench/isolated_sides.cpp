#include "bench/isolated_sides.hpp"

#include <algorithm>
#include <functional>

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

/// One sample of side `side`: `ms` of events around `launches` launches, the clock probe's {ns, cycles} after it,
/// flagged below r.clock_floor_mhz.
Sample isolated_sample(size_t side, size_t round, float ms, int launches, const uint64_t* probe,
                       const RoundsResult& r) {
  Sample x;
  x.side = static_cast<int>(side);
  x.round = static_cast<int>(round);
  x.position = static_cast<int>(side);
  x.time_us = double(ms) * 1000.0 / double(launches);
  x.sm_clock_mhz = clock_probe_mhz(probe);
  x.flagged = r.below_clock_floor(x.sm_clock_mhz);
  return x;
}

/// Verifies each checked side's output after one more untimed launch (poisoned first by check->prepare).
void check_outputs(const OutputCheck* check, const std::vector<Side>& sides, cudaStream_t stream,
                   const std::function<void()>& sync, RoundsResult& r) {
  if (!check) return;
  for (size_t side = 0; side < sides.size(); ++side) {
    if (!sides[side].check_output) continue;
    if (check->prepare) check->prepare(stream);
    sides[side].launch(stream);
    sync();
    r.sides[side].check = check->verify(stream);
  }
}

/// Samples of isolated-v2 queued between two host synchronisations: the watchdog runs at each one (a hung kernel
/// times out instead of blocking the host in a full launch queue), and the event pairs are reused per chunk.
constexpr size_t kFilledChunk = 32;

/// isolated-v2: per side, protocol.warmup untimed samples, then protocol.rounds timed ones, queued kFilledChunk at a
/// time before a synchronisation; a sample is a zero fill of protocol.fill_bytes, event, one launch, event, clock
/// probe. The fill is a kernel on the SMs (UtilKernels::fill_u16), as torch's zero_() on a CUDA tensor is, not
/// cudaMemsetAsync, which may run elsewhere and leave the SMs idle.
void measure_filled(const UtilKernels& util, const MeasureProtocol& protocol, cudaStream_t stream,
                    const std::vector<Side>& sides, const std::function<void()>& sync, RoundsResult& r) {
  DeviceBuffer fill;
  try {
    fill = DeviceBuffer(static_cast<size_t>(protocol.fill_bytes));
  } catch (const Error& e) {
    (void)cudaGetLastError();  // the failed allocation's error is reported here, not by the next CUDA call
    DGT_THROW(ErrorKind::kUsage, "{} zero-fills {} bytes of device memory before every sample and could not allocate "
              "them ({}); measure with --protocol isolated (isolated-v1) on this GPU", protocol.name(),
              protocol.fill_bytes, e.message());
  }
  const int64_t words = protocol.fill_bytes / 2;
  DeviceBuffer clocks(2 * kFilledChunk * sizeof(uint64_t));  // [2i, 2i + 1]: the probe after the chunk's sample i
  uint64_t* probe = clocks.as<uint64_t>();
  std::vector<EventPair> ev(kFilledChunk);
  const auto probe_ns = static_cast<uint64_t>(protocol.clock_probe_us * 1000);
  const auto n = static_cast<size_t>(protocol.rounds);
  for (size_t side = 0; side < sides.size(); ++side) {
    const Side& s = sides[side];
    for (int i = 0; i < protocol.warmup; ++i) {
      util.fill_u16(fill.get(), words, 0, stream);
      s.launch(stream);
      if ((i + 1) % int(kFilledChunk) == 0) sync();
    }
    DGT_CHECK_CUDA(cudaGetLastError());
    sync();
    for (size_t first = 0; first < n; first += kFilledChunk) {
      const size_t count = std::min(kFilledChunk, n - first);
      for (size_t i = 0; i < count; ++i) {
        util.fill_u16(fill.get(), words, 0, stream);
        DGT_CHECK_CUDA(cudaEventRecord(ev[i].start, stream));
        s.launch(stream);
        DGT_CHECK_CUDA(cudaEventRecord(ev[i].stop, stream));
        util.clock_probe(probe + 2 * i, probe_ns, stream);
      }
      DGT_CHECK_CUDA(cudaGetLastError());
      sync();
      uint64_t host[2 * kFilledChunk] = {};
      DGT_CHECK_CUDA(cudaMemcpyAsync(host, probe, 2 * count * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream));
      sync();
      for (size_t i = 0; i < count; ++i) {
        float ms = 0;
        DGT_CHECK_CUDA(cudaEventElapsedTime(&ms, ev[i].start, ev[i].stop));
        r.samples.push_back(isolated_sample(side, first + i, ms, 1, host + 2 * i, r));
      }
    }
  }
}

}  // namespace

RoundsResult measure_isolated(const UtilKernels& util, const DeviceInfo& device, const MeasureProtocol& protocol,
                              cudaStream_t stream, const std::vector<Side>& sides, const OutputCheck* check) {
  if (protocol.kind != ProtocolKind::kIsolated)
    DGT_THROW(ErrorKind::kInternal, "measure_isolated runs isolated-v1 and isolated-v2, not {}", protocol.name());
  protocol.validate();
  if (sides.empty()) DGT_THROW(ErrorKind::kInternal, "measure_isolated: no sides");
  for (const Side& s : sides)
    if (!s.launch) DGT_THROW(ErrorKind::kInternal, "measure_isolated: side '{}' has no launch function", s.label);
  const std::function<void()> sync = [&] { wait_for_stream(stream, protocol.watchdog_seconds); };

  RoundsResult r;
  r.protocol = protocol.to_json();
  r.rounds = protocol.rounds;
  r.reference_clock_mhz = device.max_sm_clock_mhz;
  r.clock_floor_mhz = device.max_sm_clock_mhz > 0 ? protocol.clock_floor * device.max_sm_clock_mhz : 0.0;
  for (const Side& s : sides) r.labels.push_back(s.label);
  r.samples.reserve(sides.size() * static_cast<size_t>(protocol.rounds));
  if (protocol.fill_bytes > 0) {  // isolated-v2
    measure_filled(util, protocol, stream, sides, sync, r);
    summarise(r);
    check_outputs(check, sides, stream, sync, r);
    return r;
  }

  L2Flush flush(util, device.l2_bytes, protocol);
  DeviceBuffer clocks(4 * sizeof(uint64_t));  // [0..1]: the probe after a sample, [2..3]: the lead-in wait
  uint64_t* probe = clocks.as<uint64_t>();
  EventPair ev;

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
      r.samples.push_back(isolated_sample(side, size_t(n), ms, protocol.launches_per_sample, host, r));
    }
  }
  summarise(r);
  check_outputs(check, sides, stream, sync, r);
  return r;
}

}  // namespace dgt
