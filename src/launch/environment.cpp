#include "launch/environment.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "jit/compiler.hpp"
#include "jit/kernel_hash.hpp"
#include "launch/util_kernels.hpp"
#include "jit/cubin_cache.hpp"
#include "core/paths.hpp"

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
/// The statically linked CUDA runtime's version ("13.1"): no driver or GPU needed.
std::string runtime_version_text() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  return cuda_version_text(runtime);
}
/// cuBLASLt's version as MAJOR.MINOR.PATCH ("13.1.0"), the same in --version and `dgtune info`.
std::string cublaslt_version_text() {
  const size_t lt = cublasLtGetVersion();
  return fmt::format("{}.{}.{}", lt / 10000, lt / 100 % 100, lt % 100);
}
}  // namespace

std::string version_text() {
  return fmt::format(
      "dgtune {}\n"
      "kernel source hash: {}\n"
      "built with CUDA: {}\n"
      "CUDA runtime: {} (static)\n"
      "NVRTC: {}\n"
      "cuBLASLt: {}",
      DGTUNE_VERSION, jit::kernel_source_hash(), cuda_version_text(CUDART_VERSION), runtime_version_text(),
      jit::nvrtc_version_string(), cublaslt_version_text());
}

namespace {
/// "size:count ..." for clusters of 2..8 CTAs at one CTA per SM (the opt-in shared memory maximum, as every GEMM
/// kernel of the space runs). A cluster sits in one GPC, so a size that does not divide the GPCs' SM counts
/// fits fewer clusters than SMs / size: the split-K and multicast configs whose grid needs more run a second
/// wave. The utility module is compiled through the cubin cache on first use.
std::string max_active_clusters_row(const DeviceInfo& d) {
  try {
    const jit::CubinCache cache(default_cache_dir());
    const UtilKernels util(cache, d.sm_count);
    std::string out;
    for (int size = 2; size <= 8; ++size)
      out += fmt::format("{}{}:{}", out.empty() ? "" : " ", size,
                         util.max_active_clusters(size, static_cast<int>(d.max_smem_per_block_optin)));
    return out;
  } catch (const std::exception& e) {
    return std::string("unknown: ") + e.what();
  }
}
}  // namespace

std::vector<std::pair<std::string, std::string>> environment_info(int ordinal) {
  std::vector<std::pair<std::string, std::string>> t;
  auto add = [&](const std::string& k, const std::string& v) { t.emplace_back(k, v); };
  add("dgtune_version", DGTUNE_VERSION);
  add("kernel_hash", jit::kernel_source_hash());
  add("runtime_version", runtime_version_text());  // as --version prints them, with or without a GPU
  add("nvrtc_version", jit::nvrtc_version_string());
  add("cublaslt_version", cublaslt_version_text());
  add("cache_dir", default_cache_dir());
  add("db_path", resolve_db_path(""));
  const int count = cuda_device_count();
  add("gpu_count", std::to_string(count));
  if (count == 0) {
    add("device", "none: no CUDA driver or GPU on this machine (sweep/run need an sm_90 GPU)");
    return t;
  }
  DeviceInfo d = open_device(ordinal);
  DeviceFingerprint fp = make_fingerprint(d);
  add("device", std::to_string(d.ordinal) + ": " + d.name);
  add("compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) +
                                (d.is_sm90() ? " (sm_90a kernels supported)" : " (unsupported: dgtune needs sm_90)"));
  add("sm_count", std::to_string(d.sm_count));
  add("max_sm_clock_mhz", std::to_string(d.max_sm_clock_mhz));
  add("memory_bytes", std::to_string(d.memory_bytes));
  add("memory_clock_mhz", std::to_string(d.memory_clock_mhz));
  add("memory_bus_bits", std::to_string(d.memory_bus_bits));
  add("l2_bytes", std::to_string(d.l2_bytes));
  add("max_smem_per_block_optin", std::to_string(d.max_smem_per_block_optin));
  if (d.is_sm90()) add("max_active_clusters", max_active_clusters_row(d));
  add("driver_version", std::to_string(d.driver_version));
  add("pci_bus_id", d.pci_bus_id);
  add("hardware_key", fp.hardware().key());
  add("environment_key", fp.software().key());
  add("fingerprint", fp.fingerprint());
  return t;
}

}  // namespace dgt
