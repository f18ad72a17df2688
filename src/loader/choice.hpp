// The loader's identity rule: which stored winner dgt::Gemm runs for a shape (internal header; GPU-free,
// so unit tests call it with synthetic DB rows).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"
#include "dgtune/gemm.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// A stored winner the loader may run, and why.
struct StoredChoice {
  KernelConfig config;
  /// "db" (a winner of this problem under the preferred protocol kind), "db-other-protocol" (of this
  /// problem, tuned under the other kind), "ladder" (p.m lies between two tuned M of the same N, K family under the
  /// pick's kind: the upper neighbour's winner, or after rerank_ladder a neighbour's config predicted faster at p.m),
  /// "nearest" (of the family, p.m outside that kind's tuned M), or "ladder-other-protocol" / "nearest-other-protocol".
  std::string source;
  std::string protocol_name;  ///< protocol the winner was timed under, e.g. "cold-l2-v1", "hot-graph-v1"
  double tuned_us = 0;        ///< median time stored with the winner (after rerank_ladder: with the picked config's trial)
  Problem from;               ///< the problem the winner (after rerank_ladder: the picked trial) was measured on
  std::string kernel_hash;    ///< kernel hash of the winner's environment
  int64_t environment_id = 0;  ///< environment row of the winner (EnvironmentWinner::environment_id)
  bool older_kernel = false;  ///< measured with another kernel hash than the running one
};

/// True when `config` may run `problem` with the running kernel: evaluate_resources() accepts it and
/// problem_fit() is empty. The loader passes that; tests may pass their own.
using LegalFn = std::function<bool(const KernelConfig& config, const Problem& problem)>;
/// The loader's LegalFn (space/resource_model.hpp).
bool legal_for_current_kernel(const KernelConfig& config, const Problem& problem);

/// The identity rule. `candidates` are the winners of every software environment and protocol of this
/// device's hardware identity for p's family (TuningDbReader::environment_winners). `protocol_kind` ("cold-l2"
/// or "hot-graph", GemmOptions::protocol) is what the caller tunes for: a winner timed under a protocol
/// of that kind (any version, protocol_kind_of(name)) is preferred. Order of preference:
///   1. a winner of p itself under the preferred kind, measured with the running kernel hash
///      (`kernel_hash`); among several environments with that hash, the running environment (`env_key`),
///      then the newest (then the higher protocol name, i.e. the newer version of the kind);
///   2. a winner of p itself under the preferred kind from an older kernel hash (newest environment
///      first) whose config still parses and is legal for the running kernel (`legal`): older_kernel;
///   3. and 4. the same for a winner of p itself under the other protocol kind ("db-other-protocol": the
///      exact shape tuned for another question is a better guess than another M);
///   5. another M of the family under the preferred kind, running kernel hash first, by the ladder rule: the
///      smallest tuned M >= p.m ("ladder" when a tuned M of that kind below p.m exists too, i.e. p.m lies between two
///      tuned M; "nearest" otherwise), else the largest tuned M below p.m ("nearest"); among equal M the lower problem
///      key; then 6. the same under the other kind ("ladder-other-protocol", "nearest-other-protocol"); each only
///      when legal. Steps 5 and 6 swap when p.m lies past the preferred kind's largest tuned M of the family and the
///      other kind's tuned M reach p.m from both sides: its ladder neighbour is a better guess than the preferred
///      kind's far end (measured, choice.cpp). Legality and kernel hashes do not enter that test.
/// A candidate outside p's family (another N, K, type, scale mode or accumulation) is never taken: a
/// per-tensor winner is not a block-scaled problem's winner.
/// Every candidate is checked with `legal` (a winner of another problem may not fit this one, e.g. a
/// TMA-store epilogue with an odd ldd), and a config key that does not parse (written by another
/// dgtune's key format) is skipped. std::nullopt: use the default config.
std::optional<StoredChoice> choose_stored_winner(const std::vector<EnvironmentWinner>& candidates, const Problem& p,
                                                 const std::string& kernel_hash, const std::string& env_key,
                                                 const std::string& protocol_kind, const LegalFn& legal);

