// The kernel sources (kernels/**/*.cuh) embedded into the binary at build time by
// cmake/embed_kernels.cmake, so NVRTC needs no source tree at run time.
#pragma once

#include <string_view>
#include <vector>

namespace dgt::jit {

struct EmbeddedSource {
  std::string_view path;  ///< relative to kernels/, e.g. "gemm/fp8_gemm.cuh"; the #include name
  std::string_view text;
};

/// Every embedded kernel source, sorted by path.
const std::vector<EmbeddedSource>& embedded_sources();

}  // namespace dgt::jit
