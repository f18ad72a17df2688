#include "dgtune/gemm.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/output_file.hpp"
#include "core/paths.hpp"
#include "db/tuning_db_reader.hpp"
#include "device/device_info.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/cublaslt_gemm.hpp"
#include "launch/environment.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "loader/choice.hpp"
#include "loader/loader_db.hpp"
#include "problem/shapes_file.hpp"
#include "records/protocol_name.hpp"
#include "space/cost_model.hpp"
#include "space/resource_model.hpp"

namespace dgt {

namespace {

/// Lookup key of a shape: plain integers, so the hot path hashes without allocating.
struct ShapeKey {
  int64_t m, n, k, lda, ldb, ldd;
  int flags;  // a_format | b_format << 1 | fast << 2 | scale << 3 | output << 5 | bias << 7 | act << 8 (make_flags)
  bool operator==(const ShapeKey&) const = default;
};
struct ShapeKeyHash {
  size_t operator()(const ShapeKey& s) const noexcept {
    const int64_t words[] = {s.m, s.n, s.k, s.lda, s.ldb, s.ldd, int64_t(s.flags)};
    return fnv1a64(std::string_view(reinterpret_cast<const char*>(words), sizeof words));  // no allocation
  }
};

struct Entry {
  std::shared_ptr<jit::GemmKernel> kernel;  ///< always loaded: backend "dgtune", and the fallback of "cublaslt"
  std::unique_ptr<CublasLtGemm> lt;         ///< backend "cublaslt"
  GemmChoice choice;
  jit::GemmWorkspace workspace;  ///< split-K scratch of this shape (KernelCache::dedicated_workspace)
  /// Calls of a problem without a tuned entry (source "default"), for Gemm::untuned(); null otherwise.
  std::unique_ptr<std::atomic<unsigned long long>> untuned_calls;