/// The cuBLASLt rival of a stored dgtune winner (the backend rule, docs/loader.md "cuBLASLt as a backend"): among
/// `algos` (TuningDbReader::cublaslt_winners), the cuBLASLt-tuned algorithm stored for the winner's own problem
/// (`w.from`, the exact key) under the winner's protocol in the winner's environment, i.e. by the same sweep (what
/// `dgtune export`'s backend column compares too). The caller runs it when its median is below w.tuned_us. nullptr:
/// none stored there (a DB written before schema 10, another environment's sweep, or cuBLASLt refused the problem).
const StoredCublasLtAlgo* cublaslt_rival(const std::vector<StoredCublasLtAlgo>& algos, const StoredChoice& w);

/// The backend rule's comparison, shared by the loader, `dgtune export` and `dgtune tune-model`: cuBLASLt replaces the
/// kernel for problem p when its stored algorithm (`algo_bytes` long: 64 when one was stored, schema 10) timed
/// `cublaslt_us` against the kernel's `kernel_us` in the same sweep and was faster, and p's output is not e4m3 (the
/// loader never runs cuBLASLt's e4m3 D, launch/cublaslt_gemm.hpp).
bool stored_algo_beats_kernel(const Problem& p, double kernel_us, double cublaslt_us, size_t algo_bytes);

/// Whether cuBLASLt's heuristic may stand in for the stored algorithm `a` against a kernel of `kernel_us` (the
/// stored algorithm cannot be replayed: another cuBLASLt version, or it fails cublasLtMatmulAlgoCheck): when the
/// sweep stored the heuristic's median for a's problem and protocol, only if that median is below kernel_us; when it
/// stored none (a DB before the heuristic median was read), yes, as before.
bool heuristic_may_replace(const StoredCublasLtAlgo& a, double kernel_us);

/// Whether p is the M the winner `w` was tuned at (w.from.m == p.m, sources "db" and "db-other-protocol"), the only M
/// where a stored cuBLASLt algorithm is replayed. At another M (a "ladder" or "nearest" winner) cuBLASLt can only run
/// through its heuristic, which sees p's M (decide_backend): on the H200 the neighbour's algorithm ran 1.3-3.1 us
/// (median) slower than cuBLASLt-tuned at the coverage grid's M (results/h200/coverage-2026-12-02.md).
bool replay_stored_algo(const StoredChoice& w, const Problem& p);

/// Whether `w` is a ladder pick (source "ladder" or "ladder-other-protocol": its M lies between two tuned M), the only
/// picks the ladder check (ladder_dispatch) predicts for.
bool is_ladder_pick(const StoredChoice& w);

/// The analytic estimate of a config on a problem in us (space/cost_model.hpp estimate_us on the device's SM count);
/// tests pass their own.
using EstimateFn = std::function<double(const KernelConfig& config, const Problem& problem)>;
/// The loader's EstimateFn: estimate_us on `sm_count` SMs.
EstimateFn analytic_estimate(int sm_count);

/// The ladder rule's factor from config c's time at `from` to its time at p (rerank_ladder, ladder_dispatch): 1 when
/// p.m and from.m make the same number of cluster tiles along D's M (TileGrid::cluster_rows, or cluster_cols for a
/// swap-AB config, whose kernel runs D's M as its N; without a cluster there, ceil(M / BLOCK_M) row tiles, or
/// ceil(M / BLOCK_N) column tiles for swap AB), else estimate(c, p) / estimate(c, from), or 0 when one of those is not
/// positive.
/// Why 1: the kernel then launches the same tiles (a spare CTA of an edge cluster runs its mainloop too), waves and
/// WGMMAs; only A's last row box and D's rows grow with M (on the H200, 8192x3584 at 192 and 256 rows, same 2 x 64
/// tiles: 16.256 and 16.512 us, +1.6%). The estimate's DRAM term instead counts A once per band of column tiles,
/// although at these sizes the L2 serves the re-reads: it put a config 6% below its M = 192 time at M = 159, and the
/// config ran at its M = 192 time, 8-13% behind cuBLASLt (Llama-3.1-70B TP 8, 8192x3584,
/// results/h200/ladder-rerank-gpu-2026-12-05.md). Across tile counts the estimate's ratio stands (tiles and waves).
double ladder_time_ratio(const EstimateFn& estimate, const KernelConfig& c, const Problem& p, const Problem& from);

