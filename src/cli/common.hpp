// Helpers shared by the subcommands: problem options, output format, winner tables.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tune/session.hpp"
#include "report/table.hpp"

namespace dgt::cli {

/// --m --n --k [--lda --ldb --ldd --a --b --accum] (leading dims default to tight).
struct ProblemOptions {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  std::string a = "e4m3", b = "e4m3", accum = "promote";
  void add(CLI::App& cmd);
  /// Builds and validates the problem. Throws Error(kInvalid/kUsage) naming the operand and rule.
  Problem problem() const;
};

/// Adds --format table|csv|json|md (default table) bound to `out`.
void add_format_option(CLI::App& cmd, std::string& out);

/// The sweep's final table: one row per shape with the winner and cuBLASLt beside it.
report::Table winners_table(const std::vector<ShapeOutcome>& outcomes, const std::string& title);

/// One row per trial (used by `run`).
report::Table trial_table(const std::vector<TrialRecord>& trials, const std::string& title);

/// Baseline rows (default, tuned).
report::Table baseline_table(const std::vector<BaselineRecord>& rows, const std::string& title);

}  // namespace dgt::cli