  void launch(const Problem& p, const jit::GemmOperands& ops, cudaStream_t stream) const {
    if (untuned_calls) untuned_calls->fetch_add(1, std::memory_order_relaxed);
    // A call whose pointers the cuBLASLt algorithm cannot take (an offset view) runs the kernel, loaded beside it.
    if (lt && lt->fits(ops))
      lt->launch(ops, stream);
    else
      kernel->launch(p, ops, stream, &workspace);
  }
};

// The public Fp8Scaling names the internal ScaleMode's values one to one.
static_assert(int(Fp8Scaling::kPerTensor) == int(ScaleMode::kPerTensor) &&
              int(Fp8Scaling::kChannel) == int(ScaleMode::kChannel) &&
              int(Fp8Scaling::kBlock) == int(ScaleMode::kBlock) &&
              int(Fp8Scaling::kBlock1d1d) == int(ScaleMode::kBlock1d1d));

/// The type, accumulation and scale fields of a call as ShapeKey::flags. A scale value outside the enum
/// (a cast) throws here, before it could name another problem.
int make_flags(Fp8Format a_format, Fp8Format b_format, bool fast_accum, Fp8Scaling scale) {
  const int s = static_cast<int>(scale);
  if (s < 0 || s > static_cast<int>(Fp8Scaling::kBlock1d1d))
    DGT_THROW(ErrorKind::kUsage, "dgt::Gemm: scale = {} is not a dgt::Fp8Scaling value (0 to 3)", s);
  return int(a_format == Fp8Format::kE5M2) | int(b_format == Fp8Format::kE5M2) << 1 | int(fast_accum) << 2 | s << 3;
}

/// make_flags plus the output type, bias presence and activation of GemmRunOptions. Enum values outside
/// their range (casts) throw kUsage naming the field.
int make_flags(const GemmRunOptions& o) {
  const int out = static_cast<int>(o.output), act = static_cast<int>(o.act);
  if (out < 0 || out > static_cast<int>(OutputType::kE4M3))
    DGT_THROW(ErrorKind::kUsage, "dgt::GemmRunOptions::output = {} is not a dgt::OutputType value (0 to 2)", out);
  if (act < 0 || act > static_cast<int>(Activation::kGeluTanh))
    DGT_THROW(ErrorKind::kUsage, "dgt::GemmRunOptions::act = {} is not a dgt::Activation value (0 to 2)", act);
  return make_flags(o.a_format, o.b_format, o.fast_accum, o.scale) | out << 5 | int(o.bias != nullptr) << 7 |
         act << 8;
}

Problem make_problem(const ShapeKey& s) {
  Problem p = Problem::dense(s.m, s.n, s.k);
  p.lda = s.lda, p.ldb = s.ldb, p.ldd = s.ldd;
  p.a = (s.flags & 1) ? DType::kE5M2 : DType::kE4M3;
  p.b = (s.flags & 2) ? DType::kE5M2 : DType::kE4M3;
  p.accum = (s.flags & 4) ? Accum::kFast : Accum::kPromote;
  p.scale = static_cast<ScaleMode>((s.flags >> 3) & 3);
  const int out = (s.flags >> 5) & 3;
  p.d = out == int(OutputType::kF32) ? DType::kF32 : out == int(OutputType::kE4M3) ? DType::kE4M3 : DType::kBF16;
  p.bias = (s.flags >> 7) & 1 ? Bias::kBF16 : Bias::kNone;
  p.act = static_cast<Act>((s.flags >> 8) & 3);
  return p;
}

}  // namespace

struct Gemm::Impl {
  DeviceInfo device;
  std::unique_ptr<TuningDbReader> db;
  const TunedTable* table = nullptr;  ///< GemmOptions::table when it belongs to this hardware identity
  std::optional<int64_t> device_id;   ///< device row of this GPU's hardware identity
  SoftwareEnv env;                    ///< the running software environment
  std::string env_key;                ///< env.key()
  std::string protocol_kind;          ///< GemmOptions::protocol: the protocol kind whose winners come first
  bool older_kernel_notice = false;   ///< the one notice per Gemm about winners of an older kernel hash
  bool use_cublaslt = true;           ///< GemmOptions::cublaslt
  bool cublaslt_version_notice = false;  ///< the one notice per Gemm about algorithms of another cuBLASLt version
  std::unique_ptr<CublasLtHandle> lt_handle;  ///< created on the first problem cuBLASLt runs
  std::string record_untuned;                 ///< GemmOptions::record_untuned or $DGTUNE_RECORD_UNTUNED
  std::vector<ShapeKey> untuned_order;        ///< untuned problems, first seen first (under `mu`)
  std::unique_ptr<jit::CubinCache> cache;
  std::unique_ptr<KernelCache> kernels;  // after `cache`: destroyed before it
  // Shape -> entry: the first call for a shape resolves it under the exclusive lock (DB query, then
  // KernelCache::get, which compiles and loads at most once per kernel); later calls take the shared
  // lock only and never reach the kernel cache.
  std::shared_mutex mu;
  std::unordered_map<ShapeKey, Entry, ShapeKeyHash> shapes;

  cublasLtHandle_t handle() {
    if (!lt_handle) lt_handle = std::make_unique<CublasLtHandle>();
    return lt_handle->get();
  }

