// `dgtune compare --m-grid` as one library call: the coverage measurement. The (N, K, ...) problems of a shapes file
// at a grid of M that no ladder tunes (problem/m_grid.hpp); per grid problem, what dgt::Gemm runs (its kernel or
// cuBLASLt, GemmOptions::protocol = the protocol measured) against the dgtune kernel of its choice alone and cuBLASLt
// tuned and default, in the same interleaved rounds (eval/shape_compare.hpp), every output checked. GPU only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/measure_protocol.hpp"
#include "eval/compare_run.hpp"
#include "problem/m_grid.hpp"
#include "problem/shapes_file.hpp"
#include "problem/shard.hpp"
#include "report/table.hpp"

namespace dgt {

struct CoverageRunOptions {
  std::string shapes_path;         ///< for the title
  std::vector<ShapeEntry> shapes;  ///< loaded and checked by the caller; M is ignored
  int64_t grid_seed = 20261202;    ///< coverage_m_grid's seed (>= 0: it is a JSON integer in every row)
  int per_octave = 2;              ///< M drawn per octave (>= 1)
  /// Not empty: exactly these M instead of coverage_m_grid (e.g. rows measured once more to confirm them); each >= 1.
  std::vector<int64_t> ms;
  std::string model;               ///< empty: each line's name= up to the first '.'
  Shard shard;                     ///< this call's share of the grid problems (select_shard's rule)
  MeasureProtocol protocol;        ///< cold-l2-v2 or hot-graph-v1, rounds inside
  std::string db_path;             ///< read-only; missing: dgt::Gemm runs untuned (cuBLASLt's heuristic)
  std::string db_flag = "--db";    ///< how the user named db_path, for messages
  int device = 0;
  std::string cache_dir;
  bool probe_ladder = true;        ///< GemmOptions::probe_ladder of the Gemm whose dispatch is measured
  CompareStatsOptions stats;
};

/// The grid problems of this call: grid_problems(shapes, coverage_m_grid(grid_seed, per_octave) or `ms`, model), then shard's
/// share of them (problem j, in that order, goes to shard j mod count, so each shard holds about
/// 1/count of every problem's M).
/// Pure; Error(kUsage) as grid_problems and coverage_m_grid throw it.
std::vector<GridProblem> coverage_problems(const CoverageRunOptions& options);

/// Measures every grid problem of coverage_problems(options) and returns coverage_tables() (eval/coverage_tables.hpp)
/// titled with the shapes file, the device, the protocol, the rounds, the DB, the grid seed and per-octave count and
/// the shard. One dgt::Gemm serves the whole run (GemmOptions: db_path, protocol's kind, cublaslt = true, device,
/// cache_dir, probe_ladder). Per problem: GemmChoice from gemm.choose(); the kernel of choice.config_key built through the
/// comparer's kernel cache (side "dgtune"); side "dispatch" calls gemm.run() on the same buffers; cuBLASLt-tuned and
/// -default as `compare` measures them. Checks first, before the GPU is opened: the protocol and the DB
/// (check_compare_db); then the GPU (Error(kNoDevice) without one, exit 1). A problem that fails (the choice, a
/// build, a wrong output, a cuBLASLt refusal) gets a row with a note and no ratios; a lost CUDA context or a
/// watchdog timeout throws.
std::vector<report::Table> run_coverage(const CoverageRunOptions& options);

}  // namespace dgt
