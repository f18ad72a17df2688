// The grouped kernels' measured default configs: what dgt::GroupedGemm runs without a tuned winner, and what every
// grouped sweep measures beside the model's candidates (so a tuned winner is never slower than the default).
#pragma once

#include <vector>

#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"

namespace dgt {

/// The default rule (documented at dgt::grouped_gemm_choice, measured in results/h200/grouped-epilogue-2026-12-03.md
/// and grouped-scales-2026-12-03.md): contiguous N <= K and masked expected_m > 64: the 128x128 2g rm8 config;
/// contiguous N > K: the same walking along N (rn1); masked expected_m <= 64: the 64x128 1-warpgroup s8 config.
KernelConfig default_grouped_config(const GroupedProblem& g);

/// The three configs of the default rule that can run `g` (grouped_config_violation empty), g's default first.
std::vector<KernelConfig> grouped_default_configs(const GroupedProblem& g);

}  // namespace dgt
