#include "launch/cublaslt_gemm.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include <fmt/format.h>

#include "core/error.hpp"

namespace dgt {

CublasLtHandle::CublasLtHandle() { DGT_CHECK_CUBLAS(cublasLtCreate(&h_)); }

CublasLtHandle::~CublasLtHandle() {
  if (h_) cublasLtDestroy(h_);
}

namespace {

/// cuBLASLt's e4m3 D needs a BF16 C of its own, which the loader does not allocate per shape.
bool refuses_e4m3(const Problem& p, std::string& why) {
  if (p.d != DType::kE4M3) return false;
  why = "e4m3 output runs dgtune's kernel (cuBLASLt's e4m3 D needs a separate BF16 C)";
  return true;
}

}  // namespace

CublasLtGemm::CublasLtGemm(cublasLtHandle_t h, const Problem& p) : handle_(h), p_(p) {
  init_matmul_desc(desc_, p);
  // The heuristic and the check see the pointer attributes too: with null scale pointers cuBLASLt 13.0 returned no
  // algorithm for the channel and block scale modes on the H200 (it did with the benchmark's real pointers). A
  // placeholder address (4 KiB, aligned for every rule) stands in; every launch sets the call's own pointers.
  const auto placeholder = reinterpret_cast<float*>(uintptr_t(4096));
  set_matmul_pointers(&desc_, p, jit::GemmOperands{nullptr, nullptr, nullptr, placeholder, placeholder, placeholder,
                                                   placeholder, placeholder});
  init_layouts(layouts_, p);
}

void CublasLtGemm::finish(const cublasLtMatmulAlgo_t& algo, size_t workspace) {
  algo_ = algo;
  workspace_needed_ = workspace;
  description_ = describe_cublaslt_algo(algo);
  // An attribute cuBLASLt does not answer keeps the heuristic's default requirement, 256 bytes.
  auto cap = [&](cublasLtMatmulAlgoCapAttributes_t attr, uint32_t& out) {
    uint32_t v = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo_, attr, &v, sizeof v, nullptr) == CUBLAS_STATUS_SUCCESS && v > 0)
      out = v;
  };
  cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, align_a_);
  cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES, align_b_);
  uint32_t align_c = 256;
  cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, align_c);
  cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES, align_d_);
  align_d_ = std::max(align_d_, align_c);  // C is D (beta = 0, in place)
}

bool CublasLtGemm::fits(const jit::GemmOperands& ops) const {
  auto aligned = [](const void* ptr, uint32_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; };
  // cuBLASLt's A is our B and its B our A.
  return aligned(ops.b, align_a_) && aligned(ops.a, align_b_) && aligned(ops.d, align_d_) && aligned(ops.scale_a, 16) &&
         aligned(ops.scale_b, 16) && (p_.bias != Bias::kBF16 || aligned(ops.bias, 16));
}

std::vector<cublasLtMatmulHeuristicResult_t> CublasLtGemm::query_heuristic(int wanted, size_t max_workspace,
                                                                          std::string& why) {
  cublasLtMatmulPreferenceOpaque_t pref{};
  DGT_CHECK_CUBLAS(cublasLtMatmulPreferenceInit(&pref));
  const size_t max_ws = std::min(max_workspace, kMaxWorkspace);
  DGT_CHECK_CUBLAS(
      cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws));
  std::array<cublasLtMatmulHeuristicResult_t, kAcceptResults> results{};
  int count = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_, &desc_, layouts_.la(), layouts_.lb(), layouts_.lc(), layouts_.ld(), &pref,
                                     std::clamp(wanted, 1, kAcceptResults), results.data(), &count);
  if (st != CUBLAS_STATUS_SUCCESS || count < 1) {
    why = fmt::format("cublasLtMatmulAlgoGetHeuristic: status {}, {} algorithms", int(st), count);
    return {};
  }
  std::vector<cublasLtMatmulHeuristicResult_t> out;
  for (int i = 0; i < count; ++i)
    if (results[size_t(i)].state == CUBLAS_STATUS_SUCCESS) out.push_back(results[size_t(i)]);
  if (out.empty()) why = fmt::format("cublasLtMatmulAlgoGetHeuristic: status {}, state {}", int(st), int(results[0].state));
  return out;
}

