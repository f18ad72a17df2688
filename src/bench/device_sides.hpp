// The GPU half of the measurement engine: sides that run on one stream under a MeasureProtocol
// (cold-l2 or hot-graph), sampled in interleaved rounds by bench/rounds.hpp.
//
//   std::vector<Side> sides = {{"dgtune", [&](cudaStream_t s) { kernel.launch(p, ops, s, &ws); }},
//                              {"cublaslt-default", plan.launcher(choice.default_algo)},
//                              {"cublaslt-tuned", plan.launcher(choice.tuned_algo)}};
//   OutputCheck check{[&](cudaStream_t s) { data.poison_output(s); }, [&](cudaStream_t s) { return data.verify(s); }};
//   RoundsResult r = measure_sides(util, device, MeasureProtocol::hot_graph(), stream, sides, &check);
//   stats::compare_paired(r.paired(0, 2).x_us, r.paired(0, 2).y_us);
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/l2_flush.hpp"
#include "bench/measure_protocol.hpp"
#include "bench/rounds.hpp"
#include "device/buffer.hpp"
#include "device/device_info.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

/// One thing being compared.
struct Side {
  std::string label;
  /// Enqueues exactly ONE kernel (or one library call such as cublasLtMatmul) on the stream it is
  /// given, and throws on failure. It must be safe to capture in a CUDA graph for hot-graph: no
  /// allocation, no synchronisation, no host reads of device data; every first-use allocation (a
  /// split-K workspace, a module load) must already have happened when the engine is built.
  std::function<void(cudaStream_t)> launch;
  /// False for a side whose output is not a GEMM result (the copy limit, bench/copy_limit_side.hpp): the
  /// OutputCheck is not run on it and its SideSummary::check stays empty.
  bool check_output = true;
};

/// The caller's output check after the rounds (e.g. ProblemData::poison_output / verify): for each
/// side the engine calls prepare(stream), runs what one sample of that side runs (cold-l2: one
/// launch; hot-graph: one replay of its graph, i.e. graph_launches launches back to back), then
/// stores verify(stream) in the side's summary (SideSummary::check); sides with check_output = false are
/// skipped.
struct OutputCheck {
  std::function<void(cudaStream_t)> prepare;
  std::function<Verification(cudaStream_t)> verify;
};

/// SampleSource on the GPU. Per sample, queued back to back on one stream, with no host sync
/// inside a round:
///   cold-l2:   flush (write+read of flush_factor x L2), [gap], event, side.launch, event, clock probe
///   hot-graph:                                          [gap], event, graph replay, event, clock probe
/// [gap]: only when protocol.gap_us > 0 (the protocol study), a one-SM busy wait of gap_us.
/// A round starts with a lead-in busy wait so the host queues the whole round ahead of the GPU
/// (the events then time the GPU, not the host's launch calls) and ends with one synchronisation
/// (watchdog) after which the events and clock probes are read. The clock probe (clock64 cycles
/// over %globaltimer during a clock_probe_us busy wait on one SM) runs right after the sample's
/// stop event, so it never counts in the sample.
class DeviceSides final : public SampleSource {
 public:
  DeviceSides(const UtilKernels& util, const DeviceInfo& device, const MeasureProtocol& protocol, cudaStream_t stream,
              std::vector<Side> sides);
  ~DeviceSides() override;
  DeviceSides(const DeviceSides&) = delete;
  DeviceSides& operator=(const DeviceSides&) = delete;

  int side_count() const override { return static_cast<int>(sides_.size()); }
  std::string side_label(int side) const override { return sides_.at(static_cast<size_t>(side)).label; }
  /// protocol.warmup launches of every side, synchronised; hot-graph: then captures each side's
  /// graph (graph_launches launches), instantiates, uploads and replays it once untimed.
  void prepare() override;
  std::vector<RawSample> run_round(std::span<const int> order) override;

  /// Enqueues what one sample of `side` runs, untimed (cold-l2: one launch; hot-graph: one replay;
  /// call prepare() first). For checks of the output after replay.
  void replay(int side);
  /// Side::check_output of `side`.
  bool checks_output(int side) const { return sides_.at(static_cast<size_t>(side)).check_output; }
  /// Waits for the stream with the protocol's watchdog.
  void sync();

 private:
  void capture(size_t side);

  const UtilKernels& util_;
  DeviceInfo device_;
  MeasureProtocol protocol_;
  cudaStream_t stream_;
  std::vector<Side> sides_;
  std::vector<cudaGraphExec_t> graphs_;    ///< hot-graph: one per side after prepare()
  std::vector<cudaEvent_t> start_, stop_;  ///< one pair per position in a round
  std::optional<L2Flush> flush_;  ///< cold-l2 only
  DeviceBuffer clocks_;
  bool prepared_ = false;
};

/// The whole engine: validates the protocol, builds DeviceSides, runs protocol.rounds rounds in
/// protocol.order (flags below protocol.clock_floor x device.max_sm_clock_mhz), then, when `check` is given,
/// checks every side's output after one more (untimed) sample of it. result.protocol is
/// protocol.to_json(). An isolated protocol (v1, v2) goes to measure_isolated() (bench/isolated_sides.hpp) instead,
/// with the same result type. Throws WatchdogTimeout or Error (kCuda, kCublas, ...) from the sides: after a
/// sticky CUDA error the caller must stop timing in this process.
RoundsResult measure_sides(const UtilKernels& util, const DeviceInfo& device, const MeasureProtocol& protocol,
                           cudaStream_t stream, std::vector<Side> sides, const OutputCheck* check = nullptr);

/// A timing function for screening one launch closure under `protocol` with only `rounds` rounds
/// (one side, no output check): measure_sides(...).sides[0].timing(). Same type as
/// bench/cublaslt_baseline.hpp's ScreenTimer, so cuBLASLt's "tuned" algorithm can be chosen under
/// the protocol it is then compared in.
std::function<Timing(const std::function<void(cudaStream_t)>&)> screen_timer(const UtilKernels& util,
                                                                             const DeviceInfo& device,
                                                                             MeasureProtocol protocol,
                                                                             cudaStream_t stream, int rounds = 5);

}  // namespace dgt
