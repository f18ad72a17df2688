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

/// How A and B are scaled (FP32 scales read from device pointers; layouts in ScaleLayout):
///  - kPerTensor ("per-tensor"; shapes-file spelling "tensor"): one scale per operand,
///    D = (sa * sb) * sum_k A[m,k] B[n,k].
///  - kChannel ("channel"): sa[m] per row of A (length M), sb[n] per row of B = output column (length N),
///    D[m,n] = sa[m] * sb[n] * sum_k A[m,k] B[n,k], applied in the epilogue; either accumulation mode.
///  - kBlock ("block", DeepGEMM's 1D2D, forward GEMMs): A scaled per 1x128 slice of a row, B per 128x128
///    block; D[m,n] = sum_g sa[g][m] * sb[n/128][g] * sum_{k in granule g} A[m,k] B[n,k], g = k/128.
///  - kBlock1d1d ("block1d1d", weight gradients): both per 1x128 slice of a row;
///    D[m,n] = sum_g sa[g][m] * sb[g][n] * sum_{k in granule g} A[m,k] B[n,k].
/// Block modes apply the scales when each 128-wide granule's tensor-core partial sum is promoted, so
/// they need promote accumulation (rule: accum=fast with a block mode is refused). Source: DeepSeek-V3
/// technical report, "Fine-Grained Quantization"; deepseek-ai/DeepGEMM README (scaling-factor layouts).
enum class ScaleMode { kPerTensor, kChannel, kBlock, kBlock1d1d };

/// Bias added in the epilogue (before the activation): kNone, or kBF16 = a BF16 vector of N elements,
/// bias[n] added to every row of column n (cuBLASLt's CUBLASLT_EPILOGUE_BIAS layout: one value per row of
/// the column-major D^T = per column of our row-major D).
enum class Bias { kNone, kBF16 };

/// Activation applied in the epilogue after the bias: kNone, kRelu (max(x, 0); NaN stays NaN), kGeluTanh
/// (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh form cuBLASLt's CUBLASLT_EPILOGUE_GELU
/// documents). SiLU is absent: cuBLASLt has no SiLU epilogue to compare with.
enum class Act { kNone, kRelu, kGeluTanh };

/// The grouped (MoE) layouts (problem/grouped_problem.hpp); the values are the kernel's kGroupKind
/// (kernels/gemm/grouped_scheduler.cuh).
///  - kContiguous: A [M_sum, K] e4m3 K-major, B [G, N, K], D [M_sum, N] bf16; group g's rows are one segment that
///    starts at a multiple of 128 rows and holds m_g real rows then round_up(m_g, 128) - m_g padding rows;
///    m_indices int32 [M_sum] on the device gives each row's group, -1 for padding rows (never written).
///  - kMasked: A [G, M_max, K], B [G, N, K], D [G, M_max, N]; masked_m int32 [G] on the device, group g's real rows
///    are its first masked_m[g] (rows past them are never written); expected_m is a host hint (grid size only).
enum class GroupKind { kContiguous = 1, kMasked = 2 };

/// The granule of the block modes along K (and of B's blocks along N in kBlock).
inline constexpr int64_t kScaleBlock = 128;

/// FP32 scale buffers of a problem, as the kernel, the reference and cuBLASLt read them. Element
/// counts and leading dimensions in floats; every row of a 2-D scale array is a multiple of 16 bytes
/// (TMA and cuBLASLt's rule for scale arrays), hence the padding.
///  - per-tensor: a = b = 1 element.
///  - channel: a = M floats, b = N floats.
///  - block: A [ceil(K/128)][M_pad], M_pad = round_up(M, 4) (MN-major: the scales of one granule for
///    all rows are contiguous; ld_a = M_pad); B [ceil(N/128)][K_pad], K_pad = round_up(ceil(K/128), 4)
///    (ld_b = K_pad).
///  - block1d1d: A as block; B [ceil(K/128)][N_pad], N_pad = round_up(N, 4) (ld_b = N_pad).
struct ScaleLayout {
  int64_t a_elems = 1, b_elems = 1;
  int64_t ld_a = 0, ld_b = 0;  ///< 0 where the array is 1-D
};

const char* to_string(DType t);
const char* to_string(Accum a);
/// "none" / "bf16".
const char* to_string(Bias b);
/// "none" / "relu" / "gelu_tanh".
const char* to_string(Act a);
/// Parse to_string's names. Throw Error(kUsage) naming the value and the choices.
Bias parse_bias(std::string_view text);
Act parse_act(std::string_view text);
/// Parse an output type: "bf16", "f32" or "e4m3". Throws Error(kUsage) naming the value otherwise.
DType parse_output_dtype(std::string_view text);
/// "per-tensor", "channel", "block", "block1d1d" (the DB's scale_mode text).
const char* to_string(ScaleMode s);
/// Parses to_string's names plus "tensor". Throws Error(kUsage) naming the value and the choices.
ScaleMode parse_scale_mode(std::string_view text);
/// True for kBlock and kBlock1d1d.
inline bool is_block_scaled(ScaleMode s) { return s == ScaleMode::kBlock || s == ScaleMode::kBlock1d1d; }
/// Parse "e4m3", "e5m2", "bf16", "f32". Throws Error(kUsage) naming the value otherwise.
DType parse_dtype(std::string_view text);
/// Parse "promote" or "fast". Throws Error(kUsage) otherwise.
Accum parse_accum(std::string_view text);
/// Size in bytes of one element.
int dtype_bytes(DType t);
/// The kernels' operand type code (kernels/common.cuh Fp8Type): 0 = e4m3, 1 = e5m2.
inline unsigned fp8_type_code(DType t) { return t == DType::kE5M2 ? 1u : 0u; }
/// The kernels' output type code (kernels/gemm/epilogue_ops.cuh): 0 = bf16, 1 = f32, 2 = e4m3.
inline unsigned out_type_code(DType t) { return t == DType::kF32 ? 1u : t == DType::kE4M3 ? 2u : 0u; }
/// The kernels' activation code: 0 none, 1 relu, 2 gelu_tanh.
inline unsigned act_code(Act a) { return static_cast<unsigned>(a); }
/// The kernels' scale-mode code (kernels/gemm/scales.cuh): 0 per-tensor, 1 channel, 2 block, 3 block1d1d.
inline unsigned scale_mode_code(ScaleMode s) { return static_cast<unsigned>(s); }

