#include "launch/cublaslt_matmul.hpp"

#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"

namespace dgt {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kE4M3: return CUDA_R_8F_E4M3;
    case DType::kE5M2: return CUDA_R_8F_E5M2;
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

/// cuBLASLt's epilogue for our bias and activation: BIAS, RELU_BIAS, GELU_BIAS (GELU is the tanh form),
/// or RELU / GELU / DEFAULT without a bias.
cublasLtEpilogue_t lt_epilogue(const Problem& p) {
  const bool bias = p.bias == Bias::kBF16;
  switch (p.act) {
    case Act::kNone: return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case Act::kRelu: return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case Act::kGeluTanh: return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <class T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value));
}

}  // namespace

DType cublaslt_c_type(DType d) { return d == DType::kE4M3 ? DType::kBF16 : d; }

void init_matmul_desc(cublasLtMatmulDescOpaque_t& storage, const Problem& p) {
  cublasLtMatmulDesc_t desc = &storage;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescInit(desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  // Scale modes (cuBLASLt 12.9+): cuBLASLt's A is our B (N x K) and its B our A. channel: outer vectors
  // (our N values for its A, our M for its B); block (1D2D): our B per 128x128 block, our A per 1x128
  // slice; block1d1d: both per 1x128. The buffers are the ones our kernel reads (Problem::scales():
  // MN-major rows padded to 16 bytes, the layout cuBLASLt documents for these modes).
  int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  switch (p.scale) {
    case ScaleMode::kPerTensor: break;
    case ScaleMode::kChannel: mode_a = mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F; break;
    case ScaleMode::kBlock:
      mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
      mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
      break;
    case ScaleMode::kBlock1d1d: mode_a = mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F; break;
  }
  if (p.scale != ScaleMode::kPerTensor) {
    set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a);
    set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b);
  }
  set(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(p.accum == Accum::kFast ? 1 : 0));
  // cuBLASLt's bias vector runs along the rows of its column-major D' = our columns (N values), the same
  // vector our kernel adds per column.
  set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(p));
  if (p.bias == Bias::kBF16) set(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_16BF);
}

void set_matmul_pointers(cublasLtMatmulDesc_t desc, const Problem& p, const jit::GemmOperands& ops) {
  set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(ops.scale_b));
  set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(ops.scale_a));
  if (p.bias == Bias::kBF16) set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ops.bias);
  // FP8 output: D = saturate(scale_d x result) with the D scale by device pointer, and cuBLASLt's amax of the
  // result before scale_d (CUBLASLT_MATMUL_DESC_AMAX_D_POINTER), the same contract as our kernel.
  if (p.d == DType::kE4M3) {
    set(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, static_cast<const void*>(ops.scale_d));
    if (ops.amax) set(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, static_cast<void*>(ops.amax));
  }
}

void init_layouts(CublasLtLayouts& l, const Problem& p) {
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutInit(&l.a, cuda_type(p.b), uint64_t(p.k), uint64_t(p.n), p.ldb));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutInit(&l.b, cuda_type(p.a), uint64_t(p.k), uint64_t(p.m), p.lda));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutInit(&l.c, cuda_type(cublaslt_c_type(p.d)), uint64_t(p.n), uint64_t(p.m), p.ldd));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutInit(&l.d, cuda_type(p.d), uint64_t(p.n), uint64_t(p.m), p.ldd));
}

CublasLtAlgoBytes algo_bytes(const cublasLtMatmulAlgo_t& algo) {
  CublasLtAlgoBytes out;
  std::memcpy(out.data(), &algo, sizeof algo);
  return out;
}

cublasLtMatmulAlgo_t algo_from_bytes(const CublasLtAlgoBytes& bytes) {
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, bytes.data(), sizeof algo);
  return algo;
}

std::string describe_cublaslt_algo(const cublasLtMatmulAlgo_t& algo) {
  int32_t id = 0, splitk = 1;
  uint32_t tile = 0, stages = 0, swizzle = 0, reduction = 0;
  uint16_t cluster = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction, sizeof reduction,
                                       nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, nullptr);
  return fmt::format("algo={} tile={} stages={} splitk={} swizzle={} cluster={} reduction={}", id, tile, stages,
                     splitk, swizzle, cluster, reduction);
}

}  // namespace dgt
