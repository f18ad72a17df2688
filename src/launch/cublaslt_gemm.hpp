// The loader's cuBLASLt backend: one problem run by cuBLASLt with one fixed algorithm, either the algorithm a
// sweep stored (its 64 bytes, checked with cublasLtMatmulAlgoCheck on this problem) or cuBLASLt's heuristic top-1.
// Built once per problem (descriptors and layouts; the workspace the algorithm needs is the caller's, bound with
// bind_workspace, so that dgt::Gemm can share one per problem family); a launch copies the prepared descriptor, sets
// the call's pointers and calls cublasLtMatmul: no allocation and no synchronisation, so launches can be captured in
// a CUDA graph. Building one allocates nothing on the device either (safe inside capture).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/buffer.hpp"
#include "launch/cublaslt_matmul.hpp"
#include "launch/gemm_kernel.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// Owns a cublasLtHandle_t (cublasLtCreate / cublasLtDestroy). Throws Error(kCublas) when creation fails.
class CublasLtHandle {
 public:
  CublasLtHandle();
  ~CublasLtHandle();
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;
  cublasLtHandle_t get() const { return h_; }

 private:
  cublasLtHandle_t h_ = nullptr;
};

/// One problem with one cuBLASLt algorithm (see the file comment). D must be BF16 or FP32: cuBLASLt's e4m3 D needs
/// a BF16 C of its own (launch/cublaslt_matmul.hpp), which the loader does not allocate per shape, so an e4m3
/// problem always runs dgtune's kernel. Launches sharing a workspace must be ordered on one stream (the rule of
/// dgt::Gemm's split-K scratch).
class CublasLtGemm {
 public:
  /// The largest workspace the heuristic may pick (the sweep's CublasLtBaseline uses the same 32 MiB, so a stored
  /// algorithm never needs more).
  static constexpr size_t kMaxWorkspace = size_t(32) << 20;

  /// cuBLASLt's heuristic top-1 for p (cublasLtMatmulAlgoGetHeuristic, needing at most `max_workspace` bytes of
  /// workspace; 0: an algorithm that needs none). With `accept`, the first of the heuristic's top kAcceptResults
  /// whose algorithm it accepts. nullptr with `why` set when cuBLASLt cannot run p (unsupported types or sizes,
  /// e4m3 D) or accepts none.
  static std::unique_ptr<CublasLtGemm> heuristic(cublasLtHandle_t h, const Problem& p, std::string& why,
                                                 size_t max_workspace = kMaxWorkspace,
                                                 const std::function<bool(const cublasLtMatmulAlgo_t&)>& accept = nullptr);
  /// How many heuristic results heuristic() looks through for one `accept` takes.
  static constexpr int kAcceptResults = 16;
  /// cuBLASLt's heuristic's first `count` (at most kAcceptResults) algorithms for p that it returns with a success
  /// state, in its order (one cublasLtMatmulAlgoGetHeuristic query, up to kMaxWorkspace of workspace). Empty with
  /// `why` set when cuBLASLt cannot run p (unsupported types or sizes, e4m3 D).
  static std::vector<cublasLtMatmulAlgo_t> heuristic_algos(cublasLtHandle_t h, const Problem& p, int count,
                                                            std::string& why);
  /// A stored algorithm (CublasLtAlgoBytes as a vector of 64 bytes) after cublasLtMatmulAlgoCheck on p. nullptr with
  /// `why` set when the bytes have the wrong size, the check fails (another problem the algorithm cannot run) or D
  /// is e4m3. The caller has already compared the cuBLASLt versions (an algorithm is replayed only by the version
  /// that returned it, cublasLt.h).
  static std::unique_ptr<CublasLtGemm> stored(cublasLtHandle_t h, const Problem& p, const std::vector<uint8_t>& bytes,
                                              std::string& why);
  /// An algorithm of the running cuBLASLt (e.g. the heuristic's pick at another M of p's family) after
  /// cublasLtMatmulAlgoCheck on p. nullptr with `why` set when the check fails, the algorithm needs more than
  /// kMaxWorkspace bytes of workspace or D is e4m3.
  static std::unique_ptr<CublasLtGemm> checked(cublasLtHandle_t h, const Problem& p, const cublasLtMatmulAlgo_t& algo,
                                               std::string& why);

  /// The device workspace launches use: `bytes` >= workspace_bytes() (Error(kInternal) otherwise), owned by the
  /// caller and alive while launches may run. Not needed when workspace_bytes() is 0.
  void bind_workspace(void* ptr, size_t bytes);

  /// Enqueues D = op(A, B) on `stream` with `ops`' pointers (the same operands as jit::GemmKernel::launch). Throws
  /// Error(kCublas) naming the algorithm when cublasLtMatmul fails, Error(kInternal) when the algorithm needs a
  /// workspace and none was bound.
  void launch(const jit::GemmOperands& ops, cudaStream_t stream) const;

  /// True when the call's pointers meet the algorithm's alignment (CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_{A,B,C,D}_BYTES,
  /// read once; the sweep's algorithms were chosen for 256-byte aligned buffers) and the scale and bias pointers are
  /// 16-byte aligned (what the heuristic saw). dgt::Gemm runs its kernel for a call that does not fit.
  bool fits(const jit::GemmOperands& ops) const;

  /// describe_cublaslt_algo() of the algorithm.
  const std::string& description() const { return description_; }
  const cublasLtMatmulAlgo_t& algo() const { return algo_; }
  size_t workspace_bytes() const { return workspace_needed_; }  ///< what the algorithm needs

 private:
  CublasLtGemm(cublasLtHandle_t h, const Problem& p);
  void finish(const cublasLtMatmulAlgo_t& algo, size_t workspace);
  /// One cublasLtMatmulAlgoGetHeuristic query for this problem (up to `max_workspace`, at most kMaxWorkspace, of
  /// workspace): of its first `wanted` results (1..kAcceptResults) those with a success state, in its order; empty
  /// with `why` set when there is none.
  std::vector<cublasLtMatmulHeuristicResult_t> query_heuristic(int wanted, size_t max_workspace,
                                                               std::string& why);

  cublasLtHandle_t handle_;
  Problem p_;
  cublasLtMatmulDescOpaque_t desc_{};  ///< every attribute but the pointers (init_matmul_desc)
  CublasLtLayouts layouts_;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_needed_ = 0;
  void* workspace_ = nullptr;
  size_t workspace_bound_ = 0;
  std::string description_;
  uint32_t align_a_ = 256, align_b_ = 256, align_d_ = 256;  ///< the algorithm's minimum alignments (bytes)
};

}  // namespace dgt
