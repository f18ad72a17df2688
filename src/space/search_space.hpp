// Search spaces (configs/spaces/*.json) and candidate enumeration for a problem.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "problem/kernel_config.hpp"
#include "space/resource_model.hpp"

namespace dgt {

/// The values each tunable may take in one grid; enumeration is the cross product, filtered by the
/// resource model (legality) and by problem-aware pruning. num_stages values <= 0 mean "deepest
/// legal minus |v|" ("max" = 0, "max-1" = -1 in JSON), capped at kMaxAutoStages.
struct SpaceGrid {
  std::string name;
  std::vector<int> block_m, block_n, block_k, num_stages, num_math_wg, swizzle, group, split_k, sms;
  std::vector<std::pair<int, int>> cluster;  ///< (cluster_m, cluster_n)
  std::vector<Raster> raster;
  std::vector<Epilogue> epilogue;
  std::vector<Mainloop> mainloop{Mainloop::k1g};  ///< optional axis, default {1g}
  /// Optional axis, default {1}; values <= 0 ("max" in JSON) mean the widest legal promotion interval
  /// for the problem: 1 with promote accumulation, 2048 / BLOCK_K with fast accumulation.
  std::vector<int> promote_every{1};
  /// Optional axis "split_reduce" ("workspace" / "cluster"), default {workspace}: KernelConfig::split_cluster.
  /// Only configs with split_k > 1 differ; "cluster" with split_k = 1 is the same config as "workspace".
  std::vector<bool> split_cluster{false};
  /// Optional axis "operands" ("ab" / "swap_ab"), default {ab}: KernelConfig::swap_ab.
  std::vector<bool> swap_ab{false};
  size_t size() const;
};

/// A search space: the union of one or more grids (duplicates removed).
struct SearchSpace {
  static constexpr int kMaxAutoStages = 12;

  std::string name;
  std::vector<SpaceGrid> grids;

  /// Most points (the cross product of the axes, summed over the grids) a space may have: enumeration
  /// evaluates every one, so a file must not ask for billions.
  static constexpr uint64_t kMaxPoints = uint64_t(1) << 20;

  /// Parses a space: either one grid object, or {"name", "base": {axes}, "union": [{name, axes}, ...]}
  /// where each union entry overrides axes of "base" ("comment" is allowed everywhere). Axis keys and the
  /// values each takes (bounds before legality; the resource model judges legality per candidate):
  /// block_m, block_n, block_k (integers in [64|8|64, 256]), num_stages (integers in [2, 32] or "max" /
  /// "max-N", N in [1, 10]), num_math_wg ([1, 2]), swizzle ([32, 128]), cluster ("MxN", M, N in 1..4),
  /// raster ("m"/"n"), group ([1, 64]), epilogue ("direct"/"tma"), split_k ([1, 16]), sms ([0, 65536]),
  /// and optionally mainloop ("1g"/"2g"/"2o"/"pp", default ["1g"]), promote_every (integers in [1, 32] or
  /// "max", default [1]) and split_reduce ("workspace"/"cluster", default ["workspace"]); each a non-empty array (an integer axis may also be {"from", "to", "step"}).
  /// Integers must be exact JSON integers; names printable strings; unknown keys, axes beside "union"
  /// and more than kMaxPoints points are refused. Throws Error(kUsage) "SOURCE: /json/pointer: VALUE RULE",
  /// the source and value escaped (core/escape.hpp).
  static SearchSpace from_json(const nlohmann::json& j, const std::string& source);
  /// Parses JSON text (a key given twice in one object is refused too), then from_json().
  static SearchSpace parse(const std::string& text, const std::string& source);
  /// Reads (core/input_file.hpp: unreadable is Error(kUsage)) and parses a JSON file.
  static SearchSpace load(const std::string& path);
  /// The built-in default (identical to configs/spaces/sm90-default.json; a unit test checks that).
  static SearchSpace builtin_default();

  /// Points over all grids, before deduplication and pruning.
  size_t size() const;
};

/// One point of a space for one problem.
struct Candidate {
  KernelConfig config;
  ResourceReport resources;
  std::string grid;    ///< the grid it came from (the first one, when several produce it)
  std::string pruned;  ///< empty when kept; else the legality rule (R..) or problem pruning (P..) that removed it
};

struct Enumeration {
  std::vector<Candidate> kept;      ///< in canonical order (grid order, then axis order)
  std::vector<Candidate> rejected;  ///< same order, with reasons
};

/// Enumerates `space` for `problem` on a device with `sm_count` SMs: every point is evaluated by
/// evaluate_resources(); legal points are then pruned when they cannot help this problem:
///   P1: BLOCK_M >= 2 * roundup(M, 64) (a smaller BLOCK_M covers M with less padding);
///   P2: BLOCK_N >= N + 16 (a smaller BLOCK_N covers N in as many tiles);
///   P3: TMA-store epilogue but D's rows are not 16-byte multiples (ldd % 8 != 0);
///   P4: split-K > 1 although the tiles alone fill the SMs;
///   P5: split-K = S runs as fewer splits (K has too few k-blocks): a duplicate of that split count;
///   P6: a cluster dimension larger than the tile grid in that dimension (no partner to share with);
///   P7: sms > 0 that does not change the grid (as many or more CTAs than work units or SMs).
/// Points that several grids produce appear once.
Enumeration enumerate(const SearchSpace& space, const Problem& problem, int sm_count = 132);

}  // namespace dgt
