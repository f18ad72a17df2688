#include "eval/gate_report.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "stats/stats.hpp"

namespace dgt::gate {

// ---- writers ------------------------------------------------------------------------------------

namespace {

using report::Cell;
using report::Number;

Cell num(double v, int precision) {
  if (!std::isfinite(v) || v == 0) return std::monostate{};
  return Number{v, precision};
}

Cell pct(double fraction) {
  if (!std::isfinite(fraction)) return std::monostate{};
  return Number{fraction * 100, 1};
}

/// The slowdown of a ratio test as an estimate with its interval, "+2.1% [-0.4%, +4.6%]" (an infinite end: "inf").
std::string change_text(const ShapeDecision& d) {
  if (!d.ratio_test) return "-";
  const auto& t = *d.ratio_test;
  auto p = [](double log) {
    return std::isfinite(log) ? fmt::format("{:+.1f}%", (std::exp(log) - 1) * 100) : std::string("inf");
  };
  return fmt::format("{} [{}, {}]", p(t.shift_log), p(t.interval.lo), p(t.interval.hi));
}

/// exp(log) - 1 as percent, empty when the interval end is infinite (too few rounds).
Cell log_pct(double log) {
  if (!std::isfinite(log)) return std::monostate{};
  return Number{(std::exp(log) - 1) * 100, 1};
}

/// x = cuBLASLt-tuned us / dgtune us from a stored time ratio dgtune / cuBLASLt-tuned (gate_result, schema 6).
double x_of_stored_ratio(double ratio) { return std::isfinite(ratio) && ratio > 0 ? 1 / ratio : 0; }

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          o += ' ';
        else
          o += c;
    }
  }
  return o;
}

std::string md_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|')
      o += "\\|";
    else if (c == '\n')
      o += ' ';
    else
      o += c;
  }
  return o;
}

}  // namespace

report::Table gate_table(const GateReport& r, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"problem_key", "problem", false},
               {"config", "config", false},
               {"x_tuned_baseline", "x base"},
               {"x_tuned_now", "x now"},
               {"slowdown_pct", "slowdown %"},
               {"slowdown_lo_pct", "lo %"},
               {"slowdown_hi_pct", "hi %"},
               {"p_value", "p"},
               {"dgtune_baseline_us", "us base"},
               {"dgtune_now_us", "us now"},
               {"dgtune_change_pct", "dgtune us %"},
               {"cublas_change_pct", "cuBLASLt us %"},
               {"verdict", "verdict", false},
               {"reason", "reason", false}};
  for (const ShapeDecision& d : r.shapes) {
    const bool tested = d.ratio_test.has_value();
    t.rows.push_back({d.label, d.problem_key, d.config_now, num(d.x_tuned_baseline, 3), num(d.x_tuned_now, 3),
                      tested ? pct(d.ratio_test->slowdown()) : Cell{},
                      tested ? log_pct(d.ratio_test->interval.lo) : Cell{},
                      tested ? log_pct(d.ratio_test->interval.hi) : Cell{},
                      tested ? Cell{Number{d.ratio_test->p_value, 3}} : Cell{}, num(d.ours_baseline_us, 2),
                      num(d.ours_now_us, 2), d.absolute_test ? pct(d.absolute_test->slowdown()) : Cell{},
                      tested ? pct(d.cublas_change) : Cell{}, std::string(to_string(d.verdict)), d.reason});
  }
  return t;
}

