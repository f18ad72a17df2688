#include "eval/gate_decision.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace dgt::gate {

using nlohmann::json;

// ---- decision -----------------------------------------------------------------------------------

const char* to_string(ShapeVerdict v) {
  switch (v) {
    case ShapeVerdict::kPass: return "pass";
    case ShapeVerdict::kCublasFaster: return "cublas-faster";
    case ShapeVerdict::kRegression: return "regression";
    case ShapeVerdict::kVerifyFailed: return "verify-failed";
    case ShapeVerdict::kError: return "error";
    case ShapeVerdict::kNew: return "new";
  }
  return "?";
}

bool is_failure(ShapeVerdict v) { return v == ShapeVerdict::kRegression || v == ShapeVerdict::kVerifyFailed; }

int exit_code_for(int errors, int failures) { return errors > 0 ? 1 : failures > 0 ? 3 : 0; }

int GateReport::exit_code() const { return exit_code_for(errors, regressions + verify_failed); }

std::vector<std::string> GateReport::errored() const {
  std::vector<std::string> v;
  for (const ShapeDecision& d : shapes)
    if (d.verdict == ShapeVerdict::kError) v.push_back(d.label);
  return v;
}

namespace {

std::vector<double> logs(const std::vector<double>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(std::log(x));
  return out;
}


}  // namespace