/// One GEMM problem. A is M x K row-major (K-major) with leading dimension lda (elements),
/// B is N x K row-major (K-major) with ldb, D is M x N row-major with ldd. These are the only FP8
/// layouts WGMMA accepts (PTX ISA, "wgmma.mma_async": 8-bit operands must be K-major).
///
/// Output and epilogue, in this order on the FP32 accumulator of every element:
///   r = act(scales x acc + bias[n])             (bias: Bias::kBF16 only; act: Act)
///   D = bf16(r) | r (f32) | e4m3_satfinite(scale_d x r)
/// bf16/f32/e4m3 conversions round to nearest even. e4m3 saturates: |scale_d x r| beyond 448 (+-Inf too)
/// stores +-448, NaN stores NaN (PTX cvt.rn.satfinite.e4m3x2.f32). scale_d is an FP32 read from a device
/// pointer at every launch. With e4m3 output the launch may also write amax = max |r| over M x N (before
/// scale_d, after bias and activation; a NaN r makes it NaN), deterministically (GemmOperands::amax).
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;  ///< leading dimensions in elements
  DType a = DType::kE4M3, b = DType::kE4M3, d = DType::kBF16;  ///< d: bf16, f32 or e4m3
  ScaleMode scale = ScaleMode::kPerTensor;
  Accum accum = Accum::kPromote;
  Bias bias = Bias::kNone;
  Act act = Act::kNone;
  /// Grouped (MoE) problems only (GroupedProblem::keyed(), problem/grouped_problem.hpp); groups == 0 is a dense
  /// problem and the three fields below are then unused (and 0 / kContiguous). The fields of a grouped problem are
  /// what the host knows without reading the device: the layout, G, and for masked M_max and expected_m; m, n, k
  /// and the fields above are its dense view's (m: contiguous the padded total M_sum, masked G x M_max). The
  /// per-group row counts are not part of it (they live on the device at run time).
  int groups = 0;
  GroupKind group_kind = GroupKind::kContiguous;
  int64_t m_max = 0;       ///< masked: rows per group in A and D; contiguous 0
  int64_t expected_m = 0;  ///< masked: the host's hint of rows per group; contiguous 0

  /// A problem with tight leading dimensions (lda = ldb = K, ldd = N) and default types.
  static Problem dense(int64_t m, int64_t n, int64_t k);

  /// Canonical unique key, e.g. "4096x4096x4096_lda4096_ldb4096_ldd4096_e4m3.e4m3.bf16_pt_promote"; the
  /// scale token is pt / ch / blk / blk1d1d. A bias adds "_bias" and an activation "_relu" / "_gelu_tanh"
  /// at the end; without them the key is the one stored before fused epilogues existed (old DBs stay valid).
  /// A grouped problem's key is a prefix, then the dense view's key (so a dense key never starts with a letter and
  /// never collides with a grouped one):
  ///   contiguous: "grouped-contiguous_G<G>_" + key of the M_sum x N x K view,
  ///     e.g. "grouped-contiguous_G4_32768x4096x7168_lda7168_ldb7168_ldd4096_e4m3.e4m3.bf16_blk_promote"
  ///   masked: "grouped-masked_G<G>_mmax<M_max>_em<expected_m>_" + key of the (G x M_max) x N x K view,
  ///     e.g. "grouped-masked_G32_mmax256_em64_8192x4096x7168_lda7168_ldb7168_ldd4096_e4m3.e4m3.bf16_blk_promote"
  std::string key() const;
  /// True for a grouped (MoE) problem (groups > 0).
  bool is_grouped() const { return groups > 0; }
  /// Short human label "MxNxK" (plus non-default fields).
  std::string label() const;
  /// 2*M*N*K.
  double flops() const;
  /// True when the epilogue does more than scale and convert (a bias or an activation).
  bool has_epilogue() const { return bias != Bias::kNone || act != Act::kNone; }
  /// Bytes that must cross HBM at least once: A + B + D + bias (scales not counted).
  double min_bytes() const;
  /// The scale buffers of this problem's scale mode.
  ScaleLayout scales() const;

  bool operator==(const Problem&) const = default;
};

/// Checks the rules every problem must meet before any buffer is made: M, N, K >= 1 and < 2^31;
/// lda >= K, ldb >= K, ldd >= N; A and B row strides (lda, ldb bytes) multiples of 16 and < 2^40
/// (cuTensorMapEncodeTiled: "globalStrides" rules, CUDA driver API; D's stride is a config rule, P3); each operand
/// (rows x leading dimension x element bytes) < 2^48 bytes, so no size product wraps. Only the first rule that fails
/// is reported; block scale modes need accum = promote; D must be bf16, f32 or e4m3 (e5m2 output is not
/// implemented: cuBLASLt's FP8 outputs differ per type and the issue asks for e4m3). Throws Error(kInvalid) naming the operand,
/// its value and the rule.
void validate_problem(const Problem& p);

void to_json(nlohmann::json& j, const Problem& p);
void from_json(const nlohmann::json& j, Problem& p);

}  // namespace dgt
