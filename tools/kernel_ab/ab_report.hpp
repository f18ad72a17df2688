// The report parts dgtune_kernel_ab's dense (kernel_ab.cpp) and grouped (grouped_ab.cpp) A/B share: each variant
// side against "old", the one-line verdict per problem, and the geometric mean over problems.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/rounds.hpp"
#include "stats/stats.hpp"

namespace dgt {

/// The variant sides (indices 1 .. sides - 2; side 0 is "old", the last "new") against old: per label the paired
/// speedup with its 95% interval, the registers of its kernel and whether its output equals old's bitwise (JSON),
/// and "  NAME/old 1.0123x" for each (text).
struct VariantReport {
  nlohmann::json json = nlohmann::json::object();
  std::string text;
};
inline VariantReport variant_report(const RoundsResult& r, const std::vector<std::string>& labels,
                                    const std::vector<int>& registers, const std::vector<std::vector<uint8_t>>& outs) {
  VariantReport v;
  for (size_t j = 1; j + 1 < labels.size(); ++j) {
    const PairedTimes t = r.paired(int(j), 0);
    const stats::PairedComparison c = stats::compare_paired(t.x_us, t.y_us);
    v.json[labels[j]] = {{"speedup_over_old", c.speedup_x_over_y()},
                         {"lo", c.speedup_x_over_y_lo()},
                         {"hi", c.speedup_x_over_y_hi()},
                         {"registers", registers[j]},
                         {"bitwise_equal_to_old", outs[j] == outs.front()}};
    v.text += fmt::format("  {}/old {:.4f}x", labels[j], c.speedup_x_over_y());
  }
  return v;
}

/// Prints `line` (the problem and each side's time) with new/old and its interval, the verdict, the bitwise
/// equality of new and old, and the variants' text; flushes stdout.
inline void print_ab_line(const std::string& line, const stats::PairedComparison& cmp, bool bitwise,
                          const std::string& variant_text) {
  fmt::print("{}  new/old {:.4f}x [{:.4f}, {:.4f}] {}{}{}\n", line, cmp.speedup_x_over_y(), cmp.speedup_x_over_y_lo(),
             cmp.speedup_x_over_y_hi(), stats::to_string(cmp.verdict), bitwise ? ", outputs bitwise equal" : "",
             variant_text);
  std::fflush(stdout);
}

/// Geometric mean of positive values; 0 for none.
inline double geomean(const std::vector<double>& xs) {
  double log_sum = 0;
  for (double x : xs) log_sum += std::log(x);
  return xs.empty() ? 0 : std::exp(log_sum / double(xs.size()));
}

}  // namespace dgt
