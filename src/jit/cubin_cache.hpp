// Disk cache of compiled cubins shared by processes.
#pragma once

#include <functional>
#include <string>

#include "jit/codegen.hpp"
#include "jit/compiler.hpp"

namespace dgt::jit {

/// Cubins on disk under `dir`, keyed by hash(kernel_source_hash, generated source, name expression)
/// (the kernel hash covers the embedded sources, NVRTC version, options and arch).
/// Each entry is <key>.cubin plus <key>.json (metadata with the cubin's size and FNV hash, written
/// last, so its presence marks a complete entry). Both are published by write-to-temp + rename(2),
/// which is atomic on one file system; a per-key flock(2) on <key>.lock makes N processes on a cold
/// cache compile each key once. A truncated or corrupt entry fails the size/hash check and is rebuilt.
class CubinCache {
 public:
  /// What a miss runs: compile(source, program_name, name_expression) of jit/compiler.hpp, or a stand-in
  /// (unit tests count calls with a fake). Throws to report a failed compile.
  using CompileFn = std::function<CompiledKernel(const std::string& source, const std::string& program_name,
                                                 const std::string& name_expression)>;

  /// Creates `dir` if needed. Throws Error(kIo) naming the directory when it cannot. `compile` empty: NVRTC.
  explicit CubinCache(std::string dir, CompileFn compile = {});

  const std::string& dir() const { return dir_; }
  std::string key_of(const GeneratedKernel& g) const;

  /// The compiled kernel for `g`, from disk when a valid entry exists, else compiled and published.
  /// `hit` (optional) says which. Throws Error(kNvrtc) on compile failure (nothing is published).
  CompiledKernel get_or_compile(const GeneratedKernel& g, bool* hit = nullptr) const;

 private:
  bool try_read(const std::string& key, CompiledKernel& out) const;
  void publish(const std::string& key, const CompiledKernel& k) const;

  std::string dir_;
  CompileFn compile_;
};

}  // namespace dgt::jit
