#include "tune/compile_queue.hpp"

#include <exception>

#include <spdlog/fmt/fmt.h>

#include "core/thread_pool.hpp"
#include "jit/codegen.hpp"
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

CompileQueue::CompileQueue(const jit::CubinCache& cache, int threads)
    : cache_(cache), pool_(std::make_unique<ThreadPool>(threads)) {}

CompileQueue::~CompileQueue() {
  // A stopped or failed sweep does not wait for its compile queue (a failed lane unwinds through here).
  if (stop_requested() || std::uncaught_exceptions() > 0) pool_->discard_queued();
  pool_.reset();                                  // running compiles finish before the cache goes away
}

int CompileQueue::threads() const { return pool_->size(); }

std::shared_future<CompileResult> CompileQueue::find_or_submit(const EvaluatedSpec& spec, bool* queued) {
  const std::string key = spec.spec.compiled_key();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = compiles_.find(key);
  if (queued) *queued = it == compiles_.end();
  if (it != compiles_.end()) return it->second;
  const jit::CubinCache* cache = &cache_;
  auto fut = pool_->submit([cache, spec] { return compile_now(*cache, spec); }).share();
  compiles_.emplace(key, fut);
  return fut;
}

bool CompileQueue::prepare(const EvaluatedSpec& spec) {
  if (!spec.resources.ok()) return false;  // its trial is kInvalid without a compile
  bool queued = false;
  find_or_submit(spec, &queued);
  return queued;
}

CompileResult CompileQueue::get(const EvaluatedSpec& spec) {
  if (!spec.resources.ok()) return {std::nullopt, "not compiled: the resource model rejects it"};
  auto fut = find_or_submit(spec, nullptr);
  try {
    return fut.get();
  } catch (const std::future_error&) {  // discarded by a stop: compile here
    return compile_now(cache_, spec);
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

}  // namespace dgt