/// The ladder rule's choice among the neighbours' candidates (docs/loader.md "The ladder rule"). For a "ladder" pick
/// `w` (p.m between two tuned M of the family; w.from is the upper one) the candidates are the rows of `trials`
/// (ladder_trials of TuningDbReader::family_trials: the configs the loader runs at some tuned M of the family, which a
/// warm-up loads and a bundle holds, so a call inside CUDA-graph capture never needs a kernel the warm-up did not load)
/// in w's environment and protocol at the two tuned M around p.m (w.from and the largest tuned M below p.m; of several
/// problems at that M, the one with p's leading dimensions), legal for p and, but for w's own config, without a global
/// split-K workspace (it grows with M, and a warm-up sized it for each config at the M it runs at). Each candidate is
/// predicted at p as its median x ladder_time_ratio(estimate, c, p, its problem), the estimate carrying the row tiles
/// and waves that M changes; a config measured at both M is predicted from the nearer (log distance, the upper on a
/// tie).
/// The smallest prediction wins (ties to w's own config, then the lower config key): the result is w with that config,
/// `from` the problem its prediction came from and `tuned_us` its median there, so ladder_dispatch predicts the same
/// time. w itself when it is not a ladder pick or no candidate is left; a row whose key does not parse or whose
/// ratio is not positive is skipped.
/// Why: offline, on stored H200 trials with one tuned M held out at a time, the rule ran the held-out M at 0.930x the
/// best time there against the upper neighbour's winner's 0.893x (exhaustive mid-M DB, 16 cases; 0.990 vs 0.988 and
/// 0.996 vs 0.991 on Llama-3.1-70B TP 8 and Qwen3-32B TP 4 tune-model ladders;
/// results/h200/ladder-rerank-2026-12-04.md).
StoredChoice rerank_ladder(const StoredChoice& w, const Problem& p, const std::vector<EnvironmentWinner>& trials,
                           const EstimateFn& estimate, const LegalFn& legal);

/// `trials` (TuningDbReader::family_trials) reduced to rerank_ladder's candidates: rows whose config key parses and,
/// written in today's key format (KernelConfig::key(), so rows of an older format match), is in `allowed`
/// (tuned_m_choices). dgt::Gemm does this once per family, so a first call of a new M looks at a few rows only.
std::vector<EnvironmentWinner> ladder_trials(const std::vector<EnvironmentWinner>& trials,
                                             const std::vector<std::string>& allowed);

/// The distinct configs rerank_ladder may return for a problem of p's family at any M: those of `trials` (ladder_trials'
/// rows) that are legal for p with the row's M, in first-seen order. Gemm::warmup loads each one's kernel: a config
/// can be the re-rank's pick between two tuned M without being the pick at any M the warm-up resolves (where the pick
/// at a tuned M is itself a ladder pick that the re-rank replaces), and a call inside CUDA-graph capture must find it.
std::vector<KernelConfig> ladder_configs(const std::vector<EnvironmentWinner>& trials, const Problem& p,
                                         const LegalFn& legal);

/// The keys of the configs the identity rule runs at every tuned M of p's family (`candidates`,
/// TuningDbReader::environment_winners; the arguments of choose_stored_winner), distinct: rerank_ladder's `allowed`.
std::vector<std::string> tuned_m_choices(const std::vector<EnvironmentWinner>& candidates, const Problem& p,
                                         const std::string& kernel_hash, const std::string& env_key,
                                         const std::string& protocol_kind, const LegalFn& legal);

/// How much slower (as a factor) the kernel must be predicted than cuBLASLt's interpolated heuristic before the ladder
/// check runs cuBLASLt. Both sides are predictions (a stored median scaled by the cost model's ratio; a linear
/// interpolation of a heuristic whose algorithm changes with M), and calling cuBLASLt through the loader costs about
/// 0.1 us more than calling it directly (results/h200/queue-tail-2026-12-06.md). Chosen from {1.00, 1.02, 1.05, 1.10}
/// by replaying the rule on the measured rows of five coverage grids of an H100
/// (results/h200/dense-ladder-2026-12-06.md) and checked the same way on five others tuned and measured on another
/// machine start (results/h200/coverage-2026-12-06.md): 1.02 raised the geomean over 1.00 on all ten (+0.08 to
/// +0.29%) with 126 rows below 0.98 in all against 137 (fewer on 6 grids, equal on 2, one more on 2); 1.05 and 1.10
/// had 192 and 236 such rows. All ten grids share the grid seed.
inline constexpr double kLadderCublasLtMargin = 1.02;

