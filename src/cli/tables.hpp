// The tables the subcommands print (they build report::Table rows; report/ renders them).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/table.hpp"
#include "space/search_space.hpp"
#include "tune/session.hpp"

namespace dgt::cli {

/// The sweep's final table: one row per shape with the winner and cuBLASLt beside it.
report::Table winners_table(const std::vector<ShapeOutcome>& outcomes, const std::string& title);

/// One row per trial.
report::Table trial_table(const std::vector<TrialRecord>& trials, const std::string& title);

/// Baseline rows (default, tuned).
report::Table baseline_table(const std::vector<BaselineRecord>& rows, const std::string& title);

/// `dgtune run`: the trial, then the cuBLASLt baselines when measured.
std::vector<report::Table> run_tables(const TrialRecord& trial,
                                      const std::optional<std::pair<BaselineRecord, BaselineRecord>>& baselines,
                                      const std::string& device_name);

/// `dgtune space`: every candidate (show = all | kept | rejected) with budgets, estimate and rejection reason.
report::Table space_table(const SearchSpace& space, const Enumeration& en, const Problem& p, int sm_count,
                          const std::string& show);

/// `dgtune info`: versions, paths and the facts of device `ordinal` (no GPU: says so).
report::Table info_table(int ordinal);

}  // namespace dgt::cli
