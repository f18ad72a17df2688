// Loaded cubins and their kernels.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "jit/compiler.hpp"

namespace dgt::jit {

/// A cubin loaded into the current context (cuModuleLoadData); unloads on destruction.
class Module {
 public:
  /// Loads `cubin`. Throws Error(kDriver) when the driver refuses it.
  explicit Module(const std::string& cubin);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Function by (lowered) name. Throws Error(kDriver) naming it when absent.
  CUfunction function(const std::string& name) const;
  /// Device address and size in bytes of the __device__ variable `name` (its C name: extern "C"). Throws
  /// Error(kDriver) naming it when absent.
  CUdeviceptr global(const std::string& name, size_t* bytes) const;

 private:
  CUmodule module_ = nullptr;
};

/// One kernel of a loaded module, with its resource numbers.
struct LoadedKernel {
  std::shared_ptr<Module> module;
  CUfunction function = nullptr;
  int dynamic_smem_bytes = 0;  ///< requested at every launch (opt-in limit already raised)
  int registers = 0;           ///< CU_FUNC_ATTRIBUTE_NUM_REGS
  int static_smem_bytes = 0;   ///< CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  int local_bytes = 0;         ///< CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (spills + stack)
};

/// Loads `k`, looks up `name` (k.lowered_name when empty) and raises its dynamic shared-memory limit
/// to `dynamic_smem_bytes` (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). Throws Error(kDriver)
/// when the device refuses the size.
LoadedKernel load_kernel(const CompiledKernel& k, int dynamic_smem_bytes, const std::string& name = {});

}  // namespace dgt::jit
