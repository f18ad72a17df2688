// dgt::Gemm's state: the shape map the launch path reads, the problem families (DB rows read once, shared scratch)
// and the resolution of a first call (internal header; src/loader/gemm.cpp is the public API, warmup.cpp the warm-up).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "db/tuning_db_reader.hpp"
#include "device/device_info.hpp"
#include "dgtune/gemm.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/cublaslt_gemm.hpp"
#include "launch/environment.hpp"
#include "launch/gemm_launch_plan.hpp"
#include "launch/kernel_cache.hpp"
#include "loader/capture_rule.hpp"
#include "loader/choice.hpp"
#include "loader/family_scratch.hpp"
#include "loader/shape_key.hpp"

namespace dgt {

/// A resolved shape: what its calls launch. Immutable once in the map.
struct GemmEntry {
  std::shared_ptr<jit::GemmKernel> kernel;      ///< always loaded: backend "dgtune", and the fallback of "cublaslt"
  std::unique_ptr<jit::GemmLaunchPlan> plan;    ///< the kernel prepared for this shape (null for capture fallbacks)
  std::unique_ptr<CublasLtGemm> lt;             ///< backend "cublaslt"
  GemmChoice choice;
  /// Calls of a problem without a tuned entry (source "default"), for Gemm::untuned(); null otherwise.
  std::unique_ptr<std::atomic<unsigned long long>> untuned_calls;

  void launch(const jit::GemmOperands& ops, cudaStream_t stream) const {
    if (untuned_calls) untuned_calls->fetch_add(1, std::memory_order_relaxed);
    // A call whose pointers the cuBLASLt algorithm cannot take (an offset view) runs the kernel, loaded beside it.
    if (lt && (!plan || lt->fits(ops)))
      lt->launch(ops, stream);
    else
      plan->launch(ops, stream);
  }
};

/// Every M of one N, K, leading dimensions and types (ShapeKey::family()).
struct GemmFamily {
  bool rows_read = false;  ///< candidates, algos and trials below were read (once; never again, also outside capture)
  std::optional<std::vector<EnvironmentWinner>> candidates;  ///< winners of the family (DB or table); none: no data
  std::vector<StoredCublasLtAlgo> algos;                     ///< the family's stored cuBLASLt algorithms
  std::vector<EnvironmentWinner> trials;  ///< the ladder rule's candidates (DB only; choice.hpp ladder_trials)
  bool warmed = false;                                       ///< Gemm::warmup covered it
  /// cuBLASLt algorithms (their 64 bytes) launched once for this family outside capture (Impl::load_cublaslt): their
  /// kernels are loaded. A first launch loads a kernel's module, which allocates device memory, so inside capture
  /// only these run. Per family, as the kernel also depends on the types, scales and epilogue.
  std::set<CublasLtAlgoBytes> lt_loaded;
  FamilyScratch scratch;
};

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
  bool probe_ladder = true;           ///< GemmOptions::probe_ladder
  bool probe_failed_notice = false;   ///< the one warning per Gemm about a probe that could not run
  CaptureMiss capture_miss = CaptureMiss::kCublasLt;
  bool cublaslt_version_notice = false;       ///< the one notice per Gemm about algorithms of another cuBLASLt version
  std::unique_ptr<CublasLtHandle> lt_handle;  ///< made in the constructor (never inside capture)
  std::string record_untuned;                 ///< GemmOptions::record_untuned or $DGTUNE_RECORD_UNTUNED
  std::vector<ShapeKey> untuned_order;        ///< untuned problems, first seen first (under `mu`)
  std::unique_ptr<jit::CubinCache> cache;
  std::unique_ptr<KernelCache> kernels;  // after `cache`: destroyed before it
  // Shape -> entry: the first call for a shape resolves it under the exclusive lock; later calls take the shared
  // lock only. Families and the counters below are guarded by the exclusive lock too.
  mutable std::shared_mutex mu;
  std::unordered_map<ShapeKey, GemmEntry, ShapeKeyHash> shapes;
  std::unordered_map<ShapeKey, GemmFamily, ShapeKeyHash> families;
  /// Capture fallbacks (CaptureMiss::kCublasLt): kept apart from `shapes`, so a later call outside capture resolves
  /// the problem properly.
  std::unordered_map<ShapeKey, GemmEntry, ShapeKeyHash> capture_entries;
  unsigned long long db_reads = 0, device_allocs = 0, resolved = 0, capture_fallbacks = 0, ladder_probes = 0;

