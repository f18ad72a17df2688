#include "eval/gate_run.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "bench/measure_protocol.hpp"
#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/output_file.hpp"
#include "db/tuning_db.hpp"
#include "db/writer_check.hpp"
#include "device/device_info.hpp"
#include "eval/gate_decision.hpp"
#include "eval/gate_record.hpp"
#include "eval/gate_report.hpp"
#include "eval/grouped_lines.hpp"
#include "eval/shape_compare.hpp"
#include "report/documents.hpp"

namespace dgt {

namespace {

/// The "name" of a protocol JSON text (the text itself when it is not JSON with a name).
std::string protocol_name_of(const std::string& protocol_json) {
  const nlohmann::json j = nlohmann::json::parse(protocol_json, nullptr, false);
  return j.is_object() && j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : protocol_json;
}

/// Every file the gate writes, checked before the GPU is opened (core/output_file.hpp, db/writer_check.hpp): the
/// record, JUnit and markdown files are never an input or a DB, the history DB never an input or one of those files.
void check_outputs(const GateRunOptions& o, const std::string& history_path, bool check) {
  const NamedPath baseline{"--baseline", o.baseline_path}, shapes{"--shapes", o.shapes_path};
  const NamedPath db{o.db_flag, o.db_path, true}, history{"--history", history_path, true};
  check_output_paths({{"--record", o.record_path}, {"--junit", o.junit_path}, {"--markdown", o.markdown_path}},
                     {baseline, shapes, db, history});
  if (!check) return;
  // The history is a DB: SQLite creates it and its folders, so only its identity is checked here, then its type and
  // content (db/writer_check.hpp).
  const std::string history_flag = o.history_path.empty() ? o.db_flag + " (the gate history)" : "--history";
  // (A report file naming the history was refused above, as an output naming an input.)
  std::vector<NamedPath> not_history{baseline, shapes};
  // A separate history DB is never the tuning DB's -wal, -shm or -journal file (the default history is the DB itself).
  if (!names_same_file(history_path, o.db_path)) not_history.push_back(db);  // any spelling of the DB is the default
  check_not_an_input(history_path, history_flag, not_history);
  check_db_writable(history_path, history_flag);
}

std::vector<ShapeEntry> shapes_of(const GateRunOptions& o, const gate::GateRecord* baseline) {
  if (!o.shapes.empty()) {
    // A grouped key leaves out the per-group counts: a file whose counts differ from the baseline's would be gated
    // against another workload under the same key.
    if (baseline)
      for (const ShapeEntry& e : o.shapes)
        for (size_t i = 0; e.grouped && i < baseline->shapes.size(); ++i) {
          const gate::ShapeRecord& b = baseline->shapes[i];
          if (b.grouped && b.problem == e.problem && b.grouped->rows_list() != e.grouped->rows_list())
            DGT_THROW(ErrorKind::kUsage,
                      "{}: the grouped line's per-group counts ({}) are not those of {}: shapes[{}] ({}) under the same "
                      "key {}; a gate compares the same workload: drop --shapes (the baseline's counts are measured "
                      "again) or record a new baseline",
                      e.where(), e.grouped->rows_list(), escaped(o.baseline_path), i, b.grouped->rows_list(),
                      e.problem.key());
        }
    return o.shapes;
  }
  if (!baseline) DGT_THROW(ErrorKind::kUsage, "gate --record needs --shapes FILE");
  std::vector<ShapeEntry> v;
  for (const gate::ShapeRecord& s : baseline->shapes) {
    ShapeEntry e;
    e.problem = s.problem;
    e.grouped = s.grouped;  // a grouped shape is measured again with the counts it was recorded with
    e.name = s.name;
    e.file = o.baseline_path;
    v.push_back(e);
  }
  return v;
}

gate::ShapeRecord error_record(const ShapeEntry& s, std::string error) {
  gate::ShapeRecord r;
  r.problem = s.problem;
  r.grouped = s.grouped;
  r.name = s.name;
  r.status = "error";
  r.error = std::move(error);
  return r;
}

/// What measures a gate's shapes: the dense comparer when there are dense lines, the grouped measurer and the
/// loader's grouped choice when there are grouped lines.
struct GateMeasurers {
  std::unique_ptr<ShapeComparer> dense;
  std::unique_ptr<GroupedMeasurer> grouped;
  std::unique_ptr<GroupedChooser> chooser;

