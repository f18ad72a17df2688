// dgtune compare: the kernel the loader would run against cuBLASLt default and tuned, measured now in
// interleaved rounds (--shapes), the same at a grid of M no ladder tunes with what dgt::Gemm dispatches (--m-grid,
// eval/coverage_run.hpp), or the same table between two tuning DBs from stored samples (--between): flags, then one
// call into eval/.
#include <fmt/format.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/paths.hpp"
#include "eval/compare_run.hpp"
#include "eval/coverage_run.hpp"
#include "eval/grouped_compare.hpp"
#include "eval/grouped_lines.hpp"
#include "problem/grouped_problem.hpp"
#include "space/grouped_rules.hpp"

namespace dgt::cli {

namespace {
struct Args {
  std::string shapes;
  std::vector<std::string> between;
  std::string device_a, device_b;
  std::string protocol;  ///< empty: cold-l2 (measured) / every stored protocol (--between)
  int rounds = MeasureProtocol{}.rounds;
  const CLI::Option* rounds_flag = nullptr;  ///< to tell an explicit --rounds from the default (isolated-v2: 30)
  std::string side_order = "williams";                           ///< --side-order (the protocol study)
  double gap_us = 0;                                             ///< --gap-us (the protocol study)
  int launches = MeasureProtocol::isolated().launches_per_sample;  ///< --launches (isolated-v1)
  const CLI::Option* launches_flag = nullptr;
  double margin_pct = 2;
  std::string interval = "sign";
  std::string save;
  std::vector<std::string> extra_configs;        ///< --config KEY (repeatable)
  std::vector<std::string> grouped;              ///< --grouped SPEC (repeatable): grouped problems
  std::string dense_config;                      ///< --dense-config KEY (with --grouped)
  std::string vs_config;                         ///< --vs-config KEY (with --grouped): the grouped-vs side
  /// Options of a measuring compare (--shapes or --grouped), refused with --between (checked in run()).
  std::vector<const CLI::Option*> measuring_only;
  OutputOptions output;                          ///< --d --bias --act: override the shapes file's
  bool copy_limit = true;                        ///< --copy-limit / --no-copy-limit
  const CLI::Option* copy_limit_flag = nullptr;  ///< to tell an explicit --copy-limit from the default
  // --m-grid: the coverage measurement (eval/coverage_run.hpp).
  bool m_grid = false;
  int64_t grid_seed = CoverageRunOptions{}.grid_seed;
  int per_octave = CoverageRunOptions{}.per_octave;
  std::vector<int64_t> grid_ms;  ///< --grid-m: these M instead of the grid
  std::string model;
  std::string shard;  ///< --shard i/n of the grid problems; empty: all
  bool ladder_probe = true;  ///< --no-ladder-probe: GemmOptions::probe_ladder = false
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  FormatOption format{report::kCompareDocument};
};

/// compare --m-grid: the coverage measurement, one call into eval/coverage_run.hpp.
int run_m_grid(const Args& a, const CompareStatsOptions& stats) {
  if (a.copy_limit && a.copy_limit_flag->count() > 0)
    DGT_THROW(ErrorKind::kUsage, "--copy-limit: --m-grid does not time the copy limit (drop --copy-limit)");
  const MeasureProtocol protocol = MeasureProtocol::named(a.protocol.empty() ? "cold-l2" : a.protocol);
  if (protocol.kind == ProtocolKind::kIsolated || a.side_order != "williams" || a.gap_us != 0)
    DGT_THROW(ErrorKind::kUsage,
              "--protocol isolated / --side-order / --gap-us: --m-grid measures the standard protocols only "
              "(cold-l2-v2, cold-l2-v3 or hot-graph, Williams order, no gap)");
  CoverageRunOptions o;
  o.shapes_path = a.shapes;
  o.shapes = ShapesOption{a.shapes, a.output}.load(/*with_grouped=*/true);  // checked before the GPU or the DB
  refuse_grouped_lines(o.shapes, "--m-grid",
                       "measures dense problems at a grid of M; measure a grouped line at other counts by giving them "
                       "as lines of a shapes file without --m-grid");
  o.grid_seed = a.grid_seed;
  o.per_octave = a.per_octave;
  o.ms = a.grid_ms;
  o.model = a.model;
  o.shard = a.shard.empty() ? Shard{} : parse_shard(a.shard);
  o.protocol = protocol;
  o.protocol.rounds = a.rounds;
  o.db_path = a.db.resolved();
  o.db_flag = a.db.flag();
  o.device = a.device.ordinal;
  o.cache_dir = a.cache.dir;
  o.probe_ladder = a.ladder_probe;
  o.stats = stats;
  FormatOption coverage = a.format;
  coverage.type = report::kCoverageDocument;
  coverage.render(run_coverage(o));
  return 0;
}

/// The protocol of a measuring compare: --protocol's kind or name (MeasureProtocol::named) with --rounds, and the
/// protocol study's --side-order and --gap-us (isolated-v1: --launches); the combinations are checked by
/// check_compare_protocol (eval/compare_run.hpp).
MeasureProtocol protocol_of(const Args& a) {
  MeasureProtocol p = MeasureProtocol::named(a.protocol.empty() ? "cold-l2" : a.protocol);
  const bool filled = p.fill_bytes > 0;  // isolated-v2: its own samples (30) and one launch per sample
  if (!filled || a.rounds_flag->count() > 0) p.rounds = a.rounds;
  p.order = parse_side_order(a.side_order);
  p.gap_us = a.gap_us;
  if (a.launches_flag->count() > 0 && (p.kind != ProtocolKind::kIsolated || filled))
    DGT_THROW(ErrorKind::kUsage,
              "--launches {}: only --protocol isolated (isolated-v1) launches a kernel several times per sample{}",
              a.launches, filled ? "; isolated-v2 times one launch after each zero fill" : "");
  if (!filled) p.launches_per_sample = a.launches;
  return p;
}

/// A config key of a --grouped flag, parsed; a malformed key is bad input naming the flag.
KernelConfig grouped_flag_key(const char* flag, const std::string& key) {
  try {
    return KernelConfig::parse_key(key);
  } catch (const Error& e) {
    DGT_THROW(ErrorKind::kUsage, "{}: {}", flag, e.message());
  }
}

/// compare --grouped: grouped problems against the per-group cuBLASLt loop and the dense kernel over the total M
/// (eval/grouped_compare.hpp). Every spec and the config are checked before the GPU is opened.
int run_grouped(const Args& a, const CompareStatsOptions& stats) {
  if (a.extra_configs.size() != 1)
    DGT_THROW(ErrorKind::kUsage,
              "--grouped needs exactly one --config KEY: the grouped kernel's config (to measure what the loader runs "
              "from the tuning DB, give the problem as a grouped line of a shapes file: compare --shapes FILE); got {}",
              a.extra_configs.size());
  GroupedCompareOptions o;
  for (const std::string& spec : a.grouped) o.problems.push_back(parse_grouped_problem(spec, "--grouped"));
  o.config = grouped_flag_key("--config", a.extra_configs[0]);
  for (const GroupedProblem& g : o.problems)
    if (const std::string v = grouped_config_violation(o.config, g); !v.empty())
      DGT_THROW(ErrorKind::kUsage, "--config {} cannot run --grouped '{}': {}", o.config.key(), g.label(), v);
  if (!a.vs_config.empty()) {
    o.vs_config = grouped_flag_key("--vs-config", a.vs_config);
    for (const GroupedProblem& g : o.problems)
      if (const std::string v = grouped_config_violation(*o.vs_config, g); !v.empty())
        DGT_THROW(ErrorKind::kUsage, "--vs-config {} cannot run --grouped '{}': {}", o.vs_config->key(), g.label(),
                  v);
  }
  if (!a.dense_config.empty()) o.dense_config = grouped_flag_key("--dense-config", a.dense_config);
  o.protocol = protocol_of(a);
  check_compare_protocol(o.protocol, false);
  o.device = a.device.ordinal;
  o.cache_dir = a.cache.dir;
  o.stats = stats;
  FormatOption grouped = a.format;
  grouped.type = report::kGroupedCompareDocument;
  grouped.render(run_grouped_compare(o));
  return 0;
}

int run(const Args& a) {
  const CompareStatsOptions stats{a.margin_pct, a.interval};
  if (!a.grouped.empty()) return run_grouped(a, stats);
  if (!a.between.empty())
    for (const CLI::Option* opt : a.measuring_only)
      if (opt->count() > 0)
        DGT_THROW(ErrorKind::kUsage, "{} requires --shapes or --grouped (a measuring compare), not --between",
                  opt->get_name());
  if (a.shapes.empty() == a.between.empty())
    DGT_THROW(ErrorKind::kUsage,
              "compare needs exactly one of --shapes FILE (measure now), --grouped SPEC (a grouped GEMM, measured now) "
              "and --between A.db B.db (stored samples)");
  if (a.m_grid) return run_m_grid(a, stats);
  if (!a.between.empty()) {
    FormatOption between = a.format;
    between.type = report::kCompareBetweenDocument;
    between.render(compare_between(resolve_db_path(a.between[0]), resolve_db_path(a.between[1]), a.device_a, a.device_b,
                                   a.protocol, stats));
    return 0;
  }
  CompareRunOptions o;
  o.shapes_path = a.shapes;
  // The whole file (dense and grouped lines) is checked before the GPU or the DB is opened.
  o.shapes = ShapesOption{a.shapes, a.output}.load(/*with_grouped=*/true);
  o.protocol = protocol_of(a);
  check_grouped_compare(o.shapes, !a.save.empty(), !a.extra_configs.empty());
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
                 "cold-l2 (default when measuring: cold-l2-v2), cold-l2-v3 (v2 with a queue tail after each round: "
                 "no dependence on a sample's place in the round), hot-graph, or isolated (one kernel at a time, "
                 "back-to-back launches after an L2 flush: absolute TFLOPS, not paired; isolated-v1), isolated-v2 "
                 "(one launch per sample after a zero fill of 8e9 bytes: DeepGEMM's benchmark procedure, for its "
                 "published numbers); a kind or a versioned name; with --between: only that protocol (a kind: every "
                 "version of it)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kMeasuringProtocols), std::end(kMeasuringProtocols))));
  a.rounds_flag = cmd.add_option("--rounds", a.rounds,
                                 "interleaved rounds per shape (isolated: samples per side; isolated-v2's default 30)")
                      ->transform(count(1, 100000))
                      ->capture_default_str();
  a.measuring_only.push_back(a.rounds_flag);
  a.measuring_only.push_back(cmd.add_option("--side-order", a.side_order,
                 "with --shapes, protocol study: the order of the sides in each round: williams (balanced, the "
                 "protocol), fixed (dgtune first every round) or reversed (dgtune last, right after cuBLASLt-tuned); "
                 "recorded in the protocol JSON, never saved")
      ->check(CLI::IsMember({"williams", "fixed", "reversed"}))
      ->capture_default_str()
      ->group("Protocol study"));
  a.measuring_only.push_back(cmd.add_option("--gap-us", a.gap_us,
                 "with --shapes, protocol study: an idle gap of US microseconds before every sample's launch (after its "
                 "flush): a one-SM busy wait queued on the stream (near-idle power, exact in GPU time, the round stays "
                 "queued ahead of the GPU); 0 = none, the protocol; recorded in the protocol JSON, never saved")
      ->transform(real(0, 1e6))
      ->capture_default_str()
      ->group("Protocol study"));
  a.launches_flag = cmd.add_option("--launches", a.launches,
                                   "with --protocol isolated: back-to-back launches per sample (one event pair)")
                        ->transform(count(1, 10000))
                        ->capture_default_str()
                        ->group("Protocol study");
  a.measuring_only.push_back(a.launches_flag);
  cmd.add_option("--margin", a.margin_pct,
                 "equivalence margin in percent (verdict 'equivalent' when the interval lies inside +-PCT)")
      ->transform(real(0, 100))
      ->capture_default_str();
  cmd.add_option("--interval", a.interval,
                 "interval of the verdict: sign (median, any distribution) or wilcoxon (pseudo-median)")
      ->check(CLI::IsMember({"sign", "wilcoxon"}))
      ->capture_default_str();
  auto* save =
      cmd.add_option(
             "--save", a.save,
             "with --shapes: store every sample in this tuning DB (created if missing; never the --db one, which is "
             "opened read-only)")
          ->needs(shapes);
  auto* config =
      cmd.add_option(
             "--config", a.extra_configs,
             "with --shapes: also time this config key in the same rounds (repeatable), e.g. two kernel schedules "
             "side by side with cuBLASLt; a key that breaks a rule for any shape is refused (exit 2) before the GPU "
             "is opened; each is verified first and left out (with a warning) where its output is wrong; with "
             "--grouped: the grouped kernel's config (exactly one)");
  a.measuring_only.push_back(config);
  a.output.add(cmd, false);
  a.copy_limit_flag =
      cmd.add_flag("--copy-limit,!--no-copy-limit", a.copy_limit,
                   "with --shapes: also time the copy limit (read A and B once, write D once, on the same buffers) as "
                   "a side of the same rounds and report copy_us and copy_fraction = copy us / dgtune us (default on; "
                   "off: the rounds hold only the GEMM sides, as before this side existed; --m-grid never times it)")
          ->needs(shapes);
  auto* m_grid =
      cmd.add_flag("--m-grid", a.m_grid,
                   "with --shapes: the coverage measurement: the file's problems (M ignored) at a grid of M that no "
                   "ladder tunes (every midpoint of the default ladder, plus --per-octave M per octave drawn with "
                   "--grid-seed); per M what dgt::Gemm runs, the dgtune kernel of its choice, cuBLASLt tuned and "
                   "default in the same rounds; JSON document dgtune-coverage")
          ->excludes(between)
          ->excludes(save)
          ->excludes(config)
          ->group("Coverage (--m-grid)");
  cmd.add_option("--grid-seed", a.grid_seed,
                 "with --m-grid: seed of the drawn M (std::mt19937_64; in the title and every row)")
      ->transform(count(0))
      ->capture_default_str()
      ->needs(m_grid)
      ->group("Coverage (--m-grid)");
  auto* per_octave =
      cmd.add_option("--per-octave", a.per_octave, "with --m-grid: M drawn per octave [2^i, 2^(i+1)) from 1 to 16384")
          ->transform(count(1, 64))
          ->capture_default_str()
          ->needs(m_grid)
          ->group("Coverage (--m-grid)");
  // --grid-m replaces the grid that --per-octave draws: both at once would silently drop one.
  add_count_list(cmd, "--grid-m", a.grid_ms,
                 "with --m-grid: exactly these M (comma-separated) instead of the grid, e.g. the rows below a bar "
                 "measured once more to confirm them",
                 1)
      ->needs(m_grid)
      ->excludes(per_octave)
      ->group("Coverage (--m-grid)");
  cmd.add_flag("--ladder-probe,!--no-ladder-probe", a.ladder_probe,
               "with --m-grid: whether dgt::Gemm times its ladder pick against cuBLASLt's heuristic at the first call "
               "of an M no sweep tuned (GemmOptions::probe_ladder; default on; off: the ladder rule's prediction "
               "alone decides, as before the probe)")
      ->needs(m_grid)
      ->group("Coverage (--m-grid)");
  cmd.add_option("--model", a.model,
                 "with --m-grid: the model every row names (default: each line's name= up to the first '.')")
      ->needs(m_grid)
      ->group("Coverage (--m-grid)");
  cmd.add_option("--shard", a.shard,
                 "with --m-grid: i/n: measure only shard i of n of the grid problems (grid problem j goes to shard j "
                 "mod n); the union of the shards' JSON is the whole run (scripts/coverage_union.py)")
      ->check(shard_validator())
      ->needs(m_grid)
      ->group("Coverage (--m-grid)");
  auto* grouped =
      cmd.add_option("--grouped", a.grouped,
                     "a grouped (MoE) GEMM instead of --shapes (repeatable; the syntax of `run --grouped`): the grouped "
                     "kernel of --config against one cuBLASLt call per group, the dgtune dense kernel over the "
                     "total M and, with --vs-config, the grouped kernel of a second config, in the same rounds on the "
                     "same buffers; JSON document dgtune-compare-grouped")
          ->excludes(shapes)
          ->excludes(between)
          ->excludes(save)
          ->excludes(m_grid)
          ->group("Grouped (--grouped)");
  cmd.add_option("--dense-config", a.dense_config,
                 "with --grouped: the dense side's config key (default: the default config of the total-M problem)")
      ->needs(grouped)
      ->group("Grouped (--grouped)");
  cmd.add_option("--vs-config", a.vs_config,
                 "with --grouped: a second grouped config timed as a fourth side (grouped-vs) in the same rounds on "
                 "the same buffers and verified like --config's; x_vs = grouped-vs us / grouped us (an A/B of two "
                 "grouped configs: --config NEW --vs-config OLD times a kernel change, x_vs is its speedup); checked "
                 "against the grouped rules before the GPU is opened")
      ->needs(grouped)
      ->group("Grouped (--grouped)");
  add_groups(cmd, a.db, a.device, a.cache, a.format);
  // --between reads two stored DBs on no GPU: the output overrides, the DB, the device and the cubin cache of a
  // measuring compare have nothing to act on there (they were accepted and ignored).
  for (const char* name : {"--d", "--bias", "--act", "--db", "--device", "--cache-dir"})
    a.measuring_only.push_back(cmd.get_option(name));
}

}  // namespace dgt::cli
