#include "loader/gemm_impl.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/error.hpp"
#include "loader/ladder_probe.hpp"
#include "space/cost_model.hpp"
#include "space/resource_model.hpp"

namespace dgt {

GemmFamily& Gemm::Impl::family(const ShapeKey& key, bool may_read) {
  GemmFamily& fam = families[key.family()];
  if (fam.rows_read || !may_read) return fam;
  fam.rows_read = true;
  const Problem p = make_problem(key);
  if (table) {
    fam.candidates = table_winners(*table, p);  // an exported table stores no cuBLASLt algorithm
  } else if (db && device_id) {
    try {
      ++db_reads;
      fam.candidates = db->environment_winners(*device_id, p);
      ++db_reads;
      // The ladder rule's candidates: configs run at some tuned M of the family (so a warm-up holds their kernels).
      const std::vector<std::string> allowed =
          tuned_m_choices(*fam.candidates, p, env.kernel_hash, env_key, protocol_kind, legal_for_current_kernel);
      fam.trials = ladder_trials(db->family_trials(*device_id, p), allowed);
      if (use_cublaslt) {
        ++db_reads;
        fam.algos = db->cublaslt_winners(*device_id, p);
      }
    } catch (const Error& e) {
      // Damage past the pages read at open: same policy as a file that cannot be opened (one warning).
      if (e.kind() != ErrorKind::kSqlite) throw;
      spdlog::warn("dgt::Gemm: cannot read tuning database {}: {}; using default configs", db->path(), e.message());
      db.reset();
      fam.candidates.reset();
      fam.algos.clear();
      fam.trials.clear();
    }
  }
  return fam;
}

std::unique_ptr<CublasLtGemm> Gemm::Impl::cublaslt_backend(const Problem& p, const GemmFamily& fam,
                                                           const std::optional<StoredChoice>& w,
                                                           const std::optional<StoredChoice>& winner, GemmChoice& choice) {
  // The backend rule (docs/loader.md "cuBLASLt as a backend", decide_backend): at p's own tuned M, cuBLASLt's stored
  // algorithm when it beat the dgtune winner in the same sweep (replayed by the cuBLASLt version that stored it, else
  // the heuristic); off a tuned M, cuBLASLt's heuristic when the kernel is predicted slower than it (the ladder
  // check: by more than kLadderCublasLtMargin); and the heuristic when p has no tuned entry (`w` empty).
  std::string why, how = "heuristic", note;
  std::unique_ptr<CublasLtGemm> g;
  if (!w) {
    g = CublasLtGemm::heuristic(handle(), p, why);
  } else {
    if (!db || !device_id) return nullptr;  // an exported table stores no cuBLASLt algorithm
    // The stored rival is cuBLASLt against the identity rule's winner (`winner`: before the ladder rule's re-rank, which
    // may pick another config or a lower neighbour's time); off a tuned M the kernel is compared with the heuristic.
    // The ladder check is the only user of the time ratio: no estimate for a tuned M or a nearest pick.
    const double ratio =
        is_ladder_pick(*w) ? ladder_time_ratio(analytic_estimate(device.sm_count), w->config, p, w->from) : 0.0;
    const BackendDecision d = decide_backend(*w, *winner, p, ratio, fam.algos);
    if (d.kind == BackendDecision::Kind::kKernel) return nullptr;
    if (d.kind == BackendDecision::Kind::kStoredAlgo) {
      if (d.rival->cublaslt_version == env.cublaslt_version) {
        g = CublasLtGemm::stored(handle(), p, d.rival->algo_data, why);
        how = "stored";
        if (!g)
          spdlog::info("dgt::Gemm {}: the stored cuBLASLt algorithm cannot run it ({}); using cuBLASLt's heuristic "
                       "where its stored median beat the kernel, else the kernel",
                       p.label(), why);
      } else if (!cublaslt_version_notice) {
        cublaslt_version_notice = true;
        spdlog::info(
            "dgt::Gemm: the cuBLASLt algorithms in {} were stored by cuBLASLt {}, this process runs {}: an algorithm "
            "is replayed only by the version that returned it, so where cuBLASLt won, cuBLASLt's heuristic runs if "
            "its stored median beat the kernel too, else the kernel (this notice is shown once)",
            db->path(), d.rival->cublaslt_version, env.cublaslt_version);
      }
      // The stored algorithm cannot run: the heuristic stands in only where the sweep timed it faster than the winner.
      if (!g && !heuristic_may_replace(*d.rival, winner->tuned_us)) return nullptr;
    } else if (d.won_at_m > 0) {
      note = fmt::format(" (cuBLASLt's heuristic beat the kernel at M = {}, no prediction at this M)", d.won_at_m);
    } else {
      note = fmt::format(" (ladder check: kernel {:.2f} us predicted, cuBLASLt {:.2f} us)", d.check.kernel_us,
                         d.check.cublaslt_us);
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

void Gemm::Impl::probe_pick(const Problem& p, const StoredChoice& w, GemmFamily& fam, GemmEntry& e) {
  if (!probe_fits(p)) {
    spdlog::debug("dgt::Gemm {}: no ladder probe (its operands take more than {} MiB)", p.label(), kProbeMaxBytes >> 20);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // e.lt (the prediction's choice) is left as it is until the probe has measured: a failure keeps it.
  try {
    std::string why;
    const std::vector<cublasLtMatmulAlgo_t> algos =
        CublasLtGemm::heuristic_algos(handle(), p, kProbeCublasLtAlgos, why);
    if (algos.empty()) return;  // cuBLASLt cannot run p
    const bool cold = protocol_kind == "cold-l2";
    const ProbeTimes t = probe_ladder_pick(*e.kernel, handle(), algos, p, device.l2_bytes, cold);
    ++ladder_probes;
    // The probe launched each algorithm outside capture: its kernel is loaded (as by load_cublaslt).
    for (const cublasLtMatmulAlgo_t& a : algos) fam.lt_loaded.insert(algo_bytes(a));
    std::unique_ptr<CublasLtGemm> pick;
    if (probe_prefers_cublaslt(t)) pick = CublasLtGemm::checked(handle(), p, algos[size_t(t.algo)], why);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    e.choice.probe = fmt::format(
        "cuBLASLt more than {:.0f}% faster in {} of {} rounds (best: kernel {:.2f} us, cuBLASLt {:.2f} us, heuristic "
        "result {} of {}; {}, {} operand cop{}; probe {:.1f} ms)",
        (kProbeCublasLtMargin - 1) * 100, t.cublaslt_rounds, t.rounds, t.kernel_us, t.cublaslt_us, t.algo + 1, t.algos,
        protocol_kind, t.operand_sets, t.operand_sets == 1 ? "y" : "ies", ms);
    e.choice.backend = pick ? "cublaslt" : "dgtune";
    e.choice.cublaslt_algo =
        pick ? fmt::format("heuristic {} (probe: heuristic result {})", pick->description(), t.algo + 1) : "";
    e.lt = std::move(pick);
    spdlog::debug("dgt::Gemm {}: ladder probe of {} ({}): {} -> {}", p.label(), w.config.key(), w.source,
                  e.choice.probe, e.choice.backend);
  } catch (const Error& err) {
    // A failed allocation leaves its error for cudaGetLastError: cleared. A launch that broke the context is no probe
    // failure: rethrown, as any call would report it.
    (void)cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess) throw;
    // The prediction's choice stands (the kernel, or the heuristic the ladder check chose).
    if (!probe_failed_notice) {
      probe_failed_notice = true;
      spdlog::warn("dgt::Gemm {}: the ladder probe could not run ({}); the ladder rule's prediction decides (this "
                   "warning is shown once)",
                   p.label(), err.message());
    }
  }
}

std::shared_ptr<jit::GemmKernel> Gemm::Impl::kernel_for(const KernelConfig& config, const Problem& p) {
  // Evaluated once: the same report decides legality and the module's shared memory (KernelCache::get).
  const EvaluatedSpec spec = EvaluatedSpec::evaluate(KernelSpec::of(config, p));
  if (!spec.resources.ok())
    DGT_THROW(ErrorKind::kInternal, "config {} chosen for {} is not legal: {}", config.key(), p.label(),
              spec.resources.rejection);
  return kernels->get(spec);
}

const GemmEntry* Gemm::Impl::resolve_locked(const ShapeKey& key, bool quiet) {
  if (auto it = shapes.find(key); it != shapes.end()) return &it->second;
  const Problem p = make_problem(key);
  validate_problem(p);
  GemmFamily& fam = family(key, /*may_read=*/!quiet);
  if (quiet && !fam.rows_read) return nullptr;
  GemmEntry e;
  KernelConfig config = default_config(p);
  e.choice.source = "default";
  std::optional<StoredChoice> w, winner;  // what runs; the identity rule's winner (the cuBLASLt rival's reference)
  if (fam.candidates) {
    // The identity rule (loader/choice.hpp): winners of this hardware identity under any software environment; the
    // running kernel hash first, an older one only while its config is still legal.
    w = choose_stored_winner(*fam.candidates, p, env.kernel_hash, env_key, protocol_kind, legal_for_current_kernel);
    winner = w;
    // Between two tuned M: the neighbours' candidates re-ranked at p.m by the analytic estimate (choice.hpp).
    if (w && !fam.trials.empty())
      w = rerank_ladder(*w, p, fam.trials, analytic_estimate(device.sm_count), legal_for_current_kernel);
    if (w) {
      config = w->config;
      e.choice.source = w->source;
      e.choice.tuned_us = w->tuned_us;
      e.choice.protocol = w->protocol_name;
      if (w->older_kernel && !older_kernel_notice) {
        older_kernel_notice = true;
        spdlog::info(
            "dgt::Gemm: {} holds no winner of the running kernel version ({}) for {}; using the winner measured with "
            "kernel version {} ({}), whose config is still legal. Re-run `dgtune sweep` to tune this kernel version "
            "(this notice is shown once).",
            table ? std::string("the exported table") : db->path(), env.kernel_hash, p.label(), w->kernel_hash,
            config.key());
      }
    }
  }
  e.choice.config_key = config.key();
  const KernelSpec kspec = KernelSpec::of(config, p);
  // The kernel first: inside capture a family whose kernel was not loaded by the warm-up is not served from memory.
  if (quiet) {
    e.kernel = kernels->find(kspec);
    if (!e.kernel) return nullptr;
  } else {
    e.kernel = kernel_for(config, p);
  }
  if (use_cublaslt) {  // CublasLtGemm refuses e4m3 D (it needs a C of its own), so the kernel runs it
    try {
      e.lt = cublaslt_backend(p, fam, w, winner, e.choice);
    } catch (const Error& err) {
      // cuBLASLt could not be set up for p (descriptors, heuristic): the kernel runs, as documented.
      spdlog::warn("dgt::Gemm {}: cuBLASLt could not be set up ({}); running dgtune's kernel", p.label(),
                   err.message());
      e.lt.reset();
    }
    // Off a tuned M both sides of the ladder check are predictions: measure them where a first call may synchronise
    // (a DB's winners only: an exported table runs cuBLASLt only for problems with no entry).
    if (!quiet && probe_ladder && db && device_id && w && !replay_stored_algo(*w, p) && p.d != DType::kE4M3)
      probe_pick(p, *w, fam, e);
    const auto loaded = [&fam](const cublasLtMatmulAlgo_t& a) { return fam.lt_loaded.count(algo_bytes(a)) > 0; };
    if (e.lt && quiet &&
        !((e.lt->workspace_bytes() == 0 || e.lt->workspace_bytes() <= fam.scratch.lt_bytes()) && loaded(e.lt->algo()))) {
      // Inside capture the family's cuBLASLt workspace cannot grow, and an algorithm never launched outside capture
      // would load its kernel's module here, which allocates device memory (2 MiB on the H200): the heuristic's best
      // among the launched algorithms within the warmed workspace runs instead, else dgtune's kernel (loaded).
      std::string why;
      try {
        e.lt = CublasLtGemm::heuristic(handle(), p, why, fam.scratch.lt_bytes(), loaded);
      } catch (const Error&) {
        e.lt.reset();  // as a failed set-up above: the kernel runs
      }
      if (e.lt) e.choice.cublaslt_algo = "heuristic " + e.lt->description() + " (launched before capture)";
    }
    if (!e.lt) {
      e.choice.backend = "dgtune";
      e.choice.cublaslt_algo.clear();
    }
  }
  const size_t lt_bytes = e.lt ? e.lt->workspace_bytes() : 0;
  if (!fam.scratch.reserve(e.kernel->workspace_bytes(p), e.kernel->counter_bytes(p), lt_bytes, !quiet, device_allocs))
    return nullptr;
  if (e.lt && lt_bytes > 0) e.lt->bind_workspace(fam.scratch.lt(), fam.scratch.lt_bytes());
  // cuBLASLt loads a kernel at its first launch; outside capture it is launched once here, so that a later capture
  // of this or another M of the family may run it (inside capture only launched algorithms run, above).
  if (e.lt && !quiet) load_cublaslt(*e.lt, p, fam);
  e.plan = std::make_unique<jit::GemmLaunchPlan>(*e.kernel, p, fam.scratch.split_k(), /*cache_maps=*/true);
  const bool untuned = e.choice.source == "default";
  if (untuned) e.untuned_calls = std::make_unique<std::atomic<unsigned long long>>(0);
  spdlog::debug("dgt::Gemm {}: {} ({}{}{})", p.label(), e.choice.config_key, e.choice.source,
                e.lt ? ", cuBLASLt " : "", e.choice.cublaslt_algo);
  const GemmEntry& stored = shapes.emplace(key, std::move(e)).first->second;
  if (untuned) untuned_order.push_back(key);  // only once the entry exists (a failed load leaves no trace)
  ++resolved;
  return &stored;
}

const GemmEntry& Gemm::Impl::capture_fallback(const ShapeKey& key) {
  if (auto it = capture_entries.find(key); it != capture_entries.end()) return it->second;
  const Problem p = make_problem(key);
  std::string why = "cuBLASLt is off (GemmOptions::cublaslt = false)";
  GemmEntry e;
  if (use_cublaslt) e.lt = CublasLtGemm::heuristic(handle(), p, why, /*max_workspace=*/0);
  if (!e.lt)
    DGT_THROW(ErrorKind::kUsage,
              "dgt::Gemm: {} is called inside CUDA-graph capture but was not warmed up, and cuBLASLt cannot run it "
              "without a workspace ({}): call dgt::Gemm::warmup for its family before capturing",
              p.label(), why);
  e.choice.source = "capture-fallback";
  e.choice.backend = "cublaslt";
  e.choice.cublaslt_algo = "heuristic " + e.lt->description() + " (inside capture, not warmed up)";
  spdlog::warn("dgt::Gemm {}: called inside CUDA-graph capture without warm-up; cuBLASLt's heuristic runs it ({})",
               p.label(), e.lt->description());
  return capture_entries.emplace(key, std::move(e)).first->second;
}

const GemmEntry& Gemm::Impl::resolve_miss(const ShapeKey& key, cudaStream_t stream, bool launch) {
  bool capturing = false;
  if (launch) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    // A stream the query fails on is treated as capturing: nothing is compiled or allocated for it.
    capturing = cudaStreamIsCapturing(stream, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone;
  }
  std::unique_lock lock(mu);
  if (auto it = shapes.find(key); it != shapes.end()) return it->second;
  if (!capturing) {
    // Module loading needs this device's primary context current on the calling thread.
    DGT_CHECK_CUDA(cudaSetDevice(device.ordinal));
    return *resolve_locked(key, /*quiet=*/false);
  }
  auto fit = families.find(key.family());
  const bool warmed = fit != families.end() && fit->second.warmed;
  const GemmEntry* e = warmed ? resolve_locked(key, /*quiet=*/true) : nullptr;
  switch (miss_action(true, warmed, warmed && !e, capture_miss)) {
    case MissAction::kResolveFromWarmFamily: return *e;
    case MissAction::kCublasLtHeuristic: ++capture_fallbacks; return capture_fallback(key);
    default:
      DGT_THROW(ErrorKind::kUsage,
                "dgt::Gemm: {} is called inside CUDA-graph capture but its family was not {} (GemmOptions::capture_miss "
                "= kError): call dgt::Gemm::warmup for N = {}, K = {} with these types before capturing",
                make_problem(key).label(), warmed ? "warmed up for this M (a kernel or scratch the warm-up did not "
                                                    "prepare is needed)"
                                                  : "warmed up",
                key.n, key.k);
  }
}

}  // namespace dgt
