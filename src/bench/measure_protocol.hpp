// The protocols of the interleaved measurement engine (bench/rounds.hpp, bench/device_sides.hpp):
// what one sample of one side is, and the settings stored (as JSON) with every measurement made
// under them. Host only, no CUDA: unit-tested.
//
// The sweep's adaptive single-side timer (bench/protocol.hpp, "cold-l2-v1") is a different,
// older protocol; its numbers are not comparable sample for sample with these.
#pragma once

#include <string>
#include <string_view>

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
};

/// "cold-l2" / "hot-graph" (the values of --protocol).
const char* to_string(ProtocolKind k);
/// Inverse of to_string(ProtocolKind); throws Error(kUsage) naming the choices.
ProtocolKind parse_protocol_kind(std::string_view s);

/// Settings of one engine protocol. Everything that changes what a number means is in to_json(),
/// which is stored with every measurement; a change of the procedure itself bumps the version
/// (the name is "<kind>-v<version>").
struct MeasureProtocol {
  static constexpr int kColdL2Version = 2;  ///< v1 is the sweep Timer's adaptive single-side protocol
  static constexpr int kHotGraphVersion = 1;

  ProtocolKind kind = ProtocolKind::kColdL2;
  int rounds = 20;               ///< every side runs once per round, in the order of round_order()
  int warmup = 3;                ///< untimed launches per side before round 0 (before capture for hot-graph)
  int graph_launches = 20;       ///< hot-graph: launches captured in each side's graph
  double flush_factor = 2.0;     ///< cold-l2: flush buffer = flush_factor x L2 (at least 64 MiB)
  double clock_probe_us = 20;    ///< spin of the SM clock probe queued right after each sample
  double lead_in_us = 50;        ///< busy wait queued at the start of each round so the host runs ahead of the GPU
  double clock_floor = 0.75;     ///< a sample whose clock is below clock_floor x the device's max SM clock is flagged
  double watchdog_seconds = 20;  ///< a round still running after this is a timeout (context unusable)

  static MeasureProtocol cold_l2() { return {}; }
  static MeasureProtocol hot_graph() {
    MeasureProtocol p;
    p.kind = ProtocolKind::kHotGraph;
    return p;
  }
  static MeasureProtocol of(ProtocolKind k) { return k == ProtocolKind::kColdL2 ? cold_l2() : hot_graph(); }

  int version() const { return kind == ProtocolKind::kColdL2 ? kColdL2Version : kHotGraphVersion; }
  /// "cold-l2-v2" / "hot-graph-v1": the key winners and comparisons are grouped by.
  std::string name() const;
  /// {"name":"cold-l2-v2","kind":"cold-l2","version":2,...every field that applies...}; keys sorted.
  std::string to_json() const;
  /// Inverse of to_json() (missing optional fields take the defaults). Throws Error(kInvalid) on
  /// text that is not JSON, an unknown kind, or a version this build does not implement.
  static MeasureProtocol from_json(const std::string& text);
  /// Throws Error(kUsage) naming the field when a setting is out of range (rounds < 1, ...).
  void validate() const;
};

}  // namespace dgt
