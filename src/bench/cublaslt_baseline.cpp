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

/// C's type next to D's: e4m3 D pairs with a BF16 C in cuBLASLt's FP8 type table; otherwise C = D.
DType c_type(DType d) { return d == DType::kE4M3 ? DType::kBF16 : d; }

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

template <class T, cublasStatus_t (*Destroy)(T)>
struct LtHandle {
  T h = nullptr;
  LtHandle() = default;
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  ~LtHandle() {
    if (h) Destroy(h);
  }
};

std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
  int32_t id = 0, splitk = 1;
  uint32_t tile = 0, stages = 0, swizzle = 0;
  uint16_t cluster = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle, nullptr);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, nullptr);
  return fmt::format("algo={} tile={} stages={} splitk={} swizzle={} cluster={}", id, tile, stages, splitk, swizzle,
                     cluster);
}

BaselineRecord make_record(const Problem& p, const std::string& provider, const std::string& protocol) {
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

// ---------------------------------------------------------------------------------------------
// CublasLtPlan

struct CublasLtPlan::Impl {
  const CublasLtBaseline& lt;
  const ProblemData& data;
  jit::GemmOperands ops;
  const void* scale_for_cublas_a = nullptr;  // cuBLASLt's A is our B
  const void* scale_for_cublas_b = nullptr;
  LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc;
  LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> la, lb, lc, ld;
  const void* bias = nullptr;     // pointer attributes are read from these members' addresses
  const void* scale_d = nullptr;
  void* amax = nullptr;
  /// e4m3 D: C (BF16, never read: beta = 0) in its own buffer. cuBLASLt takes C == D as an in-place update,
  /// which needs C's layout to equal D's; with D's pointer and C's BF16 type every call returned status 7
  /// (CUBLAS_STATUS_INVALID_VALUE) on the H200.
  DeviceBuffer c_buffer;
  const void* c = nullptr;
  LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
  std::vector<cublasLtMatmulHeuristicResult_t> results;
  int status = 0;
  int requested = 0;
  int returned = 0;
  std::string error;

  Impl(const CublasLtBaseline& l, const ProblemData& d) : lt(l), data(d), ops(d.operands()) {}
};

CublasLtPlan::CublasLtPlan(CublasLtBaseline& lt, const ProblemData& data) : impl_(std::make_unique<Impl>(lt, data)) {
  Impl& m = *impl_;
  const Problem& p = data.problem();
  DGT_CHECK_CUBLAS(cublasLtMatmulDescCreate(&m.desc.h, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  m.scale_for_cublas_a = m.ops.scale_b;
  m.scale_for_cublas_b = m.ops.scale_a;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &m.scale_for_cublas_a,
                                                  sizeof m.scale_for_cublas_a));
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &m.scale_for_cublas_b,
                                                  sizeof m.scale_for_cublas_b));
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
    DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof mode_a));
    DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof mode_b));
  }
  const int8_t fast = p.accum == Accum::kFast ? 1 : 0;
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
  // The matching epilogue: cuBLASLt's bias vector runs along the rows of its column-major
  // D' = our columns (N values), the same vector our kernel adds per column.
  const cublasLtEpilogue_t epilogue = lt_epilogue(p);
  DGT_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  if (p.bias == Bias::kBF16) {
    m.bias = m.ops.bias;
    const cudaDataType_t bias_type = CUDA_R_16BF;
    DGT_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &m.bias, sizeof m.bias));
    DGT_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
  }
  // FP8 output: D = saturate(scale_d x result) with the D scale by device pointer, and cuBLASLt's amax of
  // the result before scale_d (CUBLASLT_MATMUL_DESC_AMAX_D_POINTER), the same contract as our kernel. C
  // stays BF16 (the C type cuBLASLt pairs with an e4m3 D); beta = 0, so C is never read.
  m.c = m.ops.d;
  if (p.d == DType::kE4M3) {
    m.c_buffer = DeviceBuffer(static_cast<size_t>(p.m) * static_cast<size_t>(p.ldd) * 2);
    m.c = m.c_buffer.get();
    m.scale_d = m.ops.scale_d;
    m.amax = m.ops.amax;
    DGT_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &m.scale_d, sizeof m.scale_d));
    if (m.amax)
      DGT_CHECK_CUBLAS(
          cublasLtMatmulDescSetAttribute(m.desc.h, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &m.amax, sizeof m.amax));
  }
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&m.la.h, cuda_type(p.b), p.k, p.n, p.ldb));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&m.lb.h, cuda_type(p.a), p.k, p.m, p.lda));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&m.lc.h, cuda_type(c_type(p.d)), p.n, p.m, p.ldd));
  DGT_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&m.ld.h, cuda_type(p.d), p.n, p.m, p.ldd));
  DGT_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&m.pref.h));
  DGT_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(m.pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &lt.workspace_bytes_, sizeof lt.workspace_bytes_));

  m.requested = lt.max_algos_;
  m.results.resize(static_cast<size_t>(std::max(1, m.requested)));
  int count = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt.handle_, m.desc.h, m.la.h, m.lb.h, m.lc.h, m.ld.h,
                                                           m.pref.h, m.requested, m.results.data(), &count);
  m.status = int(st);
  m.returned = st == CUBLAS_STATUS_SUCCESS ? count : 0;
  m.results.resize(static_cast<size_t>(m.returned));
  if (m.returned == 0)
    m.error = fmt::format("cublasLtMatmulAlgoGetHeuristic: status {}, {} algorithms", int(st), count);
}

CublasLtPlan::~CublasLtPlan() = default;

