#include "eval/shape_compare.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <chrono>
#include <future>
#include <set>
#include <tuple>

#include "bench/copy_limit_side.hpp"
#include "bench/device_sides.hpp"
#include "bench/problem_data.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/paths.hpp"
#include "core/thread_pool.hpp"
#include "launch/environment.hpp"
#include "loader/choice.hpp"
#include "space/cost_model.hpp"

namespace dgt {

namespace {
std::string verification_text(const Verification& v) {
  return fmt::format("max_rel_err {:.3g}, diff {:.3g}, {} NaN/Inf, {} written outside D", v.max_rel_err, v.diff,
                     v.nan_count, v.pad_touched) +
         epilogue_failure_text(v);
}
}  // namespace

ShapeComparer::ShapeComparer(ShapeCompareOptions options) : options_(std::move(options)) {
  options_.protocol.validate();
  device_ = open_sm90_device(options_.device);
  fingerprint_ = make_fingerprint(device_);
  if (!options_.db_path.empty() && std::filesystem::exists(options_.db_path)) {
    db_ = std::make_unique<TuningDbReader>(options_.db_path);
    device_id_ = db_->find_hardware(fingerprint_.hardware());
  }
  if (!device_id_)
    spdlog::warn("no winners of this device in '{}': every shape runs the default config", options_.db_path);
  cache_ = std::make_unique<jit::CubinCache>(usable_cache_dir(options_.cache_dir));
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  util_ = std::make_unique<UtilKernels>(*cache_, device_.sm_count);
  cublas_ = std::make_unique<CublasLtBaseline>();
  kernels_ = std::make_unique<KernelCache>(*cache_, device_.sm_count);
}

ShapeComparer::~ShapeComparer() {
  kernels_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

std::pair<KernelConfig, std::string> ShapeComparer::choose(const Problem& p) const {
  if (db_ && device_id_) {
    const SoftwareEnv env = fingerprint_.software();
    // The protocol being measured picks the winners: `compare --protocol hot-graph` runs what
    // dgt::Gemm with GemmOptions::protocol = "hot-graph" runs.
    // isolated-v1 has no winners of its own (nothing is tuned or stored under it): it runs the cold-l2 winner.
    const ProtocolKind kind =
        options_.protocol.kind == ProtocolKind::kIsolated ? ProtocolKind::kColdL2 : options_.protocol.kind;
    const std::vector<EnvironmentWinner> winners = db_->environment_winners(*device_id_, p);
    auto w = choose_stored_winner(winners, p, env.kernel_hash, env.key(), to_string(kind), legal_for_current_kernel);
    // Between two tuned M, dgt::Gemm's re-rank of the neighbours' configs (loader/choice.hpp rerank_ladder).
    if (w && w->source == "ladder") {
      const std::vector<std::string> allowed =
          tuned_m_choices(winners, p, env.kernel_hash, env.key(), to_string(kind), legal_for_current_kernel);
      w = rerank_ladder(*w, p, ladder_trials(db_->family_trials(*device_id_, p), allowed),
                        analytic_estimate(fingerprint_.sm_count), legal_for_current_kernel);
    }
    if (w) return {w->config, w->source};
  }
  return {default_config(p), "default"};
}

void ShapeComparer::prefetch(const std::vector<ShapeEntry>& shapes) {
  std::vector<KernelSpec> specs;
  std::set<std::string> seen;
  auto want = [&](const KernelConfig& c, const Problem& p) {
    const KernelSpec spec = KernelSpec::of(c, p);
    try {
      (void)KernelCache::require_legal(spec);
    } catch (const Error&) {
      return;  // measure() reports it
    }
    if (seen.insert(spec.compiled_key()).second) specs.push_back(spec);
  };
  for (const ShapeEntry& e : shapes) {
    if (options_.search_top_k == 0) want(choose(e.problem).first, e.problem);
    for (const KernelConfig& c : options_.extra_configs) want(c, e.problem);
  }
  if (specs.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  ThreadPool pool(0);
  for (auto& f : compile_ahead(*cache_, specs, pool)) {
    try {
      f.get();
    } catch (const std::exception&) {
    }
  }
  spdlog::info("compiled {} kernels ahead on {} threads in {:.1f} s", specs.size(), pool.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

std::pair<KernelConfig, std::string> ShapeComparer::search(const Problem& p, ProblemData& data) {
  const size_t k = size_t(std::max(1, options_.search_top_k));
  const std::vector<KernelConfig> ranked = rank_by_estimate(SearchSpace::builtin_default(), p, device_.sm_count, k);
  // NVRTC runs on all cores (the cubin cache publishes each key once); loading then happens on this
  // thread, whose CUDA context is the device's.
  std::vector<KernelSpec> specs;
  for (const KernelConfig& c : ranked) specs.push_back(KernelSpec::of(c, p));
  ThreadPool pool(int(specs.size()));
  std::vector<std::future<jit::CompiledKernel>> compiled = compile_ahead(*cache_, specs, pool);
  const jit::GemmOperands ops = data.operands();
  std::vector<std::pair<std::shared_ptr<jit::GemmKernel>, jit::GemmWorkspace>> ready;
  std::vector<Side> sides;
  for (size_t i = 0; i < ranked.size(); ++i) {
    try {
      auto kernel = kernels_->get(KernelSpec::of(ranked[i], p), compiled[i].get());
      const jit::GemmWorkspace ws = kernels_->dedicated_workspace(*kernel, p);
      data.poison_output(stream_);
      kernel->launch(p, ops, stream_, &ws);
      const Verification v = data.verify(stream_);
      if (!v.ok) {
        spdlog::warn("{}: search candidate {} left out: {}", p.label(), ranked[i].key(), verification_text(v));
        continue;
      }
      ready.emplace_back(std::move(kernel), ws);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kDriver) throw;
      spdlog::warn("{}: search candidate {} left out: {}", p.label(), ranked[i].key(), e.message());
    } catch (const std::exception& e) {  // the compile's own exception, rethrown by future::get
      spdlog::warn("{}: search candidate {} left out: {}", p.label(), ranked[i].key(), e.what());
    }
  }
  if (ready.empty())
    DGT_THROW(ErrorKind::kInvalid, "{}: none of the model's top {} candidates builds and verifies", p.label(), k);
  for (const auto& [kernel, ws] : ready) {
    const jit::GemmKernel* kp = kernel.get();
    const jit::GemmWorkspace* wp = &ws;
    sides.push_back({kernel->spec().config.key(), [&p, ops, kp, wp](cudaStream_t s) { kp->launch(p, ops, s, wp); }});
  }
  MeasureProtocol screen = options_.protocol;
  screen.rounds = options_.screen_rounds;
  const RoundsResult r = measure_sides(*util_, device_, screen, stream_, sides, nullptr);
  size_t best = 0;
  for (size_t i = 1; i < r.sides.size(); ++i)
    if (r.sides[i].all.median < r.sides[best].all.median) best = i;
  spdlog::info("{}: search over the model's top {}: {} ({:.2f} us; {} verified)", p.label(), k,
               r.sides[best].label, r.sides[best].all.median, ready.size());
  return {ready[best].first->spec().config, fmt::format("search-top{}", k)};
}

std::vector<AlignedRound> aligned_rounds(const ShapeMeasurement& m) {
  std::vector<AlignedRound> out;
  if (!m.rounds) return out;
  const RoundsResult& r = *m.rounds;
  const int tuned = r.find(kProviderCublasTuned), def = r.find(kProviderCublasDefault);
  for (int round = 0; round < r.rounds; ++round) {
    AlignedRound a;
    a.round = round;
    a.ours = r.find_sample(round, 0);
    a.tuned = tuned >= 0 ? r.find_sample(round, tuned) : nullptr;
    a.def = def >= 0 ? r.find_sample(round, def) : nullptr;
    if (!a.ours || (tuned >= 0 && !a.tuned) || (def >= 0 && !a.def)) continue;
    out.push_back(a);
  }
  return out;
}

ShapeMeasurement ShapeComparer::measure(const ShapeEntry& shape, const MeasureAdditions& additions) {
  const Problem& p = shape.problem;
  ShapeMeasurement rec;
  rec.problem = p;
  rec.name = shape.name;
  auto fail = [&](const char* status, std::string msg) {
    rec.status = status;
    rec.error = std::move(msg);
    spdlog::warn("{} {}: {}", p.label(), status, rec.error);
    return rec;
  };
  // The rounds ran: keep them, then the shape fails when no round holds every GEMM side.
  auto finish = [&](RoundsResult r) {
    rec.rounds = std::move(r);
    if (aligned_rounds(rec).empty()) return fail("error", "no complete round was measured");
    return rec;
  };
  ProblemData data(p, *util_, options_.seed ^ fnv1a64(p.key()), stream_);
  KernelConfig config;
  std::string source;
  if (additions.config) {
    std::tie(config, source) = *additions.config;
  } else if (options_.search_top_k > 0) {
    try {
      std::tie(config, source) = search(p, data);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kDriver) throw;
      return fail("verify_failed", e.message());
    }
  } else {
    std::tie(config, source) = choose(p);
  }
  rec.config_key = config.key();
  rec.config_source = source;
  std::shared_ptr<jit::GemmKernel> kernel;
  try {
    kernel = kernels_->get(KernelSpec::of(config, p));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kDriver) throw;
    return fail("error", "config " + rec.config_key + " cannot be built: " + e.message());
  }
  const jit::GemmWorkspace ws = kernels_->dedicated_workspace(*kernel, p);  // before any capture, never reallocated
  const jit::GemmOperands ops = data.operands();
  // Verification before timing.
  data.poison_output(stream_);
  kernel->launch(p, ops, stream_, &ws);
  const Verification v = data.verify(stream_);
  if (!v.ok) return fail("verify_failed", "config " + rec.config_key + " before timing: " + verification_text(v));
  // The caller's sides: verified before timing like the kernel (this first call also does their first-use work, e.g.
  // dgt::Gemm's lookup and workspace, before any capture).
  std::vector<Side> added;
  for (const DataSide& d : additions.sides) {
    try {
      data.poison_output(stream_);
      d.launch(data, stream_);
      const Verification dv = data.verify(stream_);
      if (!dv.ok) return fail("verify_failed", d.label + " before timing: " + verification_text(dv));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kDriver) throw;
      return fail("error", d.label + ": " + e.message());
    }
    added.push_back({d.label, [&data, f = d.launch](cudaStream_t s) { f(data, s); }});
  }
  // A failure of the kernel or of a caller's side after the rounds fails the shape; an extra config's does not.
  using Failure = std::optional<std::pair<const char*, std::string>>;  // {status, error}
  auto check_failure = [&](const RoundsResult& r, size_t gemm_sides) -> Failure {
    if (r.sides[0].check && !r.sides[0].check->ok)
      return std::pair{"verify_failed",
                       "config " + rec.config_key + " after replay: " + verification_text(*r.sides[0].check)};
    for (size_t i = 1; i < gemm_sides && i < r.sides.size(); ++i)
      if (r.sides[i].check && !r.sides[i].check->ok) {
        const bool ours = i + added.size() >= gemm_sides;  // the caller's sides come last among the GEMM sides
        return std::pair{ours ? "verify_failed" : "error",
                         r.sides[i].label + " output wrong after replay: " + verification_text(*r.sides[i].check)};
      }
    return std::nullopt;
  };

  CublasLtPlan plan(*cublas_, data);
  rec.heuristic_count = plan.returned();
  if (!plan.supported()) {
    // cuBLASLt does not run this shape (FP8 needs dimensions that are multiples of 16): our kernel is
    // still measured, alone, so the gate can judge it on absolute time; compare lists it without a ratio.
    rec.tuned_algo = "unsupported: " + plan.error();
    spdlog::info("{}: cuBLASLt refuses the problem ({}); measuring dgtune alone", p.label(), plan.error());
    std::vector<Side> alone = {{"dgtune", [&](cudaStream_t s) { kernel->launch(p, ops, s, &ws); }}};
    alone.insert(alone.end(), added.begin(), added.end());
    std::optional<CopyLimitSide> copy;
    if (options_.copy_limit) {
      copy.emplace(*util_, p, device_.sm_count, ops);
      alone.push_back(copy->side());
    }
    OutputCheck check{[&](cudaStream_t s) { data.poison_output(s); }, [&](cudaStream_t s) { return data.verify(s); }};
    RoundsResult r = measure_sides(*util_, device_, options_.protocol, stream_, alone, &check);
    if (const auto failed = check_failure(r, 1 + added.size())) {
      rec.rounds = std::move(r);
      return fail(failed->first, failed->second);
    }
    return finish(std::move(r));
  }
  const CublasLtChoice choice = select_algorithms(plan, screen_timer(*util_, device_, options_.protocol, stream_, 3),
                                                  options_.protocol.to_json(), stream_);
  if (choice.tuned_algo < 0) return fail("error", "no cuBLASLt algorithm verified: " + choice.tuned.error);
  rec.tuned_algo = choice.tuned.algo;
  const bool with_default = options_.cublas_default && choice.default_algo >= 0;
  if (with_default) rec.default_algo = choice.def.algo;

  std::vector<Side> sides = {{"dgtune", [&](cudaStream_t s) { kernel->launch(p, ops, s, &ws); }},
                             {kProviderCublasTuned, plan.launcher(choice.tuned_algo)}};
  if (with_default) sides.push_back({kProviderCublasDefault, plan.launcher(choice.default_algo)});
  sides.insert(sides.end(), added.begin(), added.end());
  // Extra configs: built, given their own split-K scratch and verified before any timing.
  std::vector<std::pair<std::shared_ptr<jit::GemmKernel>, jit::GemmWorkspace>> extra;
  for (const KernelConfig& c : options_.extra_configs) {
    try {
      auto k = kernels_->get(KernelSpec::of(c, p));
      const jit::GemmWorkspace w = kernels_->dedicated_workspace(*k, p);
      data.poison_output(stream_);
      k->launch(p, ops, stream_, &w);
      const Verification ev = data.verify(stream_);
      if (!ev.ok) {
        spdlog::warn("{}: extra config {} left out: it does not verify ({})", p.label(), c.key(),
                     verification_text(ev));
        continue;
      }
      extra.emplace_back(std::move(k), w);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kDriver) throw;
      spdlog::warn("{}: extra config {} left out: {}", p.label(), c.key(), e.message());
    }
  }
  for (const auto& [k, w] : extra) {
    const jit::GemmKernel* kp = k.get();
    const jit::GemmWorkspace* wp = &w;
    sides.push_back({k->spec().config.key(), [&p, &ops, kp, wp](cudaStream_t s) { kp->launch(p, ops, s, wp); }});
  }
  // The copy limit last, so the extra configs keep their indices (standard_sides below).
  std::optional<CopyLimitSide> copy;
  if (options_.copy_limit) {
    copy.emplace(*util_, p, device_.sm_count, ops);
    sides.push_back(copy->side());
  }
  OutputCheck check{[&](cudaStream_t s) { data.poison_output(s); }, [&](cudaStream_t s) { return data.verify(s); }};
  RoundsResult r = measure_sides(*util_, device_, options_.protocol, stream_, sides, &check);

  const size_t standard_sides = (with_default ? 3 : 2) + added.size();
  if (const auto failed = check_failure(r, standard_sides)) {
    rec.rounds = std::move(r);
    return fail(failed->first, failed->second);
  }
  for (size_t i = standard_sides; i < r.sides.size(); ++i)
    if (r.sides[i].check && !r.sides[i].check->ok)  // an extra config: reported in its own row (check column)
      spdlog::warn("{}: extra config {} output wrong after replay: {}", p.label(), r.sides[i].label,
                   verification_text(*r.sides[i].check));
  return finish(std::move(r));
}

}  // namespace dgt
