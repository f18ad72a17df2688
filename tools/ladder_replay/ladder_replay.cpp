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
#include <sstream>

#include "core/error.hpp"
#include "db/tuning_db_reader.hpp"
#include "loader/choice.hpp"
#include "problem/m_grid.hpp"
#include "problem/shapes_file.hpp"
#include "space/cost_model.hpp"

namespace dgt {
namespace {

nlohmann::json replay(const TuningDbReader& db, int64_t device_id, const Problem& p, int sm_count,
                      const std::string& kernel_hash_option, const std::string& protocol_kind) {
  nlohmann::json row = {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"backend", "dgtune"}};
  const std::vector<EnvironmentWinner> winners = db.environment_winners(device_id, p);
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
  const std::vector<EnvironmentWinner> trials = ladder_trials(db.family_trials(device_id, p), allowed);
  const EstimateFn estimate = analytic_estimate(sm_count);
  if (!trials.empty()) w = rerank_ladder(*w, p, trials, estimate, legal_for_current_kernel);
  row["source"] = w->source;
  row["config"] = w->config.key();
  row["from_m"] = w->from.m;
  row["tuned_us"] = w->tuned_us;
  row["identity_config"] = winner->config.key();
  const std::vector<StoredCublasLtAlgo> algos = db.cublaslt_winners(device_id, p);
  const StoredCublasLtAlgo* rival = cublaslt_rival(algos, *winner);
  if (rival && stored_algo_beats_kernel(p, winner->tuned_us, rival->median_us, rival->algo_data.size())) {
    row["backend"] = "cublaslt";
    row["why"] = replay_stored_algo(*winner, p) ? "stored algorithm won" : "cuBLASLt won at the neighbour";
    return row;
  }
  const LadderDispatch d = ladder_dispatch(*w, p, ladder_time_ratio(estimate, w->config, p, w->from), algos);
  if (d.kernel_us > 0) {  // a ladder pick with stored cuBLASLt medians on both sides
    row["predicted_kernel_us"] = d.kernel_us;
    row["interpolated_cublaslt_us"] = d.cublaslt_us;
  }
  if (d.cublaslt) {
    // cuBLASLt cannot write e4m3 D: the loader's heuristic call fails and the kernel runs.
    if (p.d != DType::kE4M3) row["backend"] = "cublaslt";
    row["why"] = p.d == DType::kE4M3 ? "ladder check prefers cuBLASLt, which cannot write e4m3" : "ladder check";
  }
  return row;
}

int run(int argc, char** argv) {
  CLI::App app{"the loader's choice at each M of a list, replayed from a tuning DB without a GPU"};
  std::string db_path, shapes_path, m_list, out_path, kernel_hash, protocol_kind = "cold-l2";
  int sm_count = 0;
  app.add_option("--db", db_path, "tuning database")->required();
  app.add_option("--shapes", shapes_path, "shapes file (M ignored)")->required();
  app.add_option("--m", m_list, "comma-separated M values")->required();
  app.add_option("--sm-count", sm_count, "SMs of the estimate (default: the DB device's)")->check(CLI::PositiveNumber);
  app.add_option("--kernel-hash", kernel_hash, "the running kernel hash (default: the newest environment's)");
  app.add_option("--protocol", protocol_kind, "protocol kind whose winners come first");
  app.add_option("--out", out_path, "write the JSON here instead of stdout");
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(shapes_path);
  if (!in) DGT_THROW(ErrorKind::kIo, "cannot read shapes file {}", shapes_path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<int64_t> ms;
  for (std::stringstream s(m_list); s.good();) {
    std::string item;
    std::getline(s, item, ',');
    if (item.empty()) continue;
    size_t used = 0;
    int64_t m = 0;
    try {
      m = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || m < 1) DGT_THROW(ErrorKind::kUsage, "--m: '{}' is not a positive integer", item);
    ms.push_back(m);
  }
  TuningDbReader db(db_path);
  const std::vector<DeviceRow> devices = db.devices();
  if (devices.size() != 1) DGT_THROW(ErrorKind::kUsage, "{} holds {} devices; one expected", db_path, devices.size());
  if (sm_count == 0) sm_count = devices.front().sm_count;
  nlohmann::json rows = nlohmann::json::array();
  for (const GridProblem& g : grid_problems(parse_shapes(text.str(), shapes_path), ms))
    rows.push_back(replay(db, devices.front().id, g.entry.problem, sm_count, kernel_hash, protocol_kind));
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
