// Search spaces (configs/spaces/*.json) and candidate enumeration for a problem.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "problem/kernel_config.hpp"
#include "space/resource_model.hpp"

namespace dgt {

/// The values each tunable may take. Enumeration is the cross product, filtered by the resource
/// model (legality) and by problem-aware pruning.
struct SearchSpace {
  std::string name;
  std::vector<int> block_m, block_n, block_k, num_stages, num_math_wg, swizzle, group, split_k;
  std::vector<std::pair<int, int>> cluster;  ///< (cluster_m, cluster_n)
  std::vector<Raster> raster;

  /// Parses a space. Keys: name, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster
  /// (strings "MxN"), raster ("m"/"n"), group, split_k; each a non-empty array. block_n may also be
  /// {"from": a, "to": b, "step": s}. Throws Error(kUsage) naming `source`, the key and the problem.
  static SearchSpace from_json(const nlohmann::json& j, const std::string& source);
  /// Reads and parses a JSON file. Throws Error(kIo) when unreadable, Error(kUsage) when malformed.
  static SearchSpace load(const std::string& path);
  /// The built-in default (identical to configs/spaces/sm90-default.json; a unit test checks that).
  static SearchSpace builtin_default();

  /// Number of points in the cross product.
  size_t size() const;
};

/// One point of a space for one problem.
struct Candidate {
  KernelConfig config;
  ResourceReport resources;
  std::string pruned;  ///< empty when kept; else the legality rule (R..) or problem pruning (P..) that removed it
};

struct Enumeration {
  std::vector<Candidate> kept;      ///< in canonical order (block_m, block_n, block_k, stages, wg, ...)
  std::vector<Candidate> rejected;  ///< same order, with reasons
};

/// Enumerates `space` for `problem`: every point is evaluated by evaluate_resources(); legal points
/// are then pruned when the tile is needlessly large for the problem:
///   P1: BLOCK_M >= 2 * roundup(M, 64) (a smaller BLOCK_M covers M with less padding);
///   P2: BLOCK_N >= N + 16 (a smaller BLOCK_N covers N in as many tiles).
Enumeration enumerate(const SearchSpace& space, const Problem& problem);

}  // namespace dgt
