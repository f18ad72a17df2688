// The CI performance regression gate's decision (`dgtune gate`): pure CPU, a function of (baseline record,
// current measurement), both in the same GateRecord form (eval/gate_record.hpp), so unit tests feed it known
// answers. The GPU half (measuring one shape in interleaved rounds) is eval/shape_compare.hpp; the tables, JUnit
// XML and markdown are eval/gate_report.hpp.
//
// What is gated, per shape: R = ln(dgtune time / cuBLASLt-tuned time) of the SAME interleaved round (its
// slowdown is what the threshold bounds; tables report x = cuBLASLt-tuned us / dgtune us = exp(-R), the ratio
// convention of every dgtune output).
// The baseline's rounds and the current rounds are two independent samples of R; stats::gate_test
// (one-sided Hodges-Lehmann / Mann-Whitney) fails the shape when the data reject "slowdown <=
// threshold" at the stated confidence. The ratio cancels machine and clock differences between the two
// runs; the absolute dgtune time is reported beside it and decides one case: when the ratio test fails
// but dgtune's absolute time did not get slower (the same test on ln(dgtune time) passes) while cuBLASLt
// got significantly faster AND the cuBLASLt, runtime or driver version changed, the shape is
// "cublas-faster" (reported, exit 0), not a dgtune regression.
// A grouped (MoE) line is gated by the same rule with the per-group cuBLASLt loop in cuBLASLt-tuned's place (its
// ShapeRecord's tuned_us; gate_record.hpp record_of_grouped): x and the slowdown are then against the loop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"
#include "eval/gate_record.hpp"
#include "stats/stats.hpp"

namespace dgt::gate {

/// Verdict of one shape.
enum class ShapeVerdict {
  kPass,          ///< "slowdown <= threshold" not rejected
  kCublasFaster,  ///< ratio test rejected, but dgtune's absolute time held and cuBLASLt got faster: reported, passes
  kRegression,    ///< "slowdown <= threshold" rejected (the ratio, with dgtune's absolute time not exonerating it)
  kVerifyFailed,  ///< the candidate no longer verifies: fails the gate like a regression
  kError,         ///< could not be measured now: exit 1
  kNew,           ///< not in the baseline, or the baseline has no samples of it: measured, not gated
};
/// "pass", "cublas-faster", "regression", "verify-failed", "error", "new".
const char* to_string(ShapeVerdict v);
/// True for the verdicts that make the gate fail with exit 3 (regression, verify-failed).
bool is_failure(ShapeVerdict v);

struct GateSettings {
  double threshold = 0.05;  ///< tolerated slowdown of the ratio (fraction)
  double confidence = 0.95;
};

/// The decision for one shape.
struct ShapeDecision {
  Problem problem;
  std::string problem_key;
  std::string label;  ///< name, else Problem::label()
  ShapeVerdict verdict = ShapeVerdict::kPass;
  std::string reason;  ///< one sentence: why this verdict
  std::string config_baseline, config_now;
  /// x = cuBLASLt-tuned us / dgtune us, the median over the same-round pairs (above 1: dgtune faster; the convention
  /// of every dgtune output), at baseline and now; 0 when not measured.
  double x_tuned_baseline = 0, x_tuned_now = 0;
  /// The ratio test (present when both sides have samples).
  std::optional<stats::GateResult> ratio_test;
  /// The same test on ln(dgtune time): absolute time now vs baseline.
  std::optional<stats::GateResult> absolute_test;
  /// Estimated change of cuBLASLt-tuned's absolute time (fraction; < 0: cuBLASLt faster now) with its
  /// two-sided interval.
  double cublas_change = 0, cublas_change_lo = 0, cublas_change_hi = 0;
  double ours_baseline_us = 0, ours_now_us = 0, tuned_baseline_us = 0, tuned_now_us = 0;  ///< medians
};

/// The decision for a whole run.
struct GateReport {
  GateSettings settings;
  std::vector<ShapeDecision> shapes;
  std::vector<std::string> software_differences;  ///< printed, never a reason to refuse
  int passed = 0, cublas_faster = 0, regressions = 0, verify_failed = 0, errors = 0, new_shapes = 0;
  /// 1 when any shape errored (outranks a regression), else 3 when any failed, else 0.
  int exit_code() const;
  /// Labels of the shapes with verdict kError (for the message that says which errored).
  std::vector<std::string> errored() const;
};

/// Exit precedence on its own: error (1) > regression (3) > pass (0).
int exit_code_for(int errors, int failures);

/// One shape's decision (pure). baseline == nullptr: the shape is new. `cublas_software_changed`: the
/// cuBLASLt, CUDA runtime or driver version differs between baseline and now. Only then can a ratio
/// failure be exonerated as "cublas-faster": with the same cuBLASLt, a shift of cuBLASLt's absolute
/// time is machine state (clocks, power), which moves dgtune's absolute time alike, so the same-round
/// ratio is the only sound statistic. (Measured on the H200: a replacement config 6.1% slower in the
/// same rounds showed +3.6% absolute while cuBLASLt showed -2.3%, after a clock change between runs.)
ShapeDecision decide_shape(const ShapeRecord* baseline, const ShapeRecord& now, const GateSettings& settings,
                           bool cublas_software_changed);

/// The whole decision (pure). Throws Error(kUsage) when the hardware differs (naming each difference)
/// or the protocols differ (their names). Shapes are those of `now`, in its order.
GateReport decide(const GateRecord& baseline, const GateRecord& now, const GateSettings& settings);

/// The rows `dgtune gate` appends to the history DB (TuningDb::put_gate_run), one per shape.
std::vector<GateResultRow> history_rows(const GateReport& r);
/// The run row (scope filled by the caller).
GateRunRow history_run(const GateReport& r, const GateRecord& baseline, const std::string& baseline_path);
}  // namespace dgt::gate
