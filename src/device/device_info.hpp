// What dgtune knows about the GPU it measures on.
#pragma once

#include <string>

#include "records/records.hpp"

namespace dgt {

/// Properties of one CUDA device read through the runtime API.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int max_smem_per_block_optin = 0;  ///< bytes (cudaDevAttrMaxSharedMemoryPerBlockOptin)
  int max_sm_clock_mhz = 0;          ///< cudaDevAttrClockRate / 1000
  int memory_clock_mhz = 0;
  int memory_bus_bits = 0;
  int driver_version = 0, runtime_version = 0;
  std::string pci_bus_id;  ///< cudaDeviceGetPCIBusId, e.g. "0000:3b:00.0"

  /// The hardware identity (records/records.hpp) a winner measured on this device belongs to.
  HardwareIdentity hardware() const {
    return HardwareIdentity{name, cc_major, cc_minor, sm_count, memory_bytes, l2_bytes};
  }

  /// True for compute capability 9.0 (the family's WGMMA/TMA code needs sm_90a).
  bool is_sm90() const { return cc_major == 9 && cc_minor == 0; }
};

/// Number of usable CUDA devices; 0 when there is no driver or no GPU (never throws).
int cuda_device_count();

/// Throws Error(kNoDevice) (exit 1) when device `ordinal` does not exist: "no CUDA device found" without a driver or
/// GPU, else the ordinals there are. Creates no context: commands call it before they create a file or a directory,
/// so one that cannot measure leaves nothing behind.
void require_device(int ordinal);

/// Selects `ordinal` (cudaSetDevice, context created) and reads its properties.
/// Throws Error(kNoDevice) when the ordinal does not exist (require_device()).
DeviceInfo open_device(int ordinal);

/// open_device(), then requires compute capability 9.0 (the kernels are sm_90a code). Throws
/// Error(kNoDevice) naming the device and its compute capability otherwise.
DeviceInfo open_sm90_device(int ordinal);

// The software environment (driver, runtime, NVRTC, cuBLASLt, kernel-source hash, dgtune version) and
// the full DeviceFingerprint are assembled in launch/environment.hpp: the kernel hash comes from jit/,
// which device/ does not include.

}  // namespace dgt
