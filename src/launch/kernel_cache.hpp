// The one "config -> loaded kernel" cache of dgtune, used by the tuner (tune/device_bench), the run-time
// loader (loader/gemm.cpp) and the GPU test harness (tests/gpu/harness.hpp). A unit test
// (KernelCacheSource.*) fails when another map of loaded kernels appears under src/ or tests/.
//
//   compiled key (KernelSpec::compiled_key) -> loaded module (jit::LoadedKernel; dynamic shared memory
//                                              from the resource model, limit raised once)
//   spec key     (KernelSpec::key)          -> launchable std::shared_ptr<jit::GemmKernel> (split count,
//                                              grid size, cluster occupancy on top of the module)
//   split-K scratch                         -> a shared growable workspace, or dedicated ones
#pragma once

#include <atomic>
#include <cstddef>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "core/thread_pool.hpp"
#include "device/buffer.hpp"
#include "jit/bundle.hpp"
#include "jit/code_lookup.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_cache.hpp"
#include "jit/module.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/grouped_kernel.hpp"
#include "problem/kernel_config.hpp"
#include "space/resource_model.hpp"

namespace dgt {

/// Growable split-K scratch (partial tiles + per-tile counters). get() may reallocate and then zeroes
/// the new counters and synchronises the device, so call it outside timed regions; a reallocation
/// invalidates the workspace an earlier get() returned. Not thread-safe by itself (KernelCache locks it).
class WorkspaceArena {
 public:
  /// A workspace big enough for `kernel` on `p` (empty when the kernel does not split K).
  jit::GemmWorkspace get(const jit::GemmKernel& kernel, const Problem& p);

 private:
  DeviceBuffer partials_, counters_;
};

/// Thread safety: every member function may be called concurrently from any thread.
///  - Kernels: an internal std::shared_mutex. find() and a hit of get() take it shared (lookups run in
///    parallel); a miss takes it exclusively and compiles (NVRTC on a cubin-cache miss) and loads under
///    it, so each module is compiled and loaded once per cache, and concurrent misses (and lookups
///    arriving meanwhile) wait for it. The returned GemmKernel is immutable; its launch() is const and
///    may run concurrently on any stream.
///  - Loading uses the CUDA context current on the calling thread: make the cache's device current
///    first (cudaSetDevice). One cache serves one device (`sm_count`, module handles).
///  - Workspaces: a separate mutex guards the arenas. workspace() returns the shared arena, which a
///    later workspace() call may reallocate: it is for users that run one launch at a time on one
///    stream (tuner, test harness). dedicated_workspace() hands out scratch that is never reallocated
///    (the loader takes one per shape); launches sharing one workspace must be stream-ordered.
class KernelCache {
 public:
  /// `cubins` (the on-disk cubin cache) must outlive this cache. `sm_count`: SMs of the device. `bundle` (optional,
  /// jit/bundle.hpp): a read-only kernel bundle asked before the cubin cache (jit::CodeLookup's order).
  KernelCache(const jit::CubinCache& cubins, int sm_count, std::shared_ptr<const jit::Bundle> bundle = nullptr);
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The launchable kernel for `spec`: by spec key; on a miss its module by compiled key, else the
  /// code is taken from the bundle, else the cubin cache, else compiled with NVRTC (jit::CodeLookup), and loaded.
  /// Error(kIo) for a bundle cubin that fails its size or hash check. Throws Error(kInvalid) naming the legality
  /// rule (R1..R25) when `spec` is illegal, before any NVRTC or CUDA call; Error(kNvrtc) when the
  /// compile fails; Error(kDriver) when loading fails or no cluster of the kernel fits the device.
  std::shared_ptr<jit::GemmKernel> get(const KernelSpec& spec);
  /// Same, with the code already compiled (e.g. ahead of time on a thread pool): never compiles;
  /// `compiled` is loaded only when the module of spec.compiled_key() is not loaded yet.
  std::shared_ptr<jit::GemmKernel> get(const KernelSpec& spec, const jit::CompiledKernel& compiled);
  /// The two above for a spec evaluated already (space/resource_model.hpp EvaluatedSpec): its report decides
  /// legality and the module's shared memory, and the spec is not evaluated again.
  std::shared_ptr<jit::GemmKernel> get(const EvaluatedSpec& spec);
  std::shared_ptr<jit::GemmKernel> get(const EvaluatedSpec& spec, const jit::CompiledKernel& compiled);
  /// The grouped (MoE) kernel of `spec` and `kind` (kernels/gemm/grouped_scheduler.cuh): compiled through the cubin
  /// cache (jit::generate_grouped_gemm; no bundle holds grouped kernels yet), loaded once, kept by spec key and kind.
  /// Throws Error(kInvalid) naming the rule when the config breaks a grouped rule (G1-G3, space/grouped_rules.hpp)
  /// or R1-R25, before any NVRTC or CUDA call; Error(kNvrtc) / Error(kDriver) as get().
  std::shared_ptr<jit::GroupedGemmKernel> get_grouped(const KernelSpec& spec, GroupKind kind);
  /// Lookup only (never compiles or loads): null when `spec` is not loaded.
  std::shared_ptr<jit::GemmKernel> find(const KernelSpec& spec) const;