  /// The backend rule (docs/loader.md "cuBLASLt as a backend"): cuBLASLt runs p when its stored algorithm beat the
  /// dgtune winner `w` in the same sweep (replayed when stored by the running cuBLASLt version, else cuBLASLt's
  /// heuristic with one notice), or when p has no tuned entry (`w` empty: the heuristic's top-1). nullptr: dgtune's
  /// kernel runs (also when cuBLASLt cannot run p). Sets choice.backend and choice.cublaslt_algo.
  std::unique_ptr<CublasLtGemm> cublaslt_backend(const Problem& p, const std::optional<StoredChoice>& w,
                                                 GemmChoice& choice) {
    std::string why, how = "heuristic", note;
    std::unique_ptr<CublasLtGemm> g;
    if (!w) {
      g = CublasLtGemm::heuristic(handle(), p, why);
    } else {
      if (!db || !device_id) return nullptr;  // an exported table stores no cuBLASLt algorithm
      std::vector<StoredCublasLtAlgo> algos;
      try {
        algos = db->cublaslt_winners(*device_id, p);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kSqlite) throw;
        spdlog::warn("dgt::Gemm: cannot read the cuBLASLt algorithms of {} in {}: {}; running dgtune's kernel",
                     p.label(), db->path(), e.message());
        return nullptr;
      }
      const StoredCublasLtAlgo* rival = cublaslt_rival(algos, *w);
      if (rival && stored_algo_beats_kernel(p, w->tuned_us, rival->median_us, rival->algo_data.size())) {
        if (!replay_stored_algo(*w, p)) {
          note = fmt::format(" (cuBLASLt won at M = {}; its algorithm is replayed only there)", w->from.m);
        } else if (rival->cublaslt_version == env.cublaslt_version) {
          g = CublasLtGemm::stored(handle(), p, rival->algo_data, why);
          how = "stored";
          if (!g)
            spdlog::info("dgt::Gemm {}: the stored cuBLASLt algorithm cannot run it ({}); using cuBLASLt's heuristic",
                         p.label(), why);
        } else if (!cublaslt_version_notice) {
          cublaslt_version_notice = true;
          spdlog::info(
              "dgt::Gemm: the cuBLASLt algorithms in {} were stored by cuBLASLt {}, this process runs {}: an algorithm "
              "is replayed only by the version that returned it, so cuBLASLt's heuristic runs where cuBLASLt won (this "
              "notice is shown once)",
              db->path(), rival->cublaslt_version, env.cublaslt_version);
        }
      } else {
        // The kernel won at its own M; between two tuned M the ladder rule's check may still prefer cuBLASLt.
        const double at_p = estimate_us(KernelSpec::of(w->config, p), p, device.sm_count);
        const double at_from = estimate_us(KernelSpec::of(w->config, w->from), w->from, device.sm_count);
        const LadderDispatch d = ladder_dispatch(*w, p, at_p, at_from, algos);
        if (!d.cublaslt) return nullptr;
        note = fmt::format(" (ladder check: kernel {:.2f} us predicted, cuBLASLt {:.2f} us)", d.kernel_us, d.cublaslt_us);
      }
      if (!g) {
        g = CublasLtGemm::heuristic(handle(), p, why);
        how = "heuristic";
      }
    }
    if (!g) {
      spdlog::debug("dgt::Gemm {}: cuBLASLt cannot run it ({}); dgtune's kernel runs", p.label(), why);
      return nullptr;
    }
    choice.backend = "cublaslt";
    choice.cublaslt_algo = how + " " + g->description() + note;
    return g;
  }

