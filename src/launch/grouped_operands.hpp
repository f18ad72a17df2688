// The pointer rules of a grouped GEMM launch (GroupedGemmKernel::launch, so every caller: dgt::GroupedGemm, the tuner,
// `run` and `compare`), checked on the host before anything is enqueued (GPU-free: only the pointer values are looked
// at, never the memory behind them).
#pragma once

#include "launch/grouped_kernel.hpp"
#include "problem/grouped_problem.hpp"

namespace dgt {

/// Throws Error(kInvalid) naming the first operand that breaks a rule and the rule, in the order a, b, d, scale_a,
/// scale_b, layout: null; a, b and d not 16-byte aligned (TMA needs 16-byte aligned global addresses; d is held to it
/// whatever the config's epilogue, so that which pointers are accepted does not depend on the config chosen); block
/// scales not 16-byte aligned (cp.async.bulk); a per-tensor scale or the layout array not 4-byte aligned (float /
/// int32 loads). The layout array is named as `g`'s layout calls it ("m_indices" or "masked_m").
void check_grouped_operands(const GroupedProblem& g, const jit::GroupedOperands& ops);

}  // namespace dgt
