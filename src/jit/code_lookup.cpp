#include "jit/code_lookup.hpp"

#include <spdlog/spdlog.h>

namespace dgt::jit {

CodeLookup::CodeLookup(const CubinCache& cubins, std::shared_ptr<const Bundle> bundle)
    : cubins_(cubins), bundle_(std::move(bundle)) {}

CompiledKernel CodeLookup::get(const GeneratedKernel& g, const std::string& what, CodeOrigin& origin) const {
  if (bundle_) {
    // The bundle is only read: a hit never touches the cubin cache (no lock file, no publish).
    if (std::optional<CompiledKernel> k = bundle_->find(cubins_.key_of(g))) {
      origin = CodeOrigin::kBundle;
      return std::move(*k);
    }
  }
  bool hit = false;
  CompiledKernel k = cubins_.get_or_compile(g, &hit);
  origin = hit ? CodeOrigin::kCubinCache : CodeOrigin::kNvrtc;
  if (!hit && bundle_ && !warned_.exchange(true, std::memory_order_relaxed))
    spdlog::warn(
        "dgt::Gemm: kernel {} is not in the kernel bundle {}, so it was compiled with NVRTC (further misses are not "
        "reported; GemmStats::nvrtc_compiles counts them): re-export the bundle from the DB this process uses",
        what, bundle_->dir());
  return k;
}

}  // namespace dgt::jit
