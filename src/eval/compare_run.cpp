#include "eval/compare_run.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/output_file.hpp"
#include "db/device_pick.hpp"
#include "db/tuning_db.hpp"
#include "db/writer_check.hpp"
#include "device/device_info.hpp"
#include "eval/compare_tables.hpp"
#include "eval/grouped_compare_tables.hpp"
#include "eval/grouped_lines.hpp"
#include "eval/shape_compare.hpp"

namespace dgt {

namespace {

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

void check_compare_db(const std::string& db_path, const std::string& db_flag) {
  // A --db that exists must be a readable tuning DB (a directory, a FIFO, a text file): refused now, not after
  // the GPU has been opened. A missing one means default configs.
  std::error_code exists_ec;
  if (std::filesystem::exists(db_path, exists_ec) || std::filesystem::is_symlink(db_path, exists_ec)) {
    try {
      require_regular_input_file(db_path, "tuning database (" + db_flag + ")");
    } catch (const Error& e) {
      DGT_THROW(ErrorKind::kUsage, "{} (compare never creates one)", e.message());
    }
    TuningDbReader probe(db_path);
  }
}

void check_compare_protocol(const MeasureProtocol& protocol, bool saving) {
  if (protocol.kind == ProtocolKind::kIsolated && !protocol.is_standard())
    DGT_THROW(ErrorKind::kUsage,
              "--side-order {} / --gap-us {:g}: {} runs one side at a time, sample after sample; it has no round "
              "order and no gap (drop them, or measure with --protocol cold-l2 or hot-graph)",
              to_string(protocol.order), protocol.gap_us, protocol.name());
  protocol.validate();
  if (!saving) return;
  if (protocol.kind == ProtocolKind::kIsolated)
    DGT_THROW(ErrorKind::kUsage,
              "--save: {} measurements are not stored (they are absolute times of one kernel at a time, not the "
              "paired rounds that --between, the gate and the winners read); drop --save or --protocol {}",
              protocol.name(), protocol.name());
  if (!protocol.is_standard())
    DGT_THROW(ErrorKind::kUsage,
              "--save: --side-order {} / --gap-us {:g} are protocol-study variants of {}; stored measurements are keyed "
              "by the protocol's name, so only the standard settings (--side-order williams, --gap-us 0) are saved",
              to_string(protocol.order), protocol.gap_us, protocol.name());
}

std::string protocol_detail(const MeasureProtocol& p) {
  if (p.kind == ProtocolKind::kIsolated && p.fill_bytes > 0)
    return fmt::format("samples per side of one launch after a zero fill of {:g} GB, sides one at a time",
                       double(p.fill_bytes) / 1e9);
  if (p.kind == ProtocolKind::kIsolated)
    return fmt::format("samples per side of {} back-to-back launches, sides one at a time", p.launches_per_sample);
  std::string s = "rounds";
  if (p.order != SideOrder::kWilliams) s += fmt::format(", {} side order", to_string(p.order));
  if (p.gap_us > 0) s += fmt::format(", {:g} us gap before every sample", p.gap_us);
  return s;
}

stats::PairedOptions paired_options(const CompareStatsOptions& o) {
  stats::PairedOptions p;
  p.margin = o.margin_pct / 100;
  p.method = o.interval == "wilcoxon" ? stats::IntervalMethod::kWilcoxon : stats::IntervalMethod::kSign;
  return p;
}

void check_grouped_compare(const std::vector<ShapeEntry>& shapes, bool saving, bool extra_configs) {
  if (saving)
    refuse_grouped_lines(shapes, "--save",
                         "stores the dense sides of a compare (dgtune, cuBLASLt tuned and default), which --between "
                         "and the gate read; a grouped line's sides are not stored (drop --save, or move the grouped "
                         "lines to another file)");
  if (extra_configs)
    refuse_grouped_lines(shapes, "--config",
                         "times extra dense configs beside dense lines; time a second grouped config with `dgtune "
                         "compare --grouped SPEC --config KEY --vs-config KEY2` (or move the grouped lines to another "
                         "file)");
}

namespace {

/// The grouped lines of a compare, measured after the dense ones: the grouped table and its summary.
std::vector<report::Table> compare_grouped_lines(const CompareRunOptions& o, const std::vector<ShapeEntry>& lines) {
  const MeasureProtocol& protocol = o.protocol;
  GroupedMeasurer measurer(o.device, o.cache_dir, protocol);
  const DeviceFingerprint& fp = measurer.fingerprint();
  const GroupedChooser chooser(o.db_path, fp.hardware(), fp.software(), protocol.kind);
  std::string db_note;
  if (!std::filesystem::exists(o.db_path))
    db_note = fmt::format("no tuning database at {}: every grouped line uses the default rule", o.db_path);
  else if (!chooser.has_device())
    db_note = fmt::format("{} holds no trials of this device ({}): every grouped line uses the default rule",
                          o.db_path, measurer.device().name);
  std::vector<GroupedCompareShape> out;
  for (const ShapeEntry& e : lines) {
    spdlog::info("compare {} ({}), {}", e.grouped->label(), e.name, protocol.name());
    out.push_back(measure_grouped_line(measurer, chooser, e, /*dense=*/true));
  }
  const stats::PairedOptions popts = paired_options(o.stats);
  std::vector<report::Table> tables = grouped_compare_tables(
      out, popts,
      fmt::format("dgtune compare {}, grouped lines, on {} ({}, {} {}; db {}{}; each line runs what dgt::GroupedGemm "
                  "runs for its key: the DB's grouped winner by the loader's rule, else the default rule; x_loop = "
                  "per-group cuBLASLt loop us / grouped us, x_dense = dense kernel over the real rows us / grouped us)",
                  o.shapes_path, measurer.device().name, protocol.name(), protocol.rounds, protocol_detail(protocol),
                  o.db_path, db_note.empty() ? "" : ": " + db_note));
  tables.push_back(grouped_summary_table(out, popts));
  return tables;
}

}  // namespace

std::vector<report::Table> run_compare(const CompareRunOptions& o) {
  const MeasureProtocol& protocol = o.protocol;
  check_compare_protocol(protocol, !o.save_path.empty());
  check_grouped_compare(o.shapes, !o.save_path.empty(), !o.extra.empty());
  if (!o.save_path.empty()) {
    if (o.save_path == o.db_path)
      DGT_THROW(ErrorKind::kUsage, "--save {} is the {} file, which compare opens read-only; save to another file",
                o.save_path, o.db_flag);
    // The same file under another name (a link) is refused the same way, by device and inode.
    check_not_an_input(o.save_path, "--save", {{"--shapes", o.shapes_path}, {o.db_flag, o.db_path, true}});
    check_db_writable(o.save_path, "--save");
  }
  check_compare_db(o.db_path, o.db_flag);
  require_device(o.device);  // no GPU: exit 1 before the cubin cache directory is created
  std::vector<ShapeEntry> dense, grouped;
  for (const ShapeEntry& e : o.shapes) (e.grouped ? grouped : dense).push_back(e);
  if (dense.empty()) return compare_grouped_lines(o, grouped);

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

  cmp.prefetch(dense);
  std::vector<CompareShape> out;
  for (const ShapeEntry& e : dense) {
    spdlog::info("compare {} ({}), {}", e.problem.label(), e.name, protocol.name());
    ShapeMeasurement m = cmp.measure(e);
    const int heuristics = m.heuristic_count;
    CompareShape c = compare_shape_of(std::move(m));
    if (c.result && save) save->put_measurement(save_scope, stored_from_compare(c, protocol.name(), heuristics));
    out.push_back(std::move(c));
  }
  std::string title = fmt::format(
      "dgtune compare {} on {} ({}, {} {}; db {}{}; speedup = cuBLASLt-tuned us / dgtune us)", o.shapes_path,
      cmp.device().name, protocol.name(), protocol.rounds, protocol_detail(protocol), o.db_path,
      db_note.empty() ? "" : ": " + db_note);
  if (save) title += "; samples saved to " + o.save_path;
  std::vector<report::Table> tables = compare_tables(out, paired_options(o.stats), title);
  if (!grouped.empty())
    for (report::Table& t : compare_grouped_lines(o, grouped)) tables.push_back(std::move(t));
  return tables;
}

std::vector<report::Table> compare_between(const std::string& a_path, const std::string& b_path,
                                           const std::string& device_a, const std::string& device_b,
                                           const std::string& protocol, const CompareStatsOptions& stats) {
  // Both paths were checked by the caller (input files); their content is checked by opening them.
  TuningDbReader A(a_path), B(b_path);
  // Without saved compares there is nothing to compare: say which DB lacks them and how they are made.
  std::vector<std::string> empty;
  for (const TuningDbReader* db : {&A, &B}) {
    bool any = false;
    for (const DeviceRow& d : db->devices()) any = any || d.measurements > 0;
    if (!any && (empty.empty() || empty.back() != db->path())) empty.push_back(db->path());
  }
  if (!empty.empty())
    DGT_THROW(ErrorKind::kUsage,
              "compare --between compares saved compares, and {} hold{} none: run `dgtune compare --shapes FILE --save "
              "DB` on each build first (sweep trials are not interleaved measurements)",
              empty.size() == 1 ? empty[0] : empty[0] + " and " + empty[1], empty.size() == 1 ? "s" : "");
  const int64_t da = pick_device(A, device_a, "--device-a", true), dbi = pick_device(B, device_b, "--device-b", true);
  auto filter = [&](std::vector<StoredMeasurement> v) {
    if (protocol.empty()) return v;
    std::erase_if(v, [&](const StoredMeasurement& m) { return !protocol_selected(protocol, m.protocol_name); });
    return v;
  };
  // latest_measurements refuses damaged rows (side indexes, samples that are not a positive finite time).
  const auto ma = filter(A.latest_measurements(da)), mb = filter(B.latest_measurements(dbi));
  return between_tables(ma, mb, paired_options(stats),
                        fmt::format("dgtune compare --between A = {} (device {}) and B = {} (device {}): stored "
                                    "samples, newest measurement per shape and protocol",
                                    A.path(), da, B.path(), dbi));
}

}  // namespace dgt
