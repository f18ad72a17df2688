#include "dgtune/gemm.hpp"

#include <cstdlib>
#include <mutex>
#include <shared_mutex>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/paths.hpp"
#include "jit/bundle.hpp"
#include "loader/gemm_impl.hpp"
#include "loader/loader_db.hpp"
#include "problem/shapes_file.hpp"
#include "records/protocol_name.hpp"

namespace dgt {

Gemm::Gemm(GemmOptions options) : impl_(std::make_unique<Impl>()) {
  check_protocol_kind(options.protocol, "dgt::GemmOptions::protocol");
  impl_->protocol_kind = options.protocol;
  impl_->use_cublaslt = options.cublaslt;
  impl_->probe_ladder = options.probe_ladder;
  impl_->record_untuned = options.record_untuned;
  const int miss = static_cast<int>(options.capture_miss);
  if (miss < 0 || miss > static_cast<int>(CaptureMiss::kError))
    DGT_THROW(ErrorKind::kUsage, "dgt::GemmOptions::capture_miss = {} is not a dgt::CaptureMiss value (0 or 1)", miss);
  impl_->capture_miss = options.capture_miss;
  if (impl_->record_untuned.empty())
    if (const char* env = std::getenv("DGTUNE_RECORD_UNTUNED")) impl_->record_untuned = env;
  int ordinal = options.device;
  if (ordinal < 0) {
    if (cuda_device_count() == 0) DGT_THROW(ErrorKind::kNoDevice, "dgt::Gemm: no CUDA device found");
    DGT_CHECK_CUDA(cudaGetDevice(&ordinal));
  }
  impl_->device = open_device(ordinal);
  if (!impl_->device.is_sm90())
    DGT_THROW(ErrorKind::kNoDevice, "dgt::Gemm: device {} ({}) is not sm_90", ordinal, impl_->device.name);
  // GemmOptions::db_path, else $DGTUNE_DB, else no DB: never a path below the application's working directory.
  const std::string db_path = loader_db_path(options.db_path);
  const char* db_from = options.db_path.empty() ? "$DGTUNE_DB" : "GemmOptions::db_path";
  impl_->env = current_software_env(impl_->device);
  impl_->env_key = impl_->env.key();
  if (options.table) {
    const std::string hw = impl_->device.hardware().key();
    if (hw == options.table->hw_key) {
      impl_->table = options.table;
      if (impl_->env.kernel_hash != options.table->kernel_hash)
        spdlog::info(
            "dgt::Gemm: the tuned table was exported by dgtune {} for kernel version {}; running kernel version {}: "
            "entries of another kernel version are used only while their config is still legal",
            options.table->dgtune_version, options.table->kernel_hash, impl_->env.kernel_hash);
    } else {
      spdlog::warn(
          "dgt::Gemm: the tuned table belongs to {} (hardware key {}), not to this device ({}, hardware key {}); "
          "using default configs",
          options.table->device_name, options.table->hw_key, impl_->device.name, hw);
    }
  } else if (db_path.empty()) {
    spdlog::warn(
        "dgt::Gemm: no tuning database given (GemmOptions::db_path is empty and $DGTUNE_DB is not set); running "
        "untuned: every shape uses the default config");
  } else if ((impl_->db = open_loader_db(db_path, db_from))) {
    impl_->device_id = impl_->db->find_hardware(impl_->device.hardware());
    if (!impl_->device_id)
      spdlog::warn("dgt::Gemm: {} has no trials for this device ({}, hardware key {}); using default configs", db_path,
                   impl_->device.name, impl_->device.hardware().key());
  }
  // GemmOptions::bundle, else $DGTUNE_BUNDLE: checked now, so a bundle of another build fails here, not mid-serving.
  std::string bundle_dir = options.bundle;
  if (bundle_dir.empty())
    if (const char* env = std::getenv("DGTUNE_BUNDLE")) bundle_dir = env;
  std::shared_ptr<const jit::Bundle> bundle;
  if (!bundle_dir.empty()) {
    bundle = jit::Bundle::open(bundle_dir);
    spdlog::info("dgt::Gemm: kernel bundle {} ({} cubins)", bundle_dir, bundle->manifest().cubins.size());
  }
  impl_->cache = std::make_unique<jit::CubinCache>(usable_cache_dir(options.cache_dir));
  impl_->kernels = std::make_unique<KernelCache>(*impl_->cache, impl_->device.sm_count, std::move(bundle));
  // Made now, not on the first problem cuBLASLt runs: a first call inside graph capture must not create it.
  if (impl_->use_cublaslt) impl_->lt_handle = std::make_unique<CublasLtHandle>();
}

Gemm::~Gemm() {
  if (impl_->record_untuned.empty()) return;
  try {
    write_untuned(impl_->record_untuned);
  } catch (const std::exception& e) {
    spdlog::warn("dgt::Gemm: cannot record the untuned problems: {}", e.what());
  }
}

std::vector<UntunedShape> Gemm::untuned() const {
  std::shared_lock lock(impl_->mu);
  std::vector<UntunedShape> out;
  for (const ShapeKey& key : impl_->untuned_order) {
    const unsigned long long calls = impl_->shapes.at(key).untuned_calls->load(std::memory_order_relaxed);
    if (calls > 0) out.push_back({shape_line(make_problem(key)), calls});  // choose() alone is not a call
  }
  return out;
}

void Gemm::write_untuned(const std::string& path) const {
  std::string text =
      "# Problems a dgt::Gemm ran without a tuned entry (GemmChoice::source \"default\"), first seen first.\n"
      "# Tune them with: dgtune sweep --shapes THIS_FILE --strategy model --top-k 16\n";
  for (const UntunedShape& u : untuned()) text += "# calls: " + std::to_string(u.calls) + "\n" + u.line + "\n";
  write_output_file(path, text);
}

void Gemm::run(const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
               int64_t ldd, const float* scale_a, const float* scale_b, cudaStream_t stream, Fp8Format a_format,
               Fp8Format b_format, bool fast_accum, Fp8Scaling scale) {
  const ShapeKey key{m, n, k, lda, ldb, ldd, make_flags(a_format, b_format, fast_accum, scale)};
  const jit::GemmOperands ops{a, b, d, scale_a, scale_b};
  const GemmEntry* e = impl_->find(key);
  if (!e) e = &impl_->resolve_miss(key, stream, /*launch=*/true);
  e->launch(ops, stream);
}

void Gemm::run(const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
               int64_t ldd, const float* scale_a, const float* scale_b, cudaStream_t stream,
               const GemmRunOptions& options) {
  const ShapeKey key{m, n, k, lda, ldb, ldd, make_flags(options)};
  const jit::GemmOperands ops{a, b, d, scale_a, scale_b, options.bias, options.scale_d, options.amax};
  const GemmEntry* e = impl_->find(key);
  if (!e) {
    // The epilogue operands are checked before the first lookup, so a bad combination (e4m3 without scale_d, amax
    // with bf16 output) is reported as such rather than after compiling a kernel. Later calls check them in the
    // launch plan.
    jit::check_operands(make_problem(key), ops);
    e = &impl_->resolve_miss(key, stream, /*launch=*/true);
  }
  e->launch(ops, stream);
}

GemmChoice Gemm::choose(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd,
                        const GemmRunOptions& options) {
  const ShapeKey key{m, n, k, lda, ldb, ldd, make_flags(options)};
  const GemmEntry* e = impl_->find(key);
  return (e ? *e : impl_->resolve_miss(key, nullptr, /*launch=*/false)).choice;
}

GemmChoice Gemm::choose(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd, Fp8Format a_format,
                        Fp8Format b_format, bool fast_accum, Fp8Scaling scale) {
  const ShapeKey key{m, n, k, lda, ldb, ldd, make_flags(a_format, b_format, fast_accum, scale)};
  const GemmEntry* e = impl_->find(key);
  return (e ? *e : impl_->resolve_miss(key, nullptr, /*launch=*/false)).choice;
}

GemmStats Gemm::stats() const {
  std::shared_lock lock(impl_->mu);
  GemmStats s;
  s.nvrtc_compiles = impl_->kernels->compiles();
  s.cache_loads = impl_->kernels->cache_loads();
  s.bundle_loads = impl_->kernels->bundle_loads();
  s.db_reads = impl_->db_reads;
  s.device_allocs = impl_->device_allocs;
  s.resolved = impl_->resolved;
  s.capture_fallbacks = impl_->capture_fallbacks;
  s.ladder_probes = impl_->ladder_probes;
  return s;
}

}  // namespace dgt
