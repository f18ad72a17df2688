// cuBLASLt's heuristic picks of one problem family by M, so that a first call of an M between two warmed M does not
// pay for a heuristic query (cublasLtMatmulAlgoGetHeuristic: 2.5-3.8 ms per M on the H200 host, measured in
// results/h200/serving-path-2026-12-02.md) when the query's answer is already known (internal header; GPU-free).
#pragma once

#include <cstdint>
#include <map>

#include "launch/cublaslt_matmul.hpp"

namespace dgt {

/// The bracket rule: cuBLASLt's heuristic choice is piecewise constant in M (its tile and split-K choice changes at a
/// few M), so where the picks at the nearest recorded M below and above an M are the same algorithm, that algorithm
/// stands for the pick at M (the loader still runs cublasLtMatmulAlgoCheck on M's own problem before using it). Where
/// they differ, or M lies outside the recorded M, the heuristic is asked. Records only picks made with the family's
/// full workspace limit (CublasLtGemm::kMaxWorkspace). Not thread-safe (dgt::Gemm holds its exclusive lock).
class HeuristicMemo {
 public:
  /// Stores the heuristic's pick at M = m (a later record of the same m replaces it).
  void record(int64_t m, const CublasLtAlgoBytes& algo) { picks_[m] = algo; }
  /// The pick recorded at m, else the one both neighbours of m agree on, else null. `from_m` (optional) gets the M
  /// whose pick it is (m itself, or the upper neighbour).
  const CublasLtAlgoBytes* pick(int64_t m, int64_t* from_m = nullptr) const;
  bool has(int64_t m) const { return picks_.count(m) != 0; }  ///< a pick was recorded at m itself
  size_t size() const { return picks_.size(); }

 private:
  std::map<int64_t, CublasLtAlgoBytes> picks_;
};

}  // namespace dgt
