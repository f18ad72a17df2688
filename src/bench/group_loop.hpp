// The grouped GEMM's first baseline: one cuBLASLt call per group, what a user without a grouped kernel runs. Each
// non-empty group is its own dense GEMM D_g[m_g, N] = A_g[m_g, K] B_g[N, K]^T with that group's real row count (the
// counts are known on the host; reading them back is not part of any timing), on the grouped operands' own buffers:
// A_g and D_g are row offsets into A and D, B_g = B + g N K. cuBLASLt's heuristic picks each group's algorithm. The
// calls of one sample run back to back on one stream: in cold-l2 they are one CUDA graph (captured once), so host
// launch gaps never count; under hot-graph the engine captures them itself.
//
// Block scaling: B's scales are used in place (group g's [ceil(N/128)][K_pad] block is the dense layout of one
// group). A's are MN-major with the grouped array's leading dimension (M_sum, or M_max for masked), which cuBLASLt
// cannot take, so each group's are copied once, at construction, into the dense layout of an m_g-row problem
// (Problem::scales: ld = round_up(m_g, 4)). A group whose count cuBLASLt refuses (e.g. block scaling with m_g not a
// multiple of 4) runs with its count rounded up to a multiple of 16 when the layout has those rows (the padding of
// its segment or of M_max); `padded_groups()` counts them and the report says so.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/device_sides.hpp"
#include "device/buffer.hpp"
#include "device/stream.hpp"
#include "launch/cublaslt_gemm.hpp"
#include "launch/grouped_kernel.hpp"
#include "problem/grouped_problem.hpp"

namespace dgt {

/// The per-group cuBLASLt loop of one grouped problem on one set of grouped operands (see the file comment).
class CublasLtGroupLoop {
 public:
  /// Plans every non-empty group (heuristic top-1 of each, its workspace allocated here) and, for block scaling,
  /// copies A's scales per group (stream-ordered on `s`, synchronised before returning). `ops` must stay valid while
  /// the loop is used. Throws Error(kCublas) naming the group when cuBLASLt cannot run a group even padded.
  CublasLtGroupLoop(const GroupedProblem& g, const jit::GroupedOperands& ops, cudaStream_t s);
  ~CublasLtGroupLoop();
  CublasLtGroupLoop(const CublasLtGroupLoop&) = delete;
  CublasLtGroupLoop& operator=(const CublasLtGroupLoop&) = delete;

  /// Enqueues every group's call on `s` (no allocation, no synchronisation: capturable).
  void enqueue(cudaStream_t s) const;
  /// A measurement side: outside stream capture one graph launch of enqueue() (built on first use); inside a
  /// capture (hot-graph's), enqueue() itself.
  Side side(const std::string& label);

  int calls() const { return static_cast<int>(groups_.size()); }  ///< groups run (non-empty ones)
  int padded_groups() const { return padded_; }                     ///< run with a rounded-up count
  /// "G calls; algorithms: <the distinct descriptions with their counts>".
  std::string describe() const;

 private:
  struct Group {
    std::unique_ptr<CublasLtGemm> gemm;
    jit::GemmOperands ops;
    DeviceBuffer scale_a;  ///< block scaling: this group's A scales in the dense layout
  };
  void build_graph();

  CublasLtHandle handle_;
  DeviceBuffer workspace_;  ///< one for all groups (their calls are ordered on one stream): the largest need
  std::vector<Group> groups_;
  int padded_ = 0;
  CudaStream capture_stream_;  ///< where build_graph() captures enqueue()
  cudaGraphExec_t graph_ = nullptr;
};

}  // namespace dgt
