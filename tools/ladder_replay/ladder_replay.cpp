// dgtune_ladder_replay: what dgt::Gemm would choose for each problem of a shapes file at each M of a list, from a
// tuning DB, without a GPU. It runs the loader's own rule functions (loader/choice.hpp: the identity rule, the ladder
// re-rank, the stored cuBLASLt rival and the ladder dispatch check) the way Gemm::Impl::resolve_locked and
// cublaslt_backend call them, with the estimate at --sm-count SMs. So a change of the ladder rule can be replayed
// against the rows of an earlier `compare --m-grid` run (which measured both backends' times at the same M) before
// the GPU confirms it. Not replayed: what needs the device (legality beyond the rules, cuBLASLt's heuristic, a stored
// algorithm's cublasLtMatmulAlgoCheck): a row says "cublaslt" where the loader would try cuBLASLt. The running kernel
// hash (it orders winners before M) is that of the newest environment that stored a winner of the problem's family
// unless --kernel-hash names one (the loader uses its own, for every family); the SM count is the DB device's unless
// --sm-count is given.
//
// usage: dgtune_ladder_replay --db DB --shapes FILE --m 17,29,... [--sm-count N] [--kernel-hash H]
//        [--protocol cold-l2] [--out F]
// Output: one JSON document {"rows": [...]} (stdout, or --out).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <optional>

#include "cli/options.hpp"
#include "core/error.hpp"
#include "db/tuning_db_reader.hpp"
#include "loader/choice.hpp"
#include "loader/shape_key.hpp"
#include "problem/m_grid.hpp"
#include "space/cost_model.hpp"

namespace dgt {
namespace {

/// A family's DB rows, read once for all its M (the loader reads them once per family too).
struct FamilyRows {
  std::optional<ShapeKey> key;  ///< the family (ShapeKey::family(), as dgt::Gemm keys its families)
  std::vector<EnvironmentWinner> winners, trials;
  std::vector<StoredCublasLtAlgo> algos;
};

const FamilyRows& family_rows(const TuningDbReader& db, int64_t device_id, const Problem& p, FamilyRows& cache) {
  const ShapeKey family = shape_key_of(p).family();
  if (cache.key == family) return cache;
  cache.key = family;
  cache.winners = db.environment_winners(device_id, p);
  cache.trials = db.family_trials(device_id, p);
  cache.algos = db.cublaslt_winners(device_id, p);
  return cache;
}

nlohmann::json replay(const FamilyRows& fam, const Problem& p, int sm_count, const std::string& kernel_hash_option,
                      const std::string& protocol_kind) {
  nlohmann::json row = {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"backend", "dgtune"}};
  const std::vector<EnvironmentWinner>& winners = fam.winners;
  // No usable tuned entry: the loader calls cuBLASLt's heuristic (it cannot write e4m3 D: the default config runs).
  auto untuned = [&](const std::string& why) {
    row["source"] = "default";
    row["config"] = default_config(p).key();
    if (p.d != DType::kE4M3) row["backend"] = "cublaslt";
    row["why"] = why;
    return row;
  };
  if (winners.empty()) return untuned("no tuned entry of the family");
  // The running environment: the newest one that stored a winner of this family.
  const EnvironmentWinner* newest = &winners.front();
  for (const EnvironmentWinner& w : winners)
    if (w.environment_id > newest->environment_id) newest = &w;
  const std::string kernel_hash = kernel_hash_option.empty() ? newest->env.kernel_hash : kernel_hash_option;
  const std::string env_key = newest->env_key;
  std::optional<StoredChoice> w =
      choose_stored_winner(winners, p, kernel_hash, env_key, protocol_kind, legal_for_current_kernel);
  if (!w) return untuned("no stored winner is legal for the problem");
  const std::optional<StoredChoice> winner = w;
  const std::vector<std::string> allowed =
      tuned_m_choices(winners, p, kernel_hash, env_key, protocol_kind, legal_for_current_kernel);
  const std::vector<EnvironmentWinner> trials = ladder_trials(fam.trials, allowed);
  const EstimateFn estimate = analytic_estimate(sm_count);
  if (!trials.empty()) w = rerank_ladder(*w, p, trials, estimate, legal_for_current_kernel);
  row["source"] = w->source;
  row["config"] = w->config.key();
  row["from_m"] = w->from.m;
  row["tuned_us"] = w->tuned_us;
  row["identity_config"] = winner->config.key();
  const BackendDecision d =
      decide_backend(*w, *winner, p, ladder_time_ratio(estimate, w->config, p, w->from), fam.algos);
  if (d.check.kernel_us > 0) {  // a ladder pick with stored cuBLASLt medians on both sides
    row["predicted_kernel_us"] = d.check.kernel_us;
    row["interpolated_cublaslt_us"] = d.check.cublaslt_us;
  }
  if (d.kind != BackendDecision::Kind::kKernel) {
    row["backend"] = "cublaslt";
    row["why"] = d.kind == BackendDecision::Kind::kStoredAlgo ? "stored algorithm won"
                 : d.won_at_m > 0                             ? "the heuristic won at the neighbour"
                                                              : "ladder check";
  }
  return row;
}

int run(int argc, char** argv) {
  CLI::App app{"the loader's choice at each M of a list, replayed from a tuning DB without a GPU"};
  std::string db_path, out_path, kernel_hash, protocol_kind = "cold-l2";
  cli::ShapesOption shapes;
  std::vector<int64_t> ms;
  int sm_count = 0;
  app.add_option("--db", db_path, "tuning database")->required();
  shapes.add(app, /*output_overrides=*/false);
  cli::add_count_list(app, "--m", ms, "M values, comma-separated", 1, (int64_t(1) << 31) - 1)->required();
  app.add_option("--sm-count", sm_count, "SMs of the estimate (default: the DB device's)")->check(CLI::PositiveNumber);
  app.add_option("--kernel-hash", kernel_hash, "the running kernel hash (default: the newest environment's)");
  app.add_option("--protocol", protocol_kind, "protocol kind whose winners come first");
  app.add_option("--out", out_path, "write the JSON here instead of stdout");
  CLI11_PARSE(app, argc, argv);

  TuningDbReader db(db_path);
  const std::vector<DeviceRow> devices = db.devices();
  if (devices.size() != 1) DGT_THROW(ErrorKind::kUsage, "{} holds {} devices; one expected", db_path, devices.size());
  if (sm_count == 0) sm_count = devices.front().sm_count;
  nlohmann::json rows = nlohmann::json::array();
  FamilyRows cache;  // grid_problems gives each family's M one after another
  for (const GridProblem& g : grid_problems(shapes.load(), ms)) {
    const Problem& p = g.entry.problem;
    rows.push_back(replay(family_rows(db, devices.front().id, p, cache), p, sm_count, kernel_hash, protocol_kind));
  }
  const std::string doc = nlohmann::json{{"db", db_path}, {"sm_count", sm_count}, {"rows", rows}}.dump(1);
  if (out_path.empty()) {
    std::cout << doc << "\n";
  } else {
    std::ofstream out(out_path);
    out << doc << "\n";
    if (!out.flush()) DGT_THROW(ErrorKind::kIo, "cannot write {}", out_path);
  }
  return 0;
}

}  // namespace
}  // namespace dgt

int main(int argc, char** argv) {
  try {
    return dgt::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "dgtune_ladder_replay: {}\n", e.what());
    return 2;
  }
}
