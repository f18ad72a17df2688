#include "tune/sweep_loop.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "space/cost_model.hpp"
#include "space/resource_model.hpp"
#include "space/grouped_defaults.hpp"
#include "space/grouped_rules.hpp"
#include "tune/claim_owner.hpp"
#include "tune/clock_lead.hpp"
#include "tune/interrupt.hpp"

namespace dgt {

namespace {

/// The measuring-time prediction behind the shape order of a sweep on several GPUs: per candidate a fixed cost
/// (verification, launch overheads, the DB) plus the kernel's estimated time (space/cost_model.hpp) times the
/// samples a cold-L2 measurement typically takes. Only the order matters (H200: about 4 ms per candidate of a small
/// shape, 190 ms per candidate of 8192x7168x16384; results/h200x2/multi-gpu.md).
constexpr double kMeasureOverheadUs = 4000, kSamplesPerCandidate = 50;

/// How often a sweep looks again at candidates another sweep is measuring.
constexpr std::chrono::milliseconds kClaimPoll{50};

/// Releases the claim unless the trial was stored; best effort (the DB may be what failed).
void release_quietly(TuningDb& db, const DeviceScope& scope, const Problem& p, const KernelConfig& c,
                     const std::string& owner, const std::string& protocol_json) {
  try {
    db.release_claim(scope, p, c, owner, protocol_json);
  } catch (const std::exception& e) {
    spdlog::debug("  could not release the claim of {}: {}", c.key(), e.what());
  }
}

}  // namespace

std::string SweepOptions::strategy_label(bool grouped) const {
  if (strategy == Strategy::kModel) return fmt::format("model-top{}", top_k_for(grouped));
  return max_candidates > 0 ? fmt::format("exhaustive-max{}", max_candidates) : "exhaustive";
}

std::vector<ShapeOutcome> run_sweep(const std::vector<SweepLane>& lanes, const std::vector<ShapeEntry>& shapes,
                                    const SweepOptions& opts) {
  if (lanes.empty()) DGT_THROW(ErrorKind::kInternal, "run_sweep without a device");
  TuningDb& db = *lanes[0].db;
  const DeviceScope& scope = lanes[0].scope;
  Measurer& measurer = *lanes[0].measurer;
  const std::string owner = this_process_owner();
  // Everything stored, skipped or claimed is per protocol (schema 7): the measurer's.
  const std::string protocol = measurer.protocol_name(), protocol_json = measurer.protocol_json();
  // 1. Candidates per shape, ranked by the analytic estimate, cut by the strategy; then the compile
  //    queue for all of them in that order, so compilation runs ahead of the device.
  //    Each candidate keeps the resource report the enumeration computed (EvaluatedSpec): the measurer compiles,
  //    records and launches it without evaluating the spec again.
  std::vector<ShapeOutcome> out(shapes.size());
  std::vector<std::vector<KernelConfig>> wanted(shapes.size());
  std::vector<std::vector<EvaluatedSpec>> todo(shapes.size());
  std::vector<double> work_us(shapes.size(), 0.0);  // predicted measuring time of the shape's todo candidates
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem& p = shapes[i].problem;
    out[i].entry = shapes[i];
    out[i].protocol = protocol;
    std::vector<Candidate> ranked = rank_candidates(opts.space, p, measurer.sm_count());
    // A grouped line: the space ranked on its dense view (p's m, n, k are the view's), then what the grouped kernels
    // cannot run (G1-G3, space/grouped_rules.hpp) left out before the strategy's cut, so top-k counts runnable ones.
    if (shapes[i].grouped)
      std::erase_if(ranked, [](const Candidate& c) { return !grouped_rule_violation(c.config).empty(); });
    size_t keep = ranked.size();
    if (opts.strategy == Strategy::kModel)
      keep = std::min<size_t>(keep, std::max(1, opts.top_k_for(shapes[i].grouped.has_value())));
    if (opts.strategy == Strategy::kExhaustive && opts.max_candidates > 0)
      keep = std::min<size_t>(keep, opts.max_candidates);
    const bool cut = keep < ranked.size();
    ranked.resize(keep);
    auto absent = [&ranked](const KernelConfig& c) {
      return std::none_of(ranked.begin(), ranked.end(), [&](const Candidate& r) { return r.config == c; });
    };
    // A dense line the model strategy cut also measures the loader's default config (dgt::default_config, the kernel
    // the loader falls back to without a tuned config) when the cut left it out and it is legal, so a tuned winner is
    // never slower than that fallback. The estimate can be far off for a whole mode: on the H200, before the cost
    // model's block-scale terms, its top 8 for DeepSeek-V3's M >= 4096 block-scaled shapes held only 1g BLOCK_N
    // 136-160 configs, and on 4 of those 14 shapes the default beat all eight (by up to 12%;
    // results/h200/block-defaults-2026-12-04.md). --max-candidates stays a cap: it adds nothing.
    if (!shapes[i].grouped && cut && opts.strategy == Strategy::kModel) {
      const KernelConfig d = default_config(p);
      ResourceReport res = evaluate_resources(KernelSpec::of(d, p));
      if (res.ok() && absent(d)) ranked.push_back(Candidate{d, std::move(res), "loader default", ""});
    }
    // A grouped line also measures the default rule's configs (space/grouped_defaults.hpp) when the cut left them out:
    // the cost model ranks the dense view, and a tuned winner must never be slower than what runs untuned.
    if (shapes[i].grouped)
      for (const KernelConfig& c : grouped_default_configs(*shapes[i].grouped))
        if (absent(c)) ranked.push_back(Candidate{c, evaluate_resources(KernelSpec::of(c, p)), "grouped default", ""});
    out[i].candidates = static_cast<int>(ranked.size());
    const std::set<std::string> stored = db.stored_config_keys(scope, p, protocol);  // one query per shape
    for (Candidate& cand : ranked) {
      const KernelConfig& c = cand.config;
      wanted[i].push_back(c);
      if (stored.count(c.key())) {
        ++out[i].already_stored;
        continue;
      }
      todo[i].push_back(EvaluatedSpec{KernelSpec::of(c, p), std::move(cand.resources)});
      work_us[i] +=
          kMeasureOverheadUs + kSamplesPerCandidate * estimate_us(todo[i].back().spec, p, measurer.sm_count());
    }
  }
  // The order shapes are measured (and compiled) in: the file's with one lane; with several, the most work first
  // (longest-processing-time first), so no GPU is left measuring one large shape alone at the end.
  // A problem listed twice is measured once: with several lanes two GPUs would otherwise take both entries at
  // the same time (the order puts equal work side by side) and, sharing this process's claim owner, measure every
  // candidate twice. Its later entries get the first entry's outcome after the sweep.
  std::vector<size_t> order, repeats;
  std::map<std::string, size_t> first_of;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const bool first = first_of.emplace(shapes[i].problem.key(), i).second;
    (first || lanes.size() == 1 ? order : repeats).push_back(i);
  }
  if (lanes.size() > 1)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return work_us[a] > work_us[b]; });
  int prepared = 0;
  // A grouped shape's candidates are prepared as grouped kernels of its layout (a different cubin than the dense
  // kernel of the same config), so they compile ahead on the same pool.
  for (size_t i : order)
    for (const EvaluatedSpec& c : todo[i])
      prepared += (shapes[i].grouped ? measurer.prepare_grouped(c, shapes[i].grouped->kind) : measurer.prepare(c)) ? 1 : 0;
  spdlog::info("{} shapes, strategy {}, protocol {}; {} kernels to compile", shapes.size(), opts.strategy_label(),
               protocol, prepared);
  for (const SweepLane& lane : lanes) spdlog::info("  measuring on {}", lane.measurer->describe());

  // 2. Measure shape by shape while the measurer keeps preparing ahead; with several lanes (GPUs) each
  //    takes the next shape when it finishes one, so a shape is measured entirely on one GPU.
  std::atomic<bool> failed{false};
  auto stopping = [&] { return stop_requested() || failed.load(); };
  // Progress: shapes started so far and the time since measuring began give the ETA of the rest.
  const auto sweep_t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> started{0};
  auto progress = [&] {
    const size_t k = started++;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_t0).count();
    if (k == 0) return std::string();
    return fmt::format(", elapsed {:.0f} s, ETA {:.0f} s", s, s / double(k) * double(shapes.size() - k));
  };
  auto sweep_shape = [&](size_t i, const SweepLane& lane) {
    TuningDb& db = *lane.db;
    const DeviceScope& scope = lane.scope;
    Measurer& measurer = *lane.measurer;
    const Problem& p = shapes[i].problem;
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    auto out_of_time = [&] { return opts.budget_s > 0 && elapsed() > opts.budget_s; };
    spdlog::info("[{}/{}] {} ({}): {} candidates, {} already stored{}{}", i + 1, shapes.size(), p.label(),
                 shapes[i].where(), out[i].candidates, out[i].already_stored,
                 lanes.size() > 1 ? fmt::format(", on {}", scope.pci_bus_id) : "", progress());
    // A tuned baseline stored before schema 10 (ok, but without its algorithm) is measured again, so the loader gets
    // an algorithm it can replay.
    const std::optional<BaselineRecord> tuned = db.baseline(scope, p, kProviderCublasTuned, protocol);
    const bool tuned_usable = tuned && !(tuned->status == TrialStatus::kOk && tuned->algo_data.empty());
    const bool need_baselines =
        opts.baselines && !(db.has_baseline(scope, p, kProviderCublasDefault, protocol) && tuned_usable);
    if (!todo[i].empty() || need_baselines) {
      if (const std::optional<GroupedProblem>& g = shapes[i].grouped) {
        // The counts are not part of the key: the problem keeps the first sweep's, which its trials measured.
        const std::string stored = db.put_group_rows(p, g->rows_list(), g->rows_text);
        if (stored != g->rows_list())
          spdlog::warn("  {} ({}): the stored trials of this key were measured with other per-group counts ({}); "
                       "this line's ({}) are measured now, for the candidates not stored yet",
                       p.label(), shapes[i].where(), stored.size() > 60 ? stored.substr(0, 60) + "..." : stored,
                       g->rows_text);
        measurer.begin_grouped_shape(*g);
      } else {
        measurer.begin_shape(p);
      }
      if (need_baselines) {
        spdlog::info("  cuBLASLt baselines for {} ({})", p.label(), protocol);
        auto [def, tuned] = measurer.baselines();
        db.put_baseline(scope, def);
        db.put_baseline(scope, tuned);
      }
      std::map<std::string, int> counts;
      // Claims, measures and stores one candidate; false when another live sweep holds it.
      auto attempt = [&](const EvaluatedSpec& candidate) {
        const KernelConfig& c = candidate.spec.config;
        switch (db.claim_trial(scope, p, c, owner, claim_is_stale, protocol_json)) {
          case TuningDb::Claim::kStored: ++out[i].measured_elsewhere; return true;
          case TuningDb::Claim::kBusy: return false;
          case TuningDb::Claim::kClaimed: break;
        }
        TrialRecord t;
        try {
          t = measurer.measure(candidate);
          db.put_trial(scope, t);  // replaces the claim row in one transaction
          // A record timed under another protocol name than the measurer's did not replace the claim
          // (the name is part of the key): drop the claim, or every sweep would wait for it forever.
          if (t.protocol != protocol_json) release_quietly(db, scope, p, c, owner, protocol_json);
        } catch (...) {
          release_quietly(db, scope, p, c, owner, protocol_json);
          throw;
        }
        ++out[i].measured_now;
        ++counts[to_string(t.status)];
        if (t.status == TrialStatus::kOk)
          spdlog::debug("  {} {:.2f} us {:.0f} TFLOPS", c.key(), t.timing->median_us, t.tflops);
        else
          spdlog::warn("  {} {}: {}", c.key(), to_string(t.status), t.error);
        const int n = out[i].measured_now;
        if (n % 50 == 0 || n == static_cast<int>(todo[i].size())) {
          std::string summary;
          for (const auto& [k, v] : counts) summary += fmt::format(" {} {}", k, v);
          spdlog::info("  {}/{} measured:{}", n, todo[i].size(), summary);
        }
        return true;
      };
      std::vector<EvaluatedSpec> busy;  // claimed by another sweep: looked at again after the others
      size_t j = 0;
      for (; j < todo[i].size() && !stopping() && !out_of_time(); ++j)
        if (!attempt(todo[i][j])) busy.push_back(todo[i][j]);
      if (!busy.empty() && !stopping())
        spdlog::info("  {} candidates are being measured by another sweep on this DB: waiting for them", busy.size());
      while (!busy.empty() && !stopping() && !out_of_time()) {
        std::this_thread::sleep_for(kClaimPoll);
        std::erase_if(busy, [&](const EvaluatedSpec& c) { return !stopping() && attempt(c); });
      }
      if (out_of_time())
        spdlog::warn(
            "  budget of {:.0f} s spent after {} of {} candidates: stopping this shape (marked incomplete; "
            "run again to continue)",
            opts.budget_s, out[i].measured_now + out[i].measured_elsewhere, todo[i].size());
    }
    const std::set<std::string> stored_keys = db.stored_config_keys(scope, p, protocol);  // one query per shape
    int stored = 0;
    for (const auto& c : wanted[i]) stored += stored_keys.count(c.key()) ? 1 : 0;
    out[i].complete = stored == out[i].candidates;
    out[i].wall_s = elapsed();
    db.put_sweep_state(scope, p, opts.space.name, opts.strategy_label(shapes[i].grouped.has_value()),
                       SweepState{out[i].candidates, stored, out[i].complete, ""}, protocol);
    out[i].winner = db.winner(scope, p, protocol);
    if (out[i].winner)
      if (auto warning = clock_lead_warning(*out[i].winner, p.label())) spdlog::warn("  {}", *warning);
  };
  if (lanes.size() == 1) {
    for (size_t i = 0; i < shapes.size() && !stopping(); ++i) sweep_shape(i, lanes[0]);
    return out;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  std::vector<std::thread> threads;
  for (const SweepLane& lane : lanes)
    threads.emplace_back([&, lane] {
      try {
        for (size_t n = next++; n < order.size() && !stopping(); n = next++) sweep_shape(order[n], lane);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        failed = true;  // the other lanes stop after their trial in progress
      }
    });
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  for (size_t i : repeats) {  // measured under its first entry
    const ShapeEntry entry = out[i].entry;
    out[i] = out[first_of.at(entry.problem.key())];
    out[i].entry = entry;
    out[i].already_stored += out[i].measured_now + out[i].measured_elsewhere;
    out[i].measured_now = out[i].measured_elsewhere = 0;
  }
  return out;
}

std::vector<ShapeOutcome> run_sweep(TuningDb& db, const DeviceScope& scope, Measurer& measurer,
                                    const std::vector<ShapeEntry>& shapes, const SweepOptions& opts) {
  return run_sweep({SweepLane{&db, scope, &measurer}}, shapes, opts);
}

}  // namespace dgt
