// The one description of a timing protocol: what one sample is and every setting that changes what a number
// means. Six protocols, each named by its kind and version:
//   cold-l2-v1  the sweep's adaptive single-side timer (bench/protocol.hpp Timer): samples until the median's
//               relative standard error is small enough;
//   cold-l2-v2  the interleaved engine (bench/rounds.hpp, bench/device_sides.hpp), cold L2, fixed rounds;
//   cold-l2-v3  cold-l2-v2 plus a queue tail of tiny kernels after each round (tail_kernels), so that no sample's
//               time depends on its place in the round;
//   hot-graph-v1 the interleaved engine, warm L2, CUDA-graph replays;
//   isolated-v1 one side at a time, back-to-back launches after a clean L2 flush (bench/isolated_sides.hpp): the
//               absolute-TFLOPS protocol; `compare --protocol isolated` only, never stored in a tuning DB;
//   isolated-v2 one side at a time, one launch per sample after a zero fill of 8e9 bytes: the procedure of
//               DeepGEMM's published numbers (deep_gemm/testing/bench.py, bench_kineto), for comparing with them;
//               `compare --protocol isolated-v2` only, never stored.
// All but the isolated ones are stored by name with every trial, baseline and measurement made under them. Numbers of
// different protocols are not comparable sample for sample. Host only, no CUDA: unit-tested.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bench/side_order.hpp"

namespace dgt {

/// What one sample of a side measures.
enum class ProtocolKind {
  /// Per sample, queued back to back: flush L2 (write, then read, a buffer of flush_factor x L2, so
  /// L2 holds only clean unrelated lines), event, ONE launch, event. Operands come from HBM.
  kColdL2,
  /// Per side, before round 0: warm-up launches (any first-use allocation happens there), then a
  /// CUDA graph capturing graph_launches back-to-back launches. Per sample: event, one replay of the
  /// graph, event; time per launch = elapsed / graph_launches. L2 is warm (every side reads the same
  /// operands). What a serving stack that replays graphs sees.
  kHotGraph,
  /// One side at a time (no rounds across sides). Version 1, per sample, queued back to back after a lead-in wait:
  /// flush L2 as kColdL2 does, event, launches_per_sample back-to-back launches of the one kernel, event; time per
  /// launch = elapsed / launches_per_sample. The first launch reads its operands from HBM, later ones find whatever
  /// of them L2 still holds: what a benchmark that loops over one kernel measures (absolute TFLOPS), not a paired
  /// ratio. Version 2 (fill_bytes > 0), per sample: zero-fill fill_bytes of device memory, event, ONE launch, event;
  /// 32 samples queued per synchronisation.
  kIsolated,
};

/// "cold-l2" / "hot-graph" / "isolated" (the values of --protocol).
const char* to_string(ProtocolKind k);
/// Inverse of to_string(ProtocolKind); throws Error(kUsage) naming the choices.
ProtocolKind parse_protocol_kind(std::string_view s);

/// Settings of one protocol. Everything that changes what a number means is in to_json(), which is stored
/// with every measurement; a change of the procedure itself bumps the version (the name is
/// "<kind>-v<version>").
struct MeasureProtocol {
  ProtocolKind kind = ProtocolKind::kColdL2;
  /// cold-l2 only: the sweep's adaptive single-side timer (cold-l2-v1) instead of the engine's rounds (v2).
  bool adaptive = false;

  int warmup = 3;                ///< untimed launches per side first (before capture for hot-graph; isolated-v2:
                                 ///< untimed samples, each a fill and a launch)
  double flush_factor = 2.0;     ///< cold-l2: flush buffer = flush_factor x L2 (at least 64 MiB; l2_flush_bytes)
  double watchdog_seconds = 20;  ///< a launch (v1) or round (engine) still running after this is a timeout

