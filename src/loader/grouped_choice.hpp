// What a dgt::GroupedGemm runs: its run-time key as a GroupedProblem, the default config rule and the one function
// where the choice is made (internal header; GPU-free, so unit tests call it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"
#include "dgtune/grouped_gemm.hpp"
#include "loader/choice.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "space/grouped_defaults.hpp"  // default_grouped_config, the rule without a winner

namespace dgt {

/// The GroupedProblem the kernel launch takes for a run-time key. The per-group counts are on the device, so the host
/// side holds what the launch needs only: contiguous, rows = {M_sum, 0, ...} (total_rows() == M_sum: the persistent
/// grid covers every m-block, the kernel skips the padding ones); masked, rows all 0 (the grid follows expected_m).
/// Throws Error(kUsage) for an enum value out of range, Error(kInvalid) naming the GroupedGemmProblem field and the
/// rule for anything else (validate_grouped's rules, M a positive multiple of 128, expected_m).
GroupedProblem grouped_problem_of(const GroupedGemmProblem& p);


/// The ladder axis of a grouped problem (docs/loader.md "Grouped GEMMs"): the total (padded) M, M_sum, for the
/// contiguous layout (GroupedProblem::total_rows(), what the key stores as M); expected_m for the masked layout (the
/// rows per group the host expects: what sizes the grid and what a serving step changes; M_max is the buffer).
int64_t grouped_ladder_m(const Problem& keyed);

/// The identity rule of dgt::GroupedGemm: choose_stored_winner's order (loader/choice.hpp: the problem itself under
/// the preferred protocol kind, running kernel hash first; then the other kind; then the ladder, the other kind's first
/// past the preferred kind's largest tuned point where the other kind's points lie on both sides) applied to grouped
/// winners, with the ladder over grouped_ladder_m: an M_sum (contiguous) or expected_m (masked) between two tuned
/// points takes the upper neighbour's winner ("ladder"), outside them the nearest end ("nearest"). `candidates` are
/// TuningDbReader::environment_winners of g.keyed(): the same layout, G, N, K and scale mode only (a dense winner or
/// another G is never taken; the query already filters, this rule checks again). For masked problems a winner of
/// another M_max at the same expected_m is not "db" but the nearest ladder point (source "nearest" or "ladder"); of
/// several M_max tuned at one expected_m, the one nearest to g's M_max (log distance) is taken.
/// Every candidate is checked with grouped_config_violation against g (G1-G3, R1-R25, P3, P8, P9); a key that does
/// not parse is skipped. StoredChoice::from is the stored problem (its grouped key). std::nullopt: the default rule.
std::optional<StoredChoice> choose_grouped_winner(const std::vector<EnvironmentWinner>& candidates,
                                                  const GroupedProblem& g, const std::string& kernel_hash,
                                                  const std::string& env_key, const std::string& protocol_kind);

/// The tuning data a GroupedGemm looks up (empty candidates: none).
struct GroupedLookup {
  std::vector<EnvironmentWinner> candidates;  ///< TuningDbReader::environment_winners of the problem's key
  std::string kernel_hash, env_key;           ///< of the running software environment
  std::string protocol_kind = "cold-l2";      ///< GroupedGemmOptions::protocol
};

/// The run-time key of a stored grouped problem (the inverse of grouped_problem_of(...).keyed() on the key's fields):
/// std::nullopt when dgt::GroupedGemm cannot run it (not grouped, fast accumulation, a scale mode other than
/// per-tensor or block).
std::optional<GroupedGemmProblem> grouped_key_of(const Problem& keyed);

/// A choice with the config parsed.
struct GroupedResolved {
  GroupedProblem problem;
  KernelConfig config;
  GroupedGemmChoice choice;
};

/// The one place a grouped config is chosen: the explicit key when given, else the tuning DB's winner by
/// choose_grouped_winner when `lookup` holds candidates, else the default rule. The config is checked with
/// grouped_config_violation (G1-G3, then R1-R25, P3, P8, P9 on the dense view): Error(kInvalid) naming the rule, also
/// for the default (a broken default is a bug that must not reach NVRTC). Error(kUsage) for a key that does not parse.
GroupedResolved resolve_grouped_choice(const GroupedGemmProblem& p, const std::string& explicit_config,
                                       const GroupedLookup* lookup = nullptr);

/// resolve_grouped_choice for a problem given with its per-group counts (a shapes file's grouped line, which
/// `dgtune compare` and `gate` measure): the same rule on g's key (g.keyed(): the counts are not part of it), the same
/// checks and errors; GroupedResolved::problem is `g` itself. resolve_grouped_choice is this function on
/// grouped_problem_of(p). An accum=fast line, which GroupedGemmProblem cannot express, takes its own key's winners.
GroupedResolved resolve_grouped_problem(const GroupedProblem& g, const std::string& explicit_config,
                                        const GroupedLookup* lookup = nullptr);

}  // namespace dgt