/// What the ladder rule's dispatch check found (ladder_dispatch).
struct LadderDispatch {
  bool cublaslt = false;   ///< cuBLASLt's heuristic runs instead of the ladder pick's kernel
  double kernel_us = 0;    ///< the kernel's predicted time at p.m (0 when not predicted)
  double cublaslt_us = 0;  ///< cuBLASLt's heuristic's interpolated time at p.m (0 when not predicted)
};

/// The dispatch half of the ladder rule (docs/loader.md "The ladder rule"), for a "ladder" pick `w` (p.m between two
/// tuned M; w.from the upper one, or after rerank_ladder the neighbour its config's time came from): the kernel's time
/// at p.m is predicted as w.tuned_us x time_ratio (ladder_time_ratio of w's config from w.from to p: it sees the row
/// tiles and waves M changes), cuBLASLt's as the linear interpolation in M of the medians of cuBLASLt's heuristic
/// (StoredCublasLtAlgo::heuristic_us; the cuBLASLt-tuned median where a DB stored no heuristic one) at the nearest
/// tuned M below and above p.m (`algos`, the winner's protocol; the winner's environment first, else the newest): off
/// a tuned M the heuristic is what runs. When the kernel's prediction exceeds cuBLASLt's by more than
/// kLadderCublasLtMargin and p's output is not e4m3, cuBLASLt's heuristic runs at p. Not a ladder pick, a non-positive
/// time_ratio or a missing stored median: no prediction (kernel_us = 0, cublaslt = false).
/// Why the heuristic's medians: against the tuned ones the check chose cuBLASLt at M where the heuristic then ran
/// slower than the kernel would have (H100, results/h200/dense-ladder-2026-12-06.md).
LadderDispatch ladder_dispatch(const StoredChoice& w, const Problem& p, double time_ratio,
                               const std::vector<StoredCublasLtAlgo>& algos);

/// Which backend runs problem p (the backend rule, docs/loader.md "cuBLASLt as a backend"), decided from the DB.
struct BackendDecision {
  enum class Kind {
    kKernel,        ///< the dgtune kernel of `w`
    kStoredAlgo,    ///< the cuBLASLt algorithm `rival` stored at p's own M (the caller checks its cuBLASLt version)
    kHeuristic,     ///< cuBLASLt's heuristic for p
  } kind = Kind::kKernel;
  /// The stored cuBLASLt-tuned algorithm at the identity winner's problem (cublaslt_rival), or nullptr.
  const StoredCublasLtAlgo* rival = nullptr;
  /// kHeuristic because the heuristic's median at the winner's M `won_at_m` beat the winner (no ladder prediction was
  /// possible), else 0.
  int64_t won_at_m = 0;
  LadderDispatch check;  ///< the ladder check (kernel_us > 0 when it ran)
};

/// The backend rule for problem p whose identity-rule winner is `winner` and whose kernel pick (after rerank_ladder)
/// is `w`; time_ratio = ladder_time_ratio(estimate, w.config, p, w.from). At the M the winner was tuned at
/// (replay_stored_algo), the cuBLASLt algorithm the same sweep stored there runs when it beat the winner
/// (stored_algo_beats_kernel). Off a tuned M cuBLASLt can only run through its heuristic, so the kernel is compared
/// with the heuristic: between two tuned M by ladder_dispatch; where it cannot predict ("nearest" picks, missing
/// medians), by the neighbour's own sweep, the winner's median against the heuristic's median stored there
/// (heuristic_us, or the tuned median where none was stored). Never cuBLASLt for an e4m3 output.
BackendDecision decide_backend(const StoredChoice& w, const StoredChoice& winner, const Problem& p, double time_ratio,
                               const std::vector<StoredCublasLtAlgo>& algos);

/// The entries of an exported table (GemmOptions::table) in p's family (same N, K, types, scale mode and
/// accumulation), as candidates for choose_stored_winner. Entry i is "environment" i + 1 (later entries
/// count as newer); the environment key is empty, so it never matches the running one. An entry without a
/// protocol (a header exported before protocols were stored) was timed by the sweep Timer; one without a
/// scale mode (exported before scale modes) is per-tensor. An entry with a field this dgtune does not read
/// is skipped.
std::vector<EnvironmentWinner> table_winners(const TunedTable& t, const Problem& p);

/// The problem of one exported table entry; std::nullopt when a field holds a value this dgtune does not read.
std::optional<Problem> table_entry_problem(const TunedEntry& e);

}  // namespace dgt
