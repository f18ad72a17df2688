#include "loader/choice.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "records/protocol_name.hpp"
#include "space/cost_model.hpp"
#include "space/resource_model.hpp"
#include "space/tile_grid.hpp"

namespace dgt {

bool legal_for_current_kernel(const KernelConfig& config, const Problem& problem) {
  return config_rule_violation(config, problem).empty();
}

namespace {

/// True when q is in p's family: the same N, K, types, scale mode, accumulation, output type, bias and activation (a
/// winner of another scale mode ran another kernel: a per-tensor winner may use BLOCK_K 256, which block scaling cannot).
bool same_family(const Problem& p, const Problem& q) {
  return q.n == p.n && q.k == p.k && q.a == p.a && q.b == p.b && q.d == p.d && q.scale == p.scale &&
         q.accum == p.accum && q.bias == p.bias && q.act == p.act;
}

/// -1, 0, 1 as |log a - log m| is smaller, equal or larger than |log b - log m| (exact, in 128 bits).
int compare_log_distance(int64_t a, int64_t b, int64_t m) {
  using u128 = unsigned __int128;
  u128 lhs = u128(std::max(a, m)) * u128(std::min(b, m)), rhs = u128(std::max(b, m)) * u128(std::min(a, m));
  return lhs < rhs ? -1 : (lhs > rhs ? 1 : 0);
}

}  // namespace

std::optional<StoredChoice> choose_stored_winner(const std::vector<EnvironmentWinner>& candidates, const Problem& p,
                                                 const std::string& kernel_hash, const std::string& env_key,
                                                 const std::string& protocol_kind, const LegalFn& legal) {
  // Everything the order compares is computed once per candidate (no key strings inside the sort: a first call of a
  // new M after warm-up spent 40-90 us formatting problem keys here, measured on 25 candidates).
  struct Ranked {
    const EnvironmentWinner* c;
    bool own, kind, cur, env;
  };
  // Only p's family (same_family): another family's winner never stands in for p, even when a caller passes it.
  std::vector<Ranked> order;
  // Per kind (index 1: the kind asked for), the smallest and the largest tuned M of the family.
  int64_t lo[2] = {INT64_MAX, INT64_MAX}, hi[2] = {0, 0};
  for (const auto& c : candidates)
    if (c.problem.m >= 1 && same_family(p, c.problem)) {
      const bool kind = protocol_kind_of(c.protocol_name) == protocol_kind;
      order.push_back({&c, c.problem == p, kind, c.env.kernel_hash == kernel_hash, c.env_key == env_key});
      lo[kind] = std::min(lo[kind], c.problem.m);
      hi[kind] = std::max(hi[kind], c.problem.m);
    }
  // Past the asked kind's largest tuned M, where the other kind's tuned M reach p.m from both sides, the other kind's
  // M are taken; else the asked kind's. Why: there the asked kind's pick is its largest tuned M, a far end, and the
  // other kind's is one tuned at p.m's neighbours for the other protocol. Measured on an H100
  // (results/h200/coverage-2026-12-06.md, hot-graph ladders tuned only up to some M): those nearest hot-graph picks
  // ran 9-11% slower than the completed hot-graph ladder, while a cold-l2 winner timed under hot-graph at its own M was
  // 1.4-3.0% slower than the hot-graph winner (geomean over the tuned M). Below the asked kind's smallest tuned M its
  // pick is already the upper neighbour, and stays. The other kind's pick past the asked kind's range is its winner at
  // a tuned M that the asked kind does not have, which a warm-up resolves (loader/warm_specs.hpp): no new kernel.
  const bool other_covers = lo[0] <= p.m && p.m <= hi[0];
  const bool take_asked = p.m <= hi[1] || !other_covers;
  // True when a is preferred over b (the order documented in choice.hpp). Problem equality is key equality.
  auto better = [&](const Ranked& ra, const Ranked& rb) {
    const EnvironmentWinner *a = ra.c, *b = rb.c;
    if (ra.own != rb.own) return ra.own;
    // p itself: the asked kind first; another M: the kind whose tuned M are taken (take_asked).
    if (ra.kind != rb.kind) return ra.kind == (ra.own || take_asked);
    if (ra.cur != rb.cur) return ra.cur;
    if (!ra.own) {
      // The ladder rule (docs/loader.md): a tuned M at or above p.m first, so an M between two tuned M runs the
      // upper neighbour's winner (a config tuned for fewer rows under-fills a larger M: measured 0.729x cuBLASLt at
      // M = 200 with the M = 128 winner); beyond the largest tuned M, the largest.
      const bool a_below = a->problem.m < p.m, b_below = b->problem.m < p.m;
      if (a_below != b_below) return !a_below;
      int d = compare_log_distance(a->problem.m, b->problem.m, p.m);
      if (d != 0) return d < 0;
      if (a->problem.m != b->problem.m) return a->problem.m > b->problem.m;
      if (!(a->problem == b->problem)) return a->problem.key() < b->problem.key();  // rare: same M, other lda/ldb/ldd
    }
    if (ra.env != rb.env) return ra.env;
    if (a->environment_id != b->environment_id) return a->environment_id > b->environment_id;  // newest first
    return a->protocol_name > b->protocol_name;  // the newer version of the kind (deterministic either way)
  };
  std::stable_sort(order.begin(), order.end(), better);
  // p.m lies between two tuned M of the family under the pick's kind: the upper neighbour's winner is a ladder pick.
  auto tuned_below = [&](bool kind) { return lo[kind] < p.m; };
  for (const Ranked& r : order) {
    const EnvironmentWinner* c = r.c;
    KernelConfig config;
    try {
      config = KernelConfig::parse_key(c->config_key);
    } catch (const std::exception&) {
      continue;  // a key format this dgtune does not read
    }
    if (!legal(config, p)) continue;
    StoredChoice out;
    out.config = config;
    out.source = r.own                                       ? "db"
                 : c->problem.m > p.m && tuned_below(r.kind) ? "ladder"
                                                             : "nearest";
    if (!r.kind) out.source += "-other-protocol";
    out.protocol_name = c->protocol_name;
    out.tuned_us = c->median_us;
    out.from = c->problem;
    out.kernel_hash = c->env.kernel_hash;
    out.environment_id = c->environment_id;
    out.older_kernel = c->env.kernel_hash != kernel_hash;
    return out;
  }
  return std::nullopt;
}

namespace {

/// What cuBLASLt's heuristic took at a stored algorithm's problem: its own median, else (a DB whose sweep stored
/// none) the tuned algorithm's.
double heuristic_or_tuned_us(const StoredCublasLtAlgo& a) { return a.heuristic_us > 0 ? a.heuristic_us : a.median_us; }

}  // namespace

const StoredCublasLtAlgo* cublaslt_rival(const std::vector<StoredCublasLtAlgo>& algos, const StoredChoice& w) {
  for (const StoredCublasLtAlgo& a : algos)
    if (a.environment_id == w.environment_id && a.problem == w.from && a.protocol_name == w.protocol_name) return &a;
  return nullptr;
}

bool stored_algo_beats_kernel(const Problem& p, double kernel_us, double cublaslt_us, size_t algo_bytes) {
  return p.d != DType::kE4M3 && algo_bytes == 64 && cublaslt_us > 0 && cublaslt_us < kernel_us;
}

bool heuristic_may_replace(const StoredCublasLtAlgo& a, double kernel_us) {
  return !(a.heuristic_us > 0) || a.heuristic_us < kernel_us;
}

bool replay_stored_algo(const StoredChoice& w, const Problem& p) { return w.from.m == p.m; }

bool is_ladder_pick(const StoredChoice& w) { return w.source.rfind("ladder", 0) == 0; }

std::vector<std::string> tuned_m_choices(const std::vector<EnvironmentWinner>& candidates, const Problem& p,
                                         const std::string& kernel_hash, const std::string& env_key,
                                         const std::string& protocol_kind, const LegalFn& legal) {
  std::vector<int64_t> ms;
  for (const EnvironmentWinner& c : candidates)
    if (c.problem.m >= 1 && std::find(ms.begin(), ms.end(), c.problem.m) == ms.end()) ms.push_back(c.problem.m);
  std::vector<std::string> out;
  for (int64_t m : ms) {
    Problem q = p;
    q.m = m;
    const std::optional<StoredChoice> w = choose_stored_winner(candidates, q, kernel_hash, env_key, protocol_kind, legal);
    if (!w) continue;
    const std::string key = w->config.key();
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  }
  return out;
}

std::vector<EnvironmentWinner> ladder_trials(const std::vector<EnvironmentWinner>& trials,
                                             const std::vector<std::string>& allowed) {
  std::vector<EnvironmentWinner> out;
  for (const EnvironmentWinner& t : trials) {
    std::string key;
    try {
      key = KernelConfig::parse_key(t.config_key).key();
    } catch (const std::exception&) {
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) continue;
    out.push_back(t);
    out.back().config_key = std::move(key);
  }
  return out;
}

std::vector<KernelConfig> ladder_configs(const std::vector<EnvironmentWinner>& trials, const Problem& p,
                                         const LegalFn& legal) {
  std::vector<KernelConfig> out;
  for (const EnvironmentWinner& t : trials) {
    if (t.problem.m < 1) continue;
    KernelConfig c;
    try {
      c = KernelConfig::parse_key(t.config_key);
    } catch (const std::exception&) {
      continue;
    }
    if (std::find(out.begin(), out.end(), c) != out.end()) continue;
    Problem q = p;
    q.m = t.problem.m;
    if (legal(c, q)) out.push_back(c);
  }
  return out;
}

EstimateFn analytic_estimate(int sm_count) {
  return [sm_count](const KernelConfig& c, const Problem& q) { return estimate_us(KernelSpec::of(c, q), q, sm_count); };
}

double ladder_time_ratio(const EstimateFn& estimate, const KernelConfig& c, const Problem& p, const Problem& from) {
  // The cluster tiles along D's M: the kernel's rows, or with swap AB its columns (the kernel computes D^T, so D's M
  // is the kernel's N). Comparing the kernel's rows there would call every M "the same tiles" (found on an H100:
  // the tune-model ladders' coverage fell from 1.026 to 0.999 when swap-AB winners joined them).
  auto m_tiles = [&](const Problem& q) {
    const TileGrid g = TileGrid::of(c, q);
    return c.swap_ab ? g.cluster_cols : g.cluster_rows;
  };
  if (c.block_m > 0 && c.block_n > 0 && c.cluster_m > 0 && c.cluster_n > 0 && m_tiles(p) == m_tiles(from)) return 1.0;
  const double at_p = estimate(c, p), at_from = estimate(c, from);
  return at_p > 0 && at_from > 0 ? at_p / at_from : 0.0;
}

StoredChoice rerank_ladder(const StoredChoice& w, const Problem& p, const std::vector<EnvironmentWinner>& trials,
                           const EstimateFn& estimate, const LegalFn& legal) {
  if (w.source != "ladder") return w;
  auto mine = [&](const EnvironmentWinner& t) {
    return t.environment_id == w.environment_id && t.protocol_name == w.protocol_name && t.problem.m >= 1 &&
           same_family(p, t.problem);
  };
  // The lower neighbour: the largest tuned M below p.m among w's environment and protocol; of several problems at that
  // M (other leading dimensions), p's own leading dimensions first, then the smallest.
  auto lds = [](const Problem& q) { return std::tuple(q.lda, q.ldb, q.ldd); };
  const EnvironmentWinner* lower = nullptr;
  for (const EnvironmentWinner& t : trials) {
    if (!mine(t) || t.problem.m >= p.m) continue;
    if (!lower || t.problem.m > lower->problem.m) {
      lower = &t;
      continue;
    }
    if (t.problem.m < lower->problem.m) continue;
    const bool t_own = lds(t.problem) == lds(p), l_own = lds(lower->problem) == lds(p);
    if (t_own != l_own ? t_own : lds(t.problem) < lds(lower->problem)) lower = &t;
  }
  struct Pick {
    const EnvironmentWinner* trial;
    KernelConfig config;
    double predicted;
  };
  std::vector<Pick> picks;  // one per config: from the nearer neighbour
  for (const EnvironmentWinner& t : trials) {
    if (!mine(t) || !(t.median_us > 0)) continue;
    const bool upper = t.problem == w.from, below = lower && t.problem == lower->problem;
    if (!upper && !below) continue;
    KernelConfig c;
    try {
      c = KernelConfig::parse_key(t.config_key);
    } catch (const std::exception&) {
      continue;
    }
    if (!legal(c, p)) continue;
    // A split-K workspace in global memory grows with M and was sized by a warm-up for each config at the M it runs
    // at; only the upper winner, at an M below its own, is sure to fit it (a cluster split reduces in shared memory).
    if (!(c == w.config) && c.split_k > 1 && !c.split_cluster) continue;
    const double ratio = ladder_time_ratio(estimate, c, p, t.problem);
    if (!(ratio > 0)) continue;
    const Pick pick{&t, c, t.median_us * ratio};
    auto it = std::find_if(picks.begin(), picks.end(), [&](const Pick& q) { return q.config == c; });
    if (it == picks.end()) {
      picks.push_back(pick);
      continue;
    }
    // Measured at both M: the nearer one predicts (the upper on a tie).
    const int d = compare_log_distance(t.problem.m, it->trial->problem.m, p.m);
    if (d < 0 || (d == 0 && upper)) *it = pick;
  }
  // The smallest prediction; ties to w's own config, then the lower key.
  auto better = [&](const Pick& x, const Pick& y) {
    if (x.predicted != y.predicted) return x.predicted < y.predicted;
    const bool xw = x.config == w.config, yw = y.config == w.config;
    if (xw != yw) return xw;
    return x.config.key() < y.config.key();
  };
  const Pick* best = nullptr;
  for (const Pick& q : picks)
    if (!best || better(q, *best)) best = &q;
  if (!best) return w;
  StoredChoice out = w;
  out.config = best->config;
  out.from = best->trial->problem;
  out.tuned_us = best->trial->median_us;
  return out;
}

LadderDispatch ladder_dispatch(const StoredChoice& w, const Problem& p, double time_ratio,
                               const std::vector<StoredCublasLtAlgo>& algos) {
  LadderDispatch out;
  if (!is_ladder_pick(w) || !(time_ratio > 0) || !(w.tuned_us > 0)) return out;
  // The stored algorithms at the nearest tuned M below and above p.m (their heuristic medians are interpolated).
  const StoredCublasLtAlgo *below = nullptr, *above = nullptr;
  auto better = [&](const StoredCublasLtAlgo* cur, const StoredCublasLtAlgo& a, bool want_larger_m) {
    if (!cur) return true;
    if (a.problem.m != cur->problem.m) return want_larger_m ? a.problem.m > cur->problem.m : a.problem.m < cur->problem.m;
    const bool a_same = a.environment_id == w.environment_id, c_same = cur->environment_id == w.environment_id;
    return a_same != c_same ? a_same : a.environment_id > cur->environment_id;
  };
  for (const StoredCublasLtAlgo& a : algos) {
    if (a.protocol_name != w.protocol_name || !(a.median_us > 0)) continue;
    if (a.problem.m < p.m && better(below, a, true)) below = &a;
    if (a.problem.m > p.m && better(above, a, false)) above = &a;
  }
  if (!below || !above) return out;
  const double t = double(p.m - below->problem.m) / double(above->problem.m - below->problem.m);
  out.cublaslt_us = (1 - t) * heuristic_or_tuned_us(*below) + t * heuristic_or_tuned_us(*above);
  out.kernel_us = w.tuned_us * time_ratio;
  out.cublaslt = p.d != DType::kE4M3 && out.kernel_us > kLadderCublasLtMargin * out.cublaslt_us;
  return out;
}

BackendDecision decide_backend(const StoredChoice& w, const StoredChoice& winner, const Problem& p, double time_ratio,
                               const std::vector<StoredCublasLtAlgo>& algos) {
  BackendDecision d;
  d.rival = cublaslt_rival(algos, winner);
  const size_t bytes = d.rival ? d.rival->algo_data.size() : 0;
  if (replay_stored_algo(winner, p)) {  // p's own M: the sweep timed the stored algorithm against the winner here
    if (d.rival && stored_algo_beats_kernel(p, winner.tuned_us, d.rival->median_us, bytes))
      d.kind = BackendDecision::Kind::kStoredAlgo;
    return d;
  }
  d.check = ladder_dispatch(w, p, time_ratio, algos);
  if (d.check.kernel_us > 0) {
    if (d.check.cublaslt) d.kind = BackendDecision::Kind::kHeuristic;
    return d;
  }
  if (d.rival && stored_algo_beats_kernel(p, winner.tuned_us, heuristic_or_tuned_us(*d.rival), bytes)) {
    d.kind = BackendDecision::Kind::kHeuristic;
    d.won_at_m = winner.from.m;
  }
  return d;
}

std::optional<Problem> table_entry_problem(const TunedEntry& e) {
  Problem p = Problem::dense(e.m, e.n, e.k);
  p.lda = e.lda, p.ldb = e.ldb, p.ldd = e.ldd;
  try {
    p.a = parse_dtype(e.a);
    p.b = parse_dtype(e.b);
    p.accum = parse_accum(e.accum);
    p.scale = e.scale ? parse_scale_mode(e.scale) : ScaleMode::kPerTensor;  // nullptr: an older header
    p.d = e.d ? parse_output_dtype(e.d) : DType::kBF16;
    p.bias = e.bias ? parse_bias(e.bias) : Bias::kNone;
    p.act = e.act ? parse_act(e.act) : Act::kNone;
  } catch (const std::exception&) {
    return std::nullopt;  // a field this dgtune does not read
  }
  return p;
}

std::vector<EnvironmentWinner> table_winners(const TunedTable& t, const Problem& p) {
  std::vector<EnvironmentWinner> out;
  for (unsigned long long i = 0; i < t.count; ++i) {
    const TunedEntry& e = t.entries[i];
    EnvironmentWinner w;
    const std::optional<Problem> ep = table_entry_problem(e);
    if (!ep) continue;
    w.problem = *ep;
    if (w.problem.n != p.n || w.problem.k != p.k || w.problem.a != p.a || w.problem.b != p.b || w.problem.d != p.d ||
        w.problem.scale != p.scale || w.problem.accum != p.accum || w.problem.bias != p.bias || w.problem.act != p.act)
      continue;
    w.config_key = e.config_key;
    w.median_us = e.tuned_us;
    w.environment_id = static_cast<int64_t>(i) + 1;
    w.env.kernel_hash = e.kernel_hash;
    w.protocol_name = e.protocol ? e.protocol : kSweepTimerProtocol;
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace dgt
