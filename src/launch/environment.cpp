#include "launch/environment.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <fmt/format.h>

#include "jit/compiler.hpp"
#include "jit/kernel_hash.hpp"

namespace dgt {

SoftwareEnv current_software_env(const DeviceInfo& info) {
  SoftwareEnv env;
  env.driver_version = info.driver_version;
  env.runtime_version = info.runtime_version;
  env.cublaslt_version = static_cast<int>(cublasLtGetVersion());
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  env.nvrtc_version = major * 1000 + minor * 10;
  env.kernel_hash = jit::kernel_source_hash();
  env.dgtune_version = DGTUNE_VERSION;
  return env;
}

DeviceFingerprint make_fingerprint(const DeviceInfo& info) {
  const HardwareIdentity hw = info.hardware();
  const SoftwareEnv env = current_software_env(info);
  DeviceFingerprint fp;
  fp.name = hw.name;
  fp.cc_major = hw.cc_major;
  fp.cc_minor = hw.cc_minor;
  fp.sm_count = hw.sm_count;
  fp.memory_bytes = hw.memory_bytes;
  fp.l2_bytes = hw.l2_bytes;
  fp.max_sm_clock_mhz = info.max_sm_clock_mhz;
  fp.driver_version = env.driver_version;
  fp.runtime_version = env.runtime_version;
  fp.cublaslt_version = env.cublaslt_version;
  fp.nvrtc_version = env.nvrtc_version;
  fp.kernel_hash = env.kernel_hash;
  fp.dgtune_version = env.dgtune_version;
  fp.pci_bus_id = info.pci_bus_id;
  return fp;
}

namespace {
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace

std::string version_text() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);  // the statically linked runtime: no driver or GPU needed
  const size_t lt = cublasLtGetVersion();
  return fmt::format(
      "dgtune {}\n"
      "kernel source hash: {}\n"
      "built with CUDA: {}\n"
      "CUDA runtime: {} (static)\n"
      "NVRTC: {}\n"
      "cuBLASLt: {}.{}.{}",
      DGTUNE_VERSION, jit::kernel_source_hash(), cuda_version_text(CUDART_VERSION), cuda_version_text(runtime),
      jit::nvrtc_version_string(), lt / 10000, lt / 100 % 100, lt % 100);
}

}  // namespace dgt