  /// The resource report of a legal `spec`; throws Error(kInvalid) "<spec key> is illegal: R..: ..."
  /// otherwise. No CUDA or NVRTC call.
  static ResourceReport require_legal(const KernelSpec& spec);
  /// The same check of a report computed already.
  static void require_legal(const EvaluatedSpec& spec);
  /// The keys the two levels use: KernelSpec::compiled_key() and KernelSpec::key().
  static std::string module_key(const KernelSpec& spec) { return spec.compiled_key(); }
  static std::string kernel_key(const KernelSpec& spec) { return spec.key(); }

  /// Shared split-K scratch big enough for `kernel` on `p` (empty when it does not split K). May
  /// reallocate (zeroing the counters and synchronising the device); invalidates earlier results.
  jit::GemmWorkspace workspace(const jit::GemmKernel& kernel, const Problem& p);
  /// Split-K scratch of its own for `kernel` on `p` (empty when it does not split K; allocated,
  /// zeroed and synchronised now), owned by the cache until it is destroyed and never reallocated.
  jit::GemmWorkspace dedicated_workspace(const jit::GemmKernel& kernel, const Problem& p);

  /// Modules get() compiled with NVRTC (cubin-cache misses), loaded from the cubin cache and loaded from the
  /// bundle, since construction (modules loaded from code passed in are in none).
  unsigned long long compiles() const { return compiles_.load(std::memory_order_relaxed); }
  unsigned long long cache_loads() const { return cache_loads_.load(std::memory_order_relaxed); }
  unsigned long long bundle_loads() const { return bundle_loads_.load(std::memory_order_relaxed); }
  size_t module_count() const;  ///< loaded modules (distinct compiled keys)
  size_t kernel_count() const;  ///< launchable kernels (distinct spec keys)

 private:
  std::shared_ptr<jit::GemmKernel> get_impl(const EvaluatedSpec& spec, const jit::CompiledKernel* compiled);

  jit::CodeLookup code_;  ///< bundle, cubin cache, NVRTC
  int sm_count_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, jit::LoadedKernel> modules_;                 ///< by KernelSpec::compiled_key()
  std::unordered_map<std::string, std::shared_ptr<jit::GemmKernel>> kernels_;  ///< by KernelSpec::key()
  /// Grouped kernels (module and launcher in one: no two kinds or specs share a module), by key + "_" + kind.
  std::unordered_map<std::string, std::shared_ptr<jit::GroupedGemmKernel>> grouped_;
  std::atomic<unsigned long long> compiles_{0}, cache_loads_{0}, bundle_loads_{0};
  std::mutex ws_mu_;
  WorkspaceArena shared_ws_;
  std::list<WorkspaceArena> dedicated_ws_;  ///< std::list: arenas never move
};

/// Compiles every spec ahead on `pool` (NVRTC through the on-disk cubin cache, which publishes each
/// key once; nothing is loaded and no CUDA call is made, so any thread may run it). result[i] is spec
/// i's code or the compile's exception; a later KernelCache::get() of the spec is then a cache hit.
/// `cubins` and `pool` must outlive the futures.
std::vector<std::future<jit::CompiledKernel>> compile_ahead(const jit::CubinCache& cubins,
                                                            const std::vector<KernelSpec>& specs, ThreadPool& pool);
/// compile_ahead for grouped kernels: each (spec, layout) pair's jit::generate_grouped_gemm code.
std::vector<std::future<jit::CompiledKernel>> compile_ahead_grouped(
    const jit::CubinCache& cubins, const std::vector<std::pair<KernelSpec, GroupKind>>& specs, ThreadPool& pool);

}  // namespace dgt