  // The engine (cold-l2-v2, hot-graph-v1).
  int rounds = 20;             ///< every side runs once per round, in the order of side_order(order, ...)
                               ///< (isolated-v1 / v2: samples per side)
  int graph_launches = 20;     ///< hot-graph: launches captured in each side's graph
  double clock_probe_us = 20;  ///< spin of the SM clock probe queued right after each sample
  double lead_in_us = 50;      ///< busy wait queued at the start of each round so the host runs ahead of the GPU
  double clock_floor = 0.75;   ///< a sample whose clock is below clock_floor x the device's max SM clock is flagged
  /// The order of the sides in each round. Williams is the protocol; fixed and reversed are the protocol study's
  /// variants (recorded in to_json()'s "order"; the name does not change, so `compare --save` refuses them).
  SideOrder order = SideOrder::kWilliams;
  /// An idle gap before every sample's start event (after its flush): a one-SM busy wait of gap_us on the stream,
  /// so the round stays queued ahead of the GPU and the gap is exact in GPU time. 0 = none (the protocol); > 0 is a
  /// study variant, in to_json() as "gap_us".
  double gap_us = 0;
  /// cold-l2-v3: this many tiny kernels (one-SM busy waits of tail_kernel_us) queued after each round's last sample,
  /// so that every sample runs with work still queued behind it, as in a stream that serves a model. Without them
  /// (cold-l2-v2) a sample's time depends on its place in the round: on an H100, 9-20 us GEMMs timed 5-8% slower in
  /// the round's slowest place than in its fastest, kernel durations equal (CUPTI), and 16 or more such kernels cut
  /// that to under 1% (results/h200/queue-tail-2026-12-06.md). 0 = none (v2); only the cold-l2 engine.
  int tail_kernels = 0;
  double tail_kernel_us = 1;

  // isolated-v1: back-to-back launches timed by one event pair per sample.
  int launches_per_sample = 20;
  /// isolated-v2: bytes of device memory zero-filled (a fill kernel on the SMs) before every sample in place of the
  /// write+read flush; 0 for every other protocol. DeepGEMM's benchmark fills 8e9 bytes before every timed call,
  /// which its comment calls giving the GPU some chill time without going idle: at 4-5 TB/s that is ~2 ms of
  /// memory-bound work between kernels, so a long GEMM starts at a clock that back-to-back launches (isolated-v1, at
  /// the power limit) never reach. Also flushes L2 (8e9 bytes >> 50 MB).
  int64_t fill_bytes = 0;

  // The adaptive timer (cold-l2-v1): batches of 10 samples until min_samples are taken and the median's
  // relative standard error is under target_rse, or max_samples / max_seconds is reached.
  int min_samples = 10;
  int max_samples = 300;
  double target_rse = 0.01;
  double max_seconds = 2.0;

  static MeasureProtocol cold_l2() { return {}; }
  /// cold-l2-v3: cold-l2-v2 with a queue tail of kV3TailKernels kernels after each round (tail_kernels).
  static constexpr int kV3TailKernels = 32;
  static MeasureProtocol cold_l2_v3() {
    MeasureProtocol p;
    p.tail_kernels = kV3TailKernels;
    return p;
  }
  static MeasureProtocol hot_graph() {
    MeasureProtocol p;
    p.kind = ProtocolKind::kHotGraph;
    return p;
  }
  /// cold-l2-v1, the sweep's adaptive timer.
  static MeasureProtocol cold_l2_adaptive() {
    MeasureProtocol p;
    p.adaptive = true;
    return p;
  }
  /// isolated-v1. Its lead-in is 200 us: the host queues launches_per_sample launches after each sample's sync,
  /// and the wait keeps it ahead of the GPU.
  static MeasureProtocol isolated() {
    MeasureProtocol p;
    p.kind = ProtocolKind::kIsolated;
    p.lead_in_us = 200;
    return p;
  }
  /// isolated-v2, DeepGEMM's procedure (deep_gemm/testing/bench.py, bench_kineto with flush_l2): per sample a zero
  /// fill of kV2FillBytes, then one launch; 30 untimed samples of the same form first (bench_kineto profiles the
  /// second of two passes of 30). Differences from it: a cudaEvent pair around the launch (it reads CUPTI's kernel
  /// duration; the event pair adds the launch's start latency, a microsecond or two, to our side and every other
  /// side alike), the median (it reports the mean), and the fill is dgtune's 16-bit fill kernel (torch runs its own
  /// fill kernel; both on the SMs, memory-bound).
  static constexpr int64_t kV2FillBytes = 8'000'000'000;
  static MeasureProtocol isolated_v2() {
    MeasureProtocol p;
    p.kind = ProtocolKind::kIsolated;
    p.fill_bytes = kV2FillBytes;
    p.launches_per_sample = 1;
    p.warmup = 30;
    p.rounds = 30;
    p.lead_in_us = 0;
    return p;
  }
  /// The protocol `compare` measures with for kind k: cold-l2-v2, hot-graph-v1 or isolated-v1.
  static MeasureProtocol of(ProtocolKind k) {
    return k == ProtocolKind::kColdL2 ? cold_l2() : k == ProtocolKind::kHotGraph ? hot_graph() : isolated();
  }
  /// A measuring protocol by kind ("cold-l2", "hot-graph", "isolated": as of()) or by name ("cold-l2-v2",
  /// "cold-l2-v3", "hot-graph-v1", "isolated-v1", "isolated-v2"). The adaptive cold-l2-v1 is the sweep's timer,
  /// not one of these.
  /// Throws Error(kUsage) naming the choices.
  static MeasureProtocol named(std::string_view s);

