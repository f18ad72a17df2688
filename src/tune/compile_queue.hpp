// Compiling candidates ahead of the device, and what a candidate's compile decides before any launch.
// One queue serves every device of a sweep: NVRTC needs no GPU, so the parent process compiles while its
// workers measure (src/worker/), and a worker finds the cubin in the shared cache.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "jit/compiler.hpp"
#include "jit/cubin_cache.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"
#include "records/records.hpp"
#include "space/resource_model.hpp"

namespace dgt {

class ThreadPool;

/// A compiled candidate, or why it did not compile (NVRTC's log). Failing to compile is a trial outcome
/// (compile_error), not an exception: the tuner records it and goes on.
struct CompileResult {
  std::optional<jit::CompiledKernel> kernel;
  std::string error;
};

/// Compiles `spec` now through `cache` (a hit when the cubin is stored). Never throws. The generated source
/// embeds the spec's report (EvaluatedSpec): nothing here evaluates the spec again.
CompileResult compile_now(const jit::CubinCache& cache, const EvaluatedSpec& spec);

/// The grouped (MoE) kernel of `spec` for layout `kind` compiled now through `cache`
/// (jit::generate_grouped_gemm(spec.spec, kind, spec.resources): the source KernelCache::get_grouped generates for
/// the same config, so the worker's load of it is a cubin-cache hit). Never throws; a config that breaks a grouped
/// rule (G1-G3) is an empty result naming the rule, without a compile.
CompileResult compile_grouped_now(const jit::CubinCache& cache, const EvaluatedSpec& spec, GroupKind kind);

/// Compiles specs on a thread pool in the order they are prepared; each compiled key (KernelSpec::
/// compiled_key) once, a grouped kernel once per compiled key and layout. Thread-safe: several sweep lanes (one per GPU) wait on it at once. Specs come with
/// their resource report (EvaluatedSpec: a sweep's candidates were evaluated when the space was enumerated),
/// which decides what is compiled; the queue never evaluates a spec.
class CompileQueue {
 public:
  /// `threads` <= 0: all cores. `cache` must outlive the queue.
  CompileQueue(const jit::CubinCache& cache, int threads);
  /// Drops compiles not started when a stop was requested (tune/interrupt.hpp) or an exception is unwinding the
  /// sweep; waits for running ones.
  ~CompileQueue();
  CompileQueue(const CompileQueue&) = delete;
  CompileQueue& operator=(const CompileQueue&) = delete;

  /// Queues `spec` unless its compiled key is queued or done, or the resource model rejects it (its trial is
  /// kInvalid without a compile: pre_device_trial). Returns true when it queued new work.
  bool prepare(const EvaluatedSpec& spec);
  /// The result for `spec`, waiting for it (queued now when it was never prepared; an empty result with
  /// the reason for a spec the resource model rejects).
  CompileResult get(const EvaluatedSpec& spec);
  /// prepare() and get() of the grouped kernel of `spec` for layout `kind` (compile_grouped_now). prepare_grouped
  /// queues nothing (false) for a spec the resource model or a grouped rule (G1-G3) rejects; get_grouped then
  /// returns an empty result with the reason.
  bool prepare_grouped(const EvaluatedSpec& spec, GroupKind kind);
  CompileResult get_grouped(const EvaluatedSpec& spec, GroupKind kind);
  int threads() const;
  const jit::CubinCache& cache() const { return cache_; }

 private:
  /// The compile of `spec` (dense when `kind` is empty, else the grouped kernel of that layout), submitted unless
  /// its key is known; `queued` says whether it was submitted now.
  std::shared_future<CompileResult> find_or_submit(const EvaluatedSpec& spec, std::optional<GroupKind> kind,
                                                   bool* queued);

  const jit::CubinCache& cache_;
  std::unique_ptr<ThreadPool> pool_;
  std::mutex mu_;
  std::map<std::string, std::shared_future<CompileResult>> compiles_;
};

/// The trial record of a candidate as far as it is known before a launch: problem, config, protocol, shared
/// memory, and (compiled) compile time, registers and spills. Its status is kInvalid when the resource model
/// rejects it (space/resource_model.hpp), kCompileError when NVRTC failed or ptxas reports spills, and kOk when it
/// is to be launched (the caller then completes it). Shared memory and the verdict come from spec.resources.
TrialRecord trial_before_launch(const EvaluatedSpec& spec, const Problem& p, const CompileResult& compiled,
                                const std::string& protocol_json);

/// The trial of a candidate that ends before the device is involved (trial_before_launch's, unless kOk): kInvalid when the resource model
/// rejects it (space/resource_model.hpp), kCompileError when NVRTC failed or ptxas reports spills.
/// nullopt when the candidate is to be launched. `protocol_json` is stored with the record.
std::optional<TrialRecord> pre_device_trial(const EvaluatedSpec& spec, const Problem& p, const CompileResult& compiled,
                                            const std::string& protocol_json);

/// The grouped counterpart for a candidate of a grouped shape (p: its keyed problem): kInvalid when the resource
/// model or a grouped rule (G1-G3) rejects the spec, kCompileError when the grouped kernel did not compile (NVRTC's
/// log), the statuses the grouped bench gives; nullopt when it compiled and is to be launched. Spills are not judged here: the grouped bench measures a
/// kernel that compiled, as it did when it compiled the kernel itself.
std::optional<TrialRecord> grouped_pre_device_trial(const EvaluatedSpec& spec, const Problem& p,
                                                    const CompileResult& compiled, const std::string& protocol_json);

/// What the compile of a grouped candidate tells its trial once measured: the NVRTC time, registers and spills
/// of the compile (the bench only saw a cubin-cache load). No-op when `compiled` holds no kernel.
void note_grouped_compile(TrialRecord& t, const CompileResult& compiled);

}  // namespace dgt
