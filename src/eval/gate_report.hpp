// What `dgtune gate` and `dgtune history` print and write: the per-shape table, JUnit XML, the markdown summary
// for a pull request (its table rendered by report/), the history table and the record summary. They render a
// decision (eval/gate_decision.hpp); nothing here decides.
#pragma once

#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"
#include "eval/gate_decision.hpp"
#include "eval/gate_record.hpp"
#include "report/table.hpp"

namespace dgt::gate {

/// The per-shape table (baseline ratio, now ratio, change with interval, absolute times, verdict).
report::Table gate_table(const GateReport& r, const std::string& title);
/// JUnit XML: one <testsuite name="dgtune-gate"> with one <testcase> per shape; regression and
/// verify-failed are <failure>, error is <error>, new is <skipped>. Attributes XML-escaped.
std::string junit_xml(const GateReport& r);
/// A markdown summary for a PR comment: a headline with the counts, the failing shapes first, the
/// software differences, then the full table.
std::string markdown_summary(const GateReport& r);
/// `dgtune history`: one row per run of the shape, oldest first.
report::Table history_table(const std::vector<GateHistoryPoint>& points, const std::string& title);

/// The `dgtune gate --record` summary: one row per shape (config, medians, ratio, rounds).
report::Table record_table(const GateRecord& r, const std::string& title);

}  // namespace dgt::gate
