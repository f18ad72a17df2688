// Where a loader takes compiled code from: a kernel bundle (read-only), then the on-disk cubin cache, then NVRTC
// (through the cache, which publishes what it compiles).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "jit/bundle.hpp"
#include "jit/codegen.hpp"
#include "jit/cubin_cache.hpp"

namespace dgt::jit {

/// Which source CodeLookup::get took a kernel from.
enum class CodeOrigin { kBundle, kCubinCache, kNvrtc };

/// The lookup order of compiled code for one loader (one KernelCache). Thread-safe; `cubins` must outlive it.
class CodeLookup {
 public:
  /// `bundle` null: no bundle (cubin cache, then NVRTC).
  CodeLookup(const CubinCache& cubins, std::shared_ptr<const Bundle> bundle);

  /// The compiled code of `g` (CubinCache::key_of(g) is the bundle's key too): from the bundle when it holds the
  /// key, else from the cubin cache, else compiled with NVRTC and published to the cache. `what` names the kernel in
  /// the warning (its spec key). The first NVRTC compile although a bundle was given logs one spdlog warning naming
  /// `what` and the bundle's directory; later ones are silent (one warning per CodeLookup). `origin` says which
  /// source served the call. Throws Error(kIo) for a bundle cubin that fails its size or hash check (see
  /// Bundle::find), Error(kNvrtc) when a compile fails.
  CompiledKernel get(const GeneratedKernel& g, const std::string& what, CodeOrigin& origin) const;

  const Bundle* bundle() const { return bundle_.get(); }
  /// Whether the one warning about compiling beside a bundle was logged.
  bool warned() const { return warned_.load(std::memory_order_relaxed); }

 private:
  const CubinCache& cubins_;
  std::shared_ptr<const Bundle> bundle_;
  mutable std::atomic<bool> warned_{false};
};

}  // namespace dgt::jit
