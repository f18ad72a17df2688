// The software environment dgtune measures and loads kernels under, and the full fingerprint of a device.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "device/device_info.hpp"
#include "records/records.hpp"

namespace dgt {

/// This process's software environment: the device's driver and runtime versions, cuBLASLt and NVRTC
/// versions, the kernel-source hash (jit::kernel_source_hash()) and dgtune's version. Recorded with
/// every trial, baseline and sweep row; not part of the device identity.
SoftwareEnv current_software_env(const DeviceInfo& info);

/// Hardware identity, software environment, max SM clock and PCI bus id of `info` in one record (what
/// TuningDb::upsert_device stores and `dgtune info` prints).
DeviceFingerprint make_fingerprint(const DeviceInfo& info);

/// `dgtune --version`: dgtune's version, the kernel-source hash, the CUDA toolkit it was built with, the statically
/// linked CUDA runtime, NVRTC and cuBLASLt versions, one per line. Needs no driver or GPU.
std::string version_text();

/// `dgtune info`: (key, value) facts in print order: versions, the cache and DB paths, the GPU count and, when a GPU
/// is present, device `ordinal`'s identity, limits, resident clusters of 2..8 CTAs (through the utility module,
/// compiled on first use), driver/runtime versions and its keys. Without a GPU the facts end with
/// ("device", "none: ..."). Throws Error when the device cannot be opened.
std::vector<std::pair<std::string, std::string>> environment_info(int ordinal);

}  // namespace dgt