ShapeDecision decide_shape(const ShapeRecord* base, const ShapeRecord& now, const GateSettings& st,
                           bool cublas_software_changed) {
  ShapeDecision d;
  d.problem = now.problem;
  d.problem_key = now.problem.key();
  d.label = now.name.empty() ? now.problem.label() : now.name;
  d.config_now = now.config_key;
  d.ours_now_us = stats::median_or_zero(now.ours_us);
  d.tuned_now_us = stats::median_or_zero(now.tuned_us);
  // log_ratios() are ln(dgtune / cuBLASLt): x is exp of minus their median (the median of the negated values).
  if (!now.ours_us.empty() && now.ours_us.size() == now.tuned_us.size())
    d.x_tuned_now = std::exp(-stats::median(now.log_ratios()));
  if (base) {
    d.config_baseline = base->config_key;
    d.ours_baseline_us = stats::median_or_zero(base->ours_us);
    d.tuned_baseline_us = stats::median_or_zero(base->tuned_us);
    if (!base->ours_us.empty() && base->ours_us.size() == base->tuned_us.size())
      d.x_tuned_baseline = std::exp(-stats::median(base->log_ratios()));
  }
  // Order of the checks: correctness, then whether there is anything to test, then the test.
  if (now.status == "verify_failed") {
    d.verdict = ShapeVerdict::kVerifyFailed;
    d.reason = "the candidate no longer verifies: " + now.error;
    return d;
  }
  if (!now.ok()) {
    d.verdict = ShapeVerdict::kError;
    d.reason = "not measured now: " + (now.error.empty() ? now.status : now.error);
    return d;
  }
  if (!base) {
    d.verdict = ShapeVerdict::kNew;
    d.reason = "not in the baseline: measured, not gated";
    return d;
  }
  if (!base->ok() || base->ours_us.empty()) {
    // A defect of the baseline, not of this build: measured and reported, not gated (an error here would fail
    // every run until the baseline is re-recorded).
    d.verdict = ShapeVerdict::kNew;
    d.reason = "the baseline has no samples for this shape (" + (base->error.empty() ? base->status : base->error) +
               "): measured, not gated; record a new baseline";
    return d;
  }
  if (now.ours_us.empty()) {
    d.verdict = ShapeVerdict::kError;
    d.reason = "no samples measured now";
    return d;
  }
  const stats::GateOptions opts{st.threshold, st.confidence, stats::ShiftMethod::kAuto};
  if (base->tuned_us.empty() || now.tuned_us.empty()) {
    // cuBLASLt does not run this shape (e.g. dimensions that are not multiples of 16): there is no ratio,
    // so dgtune's absolute time is the statistic (more exposed to clock and machine differences).
    d.absolute_test = stats::gate_test(logs(base->ours_us), logs(now.ours_us), opts);
    const bool pass = d.absolute_test->verdict == stats::GateVerdict::kPass;
    d.verdict = pass ? ShapeVerdict::kPass : ShapeVerdict::kRegression;
    d.reason = fmt::format(
        "no cuBLASLt side (cuBLASLt does not run this shape): gated on dgtune's absolute time, change "
        "{:+.1f}%, 'slowdown <= {:.1f}%' {} (p = {:.3g})",
        d.absolute_test->slowdown() * 100, st.threshold * 100, pass ? "not rejected" : "rejected",
        d.absolute_test->p_value);
    return d;
  }
  d.ratio_test = stats::gate_test(base->log_ratios(), now.log_ratios(), opts);
  d.absolute_test = stats::gate_test(logs(base->ours_us), logs(now.ours_us), opts);
  const std::vector<double> tb = logs(base->tuned_us), tn = logs(now.tuned_us);
  const double cshift = stats::hodges_lehmann_shift(tb, tn);
  const stats::Interval ci = stats::shift_interval(tb, tn, st.confidence);
  d.cublas_change = std::exp(cshift) - 1;
  d.cublas_change_lo = std::exp(ci.lo) - 1;
  d.cublas_change_hi = std::exp(ci.hi) - 1;
  const double slow = d.ratio_test->slowdown() * 100;
  // A grouped line's baseline side is the per-group cuBLASLt loop (record_of_grouped); the rule is the same.
  const char* other = now.problem.is_grouped() ? "the per-group cuBLASLt loop" : "cuBLASLt-tuned";
  if (d.ratio_test->verdict == stats::GateVerdict::kPass) {
    d.verdict = ShapeVerdict::kPass;
    d.reason = fmt::format("slowdown vs {} {:+.1f}%, 'slowdown <= {:.1f}%' not rejected (p = {:.3g})", other, slow,
                           st.threshold * 100, d.ratio_test->p_value);
    return d;
  }
  const bool absolute_held = d.absolute_test->verdict == stats::GateVerdict::kPass;
  const bool cublas_faster = ci.hi < 0;  // two-sided interval of cuBLASLt's shift entirely below 0
  if (absolute_held && cublas_faster && cublas_software_changed) {
    d.verdict = ShapeVerdict::kCublasFaster;
    d.reason = fmt::format(
        "slowdown vs {} {:+.1f}% but dgtune's absolute time changed {:+.1f}% (not a regression) while {} got faster "
        "({:+.1f}%): a cuBLASLt speed-up, not a dgtune regression",
        other, slow, d.absolute_test->slowdown() * 100, other, d.cublas_change * 100);
    return d;
  }
  d.verdict = ShapeVerdict::kRegression;
  d.reason =
      fmt::format("slower vs {} by {:+.1f}% (lower bound {:+.1f}% > {:.1f}% at confidence {}, p = {:.3g})", other,
                  slow,
                  d.ratio_test->slowdown_lower_bound() * 100, st.threshold * 100, st.confidence, d.ratio_test->p_value);
  if (!d.config_baseline.empty() && d.config_baseline != d.config_now)
    d.reason += fmt::format("; config changed from {}", d.config_baseline);
  return d;
}

