// Problem: one GEMM the user wants tuned. D[M,N] = (scale_a * scale_b) * A[M,K] * B[N,K]^T.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace dgt {

/// Element types. FP8 formats follow the OCP 8-bit floating point spec (e4m3: bias 7, max 448,
/// no infinities; e5m2: bias 15, max 57344, IEEE-like infinities and NaNs).
enum class DType { kE4M3, kE5M2, kBF16, kF32 };

/// Accumulation numerics. kPromote: the tensor core accumulates one k-block (BLOCK_K elements of K)
/// at a time and the partial sum is added into FP32 registers on CUDA cores, as DeepGEMM does and as
/// cuBLASLt does by default (Hopper's FP8 tensor-core accumulator keeps about 14 bits; DeepSeek-V3
/// technical report, "Increasing Accumulation Precision"). kFast: the tensor core accumulates over
/// all of K (cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1).
enum class Accum { kPromote, kFast };

/// How A and B are scaled. Only per-tensor FP32 scales read from device pointers today.
enum class ScaleMode { kPerTensor };

const char* to_string(DType t);
const char* to_string(Accum a);
const char* to_string(ScaleMode s);
/// Parse "e4m3", "e5m2", "bf16", "f32". Throws Error(kUsage) naming the value otherwise.
DType parse_dtype(std::string_view text);
/// Parse "promote" or "fast". Throws Error(kUsage) otherwise.
Accum parse_accum(std::string_view text);
/// Size in bytes of one element.
int dtype_bytes(DType t);
/// The kernels' operand type code (kernels/common.cuh Fp8Type): 0 = e4m3, 1 = e5m2.
inline unsigned fp8_type_code(DType t) { return t == DType::kE5M2 ? 1u : 0u; }

/// One GEMM problem. A is M x K row-major (K-major) with leading dimension lda (elements),
/// B is N x K row-major (K-major) with ldb, D is M x N row-major with ldd. These are the only FP8
/// layouts WGMMA accepts (PTX ISA, "wgmma.mma_async": 8-bit operands must be K-major).
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;  ///< leading dimensions in elements
  DType a = DType::kE4M3, b = DType::kE4M3, d = DType::kBF16;
  ScaleMode scale = ScaleMode::kPerTensor;
  Accum accum = Accum::kPromote;

  /// A problem with tight leading dimensions (lda = ldb = K, ldd = N) and default types.
  static Problem dense(int64_t m, int64_t n, int64_t k);

  /// Canonical unique key, e.g. "4096x4096x4096_lda4096_ldb4096_ldd4096_e4m3.e4m3.bf16_pt_promote".
  std::string key() const;
  /// Short human label "MxNxK" (plus non-default fields).
  std::string label() const;
  /// 2*M*N*K.
  double flops() const;
  /// Bytes that must cross HBM at least once: A + B + D.
  double min_bytes() const;

  bool operator==(const Problem&) const = default;
};

/// Checks the rules every problem must meet before any buffer is made: M, N, K >= 1 and < 2^31;
/// lda >= K, ldb >= K, ldd >= N; A and B row strides (lda, ldb bytes) multiples of 16 and < 2^40
/// (cuTensorMapEncodeTiled: "globalStrides" rules, CUDA driver API). Only the first rule that fails
/// is reported. Throws Error(kInvalid) naming the operand, its value and the rule.
void validate_problem(const Problem& p);

void to_json(nlohmann::json& j, const Problem& p);
void from_json(const nlohmann::json& j, Problem& p);

}  // namespace dgt
