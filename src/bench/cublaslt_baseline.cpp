#include "bench/cublaslt_baseline.hpp"

#include <cublasLt.h>

#include <limits>
#include <memory>

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

template <class T, cublasStatus_t (*Destroy)(T)>
struct LtHandle {
  T h = nullptr;
  ~LtHandle() {
    if (h) Destroy(h);
  }
};

std::string describe(const cublasLtMatmulAlgo_t& algo) {
  int32_t id = 0, splitk = 1;
  uint32_t tile = 0, stages = 0, swizzle = 0;
  uint16_t cluster = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, nullptr);
  return fmt::format("algo={} tile={} stages={} splitk={} swizzle={} cluster={}", id, tile, stages, splitk, swizzle, cluster);
}

BaselineRecord make_record(const Problem& p, const char* provider, const std::string& protocol) {
  BaselineRecord r;
  r.problem = p;
  r.provider = provider;
  r.protocol = protocol;
  return r;
}

}  // namespace

CublasLtBaseline::CublasLtBaseline(int max_algos) : workspace_(workspace_bytes_), max_algos_(max_algos) {
  DGT_CHECK_CUBLAS(cublasLtCreate(&handle_));
}

CublasLtBaseline::~CublasLtBaseline() {
  if (handle_) cublasLtDestroy(handle_);
}

std::pair<BaselineRecord, BaselineRecord> CublasLtBaseline::measure(const ProblemData& data, Timer& timer, cudaStream_t s) {
  const Problem& p = data.problem();
  const std::string protocol = timer.options().to_json();
  BaselineRecord def = make_record(p, kProviderCublasDefault, protocol), tuned = make_record(p, kProviderCublasTuned, protocol);
  auto unsupported = [&](int status, const std::string& why) {
    for (BaselineRecord* r : {&def, &tuned}) {
      r->status = TrialStatus::kUnsupported;
      r->cublas_status = status;
      r->error = why;
    }
    return std::make_pair(def, tuned);
  };

  LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc;
  LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> la, lb, lc;
  LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc.h, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  const jit::GemmOperands ops = data.operands();
  const void* scale_for_cublas_a = ops.scale_b;  // cuBLASLt's A is our B
  const void* scale_for_cublas_b = ops.scale_a;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_for_cublas_a,
                                                  sizeof scale_for_cublas_a));
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_for_cublas_b,
                                                  sizeof scale_for_cublas_b));
  const int8_t fast = p.accum == Accum::kFast ? 1 : 0;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la.h, cuda_type(p.b), p.k, p.n, p.ldb));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lb.h, cuda_type(p.a), p.k, p.m, p.lda));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lc.h, cuda_type(p.d), p.n, p.m, p.ldd));
  DGT_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref.h));
  DGT_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                        sizeof workspace_bytes_));

  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(max_algos_));
  int count = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, desc.h, la.h, lb.h, lc.h, lc.h, pref.h, max_algos_, results.data(),
                                                     &count);
  if (st != CUBLAS_STATUS_SUCCESS || count == 0)
    return unsupported(int(st), fmt::format("cublasLtMatmulAlgoGetHeuristic: status {}, {} algorithms", int(st), count));

  const float alpha = 1.0f, beta = 0.0f;
  double best = std::numeric_limits<double>::infinity();
  bool any_ok = false;
  for (int i = 0; i < count; ++i) {
    const cublasLtMatmulAlgo_t algo = results[static_cast<size_t>(i)].algo;
    BaselineRecord r = make_record(p, i == 0 ? kProviderCublasDefault : kProviderCublasTuned, protocol);
    r.algo = describe(algo) + fmt::format(" rank={}", i);
    cublasStatus_t last = CUBLAS_STATUS_SUCCESS;
    auto launch = [&](cudaStream_t stream) {
      last = cublasLtMatmul(handle_, desc.h, &alpha, ops.b, la.h, ops.a, lb.h, &beta, ops.d, lc.h, ops.d, lc.h, &algo,
                            workspace_.get(), workspace_bytes_, stream);
    };
    data.poison_output(s);
    launch(s);
    if (last != CUBLAS_STATUS_SUCCESS) {
      r.status = last == CUBLAS_STATUS_NOT_SUPPORTED ? TrialStatus::kUnsupported : TrialStatus::kError;
      r.cublas_status = int(last);
      r.error = fmt::format("cublasLtMatmul returned status {}", int(last));
    } else {
      r.verification = data.verify(s);
      if (!r.verification->ok) {
        r.status = TrialStatus::kVerifyFailed;
        r.error = fmt::format("max_rel_err {:.3g}, diff {:.3g}, nan {}, pad {}", r.verification->max_rel_err,
                              r.verification->diff, r.verification->nan_count, r.verification->pad_touched);
      } else {
        r.set_timing(timer.measure(launch));
        r.status = last == CUBLAS_STATUS_SUCCESS ? TrialStatus::kOk : TrialStatus::kError;
      }
    }
    if (i == 0) {
      def = r;
      def.provider = kProviderCublasDefault;
    }
    if (r.status == TrialStatus::kOk && r.timing->median_us < best) {
      best = r.timing->median_us;
      tuned = r;
      tuned.provider = kProviderCublasTuned;
      any_ok = true;
    }
  }
  if (!any_ok) {
    tuned = def;
    tuned.provider = kProviderCublasTuned;
  }
  return {def, tuned};
}

}  // namespace dgt
