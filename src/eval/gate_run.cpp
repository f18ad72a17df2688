#include "eval/gate_run.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <memory>
#include <optional>

#include "bench/measure_protocol.hpp"
#include "core/error.hpp"
#include "db/tuning_db.hpp"
#include "eval/gate_decision.hpp"
#include "eval/gate_record.hpp"
#include "eval/gate_report.hpp"
#include "eval/shape_compare.hpp"

namespace dgt {

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) DGT_THROW(ErrorKind::kIo, "cannot write {}", path);
  out << text;
  if (!out) DGT_THROW(ErrorKind::kIo, "writing {} failed", path);
}

std::vector<ShapeEntry> shapes_of(const GateRunOptions& o, const gate::GateRecord* baseline) {
  if (!o.shapes.empty()) return o.shapes;
  if (!baseline) DGT_THROW(ErrorKind::kUsage, "gate --record needs --shapes FILE");
  std::vector<ShapeEntry> v;
  for (const gate::ShapeRecord& s : baseline->shapes) {
    ShapeEntry e;
    e.problem = s.problem;
    e.name = s.name;
    e.file = o.baseline_path;
    v.push_back(e);
  }
  return v;
}

gate::ShapeRecord error_record(const ShapeEntry& s, std::string error) {
  gate::ShapeRecord r;
  r.problem = s.problem;
  r.name = s.name;
  r.status = "error";
  r.error = std::move(error);
  return r;
}

/// Measures every shape; after a lost CUDA context the remaining shapes are recorded as errors.
std::vector<gate::ShapeRecord> measure_all(ShapeComparer& cmp, const std::vector<ShapeEntry>& shapes) {
  std::vector<gate::ShapeRecord> out;
  std::string lost;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ShapeEntry& s = shapes[i];
    spdlog::info("gate: [{}/{}] {}", i + 1, shapes.size(), s.name.empty() ? s.problem.label() : s.name);
    if (lost.empty()) {
      try {
        out.push_back(gate::record_of(cmp.measure(s)));
        continue;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kCuda && e.kind() != ErrorKind::kDriver && e.kind() != ErrorKind::kCublas) {
          out.push_back(error_record(s, e.message()));
          continue;
        }
        lost = e.message();
        spdlog::error("gate: {}: {}; no further shape is measured in this process", s.problem.label(), lost);
      }
    }
    out.push_back(error_record(s, "CUDA context lost: " + lost));
  }
  return out;
}

}  // namespace