  const DeviceFingerprint& fingerprint() const { return dense ? dense->fingerprint() : grouped->fingerprint(); }
  const DeviceInfo& device() const { return dense ? dense->device() : grouped->device(); }
  /// One shape's record: a dense line through the comparer (the loader's choice or --search vs cuBLASLt), a grouped
  /// line through the loader's grouped choice vs the per-group cuBLASLt loop (no dense side: the gate gates the loop).
  gate::ShapeRecord measure(const ShapeEntry& s) {
    if (s.grouped) return gate::record_of_grouped(measure_grouped_line(*grouped, *chooser, s, /*dense=*/false));
    return gate::record_of(dense->measure(s));
  }
};

/// Measures every shape; after a lost CUDA context the remaining shapes are recorded as errors.
std::vector<gate::ShapeRecord> measure_all(GateMeasurers& cmp, const std::vector<ShapeEntry>& shapes) {
  std::vector<gate::ShapeRecord> out;
  std::string lost;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ShapeEntry& s = shapes[i];
    spdlog::info("gate: [{}/{}] {}", i + 1, shapes.size(), s.name.empty() ? s.problem.label() : s.name);
    if (lost.empty()) {
      try {
        out.push_back(cmp.measure(s));
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
  if (!o.record_path.empty() && (!o.junit_path.empty() || !o.markdown_path.empty() || !o.history_path.empty()))
    DGT_THROW(ErrorKind::kUsage,
              "--junit, --markdown and --history go with --baseline: a --record run has no verdict to report and is "
              "not appended to the history");
  // Every input and output is checked before the GPU is opened, and nothing is written before the measurement.
  std::optional<gate::GateRecord> baseline;
  if (!o.baseline_path.empty()) baseline = gate::read_record(o.baseline_path);
  const auto shapes = shapes_of(o, baseline ? &*baseline : nullptr);
  // A record holds one entry per problem key (its reader refuses a key twice): a repeated line is refused now, before
  // the GPU, rather than after the measurement in a baseline nobody can read.
  std::map<std::string, const ShapeEntry*> first_of;
  for (const ShapeEntry& e : shapes)
    if (const auto [it, fresh] = first_of.emplace(e.problem.key(), &e); !fresh)
      DGT_THROW(ErrorKind::kUsage,
                "{}: the problem of {} again (key {}); a gate measures each problem once: give it once", e.where(),
                it->second->where(), e.problem.key());
  if (o.search > 0)
    refuse_grouped_lines(shapes, "--search",
                         "screens the dense cost model's top K candidates on a dense problem; a grouped line is gated "
                         "with the loader's grouped choice (drop --search, or gate the grouped lines in a run of their "
                         "own)");
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
    protocol = MeasureProtocol::named(o.protocol.empty() ? "cold-l2" : o.protocol);
    // A protocol other than the baseline's could only be refused after every shape was measured.
    if (baseline && protocol_name_of(baseline->protocol) != protocol.name())
      DGT_THROW(ErrorKind::kUsage,
                "--protocol {} measures under {}, but the baseline {} was measured under {}; drop --protocol (the "
                "baseline's is the default) or record a new baseline",
                o.protocol, protocol.name(), escaped(o.baseline_path), protocol_name_of(baseline->protocol));
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
  check_outputs(o, history_path, baseline.has_value());
  require_device(o.device);  // no GPU: exit 1 before the cubin cache directory or any file is created

  std::vector<ShapeEntry> dense_lines;
  bool any_grouped = false;
  for (const ShapeEntry& s : shapes) {
    if (s.grouped)
      any_grouped = true;
    else
      dense_lines.push_back(s);
  }
  GateMeasurers cmp;
  if (!dense_lines.empty()) {
    ShapeCompareOptions so;
    so.db_path = o.db_path;
    so.cache_dir = o.cache_dir;
    so.device = o.device;
    so.protocol = protocol;
    so.seed = o.seed;
    so.search_top_k = o.search;
    cmp.dense = std::make_unique<ShapeComparer>(so);
  }
  if (any_grouped) {
    cmp.grouped = std::make_unique<GroupedMeasurer>(o.device, o.cache_dir, protocol, o.seed);
    const DeviceFingerprint& fp = cmp.grouped->fingerprint();
    cmp.chooser = std::make_unique<GroupedChooser>(o.db_path, fp.hardware(), fp.software(), protocol.kind);
  }
  gate::GateRecord now = gate::record_header(cmp.fingerprint(), protocol.to_json());
  if (baseline) {
    const auto hw = gate::hardware_differences(baseline->hardware, now.hardware);
    if (!hw.empty()) (void)gate::decide(*baseline, now, settings);  // throws kUsage naming every difference
    for (const auto& d : gate::software_differences(baseline->software, now.software))
      spdlog::warn("gate: software differs from the baseline: {}", d);
  }
  if (cmp.dense) cmp.dense->prefetch(dense_lines);
  now.shapes = measure_all(cmp, shapes);

  auto show = [&](const report::Table& t, const report::DocumentType& type) {
    if (o.show) o.show(t, type);
  };
  // Grouped rows are compared with the per-group cuBLASLt loop where dense rows have cuBLASLt-tuned.
  const bool grouped_rows = std::any_of(shapes.begin(), shapes.end(), [](const ShapeEntry& e) { return e.grouped; });
  const std::string loop_note =
      grouped_rows ? "; grouped lines: the per-group cuBLASLt loop in cuBLASLt-tuned's place" : "";
  if (!baseline) {
    gate::write_record(now, o.record_path);
    show(gate::record_table(now, fmt::format("dgtune gate --record {} on {} ({}, {} rounds; loader's choice from {}; "
                                             "x tuned = cuBLASLt-tuned us / dgtune us in the same round, above 1: "
                                             "dgtune faster{})",
                                             o.record_path, cmp.device().name, protocol.name(), protocol.rounds,
                                             o.db_path, loop_note)),
         report::kGateRecordDocument);
    int errors = 0;
    for (const auto& s : now.shapes) errors += !s.ok();
    if (errors)
      spdlog::error("gate --record: {} of {} shapes were not measured; the baseline records them as such", errors,
                    now.shapes.size());
    return errors ? 1 : 0;
  }

  const gate::GateReport report = gate::decide(*baseline, now, settings);
  show(gate::gate_table(
           report, fmt::format("dgtune gate vs {} on {} ({}; loader's choice from {}; threshold {}% slowdown of dgtune "
                               "relative to cuBLASLt-tuned in the same rounds, confidence {}; x = cuBLASLt-tuned us / "
                               "dgtune us, above 1: dgtune faster{})",
                               o.baseline_path, cmp.device().name, protocol.name(), o.db_path, o.threshold_pct,
                               o.confidence, loop_note)),
       report::kGateDocument);
  if (!o.junit_path.empty()) write_output_file(o.junit_path, gate::junit_xml(report));
  if (!o.markdown_path.empty()) write_output_file(o.markdown_path, gate::markdown_summary(report));
  TuningDb history(history_path);  // created or migrated only now, with a run to store (checked before measuring)
  GateRunRow run = gate::history_run(report, *baseline, o.baseline_path);
  run.scope = history.upsert_device(cmp.fingerprint());
  const int64_t run_id = history.put_gate_run(run, gate::history_rows(report));
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
    DGT_THROW(ErrorKind::kUsage, "{}: no gate history for shape '{}' (a problem key, a name= or MxNxK)", path,
              escaped(shape));
  std::set<std::string> problems;
  for (const auto& p : points) problems.insert(p.problem_key);
  return gate::history_table(
      points, fmt::format("gate history of {} in {}: {} run{} of {} problem{} (one series per problem, oldest first; x = "
                          "cuBLASLt-tuned us / dgtune us, above 1: dgtune faster; slowdown = dgtune relative to "
                          "cuBLASLt-tuned, now vs the baseline)",
                          escaped(shape), path, points.size(), points.size() == 1 ? "" : "s", problems.size(),
                          problems.size() == 1 ? "" : "s"));
}

}  // namespace dgt
