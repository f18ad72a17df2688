#include "grouped_registry.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <tuple>

#include "gemm_registry.hpp"

namespace dgt::torch_op {
namespace {

using Key = std::tuple<int, int, int, int64_t, int64_t, int64_t, int64_t, int>;  // device, layout, G, M, E, N, K, scale

Key key_of(int device, const GroupedGemmProblem& p) {
  return {device, static_cast<int>(p.layout), p.groups, p.m, p.expected_m, p.n, p.k, static_cast<int>(p.scale)};
}

struct Registry {
  std::shared_mutex mutex;  // readers on the launch path; a writer only for a key's first call
  std::map<Key, std::unique_ptr<GroupedGemm>> gemms;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: launches may outlive static destruction
  return *r;
}

std::string describe(const GroupedGemmProblem& p) {
  const bool masked = p.layout == GroupedLayout::kMasked;
  return std::string(masked ? "masked" : "contiguous") + " G " + std::to_string(p.groups) +
         (masked ? " M_max " : " M_sum ") + std::to_string(p.m) +
         (masked ? " expected_m " + std::to_string(p.expected_m) : std::string()) + " N " + std::to_string(p.n) +
         " K " + std::to_string(p.k) + (p.scale == Fp8Scaling::kBlock ? " block scales" : " per-tensor scales");
}

}  // namespace

const GroupedGemm& grouped_for(int device, const GroupedGemmProblem& key, cudaStream_t stream, const std::string& op) {
  Registry& r = registry();
  const Key k = key_of(device, key);
  {
    std::shared_lock lock(r.mutex);
    if (auto it = r.gemms.find(k); it != r.gemms.end()) return *it->second;
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  // A stream the query fails on is treated as capturing: nothing is loaded for it.
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone)
    throw Error(ErrorKind::kUsage, "dgtune." + op + ": the first call of " + describe(key) +
                                       " is inside CUDA-graph capture; call it once before capturing (the first call "
                                       "compiles or loads its kernel)");
  std::unique_lock lock(r.mutex);
  if (auto it = r.gemms.find(k); it != r.gemms.end()) return *it->second;
  GroupedGemmOptions o;
  o.device = device;
  const GemmOptions configured = configured_options();  // dgtune.load(): the dense op's DB and protocol serve both
  o.cache_dir = configured.cache_dir;
  o.db_path = configured.db_path;
  o.protocol = configured.protocol;
  o.bundle = configured.bundle;
  auto g = std::make_unique<GroupedGemm>(key, o);
  return *r.gemms.emplace(k, std::move(g)).first->second;
}

const GroupedGemm* grouped_find(int device, const GroupedGemmProblem& key) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.gemms.find(key_of(device, key));
  return it == r.gemms.end() ? nullptr : it->second.get();
}

}  // namespace dgt::torch_op