const ProblemData& CublasLtPlan::data() const { return impl_->data; }
int CublasLtPlan::heuristic_status() const { return impl_->status; }
int CublasLtPlan::requested() const { return impl_->requested; }
int CublasLtPlan::returned() const { return impl_->returned; }
const std::string& CublasLtPlan::error() const { return impl_->error; }

std::string CublasLtPlan::describe(int i) const {
  const Impl& m = *impl_;
  if (i < 0 || i >= m.returned) DGT_THROW(ErrorKind::kInternal, "cuBLASLt algorithm {} of {}", i, m.returned);
  return describe_algo(m.results[static_cast<size_t>(i)].algo) +
         fmt::format(" rank={} returned={} requested={}", i, m.returned, m.requested);
}

int CublasLtPlan::launch(int i, cudaStream_t s) const {
  const Impl& m = *impl_;
  if (i < 0 || i >= m.returned) return int(CUBLAS_STATUS_INVALID_VALUE);
  static const float alpha = 1.0f, beta = 0.0f;
  return int(cublasLtMatmul(m.lt.handle_, m.desc.h, &alpha, m.ops.b, m.la.h, m.ops.a, m.lb.h, &beta, m.c, m.lc.h,
                            m.ops.d, m.ld.h, &m.results[static_cast<size_t>(i)].algo, m.lt.workspace_.get(),
                            m.lt.workspace_bytes_, s));
}

std::function<void(cudaStream_t)> CublasLtPlan::launcher(int i) const {
  if (i < 0 || i >= impl_->returned)
    DGT_THROW(ErrorKind::kInternal, "cuBLASLt launcher for algorithm {} of {}", i, impl_->returned);
  return [this, i](cudaStream_t s) {
    const int st = launch(i, s);
    if (st != 0) DGT_THROW(ErrorKind::kCublas, "cublasLtMatmul ({}) returned status {}", describe(i), st);
  };
}

// ---------------------------------------------------------------------------------------------
// Algorithm selection

CublasLtChoice select_algorithms(const CublasLtPlan& plan, const ScreenTimer& time, const std::string& protocol,
                                 cudaStream_t s) {
  const ProblemData& data = plan.data();
  const Problem& p = data.problem();
  CublasLtChoice c;
  c.def = make_record(p, kProviderCublasDefault, protocol);
  c.tuned = make_record(p, kProviderCublasTuned, protocol);
  if (!plan.supported()) {
    for (BaselineRecord* r : {&c.def, &c.tuned}) {
      r->status = TrialStatus::kUnsupported;
      r->cublas_status = plan.heuristic_status();
      r->error = plan.error();
    }
    return c;
  }

  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < plan.returned(); ++i) {
    BaselineRecord r = make_record(p, fmt::format("cublaslt-rank{}", i), protocol);
    r.algo = plan.describe(i);
    data.poison_output(s);
    const int last = plan.launch(i, s);
    if (last != CUBLAS_STATUS_SUCCESS) {
      r.status = last == CUBLAS_STATUS_NOT_SUPPORTED ? TrialStatus::kUnsupported : TrialStatus::kError;
      r.cublas_status = last;
      r.error = fmt::format("cublasLtMatmul returned status {}", last);
    } else {
      r.verification = data.verify(s);
      if (!r.verification->ok) {
        r.status = TrialStatus::kVerifyFailed;
        r.error = fmt::format("max_rel_err {:.3g}, diff {:.3g}, nan {}, pad {}", r.verification->max_rel_err,
                              r.verification->diff, r.verification->nan_count, r.verification->pad_touched) +
                  epilogue_failure_text(*r.verification);
      } else {
        int timed_status = CUBLAS_STATUS_SUCCESS;
        r.set_timing(time([&plan, i, &timed_status](cudaStream_t stream) {
          const int st = plan.launch(i, stream);
          if (st != CUBLAS_STATUS_SUCCESS) timed_status = st;
        }));
        r.status = timed_status == CUBLAS_STATUS_SUCCESS ? TrialStatus::kOk : TrialStatus::kError;
        if (timed_status != CUBLAS_STATUS_SUCCESS) {
          r.cublas_status = timed_status;
          r.error = fmt::format("cublasLtMatmul returned status {} while timed", timed_status);
        }
      }
    }
    if (i == 0) {
      c.def = r;
      c.def.provider = kProviderCublasDefault;
      if (r.status == TrialStatus::kOk) c.default_algo = 0;
    }
    if (r.status == TrialStatus::kOk && r.timing->median_us < best) {
      best = r.timing->median_us;
      c.tuned = r;
      c.tuned.provider = kProviderCublasTuned;
      c.tuned_algo = i;
    }
    c.screened.push_back(std::move(r));
  }
  if (c.tuned_algo < 0) {
    c.tuned = c.def;
    c.tuned.provider = kProviderCublasTuned;
  }
  return c;
}

CublasLtChoice select_algorithms(const CublasLtPlan& plan, Timer& timer, cudaStream_t s) {
  return select_algorithms(
      plan, [&timer](const std::function<void(cudaStream_t)>& launch) { return timer.measure(launch); },
      timer.protocol().to_json(), s);
}

std::pair<BaselineRecord, BaselineRecord> CublasLtBaseline::measure(const ProblemData& data, Timer& timer,
                                                                    cudaStream_t s) {
  CublasLtPlan plan(*this, data);
  CublasLtChoice c = select_algorithms(plan, timer, s);
  return {std::move(c.def), std::move(c.tuned)};
}

}  // namespace dgt
