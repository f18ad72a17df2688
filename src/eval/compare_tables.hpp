// The tables of `dgtune compare` (measured now, or between two DBs from stored samples): the statistics
// (stats/stats.hpp) of each shape's interleaved rounds, laid out as report/ tables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/rounds.hpp"
#include "stats/stats.hpp"
#include "db/tuning_db_reader.hpp"
#include "report/table.hpp"

namespace dgt {

/// One shape of a compare: what ran and the engine's result (sides kSideDgtune, cublaslt-default,
/// cublaslt-tuned; a side may be missing, e.g. cuBLASLt refused the shape).
struct CompareShape {
  Problem problem;
  std::string name;
  std::string config_key;
  std::string config_source;           ///< db | nearest | default, plus " (older kernel)" when so
  std::string tuned_algo;              ///< cuBLASLt-tuned algorithm text
  std::optional<RoundsResult> result;  ///< empty: not measured (note says why)
  std::string note;
};

/// Per-shape table and summary (geomean speedup vs cuBLASLt-tuned and default, counts per verdict).
std::vector<report::Table> compare_tables(const std::vector<CompareShape>& shapes, const stats::PairedOptions& opts,
                                          const std::string& title);

/// A RoundsResult rebuilt from a stored measurement (flags as stored; summaries recomputed).
RoundsResult rounds_from_stored(const StoredMeasurement& m);
/// The stored form of a compare shape's result (sides: config for kSideDgtune, provider otherwise).
StoredMeasurement stored_from_compare(const CompareShape& c, const std::string& protocol_name, int heuristic_count);

/// `compare --between`: for every (problem key, protocol) stored in both A and B, each DB's speedup of
/// dgtune over cuBLASLt-tuned (paired per round, interval of opts.method) and the change B vs A of
/// that speedup: Moses' two-sample interval of the per-round log-ratios (independent runs, so not
/// paired across DBs), verdict with the same margin ("faster" = B's dgtune gained on cuBLASLt-tuned).
/// Problems stored in only one DB are listed in a third table.
std::vector<report::Table> between_tables(const std::vector<StoredMeasurement>& a,
                                          const std::vector<StoredMeasurement>& b, const stats::PairedOptions& opts,
                                          const std::string& title);

}  // namespace dgt