GateReport decide(const GateRecord& baseline, const GateRecord& now, const GateSettings& st) {
  const auto hw = hardware_differences(baseline.hardware, now.hardware);
  if (!hw.empty()) {
    std::string list;
    for (const auto& x : hw) list += "\n  " + x;
    DGT_THROW(ErrorKind::kUsage,
              "the baseline was recorded on other hardware ({} vs {}); a gate compares one hardware identity only:{}",
              baseline.hardware.name, now.hardware.name, list);
  }
  if (!baseline.protocol.empty() && !now.protocol.empty()) {
    auto name = [](const std::string& p) {
      json j = json::parse(p, nullptr, false);
      return j.is_object() ? j.value("name", p) : p;
    };
    if (name(baseline.protocol) != name(now.protocol))
      DGT_THROW(ErrorKind::kUsage,
                "the baseline was measured under protocol {}, this run under {}; pass --protocol to match",
                name(baseline.protocol), name(now.protocol));
  }
  const bool cublas_changed = baseline.software.cublaslt_version != now.software.cublaslt_version ||
                              baseline.software.runtime_version != now.software.runtime_version ||
                              baseline.software.driver_version != now.software.driver_version;
  GateReport r;
  r.settings = st;
  r.software_differences = software_differences(baseline.software, now.software);
  for (const ShapeRecord& s : now.shapes) {
    ShapeDecision d = decide_shape(baseline.find(s.problem.key()), s, st, cublas_changed);
    switch (d.verdict) {
      case ShapeVerdict::kPass: ++r.passed; break;
      case ShapeVerdict::kCublasFaster: ++r.cublas_faster; break;
      case ShapeVerdict::kRegression: ++r.regressions; break;
      case ShapeVerdict::kVerifyFailed: ++r.verify_failed; break;
      case ShapeVerdict::kError: ++r.errors; break;
      case ShapeVerdict::kNew: ++r.new_shapes; break;
    }
    r.shapes.push_back(std::move(d));
  }
  return r;
}

std::vector<GateResultRow> history_rows(const GateReport& r) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<GateResultRow> rows;
  for (const ShapeDecision& d : r.shapes) {
    GateResultRow g;
    g.problem = d.problem;
    g.name = d.label;
    g.config_key = d.config_now;
    g.config_baseline = d.config_baseline;
    g.verdict = to_string(d.verdict);
    g.reason = d.reason;
    auto pos = [&](double v) { return v > 0 ? v : nan; };
    // gate_result stores the time ratio dgtune / cuBLASLt-tuned (schema 6, kept so rows of every dgtune read
    // alike): the inverse of x.
    g.ratio_baseline = d.x_tuned_baseline > 0 ? 1 / d.x_tuned_baseline : nan;
    g.ratio_now = d.x_tuned_now > 0 ? 1 / d.x_tuned_now : nan;
    g.slowdown = d.ratio_test ? d.ratio_test->slowdown() : nan;
    g.slowdown_lo =
        d.ratio_test && std::isfinite(d.ratio_test->interval.lo) ? std::exp(d.ratio_test->interval.lo) - 1 : nan;
    g.slowdown_hi =
        d.ratio_test && std::isfinite(d.ratio_test->interval.hi) ? std::exp(d.ratio_test->interval.hi) - 1 : nan;
    g.p_value = d.ratio_test ? d.ratio_test->p_value : nan;
    g.ours_baseline_us = pos(d.ours_baseline_us);
    g.ours_now_us = pos(d.ours_now_us);
    g.tuned_baseline_us = pos(d.tuned_baseline_us);
    g.tuned_now_us = pos(d.tuned_now_us);
    rows.push_back(std::move(g));
  }
  return rows;
}

GateRunRow history_run(const GateReport& r, const GateRecord& baseline, const std::string& baseline_path) {
  GateRunRow run;
  run.baseline_path = baseline_path;
  run.baseline_created_at = baseline.created_at;
  run.baseline_env_key = baseline.software.key();
  json p = json::parse(baseline.protocol, nullptr, false);
  run.protocol = p.is_object() ? p.value("name", baseline.protocol) : baseline.protocol;
  run.threshold = r.settings.threshold;
  run.confidence = r.settings.confidence;
  run.exit_code = r.exit_code();
  run.shapes = static_cast<int>(r.shapes.size());
  run.failures = r.regressions + r.verify_failed;
  run.errors = r.errors;
  return run;
}

}  // namespace dgt::gate
