// dgtune compare: the kernel the loader would run against cuBLASLt default and tuned, measured now in
// interleaved rounds (--shapes), or the same table between two tuning DBs from stored samples (--between): flags,
// then one call into eval/compare_run.hpp.
#include <fmt/format.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/paths.hpp"
#include "eval/compare_run.hpp"

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
  OutputOptions output;                    ///< --d --bias --act: override the shapes file's
  bool copy_limit = true;                  ///< --copy-limit / --no-copy-limit
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  FormatOption format{report::kCompareDocument};
};

int run(const Args& a) {
  if (a.shapes.empty() == a.between.empty())
    DGT_THROW(ErrorKind::kUsage,
              "compare needs exactly one of --shapes FILE (measure now) and --between A.db B.db (stored samples)");
  const CompareStatsOptions stats{a.margin_pct, a.interval};
  if (!a.between.empty()) {
    FormatOption between = a.format;
    between.type = report::kCompareBetweenDocument;
    between.render(compare_between(resolve_db_path(a.between[0]), resolve_db_path(a.between[1]), a.device_a,
                                   a.device_b, a.protocol, stats));
    return 0;
  }
  CompareRunOptions o;
  o.shapes_path = a.shapes;
  o.shapes = ShapesOption{a.shapes, a.output}.load();  // the whole file is checked before the GPU or the DB is opened
  o.protocol = MeasureProtocol::of(parse_protocol_kind(a.protocol.empty() ? "cold-l2" : a.protocol));
  o.protocol.rounds = a.rounds;
  // Every --config against every shape with the space's rules: a key that is malformed or cannot run a
  // shape is bad input (exit 2) before the GPU or the DB is touched.
  std::vector<std::pair<std::string, Problem>> problems;
  for (const ShapeEntry& e : o.shapes) problems.emplace_back(e.where(), e.problem);
  for (const std::string& key : a.extra_configs) o.extra.push_back(checked_config("--config", key, problems));
  o.db_path = a.db.resolved();
  o.db_flag = a.db.flag();
  o.save_path = a.save.empty() ? std::string() : resolve_db_path(a.save);
  o.copy_limit = a.copy_limit;
  o.device = a.device.ordinal;
  o.cache_dir = a.cache.dir;
  o.stats = stats;
  a.format.render(run_compare(o));
  return 0;
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
                      ->check(db_input_file("tuning database"))
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
