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

inline constexpr int kGroupedSideGrouped = 0, kGroupedSideLoop = 1, kGroupedSideDense = 2, kGroupedSideVs = 3;
inline constexpr const char* kGroupedVsLabel = "grouped-vs";

/// One measured grouped problem: the engine's result with the sides in this order: 0 the grouped kernel, 1 the
/// per-group cuBLASLt loop, 2 the dense kernel over the total M (absent when measured without it: the gate's grouped
/// lines), and 3 (only when vs_config_key is set) the grouped kernel of a second config, labelled kGroupedVsLabel.
struct GroupedCompareShape {
  GroupedProblem problem;
  std::string name;  ///< a shapes file's name= (empty for `compare --grouped`)
  std::string config_key, dense_config_key;
  /// For a shapes file's grouped line, how the loader chose config_key (dgt::GroupedGemmChoice::source: "db",
  /// "db-other-protocol", "ladder", "nearest", "ladder-other-protocol", "nearest-other-protocol" or "default");
  /// empty for `compare --grouped`'s explicit --config.
  std::string config_source;
  std::string tuned_key;  ///< the grouped problem key the winner was tuned on; empty for the default rule
  std::string note;       ///< why the line was not measured, or failed; empty when measured and verified
  std::string vs_config_key;  ///< the grouped-vs side's config; empty: no such side
  RoundsResult result;
  std::string protocol_name;  ///< e.g. "cold-l2-v2"; "isolated-v1" / "isolated-v2": ratios of medians, no interval
  int loop_calls = 0, loop_padded = 0;
  std::string loop_algos;

  /// True when the rounds ran (the grouped and the loop sides have samples).
  bool measured() const { return result.side_count() > kGroupedSideLoop && !result.samples.empty(); }
  /// measured() and the grouped kernel's output checked and right after the rounds.
  bool verified() const;
  /// As a gate record's status: "ok" (verified, and the loop's output right or not checked), "verify_failed" (the
  /// grouped kernel's output is wrong or was not checked), "error" (not measured, or the loop's output is wrong).
  std::string status() const;
};

/// One row per shape (the columns of docs/schemas/dgtune-compare-grouped.schema.json; a shapes file's grouped lines
/// add name, config_source and tuned_key, and note, when any shape has a config_source: `dgtune compare --shapes`,
/// whose document is dgtune-compare): the problem, each side's
/// median us, TFLOPS over real rows (2 x sum(m_g) x N x K / grouped us), x_loop = loop us / grouped us and x_dense =
/// dense us / grouped us (paired rounds: stats::compare_paired's median ratio and interval; isolated-v1/v2: the ratio
/// of the medians, no interval), each side's median SM clock, the output checks and the loop's algorithms. When any
/// shape has a grouped-vs side, seven more columns (vs_config, vs_us, x_vs = grouped-vs us / grouped us with x_vs_lo
/// and x_vs_hi by the same statistics, vs_sm_clock_mhz_median, vs_check; null for a shape without the side);
/// otherwise the table is exactly the three-side table. A shape that was not measured (measured() false) has its
/// problem, config and note and null measurement cells.
std::vector<report::Table> grouped_compare_tables(const std::vector<GroupedCompareShape>& shapes,
                                                  const stats::PairedOptions& opts, const std::string& title);

/// The summary of a shapes file's grouped lines (`dgtune compare --shapes`), rows {what, value}: how many lines were
/// measured and verified and how many not; the geomean and the minimum of x_loop over the masked lines that were (with
/// their count); then, per contiguous family (the same G, N, K, scale and accum), in file order, one row per verified
/// line: "TFLOPS <family> M_sum <total M> (<source>)" with its TFLOPS over real rows. Nothing else is derived: a line
/// on the tuned ladder (source "db") and one between its points ("ladder", "nearest") sit side by side. Lines that
/// were not measured or not verified count in neither statistic.
report::Table grouped_summary_table(const std::vector<GroupedCompareShape>& shapes, const stats::PairedOptions& opts);

}  // namespace dgt
