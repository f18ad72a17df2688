#include "eval/compare_run.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "db/device_pick.hpp"
#include "db/tuning_db.hpp"
#include "eval/compare_tables.hpp"
#include "eval/shape_compare.hpp"

namespace dgt {

namespace {

stats::PairedOptions paired_options(const CompareStatsOptions& o) {
  stats::PairedOptions p;
  p.margin = o.margin_pct / 100;
  p.method = o.interval == "wilcoxon" ? stats::IntervalMethod::kWilcoxon : stats::IntervalMethod::kSign;
  return p;
}

/// The compare table's row of a measurement: the engine's result when any sample was taken.
CompareShape compare_shape_of(ShapeMeasurement m) {
  CompareShape c;
  c.problem = m.problem;
  c.name = m.name;
  c.config_key = m.config_key;
  c.config_source = m.config_source;
  c.tuned_algo = m.tuned_algo;
  if (!m.ok()) c.note = m.status + ": " + m.error;
  if (m.rounds && !m.rounds->samples.empty()) c.result = std::move(*m.rounds);
  return c;
}

}  // namespace

std::vector<report::Table> run_compare(const CompareRunOptions& o) {
  const MeasureProtocol& protocol = o.protocol;
  protocol.validate();
  if (!o.save_path.empty()) {
    std::error_code ec;
    if (o.save_path == o.db_path ||
        (std::filesystem::exists(o.save_path) && std::filesystem::equivalent(o.save_path, o.db_path, ec)))
      DGT_THROW(ErrorKind::kUsage, "--save {} is the --db file, which compare opens read-only; save to another file",
                o.save_path);
  }
  // A --db that exists must be a readable tuning DB (a directory, a text file): refused now, not after
  // the GPU has been opened. A missing one means default configs.
  if (std::filesystem::exists(o.db_path)) {
    try {
      require_input_file(o.db_path, "tuning database (--db)");
    } catch (const Error& e) {
      DGT_THROW(ErrorKind::kUsage, "{} (compare never creates one)", e.message());
    }
    TuningDbReader probe(o.db_path);
  }

  // The DB is only read, never created or migrated (what the loader does); the per-shape measurement
  // (the loader's choice, verification, cuBLASLt default and tuned, interleaved rounds, checks after
  // replay) is the gate's, eval/shape_compare.hpp.
  ShapeCompareOptions so;
  so.db_path = o.db_path;
  so.cache_dir = o.cache_dir;
  so.device = o.device;
  so.protocol = protocol;
  so.extra_configs = o.extra;
  so.copy_limit = o.copy_limit;
  ShapeComparer cmp(so);
  std::string db_note;
  if (!std::filesystem::exists(o.db_path))
    db_note = fmt::format("no tuning database at {}: every shape uses the default config", o.db_path);
  else if (!cmp.has_winners())
    db_note = fmt::format("{} holds no winners of this device ({}): every shape uses the default config", o.db_path,
                          cmp.device().name);

  std::unique_ptr<TuningDb> save;
  DeviceScope save_scope;
  if (!o.save_path.empty()) {
    save = std::make_unique<TuningDb>(o.save_path);
    save_scope = save->upsert_device(cmp.fingerprint());
  }

  cmp.prefetch(o.shapes);
  std::vector<CompareShape> out;
  for (const ShapeEntry& e : o.shapes) {
    spdlog::info("compare {} ({}), {}", e.problem.label(), e.name, protocol.name());
    ShapeMeasurement m = cmp.measure(e);
    const int heuristics = m.heuristic_count;
    CompareShape c = compare_shape_of(std::move(m));
    if (c.result && save) save->put_measurement(save_scope, stored_from_compare(c, protocol.name(), heuristics));
    out.push_back(std::move(c));
  }
  std::string title = fmt::format(
      "dgtune compare {} on {} ({}, {} rounds; db {}{}; speedup = cuBLASLt-tuned us / dgtune us)", o.shapes_path,
      cmp.device().name, protocol.name(), protocol.rounds, o.db_path, db_note.empty() ? "" : ": " + db_note);
  if (save) title += "; samples saved to " + o.save_path;
  return compare_tables(out, paired_options(o.stats), title);
}

std::vector<report::Table> compare_between(const std::string& a_path, const std::string& b_path,
                                           const std::string& device_a, const std::string& device_b,
                                           const std::string& protocol, const CompareStatsOptions& stats) {
  // Both paths were checked by the caller (input files); their content is checked by opening them.
  TuningDbReader A(a_path), B(b_path);
  const int64_t da = pick_device(A, device_a, "--device-a", true), dbi = pick_device(B, device_b, "--device-b", true);
  auto filter = [&](std::vector<StoredMeasurement> v) {
    if (protocol.empty()) return v;
    const std::string prefix = std::string(to_string(parse_protocol_kind(protocol))) + "-v";
    std::erase_if(v, [&](const StoredMeasurement& m) { return m.protocol_name.rfind(prefix, 0) != 0; });
    return v;
  };
  const auto ma = filter(A.latest_measurements(da)), mb = filter(B.latest_measurements(dbi));
  return between_tables(ma, mb, paired_options(stats),
                        fmt::format("dgtune compare --between A = {} (device {}) and B = {} (device {}): stored "
                                    "samples, newest measurement per shape and protocol",
                                    A.path(), da, B.path(), dbi));
}

}  // namespace dgt