  const Entry& resolve(const ShapeKey& key) {
    {
      std::shared_lock lock(mu);
      auto it = shapes.find(key);
      if (it != shapes.end()) return it->second;
    }
    std::unique_lock lock(mu);
    auto it = shapes.find(key);
    if (it != shapes.end()) return it->second;
    const Problem p = make_problem(key);
    validate_problem(p);
    // Module loading needs this device's primary context current on the calling thread.
    DGT_CHECK_CUDA(cudaSetDevice(device.ordinal));
    Entry e;
    KernelConfig config = default_config(p);
    e.choice.source = "default";
    std::optional<std::vector<EnvironmentWinner>> candidates;
    std::optional<StoredChoice> w_choice;
    if (table)
      candidates = table_winners(*table, p);
    else if (db && device_id) {
      try {
        candidates = db->environment_winners(*device_id, p);
      } catch (const Error& e) {
        // Damage past the pages read at open: same policy as a file that cannot be opened (one warning).
        if (e.kind() != ErrorKind::kSqlite) throw;
        spdlog::warn("dgt::Gemm: cannot read tuning database {}: {}; using default configs", db->path(), e.message());
        db.reset();
      }
    }
    if (candidates) {
      // The identity rule (loader/choice.hpp): winners of this hardware identity under any software
      // environment; the running kernel hash first, an older one only while its config is still legal.
      w_choice = choose_stored_winner(*candidates, p, env.kernel_hash, env_key, protocol_kind, legal_for_current_kernel);
      const std::optional<StoredChoice>& w = w_choice;
      if (w) {
        config = w->config;
        e.choice.source = w->source;
        e.choice.tuned_us = w->tuned_us;
        e.choice.protocol = w->protocol_name;
        if (w->older_kernel && !older_kernel_notice) {
          older_kernel_notice = true;
          spdlog::info(
              "dgt::Gemm: {} holds no winner of the running kernel version ({}) for {}; using the winner "
              "measured with kernel version {} ({}), whose config is still legal. Re-run `dgtune sweep` to "
              "tune this kernel version (this notice is shown once).",
              table ? std::string("the exported table") : db->path(), env.kernel_hash, p.label(), w->kernel_hash,
              config.key());
        }
      }
    }
    e.choice.config_key = config.key();
    if (use_cublaslt) {  // CublasLtGemm refuses e4m3 D (it needs a C of its own), so the kernel runs it
      try {
        e.lt = cublaslt_backend(p, w_choice, e.choice);
      } catch (const Error& err) {
        // cuBLASLt could not be set up for p (handle, descriptors, workspace): the kernel runs, as documented.
        spdlog::warn("dgt::Gemm {}: cuBLASLt could not be set up ({}); running dgtune's kernel", p.label(),
                     err.message());
        e.lt.reset();
        e.choice.backend = "dgtune";
        e.choice.cublaslt_algo.clear();
      }
    }
    const bool untuned = e.choice.source == "default";
    if (untuned) e.untuned_calls = std::make_unique<std::atomic<unsigned long long>>(0);
    if (e.lt) spdlog::debug("dgt::Gemm {}: cuBLASLt {} ({})", p.label(), e.choice.cublaslt_algo, e.choice.source);
    // Evaluated once: the same report decides legality and the module's shared memory (KernelCache::get).
    const EvaluatedSpec spec = EvaluatedSpec::evaluate(KernelSpec::of(config, p));
    if (!spec.resources.ok())
      DGT_THROW(ErrorKind::kInternal, "config {} chosen for {} is not legal: {}", config.key(), p.label(),
                spec.resources.rejection);
    e.kernel = kernels->get(spec);
    e.workspace = kernels->dedicated_workspace(*e.kernel, p);
    spdlog::debug("dgt::Gemm {}: {} ({})", p.label(), e.choice.config_key, e.choice.source);
    const Entry& stored = shapes.emplace(key, std::move(e)).first->second;
    if (untuned) untuned_order.push_back(key);  // only once the entry exists (a failed load leaves no trace)
    return stored;
  }
};

Gemm::Gemm(GemmOptions options) : impl_(std::make_unique<Impl>()) {
  check_protocol_kind(options.protocol, "dgt::GemmOptions::protocol");
  impl_->protocol_kind = options.protocol;
  impl_->use_cublaslt = options.cublaslt;
  impl_->record_untuned = options.record_untuned;
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
  impl_->cache = std::make_unique<jit::CubinCache>(usable_cache_dir(options.cache_dir));
  impl_->kernels = std::make_unique<KernelCache>(*impl_->cache, impl_->device.sm_count);
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
  const Entry& e = impl_->resolve(key);
  e.launch(make_problem(key), jit::GemmOperands{a, b, d, scale_a, scale_b}, stream);
}

void Gemm::run(const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
               int64_t ldd, const float* scale_a, const float* scale_b, cudaStream_t stream,
               const GemmRunOptions& options) {
  const ShapeKey key{m, n, k, lda, ldb, ldd, make_flags(options)};
  const Problem p = make_problem(key);
  jit::GemmOperands ops{a, b, d, scale_a, scale_b, options.bias, options.scale_d, options.amax};
  // The epilogue operands are checked before the first lookup, so a bad combination (e4m3 without scale_d,
  // amax with bf16 output) is reported as such rather than after compiling a kernel.
  jit::check_operands(p, ops);
  const Entry& e = impl_->resolve(key);
  e.launch(p, ops, stream);
}

GemmChoice Gemm::choose(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd,
                        const GemmRunOptions& options) {
  const ShapeKey key{m, n, k, lda, ldb, ldd, make_flags(options)};
  return impl_->resolve(key).choice;
}

GemmChoice Gemm::choose(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd, Fp8Format a_format,
                        Fp8Format b_format, bool fast_accum, Fp8Scaling scale) {
  const ShapeKey key{m, n, k, lda, ldb, ldd, make_flags(a_format, b_format, fast_accum, scale)};
  return impl_->resolve(key).choice;
}

}  // namespace dgt