std::string junit_xml(const GateReport& r) {
  const int failures = r.regressions + r.verify_failed;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"dgtune gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
                   r.shapes.size(), failures, r.errors, r.new_shapes);
  x += fmt::format("  <testsuite name=\"dgtune-gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
                   r.shapes.size(), failures, r.errors, r.new_shapes);
  x += fmt::format(
      "    <properties>\n      <property name=\"threshold\" value=\"{}\"/>\n"
      "      <property name=\"confidence\" value=\"{}\"/>\n",
      r.settings.threshold, r.settings.confidence);
  for (const auto& s : r.software_differences)
    x += fmt::format("      <property name=\"software_difference\" value=\"{}\"/>\n", xml_escape(s));
  x += "    </properties>\n";
  for (const ShapeDecision& d : r.shapes) {
    x += fmt::format("    <testcase classname=\"dgtune.gate\" name=\"{}\">\n",
                     xml_escape(d.label + " " + d.problem_key));
    const std::string msg = xml_escape(d.reason);
    switch (d.verdict) {
      case ShapeVerdict::kRegression:
      case ShapeVerdict::kVerifyFailed:
        x += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", to_string(d.verdict), msg, msg);
        break;
      case ShapeVerdict::kError:
        x += fmt::format("      <error type=\"error\" message=\"{}\">{}</error>\n", msg, msg);
        break;
      case ShapeVerdict::kNew: x += fmt::format("      <skipped message=\"{}\"/>\n", msg); break;
      default: x += fmt::format("      <system-out>{}: {}</system-out>\n", to_string(d.verdict), msg); break;
    }
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

std::string markdown_summary(const GateReport& r) {
  const int code = r.exit_code();
  const char* head = code == 0 ? "PASS" : code == 3 ? "FAIL (regression)" : "ERROR";
  std::string m = fmt::format("## dgtune gate: {}\n\n", head);
  m += fmt::format(
      "{} shapes: {} pass, {} cuBLASLt-faster (pass), {} regression, {} verify-failed, {} error, {} new. "
      "Threshold {:.1f}% slowdown of dgtune relative to cuBLASLt-tuned in the same rounds, one-sided test at "
      "confidence {}; x = cuBLASLt-tuned us / dgtune us (above 1: dgtune faster).\n\n",
      r.shapes.size(), r.passed, r.cublas_faster, r.regressions, r.verify_failed, r.errors, r.new_shapes,
      r.settings.threshold * 100, r.settings.confidence);
  bool any = false;
  for (const ShapeDecision& d : r.shapes) {
    if (!is_failure(d.verdict) && d.verdict != ShapeVerdict::kError) continue;
    if (!any) m += "### Failing shapes\n\n";
    any = true;
    m += fmt::format("- **{}** `{}`: {}: {}\n", md_escape(d.label), d.config_now, to_string(d.verdict),
                     md_escape(d.reason));
  }
  if (any) m += "\n";
  if (!r.software_differences.empty()) {
    m += "### Software differences from the baseline\n\n";
    for (const auto& s : r.software_differences) m += "- " + md_escape(s) + "\n";
    m += "\n";
  }
  // The per-shape table, rendered by report/ (no title: the headline above is the document's).
  report::Table t;
  t.columns = {{"shape", "shape", false},         {"config", "config", false},
               {"x_tuned_baseline", "x base"},       {"x_tuned_now", "x now"},
               {"slowdown", "slowdown [CI]", false}, {"dgtune_baseline_us", "us base"},
               {"dgtune_now_us", "us now"},          {"cublas_change", "cuBLASLt"},
               {"verdict", "verdict", false}};
  for (const ShapeDecision& d : r.shapes)
    t.rows.push_back({d.label, "`" + d.config_now + "`", num(d.x_tuned_baseline, 3), num(d.x_tuned_now, 3), change_text(d),
                      num(d.ours_baseline_us, 2), num(d.ours_now_us, 2),
                      d.ratio_test ? Cell{fmt::format("{:+.1f}%", d.cublas_change * 100)} : Cell{},
                      std::string(to_string(d.verdict))});
  std::ostringstream table;
  report::render(t, report::Format::kMarkdown, table);
  return m + table.str();
}

report::Table history_table(const std::vector<GateHistoryPoint>& points, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"run_id", "run"},
               {"created_at", "when", false},
               {"device", "device", false},
               {"kernel_hash", "kernel", false},
               {"shape", "shape", false},
               {"problem_key", "problem", false},
               {"config", "config", false},
               {"x_tuned_baseline", "x base"},
               {"x_tuned_now", "x now"},
               {"slowdown_pct", "slowdown %"},
               {"slowdown_lo_pct", "lo %"},
               {"slowdown_hi_pct", "hi %"},
               {"dgtune_now_us", "us now"},
               {"cublas_tuned_now_us", "cuBLASLt us"},
               {"verdict", "verdict", false},
               {"exit_code", "run exit"}};
  for (const GateHistoryPoint& h : points) {
    const GateResultRow& g = h.result;
    t.rows.push_back({h.run_id, h.created_at, h.device_name, h.kernel_hash, g.problem.label(), h.problem_key,
                      g.config_key, num(x_of_stored_ratio(g.ratio_baseline), 3), num(x_of_stored_ratio(g.ratio_now), 3),
                      pct(g.slowdown), pct(g.slowdown_lo), pct(g.slowdown_hi), num(g.ours_now_us, 2),
                      num(g.tuned_now_us, 2), g.verdict, static_cast<int64_t>(h.exit_code)});
  }
  return t;
}

report::Table record_table(const GateRecord& r, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"config", "config", false},
               {"source", "source", false},
               {"status", "status", false},
               {"rounds", "rounds"},
               {"dgtune_us", "dgtune us"},
               {"cublas_tuned_us", "cuBLASLt-tuned us"},
               {"cublas_default_us", "cuBLASLt-default us"},
               {"x_tuned", "x tuned"},
               {"flagged", "flagged"}};
  for (const ShapeRecord& s : r.shapes) {
    int flagged = 0;
    for (bool b : s.flagged) flagged += b;
    const bool ok = s.ok() && !s.ours_us.empty();
    const bool has_tuned = ok && !s.tuned_us.empty();
    t.rows.push_back(
        {s.name.empty() ? s.problem.label() : s.name, s.config_key, s.config_source,
         s.ok() ? s.status : s.status + ": " + s.error, static_cast<int64_t>(s.rounds.size()),
         ok ? num(stats::median(s.ours_us), 2) : Cell{}, has_tuned ? num(stats::median(s.tuned_us), 2) : Cell{},
         s.default_us.empty() ? Cell{} : num(stats::median(s.default_us), 2),
         has_tuned ? num(std::exp(-stats::median(s.log_ratios())), 3) : Cell{}, static_cast<int64_t>(flagged)});
  }
  return t;
}

}  // namespace dgt::gate
