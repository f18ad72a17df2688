#include "bench/cublaslt_baseline.hpp"

#include <cublasLt.h>

#include <limits>
#include <memory>

#include <fmt/format.h>

#include "core/error.hpp"
#include "launch/cublaslt_matmul.hpp"

namespace dgt {

namespace {

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
  cublasLtMatmulDescOpaque_t desc{};  // launch/cublaslt_matmul.hpp: the loader's backend builds the same one
  CublasLtLayouts layouts;
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
  init_matmul_desc(m.desc, p);
  set_matmul_pointers(&m.desc, p, m.ops);
  m.c = m.ops.d;
  if (p.d == DType::kE4M3) {
    m.c_buffer = DeviceBuffer(static_cast<size_t>(p.m) * static_cast<size_t>(p.ldd) * 2);
    m.c = m.c_buffer.get();
  }
  init_layouts(m.layouts, p);
  DGT_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&m.pref.h));
  DGT_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(m.pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &lt.workspace_bytes_, sizeof lt.workspace_bytes_));

  m.requested = lt.max_algos_;
  m.results.resize(static_cast<size_t>(std::max(1, m.requested)));
  int count = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(lt.handle_, &m.desc, m.layouts.la(), m.layouts.lb(), m.layouts.lc(), m.layouts.ld(),
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
  return describe_cublaslt_algo(m.results[static_cast<size_t>(i)].algo) +
         fmt::format(" rank={} returned={} requested={}", i, m.returned, m.requested);
}

CublasLtAlgoBytes CublasLtPlan::algo(int i) const {
  const Impl& m = *impl_;
  if (i < 0 || i >= m.returned) DGT_THROW(ErrorKind::kInternal, "cuBLASLt algorithm {} of {}", i, m.returned);
  return algo_bytes(m.results[static_cast<size_t>(i)].algo);
}

size_t CublasLtPlan::workspace_bytes(int i) const {
  const Impl& m = *impl_;
  if (i < 0 || i >= m.returned) DGT_THROW(ErrorKind::kInternal, "cuBLASLt algorithm {} of {}", i, m.returned);
  return m.results[static_cast<size_t>(i)].workspaceSize;
}

int CublasLtPlan::launch(int i, cudaStream_t s) const {
  const Impl& m = *impl_;
  if (i < 0 || i >= m.returned) return int(CUBLAS_STATUS_INVALID_VALUE);
  static const float alpha = 1.0f, beta = 0.0f;
  return int(cublasLtMatmul(m.lt.handle_, const_cast<cublasLtMatmulDesc_t>(&m.desc), &alpha, m.ops.b, m.layouts.la(), m.ops.a, m.layouts.lb(), &beta, m.c,
                            m.layouts.lc(), m.ops.d, m.layouts.ld(), &m.results[static_cast<size_t>(i)].algo,
                            m.lt.workspace_.get(), m.lt.workspace_bytes_, s));
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
    const CublasLtAlgoBytes bytes = plan.algo(i);
    r.algo_data.assign(bytes.begin(), bytes.end());
    r.workspace_bytes = static_cast<int64_t>(plan.workspace_bytes(i));
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
