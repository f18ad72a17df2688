// A kernels/ tree on disk offered to NVRTC instead of the embedded sources (jit::compile_with_sources): the old side of
// dgtune_kernel_ab's A/B timings, dense (kernel_ab.cpp) and grouped (grouped_ab.cpp).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "jit/embedded_sources.hpp"

namespace dgt {

/// The *.cuh files under `dir` (a kernels/ tree), as NVRTC headers named by their path below it. Throws
/// Error(kUsage) when `dir` is not a directory or holds no .cuh file.
struct KernelTree {
  std::vector<std::string> paths, texts;
  std::vector<jit::EmbeddedSource> sources;  ///< views of the two vectors above (filled last; they never grow again)

  explicit KernelTree(const std::string& dir) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(dir)) DGT_THROW(ErrorKind::kUsage, "--old-kernels {}: not a directory", dir);
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || e.path().extension() != ".cuh") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      paths.push_back(fs::relative(e.path(), dir).generic_string());
      texts.push_back(ss.str());
    }
    if (paths.empty()) DGT_THROW(ErrorKind::kUsage, "--old-kernels {}: no .cuh files below it", dir);
    for (size_t i = 0; i < paths.size(); ++i) sources.push_back({paths[i], texts[i]});
  }
};

}  // namespace dgt
