// dgt::Gemm's warm-up for serving (docs/loader.md "Serving"): every kernel, cuBLASLt plan and scratch buffer a family
// can need is made before the first request, so that later first calls of any M (also inside graph capture) compile,
// allocate and read nothing.
#include <algorithm>
#include <chrono>
#include <mutex>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "device/buffer.hpp"
#include "loader/gemm_impl.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {

WarmupReport Gemm::warmup(const std::vector<WarmupProblem>& problems) {
  const auto t0 = std::chrono::steady_clock::now();
  Impl& im = *impl_;
  // Every family's rules are checked before anything is loaded, each error naming its problem.
  std::vector<ShapeKey> keys;
  for (size_t i = 0; i < problems.size(); ++i) {
    const WarmupProblem& w = problems[i];
    const ShapeKey key{1, w.n, w.k, w.lda, w.ldb, w.ldd, make_flags(w.options)};
    try {
      validate_problem(make_problem(key));
    } catch (const Error& e) {
      DGT_THROW(e.kind(), "dgt::Gemm::warmup: problem {} (N = {}, K = {}): {}", i, w.n, w.k, e.message());
    }
    keys.push_back(key);
  }
  WarmupReport r;
  std::unique_lock lock(im.mu);
  const unsigned long long compiles0 = im.kernels->compiles(), bundle0 = im.kernels->bundle_loads(),
                           cache0 = im.kernels->cache_loads();
  DGT_CHECK_CUDA(cudaSetDevice(im.device.ordinal));  // module loading needs this device's context current
  for (size_t i = 0; i < problems.size(); ++i) {
    GemmFamily& fam = im.family(keys[i], /*may_read=*/true);
    std::vector<int64_t> tuned;
    if (fam.candidates)
      for (const EnvironmentWinner& c : *fam.candidates) tuned.push_back(c.problem.m);
    for (int64_t m : warm_m_values(problems[i].m, tuned)) {
      ShapeKey key = keys[i];
      key.m = m;
      im.resolve_locked(key, /*quiet=*/false);  // launches each new cuBLASLt algorithm once (load_cublaslt)
      ++r.shapes;
    }
    // Every other config the ladder rule may re-rank to between two tuned M (choice.hpp ladder_configs): a pick there
    // need not be the pick at any M resolved above, and inside capture only loaded kernels run.
    const Problem family = make_problem(keys[i]);
    for (const KernelConfig& c : ladder_configs(fam.trials, family, legal_for_current_kernel))
      im.kernel_for(c, family);
    if (!fam.warmed) ++r.families;
    fam.warmed = true;
  }
  r.kernels = im.kernels->kernel_count();
  r.nvrtc_compiles = im.kernels->compiles() - compiles0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info(
      "dgt::Gemm: warmed {} problem families ({} shapes, {} kernels loaded, {} NVRTC compiles, {} modules from the "
      "kernel bundle, {} from the cubin cache) in {:.2f} s",
      r.families, r.shapes, r.kernels, r.nvrtc_compiles, im.kernels->bundle_loads() - bundle0,
      im.kernels->cache_loads() - cache0, r.seconds);
  return r;
}

