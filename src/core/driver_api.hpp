// CUDA driver API entry points, fetched through the runtime (cudaGetDriverEntryPointByVersion)
// instead of linking libcuda: the binaries then start on machines without a driver (CI) and can
// say "no GPU" instead of failing to load.
#pragma once

#include <cuda.h>

namespace dgt {

struct DriverApi {
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuModuleGetGlobal) module_get_global = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuFuncGetAttribute) func_get_attribute = nullptr;
  decltype(&::cuLaunchKernelEx) launch_kernel_ex = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuOccupancyMaxActiveClusters) occupancy_max_active_clusters = nullptr;
};

/// The process-wide table, filled on first use (after the CUDA runtime initialised a context).
/// Throws Error(kNoDevice) when the driver is missing, Error(kDriver) when a symbol is absent.
const DriverApi& driver();

/// "CUDA_ERROR_..." name of a CUresult, or the number when the driver cannot be asked.
const char* driver_error_name(int code);

/// How many clusters of `cluster_size` CTAs (along x) of kernel `f`, each CTA with `threads` threads and
/// `smem_bytes` of dynamic shared memory, can be resident at once (cuOccupancyMaxActiveClusters). A cluster sits
/// in one GPC, so this can be less than SMs / cluster_size. *rc receives the driver's result; returns 0 when
/// it is not CUDA_SUCCESS. Throws only what driver() throws.
int max_active_clusters(CUfunction f, int cluster_size, int threads, int smem_bytes, CUresult* rc);

}  // namespace dgt