  /// The entry of `key` if resolved (shared lock), else null.
  const GemmEntry* find(const ShapeKey& key) const {
    std::shared_lock lock(mu);
    auto it = shapes.find(key);
    return it == shapes.end() ? nullptr : &it->second;
  }
  /// A first call on `stream` (nullptr: not a launch, e.g. choose or warm-up: never capturing): MissAction decides.
  const GemmEntry& resolve_miss(const ShapeKey& key, cudaStream_t stream, bool launch);
  /// Resolves `key` under the exclusive lock. `quiet` (inside capture): no DB read, compile, load or allocation;
  /// null when one would be needed.
  const GemmEntry* resolve_locked(const ShapeKey& key, bool quiet);
  /// The family of `key`, its DB rows read when `may_read` and not read yet.
  GemmFamily& family(const ShapeKey& key, bool may_read);
  /// The kernel of `config` for problem p, compiled or loaded (KernelCache::get); Error(kInternal) when the config is
  /// not legal for p (every caller checked legality before).
  std::shared_ptr<jit::GemmKernel> kernel_for(const KernelConfig& config, const Problem& p);
  /// Launches `lt`'s algorithm once, outside capture, on zeroed operands and a workspace of its own (not the family's
  /// scratch, which calls in flight may use) on a stream of its own, at M = min(p.m, 128) where
  /// cublasLtMatmulAlgoCheck allows it, else at p.m, so that its kernel is loaded before any capture; waits for it
  /// and records it in fam.lt_loaded. A failure (Error) is logged and leaves the algorithm out (capture then runs
  /// another launched algorithm or the kernel). Allocates and frees device memory: not while another thread captures
  /// in cudaStreamCaptureModeGlobal.
  void load_cublaslt(const CublasLtGemm& lt, const Problem& p, GemmFamily& fam);

 private:
  cublasLtHandle_t handle() const { return lt_handle ? lt_handle->get() : nullptr; }
  /// The backend rule for p: `w` is what runs (after the ladder rule's re-rank), `winner` the identity rule's winner
  /// the stored cuBLASLt rival is compared with (the same as `w` but for a re-ranked ladder pick).
  std::unique_ptr<CublasLtGemm> cublaslt_backend(const Problem& p, const GemmFamily& fam,
                                                 const std::optional<StoredChoice>& w,
                                                 const std::optional<StoredChoice>& winner, GemmChoice& choice);

  /// The ladder probe (loader/ladder_probe.hpp) for a pick `w` off a tuned M, outside capture: times e's kernel and
  /// cuBLASLt's heuristic for p (e.lt when the ladder check chose it) and leaves in `e` the faster by the probe's
  /// rule, with GemmChoice::probe saying what was measured, and the heuristic's algorithm in fam.lt_loaded (the probe
  /// launched it). Nothing changes where cuBLASLt cannot run p or the probe fails (one warning per Gemm); the caller
  /// calls it only outside capture, off a tuned M, for output other than e4m3, with cuBLASLt and the probe on.
  void probe_pick(const Problem& p, const StoredChoice& w, GemmFamily& fam, GemmEntry& e);

  const GemmEntry& capture_fallback(const ShapeKey& key);
};

/// dgtune's own access to a Gemm's state (the host-cost benchmark, src/eval/host_cost.cpp): the entry a call of
/// `key` launches, resolved like a first call outside capture.
struct GemmAccess {
  static const GemmEntry& entry(Gemm& g, const ShapeKey& key) {
    const GemmEntry* e = g.impl_->find(key);
    return e ? *e : g.impl_->resolve_miss(key, nullptr, /*launch=*/false);
  }
  static const GemmEntry* find(const Gemm& g, const ShapeKey& key) { return g.impl_->find(key); }
};

}  // namespace dgt
