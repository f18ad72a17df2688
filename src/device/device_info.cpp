#include "device/device_info.hpp"

#include <cuda_runtime_api.h>

#include "core/error.hpp"

namespace dgt {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void require_device(int ordinal) {
  const int count = cuda_device_count();
  if (count == 0) DGT_THROW(ErrorKind::kNoDevice, "no CUDA device found (no driver or no GPU on this machine)");
  if (ordinal < 0 || ordinal >= count)
    DGT_THROW(ErrorKind::kNoDevice, "device {} does not exist: this machine has {} CUDA device(s) (0..{})", ordinal,
              count, count - 1);
}

DeviceInfo open_device(int ordinal) {
  require_device(ordinal);
  DGT_CHECK_CUDA(cudaSetDevice(ordinal));
  DGT_CHECK_CUDA(cudaFree(nullptr));  // create the primary context now, so driver calls find it
  cudaDeviceProp prop{};
  DGT_CHECK_CUDA(cudaGetDeviceProperties(&prop, ordinal));
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  d.l2_bytes = prop.l2CacheSize;
  d.memory_bus_bits = prop.memoryBusWidth;
  DGT_CHECK_CUDA(cudaDeviceGetAttribute(&d.max_smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
  int khz = 0;
  DGT_CHECK_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ordinal));
  d.max_sm_clock_mhz = khz / 1000;
  DGT_CHECK_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, ordinal));
  d.memory_clock_mhz = khz / 1000;
  DGT_CHECK_CUDA(cudaDriverGetVersion(&d.driver_version));
  DGT_CHECK_CUDA(cudaRuntimeGetVersion(&d.runtime_version));
  char bus_id[32] = {};
  DGT_CHECK_CUDA(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal));
  d.pci_bus_id = bus_id;
  return d;
}

DeviceInfo open_sm90_device(int ordinal) {
  DeviceInfo d = open_device(ordinal);
  if (!d.is_sm90())
    DGT_THROW(ErrorKind::kNoDevice,
              "device {} is {} (compute capability {}.{}): dgtune's kernels need sm_90 (H100/H200)", d.ordinal, d.name,
              d.cc_major, d.cc_minor);
  return d;
}

}  // namespace dgt
