#include "tune/compile_queue.hpp"

#include <exception>

#include <spdlog/fmt/fmt.h>

#include "core/thread_pool.hpp"
#include "jit/codegen.hpp"
#include "problem/grouped_problem.hpp"
#include "space/grouped_rules.hpp"
#include "space/resource_model.hpp"
#include "tune/interrupt.hpp"

namespace dgt {

CompileResult compile_now(const jit::CubinCache& cache, const EvaluatedSpec& spec) {
  CompileResult r;
  try {
    r.kernel = cache.get_or_compile(jit::generate_gemm(spec.spec, spec.resources));
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

CompileResult compile_grouped_now(const jit::CubinCache& cache, const EvaluatedSpec& spec, GroupKind kind) {
  CompileResult r;
  if (std::string v = grouped_rule_violation(spec.spec.config); !v.empty()) {
    r.error = fmt::format("not compiled: {} breaks a grouped rule: {}", spec.spec.config.key(), v);
    return r;
  }
  try {
    r.kernel = cache.get_or_compile(jit::generate_grouped_gemm(spec.spec, kind, spec.resources));
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

CompileQueue::CompileQueue(const jit::CubinCache& cache, int threads)
    : cache_(cache), pool_(std::make_unique<ThreadPool>(threads)) {}

CompileQueue::~CompileQueue() {
  // A stopped or failed sweep does not wait for its compile queue (a failed lane unwinds through here).
  if (stop_requested() || std::uncaught_exceptions() > 0) pool_->discard_queued();
  pool_.reset();                                  // running compiles finish before the cache goes away
}

int CompileQueue::threads() const { return pool_->size(); }

std::shared_future<CompileResult> CompileQueue::find_or_submit(const EvaluatedSpec& spec, std::optional<GroupKind> kind,
                                                                bool* queued) {
  // A grouped kernel is another cubin than the dense one of the same config: its own key per layout.
  const std::string key = spec.spec.compiled_key() + (kind ? std::string("_") + to_string(*kind) : std::string());
  std::lock_guard<std::mutex> lock(mu_);
  auto it = compiles_.find(key);
  if (queued) *queued = it == compiles_.end();
  if (it != compiles_.end()) return it->second;
  const jit::CubinCache* cache = &cache_;
  auto fut = pool_->submit([cache, spec, kind] {
                     return kind ? compile_grouped_now(*cache, spec, *kind) : compile_now(*cache, spec);
                   }).share();
  compiles_.emplace(key, fut);
  return fut;
}

bool CompileQueue::prepare(const EvaluatedSpec& spec) {
  if (!spec.resources.ok()) return false;  // its trial is kInvalid without a compile
  bool queued = false;
  find_or_submit(spec, std::nullopt, &queued);
  return queued;
}

CompileResult CompileQueue::get(const EvaluatedSpec& spec) {
  if (!spec.resources.ok()) return {std::nullopt, "not compiled: the resource model rejects it"};
  auto fut = find_or_submit(spec, std::nullopt, nullptr);
  try {
    return fut.get();
  } catch (const std::future_error&) {  // discarded by a stop: compile here
    return compile_now(cache_, spec);
  }
}

bool CompileQueue::prepare_grouped(const EvaluatedSpec& spec, GroupKind kind) {
  if (!spec.resources.ok() || !grouped_rule_violation(spec.spec.config).empty()) return false;
  bool queued = false;
  find_or_submit(spec, kind, &queued);
  return queued;
}

CompileResult CompileQueue::get_grouped(const EvaluatedSpec& spec, GroupKind kind) {
  if (!spec.resources.ok()) return {std::nullopt, "not compiled: the resource model rejects it"};
  if (!grouped_rule_violation(spec.spec.config).empty()) return compile_grouped_now(cache_, spec, kind);  // the reason
  auto fut = find_or_submit(spec, kind, nullptr);
  try {
    return fut.get();
  } catch (const std::future_error&) {  // discarded by a stop: compile here
    return compile_grouped_now(cache_, spec, kind);
  }
}

TrialRecord trial_before_launch(const EvaluatedSpec& spec, const Problem& p, const CompileResult& compiled,
                                const std::string& protocol_json) {
  TrialRecord t;
  t.problem = p;
  t.config = spec.spec.config;
  t.protocol = protocol_json;
  t.status = TrialStatus::kOk;
  const ResourceReport& res = spec.resources;
  t.smem_bytes = res.smem.total;
  if (!res.ok()) {
    t.status = TrialStatus::kInvalid;
    t.error = res.rejection;
    return t;
  }
  if (!compiled.kernel) {
    t.status = TrialStatus::kCompileError;
    t.error = compiled.error;
    return t;
  }
  t.compile_ms = compiled.kernel->compile_ms;
  t.registers = compiled.kernel->registers;
  t.spill_bytes = compiled.kernel->spill_bytes;
  if (t.spill_bytes > 0) {
    t.status = TrialStatus::kCompileError;
    t.error = fmt::format("ptxas spills {} bytes (stack {} bytes): the resource model under-counts registers",
                          t.spill_bytes, compiled.kernel->stack_bytes);
  }
  return t;
}

std::optional<TrialRecord> pre_device_trial(const EvaluatedSpec& spec, const Problem& p, const CompileResult& compiled,
                                            const std::string& protocol_json) {
  TrialRecord t = trial_before_launch(spec, p, compiled, protocol_json);
  if (t.status == TrialStatus::kOk) return std::nullopt;
  return t;
}

std::optional<TrialRecord> grouped_pre_device_trial(const EvaluatedSpec& spec, const Problem& p,
                                                    const CompileResult& compiled, const std::string& protocol_json) {
  if (compiled.kernel) return std::nullopt;
  TrialRecord t;
  t.problem = p;
  t.config = spec.spec.config;
  t.protocol = protocol_json;
  t.smem_bytes = spec.resources.smem.total;
  // The statuses the grouped bench gives (tune/device_bench_grouped.cpp): a rule is kInvalid, NVRTC kCompileError.
  const std::string rule = grouped_rule_violation(spec.spec.config);
  t.status = !spec.resources.ok() || !rule.empty() ? TrialStatus::kInvalid : TrialStatus::kCompileError;
  t.error = !spec.resources.ok() ? spec.resources.rejection : !rule.empty() ? rule : compiled.error;
  return t;
}

void note_grouped_compile(TrialRecord& t, const CompileResult& compiled) {
  if (!compiled.kernel) return;
  t.compile_ms = compiled.kernel->compile_ms;
  t.registers = compiled.kernel->registers;
  t.spill_bytes = compiled.kernel->spill_bytes;
}

}  // namespace dgt
