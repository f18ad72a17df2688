#include "bench/side_order.hpp"

#include <algorithm>
#include <numeric>

#include "bench/rounds.hpp"
#include "core/error.hpp"

namespace dgt {

const char* to_string(SideOrder o) {
  switch (o) {
    case SideOrder::kWilliams: return "williams";
    case SideOrder::kFixed: return "fixed";
    case SideOrder::kReversed: return "reversed";
  }
  return "?";
}

SideOrder parse_side_order(std::string_view s, std::string_view option) {
  if (s == "williams") return SideOrder::kWilliams;
  if (s == "fixed") return SideOrder::kFixed;
  if (s == "reversed") return SideOrder::kReversed;
  DGT_THROW(ErrorKind::kUsage, "{} '{}': expected williams (balanced, the default), fixed (side 0 first every round) or "
            "reversed (side 0 last every round)", option, s);
}

std::vector<int> side_order(SideOrder order, int sides, int round) {
  if (order == SideOrder::kWilliams) return round_order(sides, round);
  if (sides < 1) DGT_THROW(ErrorKind::kInternal, "side_order: {} sides", sides);
  if (round < 0) DGT_THROW(ErrorKind::kInternal, "side_order: round {}", round);
  std::vector<int> v(static_cast<size_t>(sides));
  std::iota(v.begin(), v.end(), 0);
  if (order == SideOrder::kReversed) std::reverse(v.begin(), v.end());
  return v;
}

}  // namespace dgt
