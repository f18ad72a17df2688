// dgt::GroupedGemm (dgtune/grouped_gemm.hpp): the key checked and the config chosen without a GPU
// (loader/grouped_choice.hpp), the kernel loaded at construction, and a launch path that calls the loaded kernel
// (launch/grouped_kernel.hpp; it checks the pointers, launch/grouped_operands.hpp).
#include "dgtune/grouped_gemm.hpp"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/paths.hpp"
#include "device/device_info.hpp"
#include "jit/bundle.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/environment.hpp"
#include "launch/grouped_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/tensor_map_cache.hpp"
#include "loader/grouped_choice.hpp"
#include "loader/grouped_lookup.hpp"
#include "loader/loader_db.hpp"
#include "records/protocol_name.hpp"

namespace dgt {

namespace {

/// The tuning data of `g` for this GPU in the tuning DB at `db_path` (else $DGTUNE_DB): grouped_lookup's, read the
/// way `dgtune compare` reads it; none without a DB. As dgt::Gemm: a file that cannot be used is one warning.
std::optional<GroupedLookup> tuned_lookup(const DeviceInfo& device, const GroupedProblem& g, const std::string& db_path,
                                          const std::string& protocol_kind) {
  const std::string path = loader_db_path(db_path);
  if (path.empty()) return std::nullopt;
  const std::unique_ptr<TuningDbReader> db =
      open_loader_db(path, db_path.empty() ? "$DGTUNE_DB" : "GroupedGemmOptions::db_path");
  if (!db) return std::nullopt;
  try {
    std::optional<GroupedLookup> lookup =
        grouped_lookup(*db, device.hardware(), current_software_env(device), g, protocol_kind);
    if (!lookup)
      spdlog::info("dgt::GroupedGemm: {} has no trials for this device ({}); using the default rule", path,
                   device.name);
    return lookup;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kSqlite) throw;
    spdlog::warn("dgt::GroupedGemm: cannot read tuning database {}: {}; using the default rule", path, e.message());
    return std::nullopt;
  }
}

}  // namespace

struct GroupedGemm::Impl {
  GroupedGemmProblem key;
  GroupedResolved resolved;
  DeviceInfo device;
  std::unique_ptr<jit::CubinCache> cache;
  std::unique_ptr<KernelCache> kernels;  // after `cache`: destroyed before it; owns the loaded module
  std::shared_ptr<jit::GroupedGemmKernel> kernel;
  int grid = 0;
  uint64_t map_owner = next_tensor_map_owner_id();  // the tensor maps of this fixed problem, cached per thread
  std::string origin;  // kernel_origin()
};

GroupedGemm::GroupedGemm(const GroupedGemmProblem& problem, GroupedGemmOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.key = problem;
  // Everything about the key and the config first: a bad call fails the same way with and without a GPU.
  im.resolved = resolve_grouped_choice(problem, options.config);
  check_protocol_kind(options.protocol, "dgt::GroupedGemmOptions::protocol");
  int ordinal = options.device;
  if (ordinal < 0) {
    if (cuda_device_count() == 0) DGT_THROW(ErrorKind::kNoDevice, "dgt::GroupedGemm: no CUDA device found");
    DGT_CHECK_CUDA(cudaGetDevice(&ordinal));
  }
  im.device = open_sm90_device(ordinal);
  if (options.config.empty()) {
    const std::optional<GroupedLookup> lookup =
        tuned_lookup(im.device, im.resolved.problem, options.db_path, options.protocol);
    if (lookup && !lookup->candidates.empty()) im.resolved = resolve_grouped_choice(problem, options.config, &*lookup);
  }
  // Module loading needs the device's primary context current on this thread; the caller's device is restored after.
  int previous = 0;
  DGT_CHECK_CUDA(cudaGetDevice(&previous));
  DGT_CHECK_CUDA(cudaSetDevice(im.device.ordinal));
  struct RestoreDevice {
    int device;
    ~RestoreDevice() { cudaSetDevice(device); }
  } restore{previous};
  // GroupedGemmOptions::bundle, else $DGTUNE_BUNDLE (as dgt::Gemm).
  std::string bundle_dir = options.bundle;
  if (bundle_dir.empty())
    if (const char* env = std::getenv("DGTUNE_BUNDLE")) bundle_dir = env;
  std::shared_ptr<const jit::Bundle> bundle;
  if (!bundle_dir.empty()) bundle = jit::Bundle::open(bundle_dir);
  im.cache = std::make_unique<jit::CubinCache>(usable_cache_dir(options.cache_dir));
  im.kernels = std::make_unique<KernelCache>(*im.cache, im.device.sm_count, std::move(bundle));
  const GroupedProblem& g = im.resolved.problem;
  im.kernel = im.kernels->get_grouped(KernelSpec::of(im.resolved.config, g.dense_view()), g.kind);
  im.origin = im.kernels->bundle_loads() ? "bundle" : im.kernels->compiles() ? "nvrtc" : "cubin cache";
  im.grid = im.kernel->grid_size(g);
}

GroupedGemm::~GroupedGemm() = default;
GroupedGemm::GroupedGemm(GroupedGemm&&) noexcept = default;
GroupedGemm& GroupedGemm::operator=(GroupedGemm&&) noexcept = default;

void GroupedGemm::run(const void* a, const void* b, void* d, const float* scale_a, const float* scale_b,
                      const int32_t* layout, cudaStream_t stream) const {
  if (!impl_) DGT_THROW(ErrorKind::kUsage, "dgt::GroupedGemm::run on a moved-from GroupedGemm");
  const jit::GroupedOperands ops{a, b, d, scale_a, scale_b, layout};
  impl_->kernel->launch(impl_->resolved.problem, ops, stream, impl_->map_owner);
}

const GroupedGemmProblem& GroupedGemm::problem() const { return impl_->key; }
const GroupedGemmChoice& GroupedGemm::choice() const { return impl_->resolved.choice; }
int GroupedGemm::grid_ctas() const { return impl_->grid; }
const std::string& GroupedGemm::kernel_origin() const { return impl_->origin; }

}  // namespace dgt
