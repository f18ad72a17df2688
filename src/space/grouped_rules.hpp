// The grouped kernels' rules G1-G5 on the host (the kernel's static_asserts mirror G1-G4: kernels/gemm/fp8_gemm.cuh
// and grouped_scheduler.cuh) and the config check of a grouped problem.
#pragma once

#include <string>

#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"

namespace dgt {

/// The first grouped rule `c` breaks, as text naming it; empty when none:
///  G1  BLOCK_M divides 128 (64 or 128): contiguous segments start at multiples of 128 rows, so an m-block lies in
///      one group, and masked M_max (a multiple of 128, G5) holds whole m-blocks.
///  G2  cluster_m == 1: CTAs of a cluster must share the m-block (the same group); B multicast across m-blocks could
///      cross groups. Clusters along N (A multicast) are allowed.
///  G3  no split-K (split_k 1), mainloop 1g or 2g (2o and pp issue a unit's first k-blocks before the consumer knows
///      the unit is a skipped padding block). Either epilogue: the TMA epilogue stores a warpgroup's rows with TMA
///      only when all of them are real rows and falls back to the direct epilogue's row check otherwise.
///  G4  scale per-tensor or block, bf16 output, no bias or activation (the problem side: validate_grouped).
///  G5  masked m_max a multiple of 128 (the problem side: validate_grouped).
std::string grouped_rule_violation(const KernelConfig& c);

/// grouped_rule_violation, then every dense rule (config_rule_violation: R1-R25, P3, P8, P9) of `c` on the dense
/// view of `g` (GroupedProblem::dense_view); empty when the config can run the problem.
std::string grouped_config_violation(const KernelConfig& c, const GroupedProblem& g);

}  // namespace dgt
