// The tables of `dgtune compare --m-grid` (the coverage measurement): one row per grid problem with what dgt::Gemm
// dispatched, the dgtune kernel of its choice and cuBLASLt tuned and default, timed in the same interleaved rounds;
// then one summary row per problem (every field but M) and protocol. scripts/coverage_union.py recomputes the summary
// from the rows of several runs by the same rules (keep both in step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/rounds.hpp"
#include "problem/problem.hpp"
#include "report/table.hpp"
#include "stats/stats.hpp"

namespace dgt {

/// Label of the side that calls dgt::Gemm::run (the loader's dispatch: its kernel or cuBLASLt).
inline constexpr const char* kSideDispatch = "dispatch";

/// One grid problem of a coverage run.
struct CoverageShape {
  Problem problem;
  std::string model;     ///< --model, else the shapes line's name= up to the first '.'; may be empty
  std::string protocol;  ///< the engine protocol measured, e.g. "cold-l2-v2", "hot-graph-v1"
  int64_t grid_seed = 0;
  /// What dgt::Gemm::choose said (GemmChoice); empty when the choice itself failed (note says why).
  std::string source, backend, config_key, cublaslt_algo;
  std::string probe;  ///< GemmChoice::probe ("" where no ladder probe ran)
  /// The cuBLASLt sides' algorithms as compare reports them (ShapeMeasurement::tuned_algo / default_algo).
  std::string tuned_algo, default_algo;
  /// The rounds: sides kSideDgtune (the kernel of config_key), cublaslt-tuned, cublaslt-default, kSideDispatch; a
  /// cuBLASLt side is missing when cuBLASLt refused the problem. Empty: nothing was timed.
  std::optional<RoundsResult> result;
  std::string note;  ///< why there are no ratios (a failure, cuBLASLt's refusal); empty otherwise
};

/// The rows table, titled `title`, and the summary table. Row fields: shape ("MxNxK"), n, k, m, scale, accum, d, bias,
/// act, protocol, model, grid_seed, nk_tuned (the loader found a winner of the problem at some M: source is not
/// "default"), source, backend, config, cublaslt_algo, probe (GemmChoice::probe), cublas_tuned_algo,
/// cublas_default_algo, dispatch_us, kernel_us, cublas_tuned_us, cublas_default_us (medians, microseconds),
/// x_dispatch = cuBLASLt-tuned us / dispatch us with its interval x_lo, x_hi (paired per
/// round, opts' method and confidence, as compare's x_tuned), x_dispatch_default = cuBLASLt-default us / dispatch us,
/// x_kernel = cuBLASLt-tuned us / kernel us with x_kernel_lo, x_kernel_hi, clock_mhz (the dispatch side's median SM
/// clock), flagged (its samples below the clock floor), rounds, note. A problem without a cuBLASLt side or without
/// rounds has no ratios and a note. Summary: coverage_summary of the rows.
std::vector<report::Table> coverage_tables(const std::vector<CoverageShape>& shapes, const stats::PairedOptions& opts,
                                           const std::string& title);

/// The ratios of one row, full precision (null when not measured).
struct CoverageRatios {
  std::optional<double> x_dispatch, x_lo, x_hi, x_dispatch_default, x_kernel, x_kernel_lo, x_kernel_hi;
};

/// One row's part of the summary: the fields it is grouped by and its ratios.
struct CoverageSummaryInput {
  int64_t n = 0, k = 0;
  std::string scale, accum, d, bias, act, model, protocol;
  std::string backend;
  CoverageRatios x;
};

/// One row per (n, k, scale, accum, d, bias, act, model, protocol), in order of first appearance: grid_m (rows),
/// count (rows with x_dispatch), geomean_x_dispatch, min_x_dispatch, share_slower (rows whose x_hi < 1: the dispatch
/// significantly slower than cuBLASLt-tuned, over count), share_below_1 (x_dispatch < 1, over count),
/// geomean_x_dispatch_default, geomean_x_kernel, min_x_kernel, share_kernel_slower (x_kernel_hi < 1),
/// share_kernel_below_1, cublaslt_dispatched (rows with backend "cublaslt"). A group without ratios has nulls.
report::Table coverage_summary(const std::vector<CoverageSummaryInput>& rows, const std::string& title);

}  // namespace dgt
