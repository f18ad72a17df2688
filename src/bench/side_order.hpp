// The order in which the sides of one round of the interleaved engine run (bench/rounds.hpp). The engine's
// protocols (cold-l2-v2, hot-graph-v1) use the balanced Williams design; the fixed and reversed orders exist for
// the protocol study (docs/measurement.md: does the order of the sides favour one of them?) and are recorded in the
// protocol's JSON. Host only, no CUDA: unit-tested.
#pragma once

#include <string_view>
#include <vector>

namespace dgt {

/// How the sides of a round are ordered.
enum class SideOrder {
  kWilliams,  ///< round_order(): every side at every position, and after every other side, equally often
  kFixed,     ///< 0, 1, ..., K-1 every round (compare: dgtune first, then cuBLASLt-tuned, ...)
  kReversed,  ///< K-1, ..., 1, 0 every round (compare: dgtune last, right after cuBLASLt-tuned)
};

/// "williams" / "fixed" / "reversed" (the values of `compare --side-order` and of the protocol JSON's "order").
const char* to_string(SideOrder o);
/// Inverse of to_string(SideOrder); throws Error(kUsage) naming `option` and the choices.
SideOrder parse_side_order(std::string_view s, std::string_view option = "--side-order");

/// The order of the K sides in round `round` (0-based) under `order`: a permutation of 0..K-1. kWilliams is
/// round_order(sides, round). Throws Error(kInternal) for sides < 1 or round < 0.
std::vector<int> side_order(SideOrder order, int sides, int round);

}  // namespace dgt
