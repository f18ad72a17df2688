#include "gemm_registry.hpp"

#include <array>
#include <memory>
#include <mutex>
#include <string>

namespace dgt::torch_op {
namespace {

struct Registry {
  std::mutex mutex;  // creation and configure(); the hot path reads `gemms` without it
  GemmOptions options;
  std::array<std::atomic<Gemm*>, kMaxDevices> gemms{};
  std::array<OpCounters, kMaxDevices> counters;
};

Registry& registry() {
  // Never destroyed: Gemm objects may still be referenced by launches when the process exits.
  static Registry* r = new Registry();
  return *r;
}

void check_device(int device) {
  if (device < 0 || device >= kMaxDevices)
    throw Error(ErrorKind::kUsage, "dgtune: CUDA device index " + std::to_string(device) + " is out of range");
}

}  // namespace

Gemm& gemm_for(int device) {
  check_device(device);
  Registry& r = registry();
  if (Gemm* g = r.gemms[device].load(std::memory_order_acquire)) return *g;
  std::lock_guard<std::mutex> lock(r.mutex);
  if (Gemm* g = r.gemms[device].load(std::memory_order_acquire)) return *g;
  GemmOptions o = r.options;
  o.device = device;
  auto* g = new Gemm(o);
  r.gemms[device].store(g, std::memory_order_release);
  return *g;
}

Gemm* existing_gemm(int device) {
  check_device(device);
  return registry().gemms[device].load(std::memory_order_acquire);
}

OpCounters& counters_for(int device) {
  check_device(device);
  return registry().counters[device];
}

void configure(const GemmOptions& options) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.options = options;
  for (auto& slot : r.gemms) delete slot.exchange(nullptr, std::memory_order_acq_rel);
}

GemmOptions configured_options() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.options;
}

}  // namespace dgt::torch_op
