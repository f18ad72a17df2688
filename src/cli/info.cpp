// dgtune info: device fingerprint, limits and versions.
#include <cublasLt.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/paths.hpp"
#include "jit/compiler.hpp"
#include "jit/kernel_hash.hpp"
#include "launch/environment.hpp"

namespace dgt::cli {

void add_info(CLI::App& app, int& rc) {
  auto device = std::make_shared<int>(0);
  auto format = std::make_shared<std::string>("table");
  CLI::App* cmd = app.add_subcommand("info", "device fingerprint, limits (SMs, shared memory, L2) and versions");
  cmd->add_option("--device", *device, "CUDA device ordinal")->capture_default_str();
  add_format_option(*cmd, *format);
  cmd->callback([device, format, &rc] {
    report::Table t;
    t.title = "dgtune info";
    t.columns = {{"key", "key", false}, {"value", "value", false}};
    auto add = [&](const std::string& k, const std::string& v) { t.rows.push_back({k, v}); };
    add("dgtune_version", DGTUNE_VERSION);
    add("kernel_hash", jit::kernel_source_hash());
    add("nvrtc_version", jit::nvrtc_version_string());
    add("cublaslt_version", std::to_string(cublasLtGetVersion()));
    add("cache_dir", default_cache_dir());
    add("db_path", resolve_db_path(""));
    const int count = cuda_device_count();
    add("gpu_count", std::to_string(count));
    if (count == 0) {
      add("device", "none: no CUDA driver or GPU on this machine (sweep/run need an sm_90 GPU)");
    } else {
      DeviceInfo d = open_device(*device);
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
      add("driver_version", std::to_string(d.driver_version));
      add("runtime_version", std::to_string(d.runtime_version));
      add("pci_bus_id", d.pci_bus_id);
      add("hardware_key", fp.hardware().key());
      add("environment_key", fp.software().key());
      add("fingerprint", fp.fingerprint());
    }
    report::render(t, report::parse_format(*format), std::cout);
    rc = 0;
  });
}

}  // namespace dgt::cli
