#include "jit/module.hpp"

#include "core/driver_api.hpp"
#include "core/error.hpp"

namespace dgt::jit {

Module::Module(const std::string& cubin) { DGT_CHECK_CU(driver().module_load_data(&module_, cubin.data())); }

Module::~Module() {
  if (module_) driver().module_unload(module_);
}

CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  CUresult rc = driver().module_get_function(&f, module_, name.c_str());
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "kernel '{}' not found in module: {}", name, driver_error_name(rc));
  return f;
}

CUdeviceptr Module::global(const std::string& name, size_t* bytes) const {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  CUresult rc = driver().module_get_global(&ptr, &size, module_, name.c_str());
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "device variable '{}' not found in module: {}", name, driver_error_name(rc));
  if (bytes) *bytes = size;
  return ptr;
}

LoadedKernel load_kernel(const CompiledKernel& k, int dynamic_smem_bytes, const std::string& name) {
  LoadedKernel out;
  out.module = std::make_shared<Module>(k.cubin);
  out.function = out.module->function(name.empty() ? k.lowered_name : name);
  out.dynamic_smem_bytes = dynamic_smem_bytes;
  const auto& d = driver();
  if (dynamic_smem_bytes > 48 * 1024) {
    CUresult rc =
        d.func_set_attribute(out.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem_bytes);
    if (rc != CUDA_SUCCESS)
      DGT_THROW(ErrorKind::kDriver, "device refused {} bytes of dynamic shared memory: {}", dynamic_smem_bytes,
                driver_error_name(rc));
  }
  DGT_CHECK_CU(d.func_get_attribute(&out.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, out.function));
  DGT_CHECK_CU(d.func_get_attribute(&out.static_smem_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, out.function));
  DGT_CHECK_CU(d.func_get_attribute(&out.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, out.function));
  return out;
}

}  // namespace dgt::jit