void Gemm::Impl::load_cublaslt(const CublasLtGemm& lt, const Problem& p, GemmFamily& fam) {
  const CublasLtAlgoBytes key = algo_bytes(lt.algo());
  if (fam.lt_loaded.count(key)) return;
  try {
    // The same algorithm at a few rows needs small operands; a problem it cannot run at that M runs at its own M.
    Problem q = p;
    q.m = std::min<int64_t>(p.m, 128);
    std::string why;
    std::unique_ptr<CublasLtGemm> run = CublasLtGemm::checked(handle(), q, lt.algo(), why);
    if (!run) {
      q = p;
      run = CublasLtGemm::checked(handle(), q, lt.algo(), why);
    }
    if (!run) DGT_THROW(ErrorKind::kCublas, "{}", why);
    const ScaleLayout sl = q.scales();
    const size_t a_bytes = size_t(q.m) * size_t(q.lda) * size_t(dtype_bytes(q.a)),
                 b_bytes = size_t(q.n) * size_t(q.ldb) * size_t(dtype_bytes(q.b)),
                 d_bytes = size_t(q.m) * size_t(q.ldd) * size_t(dtype_bytes(q.d));
    if (q.m > 128 && a_bytes + b_bytes + d_bytes > (size_t(1) << 30))
      DGT_THROW(ErrorKind::kUsage, "the algorithm does not run at M = 128 and operands at M = {} take {} MiB", q.m,
                (a_bytes + b_bytes + d_bytes) >> 20);
    DeviceBuffer a(a_bytes), b(b_bytes), d(d_bytes);
    DeviceBuffer sa(size_t(sl.a_elems) * sizeof(float)), sb(size_t(sl.b_elems) * sizeof(float));
    DeviceBuffer bias(size_t(q.n) * 2), sd(sizeof(float)), amax(sizeof(float));
    DeviceBuffer ws(std::max<size_t>(run->workspace_bytes(), 1));
    if (run->workspace_bytes() > 0) run->bind_workspace(ws.get(), ws.bytes());
    cudaStream_t stream = nullptr;
    DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::unique_ptr<CUstream_st, decltype(&cudaStreamDestroy)> own(stream, &cudaStreamDestroy);
    for (DeviceBuffer* buf : {&a, &b, &d, &sa, &sb, &bias, &sd, &amax})
      DGT_CHECK_CUDA(cudaMemsetAsync(buf->get(), 0, buf->bytes(), stream));
    jit::GemmOperands ops;
    ops.a = a.get(), ops.b = b.get(), ops.d = d.get();
    ops.scale_a = sa.as<float>(), ops.scale_b = sb.as<float>();
    ops.bias = q.bias == Bias::kNone ? nullptr : bias.get();
    ops.scale_d = sd.as<float>(), ops.amax = amax.as<float>();
    run->launch(ops, stream);
    DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
    fam.lt_loaded.insert(key);
  } catch (const Error& e) {
    spdlog::warn("dgt::Gemm {}: cuBLASLt's {} could not be launched once before capture ({}); inside capture another "
                 "launched algorithm or dgtune's kernel runs instead",
                 p.label(), lt.description(), e.message());
  }
}

namespace {

/// A WarmupProblem of problem p's family (M not set).
WarmupProblem warmup_problem_of(const Problem& p) {
  WarmupProblem w;
  w.n = p.n, w.k = p.k, w.lda = p.lda, w.ldb = p.ldb, w.ldd = p.ldd;
  w.options = run_options_of(p);
  return w;
}

/// Adds p's family to `out` (once; the first occurrence keeps its place), with M added to its list when `with_m`.
void add_family(std::vector<WarmupProblem>& out, const Problem& p, bool with_m) {
  const ShapeKey fk = shape_key_of(p).family();
  for (WarmupProblem& w : out)
    if (ShapeKey{0, w.n, w.k, w.lda, w.ldb, w.ldd, make_flags(w.options)} == fk) {
      if (with_m) w.m.push_back(p.m);
      return;
    }
  out.push_back(warmup_problem_of(p));
  if (with_m) out.back().m.push_back(p.m);
}

}  // namespace

WarmupReport Gemm::warmup_tuned() {
  std::vector<WarmupProblem> families;
  {
    std::shared_lock lock(impl_->mu);
    const Impl& im = *impl_;
    if (im.table) {
      for (unsigned long long i = 0; i < im.table->count; ++i)
        if (const std::optional<Problem> p = table_entry_problem(im.table->entries[i])) add_family(families, *p, false);
    } else if (im.db && im.device_id) {
      // Grouped winners (schema 11) are no dense family: warming their dense view would load a kernel nobody calls.
      for (const ExportRow& row : im.db->export_rows(*im.device_id))
        if (!row.trial.problem.is_grouped()) add_family(families, row.trial.problem, false);
    }
  }
  if (families.empty()) spdlog::info("dgt::Gemm::warmup_tuned: no tuning data for this device; nothing to warm");
  return warmup(families);
}

WarmupReport Gemm::warmup_shapes(const std::string& path) {
  std::vector<WarmupProblem> families;
  for (const ShapeEntry& e : load_shapes_file(path)) {
    try {
      validate_problem(e.problem);
    } catch (const Error& err) {
      DGT_THROW(ErrorKind::kUsage, "{}: {}", e.where(), err.message());
    }
    add_family(families, e.problem, true);
  }
  return warmup(families);
}

}  // namespace dgt