int run_gate(const GateRunOptions& o) {
  if (o.record_path.empty() == o.baseline_path.empty())
    DGT_THROW(ErrorKind::kUsage,
              "gate needs exactly one of --record FILE (write a baseline) and --baseline FILE (check)");
  // Every input is checked before the GPU is opened.
  std::optional<gate::GateRecord> baseline;
  if (!o.baseline_path.empty()) baseline = gate::read_record(o.baseline_path);
  const auto shapes = shapes_of(o, baseline ? &*baseline : nullptr);
  if (baseline && o.search == 0)
    for (const gate::ShapeRecord& s : baseline->shapes)
      if (s.config_source.rfind("search-top", 0) == 0) {
        spdlog::warn("gate: {} was recorded with --search ({}); without --search now the loader's choice is gated",
                     o.baseline_path, s.config_source);
        break;
      }
  MeasureProtocol protocol;
  if (baseline && o.protocol.empty()) {
    try {
      protocol = MeasureProtocol::from_json(baseline->protocol);
    } catch (const Error& e) {
      DGT_THROW(ErrorKind::kUsage, "{}: protocol: {}", o.baseline_path, e.message());
    }
  } else {
    protocol = MeasureProtocol::of(parse_protocol_kind(o.protocol.empty() ? "cold-l2" : o.protocol));
  }
  // A record defaults to more rounds than compare: the gate's one-sided test needs power. On the H200 a
  // 20-round baseline of a ~10 us kernel let a replacement measured 8.2% slower pass (estimate +6.1%,
  // interval [+3.7%, +8.9%]; the CI gate's acceptance report); the interval narrows as 1/sqrt(rounds).
  if (o.rounds > 0)
    protocol.rounds = o.rounds;
  else if (!baseline)
    protocol.rounds = kRecordRounds;
  protocol.validate();
  const gate::GateSettings settings{o.threshold_pct / 100, o.confidence};

  const std::string history_path = o.history_path.empty() ? o.db_path : o.history_path;
  std::unique_ptr<TuningDb> history;
  if (baseline) history = std::make_unique<TuningDb>(history_path);  // created or migrated before anything is measured

  ShapeCompareOptions so;
  so.db_path = o.db_path;
  so.cache_dir = o.cache_dir;
  so.device = o.device;
  so.protocol = protocol;
  so.seed = o.seed;
  so.search_top_k = o.search;
  ShapeComparer cmp(so);
  gate::GateRecord now = gate::record_header(cmp.fingerprint(), cmp.protocol_json());
  if (baseline) {
    const auto hw = gate::hardware_differences(baseline->hardware, now.hardware);
    if (!hw.empty()) (void)gate::decide(*baseline, now, settings);  // throws kUsage naming every difference
    for (const auto& d : gate::software_differences(baseline->software, now.software))
      spdlog::warn("gate: software differs from the baseline: {}", d);
  }
  cmp.prefetch(shapes);
  now.shapes = measure_all(cmp, shapes);

  auto show = [&](const report::Table& t) {
    if (o.show) o.show(t);
  };
  if (!baseline) {
    gate::write_record(now, o.record_path);
    show(gate::record_table(now, "dgtune gate --record " + o.record_path + " on " +
                                                        cmp.device().name + " (" + protocol.name() + ", " +
                                                        std::to_string(protocol.rounds) +
                                                        " rounds; ratio = dgtune / cuBLASLt-tuned, same round)"));
    int errors = 0;
    for (const auto& s : now.shapes) errors += !s.ok();
    if (errors)
      spdlog::error("gate --record: {} of {} shapes were not measured; the baseline records them as such", errors,
                    now.shapes.size());
    return errors ? 1 : 0;
  }

  const gate::GateReport report = gate::decide(*baseline, now, settings);
  show(gate::gate_table(
      report,
      fmt::format("dgtune gate vs {} on {} ({}; threshold {}% slowdown of the same-round ratio dgtune/cuBLASLt-tuned, "
                  "confidence {})",
                  o.baseline_path, cmp.device().name, protocol.name(), o.threshold_pct, o.confidence)));
  if (!o.junit_path.empty()) write_text(o.junit_path, gate::junit_xml(report));
  if (!o.markdown_path.empty()) write_text(o.markdown_path, gate::markdown_summary(report));
  GateRunRow run = gate::history_run(report, *baseline, o.baseline_path);
  run.scope = history->upsert_device(cmp.fingerprint());
  const int64_t run_id = history->put_gate_run(run, gate::history_rows(report));
  spdlog::info("gate: run {} appended to the history in {}", run_id, history_path);

  const int code = report.exit_code();
  if (code == 1) {
    std::string names;
    for (const auto& n : report.errored()) names += (names.empty() ? "" : ", ") + n;
    spdlog::error("gate: ERROR: {} shape(s) could not be measured: {}", report.errors, names);
  } else if (code == 3) {
    spdlog::error("gate: FAIL: {} regression(s), {} verification failure(s)", report.regressions, report.verify_failed);
  } else {
    spdlog::info("gate: PASS ({} shapes; {} cuBLASLt-only speed-ups, {} new)", report.shapes.size(),
                 report.cublas_faster, report.new_shapes);
  }
  return code;
}

report::Table gate_history(const std::string& path, const std::string& shape) {
  TuningDbReader db(path);
  const auto points = db.gate_history(shape);
  if (points.empty())
    DGT_THROW(ErrorKind::kUsage, "{}: no gate history for shape '{}' (a problem key, a name= or MxNxK)", path, shape);
  return gate::history_table(points, "gate history of " + shape + " in " + path +
                                         " (ratio = dgtune / cuBLASLt-tuned; change = ratio now vs baseline)");
}

}  // namespace dgt
