#include "launch/kernel_cache.hpp"

#include <cuda_runtime_api.h>

#include "core/error.hpp"
#include "jit/codegen.hpp"
#include "space/grouped_rules.hpp"

namespace dgt {

jit::GemmWorkspace WorkspaceArena::get(const jit::GemmKernel& kernel, const Problem& p) {
  const size_t partial_bytes = kernel.workspace_bytes(p), counter_bytes = kernel.counter_bytes(p);
  if (partial_bytes == 0 && counter_bytes == 0) return {};
  if (partials_.bytes() < partial_bytes) partials_ = DeviceBuffer(partial_bytes);
  if (counters_.bytes() < counter_bytes) {
    counters_ = DeviceBuffer(counter_bytes);
    // Zero and wait: the launches that use them may run on any stream, including non-blocking ones
    // that the legacy stream of cudaMemset does not order. The kernel keeps them zero afterwards.
    DGT_CHECK_CUDA(cudaMemset(counters_.get(), 0, counters_.bytes()));
    DGT_CHECK_CUDA(cudaDeviceSynchronize());
  }
  return {partials_.get(), partials_.bytes(), counters_.get(), counters_.bytes()};
}

KernelCache::KernelCache(const jit::CubinCache& cubins, int sm_count, std::shared_ptr<const jit::Bundle> bundle)
    : code_(cubins, std::move(bundle)), sm_count_(sm_count) {}

KernelCache::~KernelCache() = default;

ResourceReport KernelCache::require_legal(const KernelSpec& spec) {
  EvaluatedSpec es = EvaluatedSpec::evaluate(spec);
  require_legal(es);
  return std::move(es.resources);
}

void KernelCache::require_legal(const EvaluatedSpec& es) {
  if (!es.resources.ok()) DGT_THROW(ErrorKind::kInvalid, "{} is illegal: {}", es.spec.key(), es.resources.rejection);
}

std::shared_ptr<jit::GemmKernel> KernelCache::find(const KernelSpec& spec) const {
  const std::string key = kernel_key(spec);
  std::shared_lock lock(mu_);
  auto it = kernels_.find(key);
  return it == kernels_.end() ? nullptr : it->second;
}

// A hit needs no report: the spec is evaluated only on a miss.
std::shared_ptr<jit::GemmKernel> KernelCache::get(const KernelSpec& spec) {
  if (auto hit = find(spec)) return hit;
  return get_impl(EvaluatedSpec::evaluate(spec), nullptr);
}

std::shared_ptr<jit::GemmKernel> KernelCache::get(const KernelSpec& spec, const jit::CompiledKernel& compiled) {
  if (auto hit = find(spec)) return hit;
  return get_impl(EvaluatedSpec::evaluate(spec), &compiled);
}

std::shared_ptr<jit::GemmKernel> KernelCache::get(const EvaluatedSpec& es) { return get_impl(es, nullptr); }

std::shared_ptr<jit::GemmKernel> KernelCache::get(const EvaluatedSpec& es, const jit::CompiledKernel& compiled) {
  return get_impl(es, &compiled);
}

std::shared_ptr<jit::GemmKernel> KernelCache::get_impl(const EvaluatedSpec& es, const jit::CompiledKernel* compiled) {
  const KernelSpec& spec = es.spec;
  if (auto hit = find(spec)) return hit;
  // Refuse an illegal spec before NVRTC or the driver sees it (an illegal spec is never stored, so a
  // hit above needs no check).
  require_legal(es);
  const ResourceReport& res = es.resources;
  const std::string key = kernel_key(spec);
  std::unique_lock lock(mu_);
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;  // loaded while we waited
  const std::string mkey = module_key(spec);
  auto mit = modules_.find(mkey);
  if (mit == modules_.end()) {
    // split_k (beyond "split or not") and sms are run-time arguments: the shared-memory size of the
    // compiled key's module is the same for every spec that maps to it.
    jit::CodeOrigin origin = jit::CodeOrigin::kCubinCache;
    jit::LoadedKernel loaded =
        compiled ? jit::load_kernel(*compiled, res.smem.total)
                 : jit::load_kernel(code_.get(jit::generate_gemm(spec, res), key, origin), res.smem.total);
    if (!compiled)
      (origin == jit::CodeOrigin::kBundle       ? bundle_loads_
       : origin == jit::CodeOrigin::kCubinCache ? cache_loads_
                                                : compiles_)
          .fetch_add(1, std::memory_order_relaxed);
    mit = modules_.emplace(mkey, std::move(loaded)).first;
  }
  auto kernel = std::make_shared<jit::GemmKernel>(spec, mit->second, sm_count_);
  kernels_.emplace(key, kernel);
  return kernel;
}

std::shared_ptr<jit::GroupedGemmKernel> KernelCache::get_grouped(const KernelSpec& spec, GroupKind kind) {
  const std::string key = kernel_key(spec) + "_" + to_string(kind);
  {
    std::shared_lock lock(mu_);
    if (auto it = grouped_.find(key); it != grouped_.end()) return it->second;
  }
  if (const std::string v = grouped_rule_violation(spec.config); !v.empty())
    DGT_THROW(ErrorKind::kInvalid, "{} is illegal for a grouped kernel: {}", spec.key(), v);
  const ResourceReport res = require_legal(spec);
  std::unique_lock lock(mu_);
  if (auto it = grouped_.find(key); it != grouped_.end()) return it->second;  // loaded while we waited
  jit::CodeOrigin origin = jit::CodeOrigin::kCubinCache;
  jit::LoadedKernel loaded =
      jit::load_kernel(code_.get(jit::generate_grouped_gemm(spec, kind, res), key, origin), res.smem.total);
  (origin == jit::CodeOrigin::kBundle       ? bundle_loads_
   : origin == jit::CodeOrigin::kCubinCache ? cache_loads_
                                            : compiles_)
      .fetch_add(1, std::memory_order_relaxed);
  auto kernel = std::make_shared<jit::GroupedGemmKernel>(spec, kind, std::move(loaded), sm_count_);
  grouped_.emplace(key, kernel);
  return kernel;
}

jit::GemmWorkspace KernelCache::workspace(const jit::GemmKernel& kernel, const Problem& p) {
  std::lock_guard lock(ws_mu_);
  return shared_ws_.get(kernel, p);
}

jit::GemmWorkspace KernelCache::dedicated_workspace(const jit::GemmKernel& kernel, const Problem& p) {
  if (kernel.workspace_bytes(p) == 0 && kernel.counter_bytes(p) == 0) return {};
  std::lock_guard lock(ws_mu_);
  return dedicated_ws_.emplace_back().get(kernel, p);
}

size_t KernelCache::module_count() const {
  std::shared_lock lock(mu_);
  return modules_.size();
}

size_t KernelCache::kernel_count() const {
  std::shared_lock lock(mu_);
  return kernels_.size();
}

std::vector<std::future<jit::CompiledKernel>> compile_ahead_grouped(
    const jit::CubinCache& cubins, const std::vector<std::pair<KernelSpec, GroupKind>>& specs, ThreadPool& pool) {
  std::vector<std::future<jit::CompiledKernel>> out;
  out.reserve(specs.size());
  for (const auto& [spec, kind] : specs)
    out.push_back(pool.submit(
        [&cubins, spec, kind] { return cubins.get_or_compile(jit::generate_grouped_gemm(spec, kind)); }));
  return out;
}

std::vector<std::future<jit::CompiledKernel>> compile_ahead(const jit::CubinCache& cubins,
                                                            const std::vector<KernelSpec>& specs, ThreadPool& pool) {
  std::vector<std::future<jit::CompiledKernel>> out;
  out.reserve(specs.size());
  for (const KernelSpec& spec : specs)
    out.push_back(pool.submit([&cubins, spec] { return cubins.get_or_compile(jit::generate_gemm(spec)); }));
  return out;
}

}  // namespace dgt
