#include "jit/kernel_hash.hpp"

#include "core/hash.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "jit/embedded_sources.hpp"

namespace dgt::jit {

const std::string& kernel_source_hash() {
  static const std::string kHash = [] {
    uint64_t h = fnv1a64("dgtune-kernels");
    for (const auto& s : embedded_sources()) {
      h = fnv1a64(s.path, h);
      h = fnv1a64(std::string_view("\0", 1), h);
      h = fnv1a64(s.text, h);
      h = fnv1a64(std::string_view("\0", 1), h);
    }
    h = fnv1a64("codegen v" + std::to_string(kCodegenVersion), h);
    for (const auto& o : nvrtc_options()) h = fnv1a64(o + "\n", h);
    h = fnv1a64("nvrtc " + nvrtc_version_string(), h);
    if (const std::string edits = default_sass_edits(); !edits.empty()) h = fnv1a64("sass edits " + edits, h);
    return hex16(h);
  }();
  return kHash;
}

}  // namespace dgt::jit
