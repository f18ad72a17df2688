// cuBLASLt's FP8 matmul for one dgtune problem: the descriptors the benchmark (bench/cublaslt_baseline.hpp) and the
// loader's cuBLASLt backend (launch/cublaslt_gemm.hpp) both build, so both run exactly the same operation.
//
// Our row-major D[M,N] = A[M,K] B[N,K]^T is cuBLASLt's column-major D'[N,M] = op(B') op(A') with transa = T on our B
// (K x N column-major, ld = ldb) and transb = N on our A (K x M, ld = lda): the "TN" layout cuBLASLt requires for FP8
// (cuBLASLt docs, cublasLtMatmul, "FP8 data types": A transposed, B non-transposed). FP32 compute and scale type,
// beta = 0. Scales by device pointer (cuBLASLt's A_SCALE = scale of our B, B_SCALE = scale of our A), accumulation as
// the problem says (CUBLASLT_MATMUL_DESC_FAST_ACCUM), output type, bias and activation as cuBLASLt epilogues.
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <string>

#include "launch/gemm_kernel.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// The four matrix layouts of a problem in cuBLASLt's terms (its A is our B). Semi-opaque structs
/// (cublasLtMatrixLayoutInit): no allocation, nothing to destroy, safe to share between threads once built.
struct CublasLtLayouts {
  cublasLtMatrixLayoutOpaque_t a{}, b{}, c{}, d{};
  // cuBLASLt's functions take non-const layout handles but only read them (cublasLtMatmul, the heuristic, the
  // check), so a const object hands them out.
  cublasLtMatrixLayout_t la() const { return const_cast<cublasLtMatrixLayout_t>(&a); }
  cublasLtMatrixLayout_t lb() const { return const_cast<cublasLtMatrixLayout_t>(&b); }
  cublasLtMatrixLayout_t lc() const { return const_cast<cublasLtMatrixLayout_t>(&c); }
  cublasLtMatrixLayout_t ld() const { return const_cast<cublasLtMatrixLayout_t>(&d); }
};

/// C's type next to D's: an e4m3 D pairs with a BF16 C in cuBLASLt's FP8 type table; otherwise C = D.
DType cublaslt_c_type(DType d);

/// Initialises `desc` (cublasLtMatmulDescInit: no allocation) with every attribute of `p` that is not a device
/// pointer: transposes, FP32 compute, scale modes (channel: OUTER_VEC_32F; block: BLK128x128_32F on our B and
/// VEC128_32F on our A; block1d1d: VEC128_32F on both), fast accumulation, epilogue (bias / ReLU / GELU-tanh) and
/// the bias type (BF16). Throws Error(kCublas) when cuBLASLt refuses an attribute.
void init_matmul_desc(cublasLtMatmulDescOpaque_t& desc, const Problem& p);

/// Sets the device-pointer attributes of one call on `desc` (made by init_matmul_desc for the same problem):
/// the A/B scale pointers, the bias, and for e4m3 output scale_d and amax (amax may be null). cuBLASLt copies
/// the pointer values, so `ops` need not outlive the call. Throws Error(kCublas) on a refused attribute.
void set_matmul_pointers(cublasLtMatmulDesc_t desc, const Problem& p, const jit::GemmOperands& ops);

/// Initialises the layouts of `p` (A' = our B: K x N, ld = ldb; B' = our A: K x M, ld = lda; C, D: N x M, ld = ldd).
/// Throws Error(kCublas) when cuBLASLt refuses one.
void init_layouts(CublasLtLayouts& l, const Problem& p);

/// The bytes of a cuBLASLt algorithm: cublasLtMatmulAlgo_t is a semi-opaque struct that "can be trivially
/// serialized and later restored for use with the same version of cuBLAS library" (cublasLt.h). 64 bytes.
using CublasLtAlgoBytes = std::array<uint8_t, sizeof(cublasLtMatmulAlgo_t)>;
CublasLtAlgoBytes algo_bytes(const cublasLtMatmulAlgo_t& algo);
cublasLtMatmulAlgo_t algo_from_bytes(const CublasLtAlgoBytes& bytes);

/// "algo=ID tile=T stages=S splitk=K swizzle=W cluster=C reduction=R" from the algorithm's readable attributes
/// (cublasLtMatmulAlgoConfigGetAttribute: CUBLASLT_ALGO_CONFIG_ID, _TILE_ID, _STAGES_ID, _SPLITK_NUM, _CTA_SWIZZLING,
/// _CLUSTER_SHAPE_ID, _REDUCTION_SCHEME). Attributes cuBLASLt does not answer read as 0.
std::string describe_cublaslt_algo(const cublasLtMatmulAlgo_t& algo);

}  // namespace dgt
