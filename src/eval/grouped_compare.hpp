// `dgtune compare --grouped`: a grouped (MoE) GEMM run by the grouped kernel, against its two baselines in the same
// rounds on the same buffers:
//   loop  - one cuBLASLt call per non-empty group with its real row count (bench/group_loop.hpp);
//   dense - the dgtune dense kernel on one GEMM of the same FLOPs: M = sum of the groups' real rows, N, K (A's first
//           rows, B of group 0): the efficiency ceiling a grouped schedule is held to; never a cuBLASLt dispatch;
//   grouped-vs (only with a vs_config) - the grouped kernel of a second config, on the same operands: an A/B of two
//           grouped configs (e.g. a kernel change that a new config selects against the old config) in one process.
// The outputs of the grouped kernel, of grouped-vs and of the loop are verified after the rounds (every group's rows
// against the reference, and the sentinel in every row that holds no real row); the dense side computes another
// product and is only timed. All sides write the one D; the engine's check resets D to the sentinel, runs one side
// alone and verifies, side by side, so each grouped config is verified on its own output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/measure_protocol.hpp"
#include "eval/compare_run.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "eval/grouped_compare_tables.hpp"
#include "report/table.hpp"

namespace dgt {

struct GroupedCompareOptions {
  std::vector<GroupedProblem> problems;  ///< checked by parse_grouped_problem
  KernelConfig config;                   ///< the grouped kernel's config (the grouped rules checked before the GPU)
  std::optional<KernelConfig> dense_config;  ///< the dense side's; empty: default_config of the dense problem
  std::optional<KernelConfig> vs_config;     ///< the grouped-vs side's (the grouped rules checked too); empty: no side
  MeasureProtocol protocol;              ///< cold-l2-v2/v3, hot-graph-v1 or isolated-v1/v2
  int device = 0;
  std::string cache_dir;
  uint64_t seed = 20261129;
  CompareStatsOptions stats;
};

/// Measures every problem (one engine run each) and returns one table, one row per problem: the problem (kind,
/// groups, m_per_group or masked_m with m_max and expected_m, n, k, scale, accum), the three sides' median us, the
/// grouped kernel's TFLOPS counting real rows only (2 x sum(m_g) x N x K / t), x_loop = loop us / grouped us and
/// x_dense = dense us / grouped us (cold-l2 / hot-graph: median of per-round ratios with the 95% interval of
/// stats::compare_paired; isolated-v1/v2: the ratio of the medians, no interval), each side's median SM clock, the
/// verification of the grouped kernel and of the loop, and the loop's algorithms; with a vs_config also x_vs =
/// grouped-vs us / grouped us (same statistics), its median SM clock and its verification. Throws Error(kUsage) when
/// the config or the vs_config breaks a grouped rule for a problem (before the GPU is opened), Error(kNoDevice)
/// without an sm_90 device, Error(kCublas) when cuBLASLt cannot run a group, and the CUDA/NVRTC errors of compiling
/// and running.
std::vector<report::Table> run_grouped_compare(const GroupedCompareOptions& o);

}  // namespace dgt
