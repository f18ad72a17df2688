// The table of `dgtune compare --grouped` (eval/grouped_compare.hpp), built from measured rounds: GPU-free, so unit
// tests build it from synthetic samples.
#pragma once

#include <string>
#include <vector>

#include "bench/rounds.hpp"
#include "problem/grouped_problem.hpp"
#include "report/table.hpp"
#include "stats/stats.hpp"

namespace dgt {

/// One measured grouped problem: the engine's result with the sides in this order: 0 the grouped kernel, 1 the
/// per-group cuBLASLt loop, 2 the dense kernel over the total M, and 3 (only when vs_config_key is set) the grouped
/// kernel of a second config, labelled kGroupedVsLabel.
struct GroupedCompareShape {
  GroupedProblem problem;
  std::string config_key, dense_config_key;
  std::string vs_config_key;  ///< the grouped-vs side's config; empty: no such side
  RoundsResult result;
  std::string protocol_name;  ///< e.g. "cold-l2-v2"; "isolated-v1": ratios of medians, no interval
  int loop_calls = 0, loop_padded = 0;
  std::string loop_algos;
};

inline constexpr int kGroupedSideGrouped = 0, kGroupedSideLoop = 1, kGroupedSideDense = 2, kGroupedSideVs = 3;
inline constexpr const char* kGroupedVsLabel = "grouped-vs";

/// One row per shape (the columns of docs/schemas/dgtune-compare-grouped.schema.json): the problem, each side's
/// median us, TFLOPS over real rows (2 x sum(m_g) x N x K / grouped us), x_loop = loop us / grouped us and x_dense =
/// dense us / grouped us (paired rounds: stats::compare_paired's median ratio and interval; isolated-v1: the ratio
/// of the medians, no interval), each side's median SM clock, the output checks and the loop's algorithms. When any
/// shape has a grouped-vs side, seven more columns (vs_config, vs_us, x_vs = grouped-vs us / grouped us with x_vs_lo
/// and x_vs_hi by the same statistics, vs_sm_clock_mhz_median, vs_check; null for a shape without the side);
/// otherwise the table is exactly the three-side table.
std::vector<report::Table> grouped_compare_tables(const std::vector<GroupedCompareShape>& shapes,
                                                  const stats::PairedOptions& opts, const std::string& title);

}  // namespace dgt
