// The loader's identity rule: which stored winner dgt::Gemm runs for a shape (internal header; GPU-free,
// so unit tests call it with synthetic DB rows).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/tuning_db.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// A stored winner the loader may run, and why.
struct StoredChoice {
  KernelConfig config;
  std::string source;         ///< "db" (a winner of this problem) or "nearest" (of the same N, K family)
  double tuned_us = 0;        ///< median time stored with the winner
  Problem from;               ///< the problem the winner was measured on
  std::string kernel_hash;    ///< kernel hash of the winner's environment
  bool older_kernel = false;  ///< measured with another kernel hash than the running one
};

/// True when `config` may run `problem` with the running kernel: evaluate_resources() accepts it and
/// problem_fit() is empty. The loader passes that; tests may pass their own.
using LegalFn = std::function<bool(const KernelConfig& config, const Problem& problem)>;
/// The loader's LegalFn (space/resource_model.hpp).
bool legal_for_current_kernel(const KernelConfig& config, const Problem& problem);

/// The identity rule. `candidates` are the winners of every software environment of this device's
/// hardware identity for p's family (TuningDb::environment_winners). Order of preference:
///   1. a winner of p itself measured with the running kernel hash (`kernel_hash`); among several
///      environments with that hash, the running environment (`env_key`), then the newest;
///   2. a winner of p itself from an older kernel hash (newest environment first) whose config still
///      parses and is legal for the running kernel (`legal`): older_kernel = true;
///   3. the nearest tuned M of the family (|log M - log p.m|, ties: larger M, then lower problem key)
///      with the running kernel hash, then 4. with an older kernel hash, each only when legal.
/// Every candidate is checked with `legal` (a winner of another problem may not fit this one, e.g. a
/// TMA-store epilogue with an odd ldd), and a config key that does not parse (written by another
/// dgtune's key format) is skipped. std::nullopt: use the default config.
std::optional<StoredChoice> choose_stored_winner(const std::vector<EnvironmentWinner>& candidates, const Problem& p,
                                                 const std::string& kernel_hash, const std::string& env_key,
                                                 const LegalFn& legal);

}  // namespace dgt
