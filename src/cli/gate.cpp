// dgtune gate: the CI performance regression gate (record a baseline; check against one) and dgtune history (a
// shape's gate series): flags, then one call into eval/gate_run.hpp.
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/paths.hpp"
#include "eval/gate_run.hpp"

namespace dgt::cli {

namespace {

struct Args {
  std::string record, baseline, shapes, history, junit, markdown, protocol;
  int rounds = 0;  // 0: the baseline's (check) or kRecordRounds (record)
  int search = 0;  // --search K: the model's top K screened now instead of the loader's choice
  double threshold_pct = 5, confidence = 0.95;
  uint64_t seed = SessionOptions{}.seed;
  DbOption db;
  DeviceOption device;
  CacheDirOption cache;
  FormatOption format{report::kGateDocument};
};

int run(const Args& a) {
  GateRunOptions o;
  o.record_path = a.record;
  o.baseline_path = a.baseline;
  o.shapes_path = a.shapes;
  if (!a.shapes.empty()) o.shapes = ShapesOption{a.shapes}.load(/*with_grouped=*/true);
  o.protocol = a.protocol;
  o.rounds = a.rounds;
  o.search = a.search;
  o.threshold_pct = a.threshold_pct;
  o.confidence = a.confidence;
  o.seed = a.seed;
  o.db_path = a.db.resolved();
  o.db_flag = a.db.flag();
  o.history_path = a.history.empty() ? std::string() : resolve_db_path(a.history);
  o.junit_path = a.junit;
  o.markdown_path = a.markdown;
  o.device = a.device.ordinal;
  o.cache_dir = a.cache.dir;
  o.show = [&](const report::Table& t, const report::DocumentType& type) { a.format.render(t, type); };
  return run_gate(o);
}

struct HistoryArgs {
  std::string shape, history;
  DbOption db;
  FormatOption format{report::kHistoryDocument};
};

int run_history(const HistoryArgs& a) {
  if (a.history.empty()) {
    a.format.render(gate_history(a.db.existing("history"), a.shape));
    return 0;
  }
  // --history names the DB read, so a refusal names --history, not --db.
  a.format.render(gate_history(existing_db_input(a.history, "history database (--history)", "history"), a.shape));
  return 0;
}

}  // namespace

void add_gate(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(
      app, action, "gate",
      "CI performance gate: --record FILE writes a baseline; --baseline FILE measures now and fails on a regression "
      "(exit 0 pass, 3 regression, 1 error, 2 bad input)",
      run);
  cmd.add_option("--record", a.record, "measure now and write a baseline JSON to FILE");
  cmd.add_option("--baseline", a.baseline, "baseline JSON (from --record) to check against")
      ->check(input_file("baseline file"));
  cmd.add_option("--shapes", a.shapes, "shapes file (default with --baseline: the baseline's shapes)")
      ->check(input_file("shapes file"))
      ->group("Input");
  cmd.add_option("--protocol", a.protocol,
                 "cold-l2 (cold-l2-v2) | cold-l2-v3 | hot-graph (default: the baseline's; cold-l2 for --record)")
      ->check(CLI::IsMember([] {
        std::vector<std::string> v;  // compare's choices but isolated: the gate reads paired rounds
        for (const char* p : kMeasuringProtocols)
          if (MeasureProtocol::named(p).kind != ProtocolKind::kIsolated) v.emplace_back(p);
        return v;
      }()));
  cmd.add_option("--rounds", a.rounds, "interleaved rounds per shape (default: the baseline's; 50 for --record)")
      ->transform(count(2, 100000));
  cmd.add_option("--search", a.search,
                 "gate the fastest of the cost model's top K candidates, screened now (compiled, verified, 5 "
                 "rounds), instead of the loader's choice from the DB: judges the kernel and model without a tuned DB")
      ->transform(count(1, 64));
  cmd.add_option("--threshold", a.threshold_pct, "tolerated slowdown of the ratio, percent")
      ->transform(real(0, 1000))
      ->capture_default_str();
  cmd.add_option("--confidence", a.confidence, "confidence of the one-sided test")
      ->transform(real(0.5, 0.9999))
      ->capture_default_str();
  cmd.add_option("--junit", a.junit, "write JUnit XML (one testcase per shape) to FILE");
  cmd.add_option("--markdown", a.markdown, "write a markdown summary (for a PR comment) to FILE");
  cmd.add_option("--history", a.history, "history DB every gate run is appended to (default: the tuning DB)");
  cmd.add_option("--seed", a.seed, "input fill seed")->transform(count_u64())->capture_default_str();
  add_groups(cmd, a.db, a.device, a.cache, a.format);
}

void add_history(CLI::App& app, Action& action) {
  auto [cmd, a] =
      add_command<HistoryArgs>(app, action, "history", "the gate history of one shape, oldest run first", run_history);
  cmd.add_option("--shape", a.shape, "problem key, shapes-file name= or MxNxK")->required();
  cmd.add_option("--history", a.history, "history DB (default: the tuning DB)");
  add_groups(cmd, a.db, a.format);
}

}  // namespace dgt::cli
