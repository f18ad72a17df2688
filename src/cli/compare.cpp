// dgtune compare: the kernel the loader would run against cuBLASLt default and tuned, measured now in
// interleaved rounds (--shapes), or the same table between two tuning DBs from stored samples (--between).
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/compare_tables.hpp"
#include "cli/options.hpp"
#include "db/tuning_db.hpp"
#include "tune/shape_compare.hpp"

namespace dgt::cli {

namespace {
struct Args {
  std::string shapes;
  std::vector<std::string> between;
  std::string device_a, device_b;
  std::string protocol;  ///< empty: cold-l2 (measured) / every stored protocol (--between)
  int rounds = MeasureProtocol{}.rounds;
  double margin_pct = 2;
  std::string interval = "sign";
  std::string save;
  std::vector<std::string> extra_configs;  ///< --config KEY (repeatable)
  OutputOptions output;                    ///< --d --bias --act: override the shapes file's (issue 12)
  bool copy_limit = true;                  ///< --copy-limit / --no-copy-limit
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  FormatOption format;
};

stats::PairedOptions paired_options(const Args& a) {
  stats::PairedOptions o;
  o.margin = a.margin_pct / 100;
  o.method = a.interval == "wilcoxon" ? stats::IntervalMethod::kWilcoxon : stats::IntervalMethod::kSign;
  return o;
}

int run_measured(const Args& a) {
  const auto shapes = ShapesOption{a.shapes, a.output}.load();  // the whole file is checked before the GPU or the DB is opened
  MeasureProtocol protocol = MeasureProtocol::of(parse_protocol_kind(a.protocol.empty() ? "cold-l2" : a.protocol));
  protocol.rounds = a.rounds;
  protocol.validate();
  const std::string db_path = a.db.resolved();
  // Every --config against every shape with the space's rules: a key that is malformed or cannot run a
  // shape is bad input (exit 2) before the GPU or the DB is touched.
  std::vector<std::pair<std::string, Problem>> problems;
  for (const ShapeEntry& e : shapes) problems.emplace_back(e.where(), e.problem);
  std::vector<KernelConfig> extra;
  for (const std::string& key : a.extra_configs) extra.push_back(checked_config("--config", key, problems));
  if (!a.save.empty()) {
    std::error_code ec;
    if (a.save == db_path || (std::filesystem::exists(a.save) && std::filesystem::equivalent(a.save, db_path, ec)))
      DGT_THROW(ErrorKind::kUsage, "--save {} is the --db file, which compare opens read-only; save to another file",
                a.save);
  }
  // A --db that exists must be a readable tuning DB (a directory, a text file): refused now, not after
  // the GPU has been opened. A missing one means default configs (README).
  if (std::filesystem::exists(db_path)) {
    DbOption existing;
    existing.path = db_path;
    TuningDb probe(existing.existing("compare"), /*read_only=*/true);
  }

  // The DB is only read, never created or migrated (what the loader does); the per-shape measurement
  // (the loader's choice, verification, cuBLASLt default and tuned, interleaved rounds, checks after
  // replay) is the gate's, tune/shape_compare.hpp.
  ShapeCompareOptions so;
  so.db_path = db_path;
  so.cache_dir = a.cache.dir;
  so.device = a.device.ordinal;
  so.protocol = protocol;
  so.extra_configs = extra;
  so.copy_limit = a.copy_limit;
  ShapeComparer cmp(so);
  std::string db_note;
  if (!std::filesystem::exists(db_path))
    db_note = fmt::format("no tuning database at {}: every shape uses the default config", db_path);
  else if (!cmp.has_winners())
    db_note = fmt::format("{} holds no winners of this device ({}): every shape uses the default config", db_path,
                          cmp.device().name);

  std::unique_ptr<TuningDb> save;
  DeviceScope save_scope;
  if (!a.save.empty()) {
    save = std::make_unique<TuningDb>(a.save);
    save_scope = save->upsert_device(cmp.fingerprint());
  }

  cmp.prefetch(shapes);
  std::vector<CompareShape> out;
  for (const ShapeEntry& e : shapes) {
    spdlog::info("compare {} ({}), {}", e.problem.label(), e.name, protocol.name());
    RoundsResult rounds;
    int heuristics = 0;
    const gate::ShapeRecord rec = cmp.measure(e, &rounds, &heuristics);
    CompareShape c;
    c.problem = e.problem;
    c.name = e.name;
    c.config_key = rec.config_key;
    c.config_source = rec.config_source;
    c.tuned_algo = rec.tuned_algo;
    if (!rec.ok()) c.note = rec.status + ": " + rec.error;
    if (!rounds.samples.empty()) {
      c.result = std::move(rounds);
      if (save) save->put_measurement(save_scope, stored_from_compare(c, protocol.name(), heuristics));
    }
    out.push_back(std::move(c));
  }
  std::string title =
      fmt::format("dgtune compare {} on {} ({}, {} rounds; db {}{}; speedup = cuBLASLt-tuned us / dgtune us)", a.shapes,
                  cmp.device().name, protocol.name(), protocol.rounds, db_path, db_note.empty() ? "" : ": " + db_note);
  if (save) title += "; samples saved to " + a.save;
  a.format.render(compare_tables(out, paired_options(a), title));
  return 0;
}

}  // namespace

/// The device of `db` named by `id` (its row id or hardware key), or the only one holding `what`.
/// Several and none named: Error(kUsage) listing them (exit 2).
int64_t pick_device(const TuningDb& db, const std::string& id, const std::string& flag, bool by_measurements) {
  const std::vector<DeviceRow> rows = db.devices();
  std::string list;
  for (const DeviceRow& r : rows)
    list += fmt::format("\n  {} {} ({} SMs, hardware key {}): {} winners, {} measurements", r.id, r.name, r.sm_count,
                        r.hw_key, r.winners, r.measurements);
  if (!id.empty()) {
    for (const DeviceRow& r : rows)
      if (std::to_string(r.id) == id || r.hw_key == id) return r.id;
    DGT_THROW(ErrorKind::kUsage, "{} {}: no device '{}' in {}; it holds:{}", flag, id, id, db.path(),
              list.empty() ? " none" : list);
  }
  std::vector<int64_t> holding;
  for (const DeviceRow& r : rows)
    if ((by_measurements ? r.measurements : r.winners) > 0) holding.push_back(r.id);
  if (holding.size() == 1) return holding[0];
  if (holding.empty() && rows.size() == 1) return rows[0].id;
  if (holding.empty())
    DGT_THROW(ErrorKind::kUsage, "{} holds no {}{}", db.path(),
              by_measurements ? "stored measurements (dgtune compare --save)" : "winners",
              list.empty() ? "" : "; devices:" + list);
  DGT_THROW(ErrorKind::kUsage, "{} holds several devices; name one with {} ID (row id or hardware key):{}", db.path(),
            flag, list);
}

namespace {

int run_between(const Args& a) {
  // Both paths were checked at parse time (input_file); their content is checked by opening them.
  TuningDb A(a.between[0], /*read_only=*/true), B(a.between[1], /*read_only=*/true);
  const int64_t da = pick_device(A, a.device_a, "--device-a", true),
                dbi = pick_device(B, a.device_b, "--device-b", true);
  auto filter = [&](std::vector<StoredMeasurement> v) {
    if (a.protocol.empty()) return v;
    const std::string prefix = std::string(to_string(parse_protocol_kind(a.protocol))) + "-v";
    std::erase_if(v, [&](const StoredMeasurement& m) { return m.protocol_name.rfind(prefix, 0) != 0; });
    return v;
  };
  const auto ma = filter(A.latest_measurements(da)), mb = filter(B.latest_measurements(dbi));
  a.format.render(
      between_tables(ma, mb, paired_options(a),
                     fmt::format("dgtune compare --between A = {} (device {}) and B = {} (device {}): stored samples, "
                                 "newest measurement per shape and protocol",
                                 A.path(), da, B.path(), dbi)));
  return 0;
}

int run(const Args& a) {
  if (a.shapes.empty() == a.between.empty())
    DGT_THROW(ErrorKind::kUsage,
              "compare needs exactly one of --shapes FILE (measure now) and --between A.db B.db (stored samples)");
  return a.between.empty() ? run_measured(a) : run_between(a);
}
}  // namespace

void add_compare(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(app, action, "compare",
                                    "the config the loader would run vs cuBLASLt default and tuned, in interleaved "
                                    "rounds (or between two DBs' stored samples)",
                                    run);
  auto* shapes = cmd.add_option("--shapes", a.shapes, "shapes file: measure these shapes now (GPU)")
                     ->check(input_file("shapes file"))
                     ->group("Input");
  auto* between = cmd.add_option("--between", a.between, "A.db B.db: compare two tuning DBs' stored samples (no GPU)")
                      ->expected(2)
                      ->check(input_file("tuning database"))
                      ->group("Input");
  shapes->excludes(between);
  cmd.add_option("--device-a", a.device_a, "with --between: device of A (row id or hardware key)")->needs(between);
  cmd.add_option("--device-b", a.device_b, "with --between: device of B (row id or hardware key)")->needs(between);
  cmd.add_option("--protocol", a.protocol,
                 "cold-l2 (default when measuring) or hot-graph; with --between: only that protocol")
      ->check(CLI::IsMember({"cold-l2", "hot-graph"}));
  cmd.add_option("--rounds", a.rounds, "interleaved rounds per shape")
      ->transform(count(1, 100000))
      ->capture_default_str()
      ->needs(shapes);
  cmd.add_option("--margin", a.margin_pct,
                 "equivalence margin in percent (verdict 'equivalent' when the interval lies inside +-PCT)")
      ->transform(real(0, 100))
      ->capture_default_str();
  cmd.add_option("--interval", a.interval,
                 "interval of the verdict: sign (median, any distribution) or wilcoxon (pseudo-median)")
      ->check(CLI::IsMember({"sign", "wilcoxon"}))
      ->capture_default_str();
  cmd.add_option(
         "--save", a.save,
         "with --shapes: store every sample in this tuning DB (created if missing; never the --db one, which is "
         "opened read-only)")
      ->needs(shapes);
  cmd.add_option(
         "--config", a.extra_configs,
         "with --shapes: also time this config key in the same rounds (repeatable), e.g. two kernel schedules "
         "side by side with cuBLASLt; a key that breaks a rule for any shape is refused (exit 2) before the GPU "
         "is opened; each is verified first and left out (with a warning) where its output is wrong")
      ->needs(shapes);
  a.output.add(cmd, false);
  cmd.add_flag("--copy-limit,!--no-copy-limit", a.copy_limit,
               "with --shapes: also time the copy limit (read A and B once, write D once, on the same buffers) as "
               "a side of the same rounds and report copy_us and copy_fraction = copy us / dgtune us (default on; "
               "off: the rounds hold only the GEMM sides, as before this side existed)")
      ->needs(shapes);
  add_groups(cmd, a.db, a.device, a.cache, a.format);
}

}  // namespace dgt::cli