  /// 1 for cold-l2-v1, hot-graph-v1 and isolated-v1, 2 for cold-l2-v2 and isolated-v2 (a zero fill), 3 for
  /// cold-l2-v3 (a queue tail).
  int version() const {
    if (kind == ProtocolKind::kIsolated) return fill_bytes > 0 ? 2 : 1;
    if (kind != ProtocolKind::kColdL2 || adaptive) return 1;
    return tail_kernels > 0 ? 3 : 2;
  }
  /// "cold-l2-v1" / "cold-l2-v2" / "cold-l2-v3" / "hot-graph-v1" / "isolated-v1" / "isolated-v2": the key winners
  /// and comparisons are grouped by.
  std::string name() const;
  /// True for the settings of the protocol as named: Williams order and no gap. The study variants (another
  /// order, a gap) are measured under the same name and recorded in to_json(), but never stored.
  bool is_standard() const { return order == SideOrder::kWilliams && gap_us == 0; }
  /// The JSON stored with every measurement, keys sorted: cold-l2-v1 {"name", "flush", "flush_factor_l2",
  /// "warmup", "min_samples", "max_samples", "target_rse", "max_seconds", "timer", "statistic"}; the engine's
  /// {"name", "kind", "version", ...every field that applies..., "order", "gap_us" only when > 0 and
  /// "tail_kernels" / "tail_kernel_us" only for cold-l2-v3 (so the older protocols' JSON is what it was)};
  /// isolated-v1's {"name", "kind", "version", "rounds", "launches_per_sample", "warmup", "flush", "flush_factor_l2",
  /// "clock_*", "lead_in_us", "l2", "order", "timer", "statistic"}; isolated-v2's the same with "fill_bytes" and
  /// "flush": "zero fill of fill_bytes".
  std::string to_json() const;
  /// Inverse of to_json() (missing optional fields take the defaults). Throws Error(kInvalid) on text that is
  /// not JSON, an unknown kind, or a version this build does not implement.
  static MeasureProtocol from_json(const std::string& text);
  /// Throws Error(kUsage) naming the field when a setting is out of range (rounds < 1, gap_us < 0 or > 1e6, ...),
  /// when isolated-v1/v2 is given a round setting (an order other than Williams, a gap: it has no rounds), when
  /// isolated-v2 is given more than one launch per sample, or a fill on another protocol.
  void validate() const;
};

/// The choices of MeasureProtocol::named, for option checks and messages.
inline constexpr const char* kMeasuringProtocols[] = {"cold-l2",      "cold-l2-v2", "cold-l2-v3",  "hot-graph",
                                                      "hot-graph-v1", "isolated",   "isolated-v1", "isolated-v2"};

/// True when a stored measurement's protocol `name` (e.g. "cold-l2-v3") is selected by `filter`: a kind
/// ("cold-l2") selects every version of it, a name only itself.
bool protocol_selected(std::string_view filter, std::string_view name);

/// Bytes of the L2 flush buffer of a cold-l2 protocol on a device with `l2_bytes` of L2: flush_factor x L2,
/// at least 64 MiB, a multiple of 16 (the flush kernel's 16-byte accesses). The one place this is computed.
int64_t l2_flush_bytes(const MeasureProtocol& p, int64_t l2_bytes);

}  // namespace dgt