std::unique_ptr<CublasLtGemm> CublasLtGemm::heuristic(cublasLtHandle_t h, const Problem& p, std::string& why,
                                                      size_t max_workspace,
                                                      const std::function<bool(const cublasLtMatmulAlgo_t&)>& accept) {
  if (refuses_e4m3(p, why)) return nullptr;
  std::unique_ptr<CublasLtGemm> g(new CublasLtGemm(h, p));
  const std::vector<cublasLtMatmulHeuristicResult_t> results =
      g->query_heuristic(accept ? kAcceptResults : 1, max_workspace, why);
  for (const cublasLtMatmulHeuristicResult_t& r : results) {
    if (accept && !accept(r.algo)) continue;
    g->finish(r.algo, r.workspaceSize);
    return g;
  }
  if (!results.empty()) why = fmt::format("none of cuBLASLt's {} heuristic algorithms is accepted", results.size());
  return nullptr;
}

std::vector<cublasLtMatmulAlgo_t> CublasLtGemm::heuristic_algos(cublasLtHandle_t h, const Problem& p, int count,
                                                                 std::string& why) {
  if (refuses_e4m3(p, why)) return {};
  CublasLtGemm g(h, p);
  std::vector<cublasLtMatmulAlgo_t> out;
  for (const cublasLtMatmulHeuristicResult_t& r : g.query_heuristic(kAcceptResults, kMaxWorkspace, why))
    if (int(out.size()) < count) out.push_back(r.algo);
  return out;
}

std::unique_ptr<CublasLtGemm> CublasLtGemm::stored(cublasLtHandle_t h, const Problem& p,
                                                   const std::vector<uint8_t>& bytes, std::string& why) {
  if (bytes.size() != sizeof(cublasLtMatmulAlgo_t)) {
    why = fmt::format("stored algorithm has {} bytes, not {}", bytes.size(), sizeof(cublasLtMatmulAlgo_t));
    return nullptr;
  }
  CublasLtAlgoBytes a;
  std::copy(bytes.begin(), bytes.end(), a.begin());
  return checked(h, p, algo_from_bytes(a), why);
}

std::unique_ptr<CublasLtGemm> CublasLtGemm::checked(cublasLtHandle_t h, const Problem& p,
                                                    const cublasLtMatmulAlgo_t& algo, std::string& why) {
  if (refuses_e4m3(p, why)) return nullptr;
  std::unique_ptr<CublasLtGemm> g(new CublasLtGemm(h, p));
  cublasLtMatmulHeuristicResult_t check{};
  const cublasStatus_t st = cublasLtMatmulAlgoCheck(h, &g->desc_, g->layouts_.la(), g->layouts_.lb(), g->layouts_.lc(),
                                                    g->layouts_.ld(), &algo, &check);
  if (st != CUBLAS_STATUS_SUCCESS || check.state != CUBLAS_STATUS_SUCCESS) {
    why = fmt::format("cublasLtMatmulAlgoCheck ({}): status {}, state {}", describe_cublaslt_algo(algo), int(st),
                      int(check.state));
    return nullptr;
  }
  if (check.workspaceSize > kMaxWorkspace) {
    why = fmt::format("algorithm ({}) needs {} bytes of workspace, more than {}", describe_cublaslt_algo(algo),
                      check.workspaceSize, kMaxWorkspace);
    return nullptr;
  }
  g->finish(algo, check.workspaceSize);
  return g;
}

void CublasLtGemm::bind_workspace(void* ptr, size_t bytes) {
  if (bytes < workspace_needed_ || (workspace_needed_ > 0 && ptr == nullptr))
    DGT_THROW(ErrorKind::kInternal, "cuBLASLt algorithm ({}) for {} needs {} bytes of workspace, {} bound",
              description_, p_.label(), workspace_needed_, bytes);
  workspace_ = ptr, workspace_bound_ = bytes;
}

void CublasLtGemm::launch(const jit::GemmOperands& ops, cudaStream_t stream) const {
  if (workspace_needed_ > 0 && workspace_ == nullptr)
    DGT_THROW(ErrorKind::kInternal, "cuBLASLt algorithm ({}) for {} needs a workspace of {} bytes and none was bound",
              description_, p_.label(), workspace_needed_);
  // The prepared descriptor is a semi-opaque struct (cublasLtMatmulDescInit): a copy on the stack takes the call's
  // pointers, so concurrent launches never write shared state.
  cublasLtMatmulDescOpaque_t desc = desc_;
  set_matmul_pointers(&desc, p_, ops);
  static const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st =
      cublasLtMatmul(handle_, &desc, &alpha, ops.b, layouts_.la(), ops.a, layouts_.lb(), &beta, ops.d, layouts_.lc(), ops.d,
                     layouts_.ld(), &algo_, workspace_, workspace_bound_, stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    DGT_THROW(ErrorKind::kCublas, "cublasLtMatmul ({}) for {} returned status {}", description_, p_.label(), int(st));
}

}  // namespace dgt
