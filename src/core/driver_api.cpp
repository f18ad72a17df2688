#include "core/driver_api.hpp"

#include <cuda_runtime_api.h>

#include <mutex>

#include "core/error.hpp"

namespace dgt {

namespace {

template <class Fn>
void load(Fn& fn, const char* symbol, unsigned version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  cudaError_t rc = cudaGetDriverEntryPointByVersion(symbol, &p, version, cudaEnableDefault, &status);
  if (rc != cudaSuccess || status != cudaDriverEntryPointSuccess || p == nullptr)
    DGT_THROW(ErrorKind::kDriver,
              "CUDA driver entry point {} (CUDA {}) is unavailable (runtime error {}, query status {})", symbol,
              version, int(rc), int(status));
  fn = reinterpret_cast<Fn>(p);
}

DriverApi load_all() {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0)
    DGT_THROW(ErrorKind::kNoDevice, "no CUDA device is usable: {} ({})", cudaGetErrorName(rc), cudaGetErrorString(rc));
  DriverApi api;
  load(api.tensor_map_encode_tiled, "cuTensorMapEncodeTiled", 12000);
  load(api.module_load_data, "cuModuleLoadData", 12000);
  load(api.module_unload, "cuModuleUnload", 12000);
  load(api.module_get_function, "cuModuleGetFunction", 12000);
  load(api.module_get_global, "cuModuleGetGlobal", 12000);
  load(api.func_set_attribute, "cuFuncSetAttribute", 12000);
  load(api.func_get_attribute, "cuFuncGetAttribute", 12000);
  load(api.launch_kernel_ex, "cuLaunchKernelEx", 12000);
  load(api.launch_kernel, "cuLaunchKernel", 12000);
  load(api.get_error_name, "cuGetErrorName", 12000);
  load(api.occupancy_max_active_clusters, "cuOccupancyMaxActiveClusters", 12000);
  return api;
}

}  // namespace

const DriverApi& driver() {
  static std::once_flag once;
  static DriverApi api;
  std::call_once(once, [] { api = load_all(); });
  return api;
}

const char* driver_error_name(int code) {
  static thread_local char buf[32];
  try {
    const char* name = nullptr;
    if (driver().get_error_name && driver().get_error_name(static_cast<CUresult>(code), &name) == CUDA_SUCCESS && name)
      return name;
  } catch (...) {
  }
  snprintf(buf, sizeof buf, "CUresult %d", code);
  return buf;
}

int max_active_clusters(CUfunction f, int cluster_size, int threads, int smem_bytes, CUresult* rc) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = static_cast<unsigned>(cluster_size);
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(threads);
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(smem_bytes);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = static_cast<unsigned>(cluster_size);
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  *rc = driver().occupancy_max_active_clusters(&n, f, &cfg);
  return *rc == CUDA_SUCCESS ? n : 0;
}

}  // namespace dgt
