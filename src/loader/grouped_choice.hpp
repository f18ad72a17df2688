// What a dgt::GroupedGemm runs: its run-time key as a GroupedProblem, the default config rule and the one function
// where the choice is made (internal header; GPU-free, so unit tests call it).
#pragma once

#include <string>

#include "dgtune/grouped_gemm.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"

namespace dgt {

/// The GroupedProblem the kernel launch takes for a run-time key. The per-group counts are on the device, so the host
/// side holds what the launch needs only: contiguous, rows = {M_sum, 0, ...} (total_rows() == M_sum: the persistent
/// grid covers every m-block, the kernel skips the padding ones); masked, rows all 0 (the grid follows expected_m).
/// Throws Error(kUsage) for an enum value out of range, Error(kInvalid) naming the GroupedGemmProblem field and the
/// rule for anything else (validate_grouped's rules, M a positive multiple of 128, expected_m).
GroupedProblem grouped_problem_of(const GroupedGemmProblem& p);

/// The default rule (documented at dgt::grouped_gemm_choice, measured in results/h200/grouped-epilogue-2026-12-03.md).
KernelConfig default_grouped_config(const GroupedProblem& g);

/// A choice with the config parsed.
struct GroupedResolved {
  GroupedProblem problem;
  KernelConfig config;
  GroupedGemmChoice choice;
};

/// The one place a grouped config is chosen: the explicit key when given, else (the seam for the tuning DB's grouped
/// winners, which will be looked up here first once the DB holds them) the default rule. The config is checked with
/// grouped_config_violation (G1-G3, then R1-R25, P3, P8, P9 on the dense view): Error(kInvalid) naming the rule, also
/// for the default (a broken default is a bug that must not reach NVRTC). Error(kUsage) for a key that does not parse.
GroupedResolved resolve_grouped_choice(const GroupedGemmProblem& p, const std::string& explicit_config);

}  // namespace dgt
