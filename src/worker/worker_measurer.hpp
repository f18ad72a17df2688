// The sweep loop's Measurer (tune/measurer.hpp) backed by a worker process (worker/worker_process.hpp):
// candidates are compiled here, in the parent (one CompileQueue for all devices), and verified and timed in
// the worker. A candidate that kills its worker (a crash, a sticky CUDA error) or hangs is a stored trial
// (crashed / timeout, with the signal or the CUDA error), a new worker is started, and the sweep goes on.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "records/records.hpp"
#include "tune/compile_queue.hpp"
#include "tune/measurer.hpp"
#include "worker/worker_process.hpp"

namespace dgt {

/// Limits of a worker (README, "Crashing and hanging candidates").
struct WorkerLimits {
  /// Start-up: creating the CUDA context, cuBLASLt and the utility module.
  std::chrono::milliseconds start{std::chrono::seconds(120)};
  /// begin_shape (inputs, reference) and the cuBLASLt baselines of one shape.
  std::chrono::milliseconds shape{std::chrono::seconds(900)};
  /// One candidate: the worker's own watchdog ends a hung kernel after candidate_timeout_s (at least 2 s)
  /// or the protocol's watchdog; the parent kills a worker that has not answered after this much plus
  /// the candidate timeout (a worker stuck outside a kernel).
  std::chrono::milliseconds candidate{std::chrono::seconds(120)};
};

class WorkerMeasurer final : public Measurer {
 public:
  /// Starts the first worker now (so a device that cannot be used fails the sweep before anything is
  /// stored); throws what WorkerProcess throws. `compiles` (may be null: no compiling ahead, the worker
  /// compiles) must outlive this. `protocol_name`/`protocol_json` are the worker's (SessionOptions).
  WorkerMeasurer(WorkerCommand command, WorkerLimits limits, CompileQueue* compiles, std::string protocol_name,
                 std::string protocol_json);
  ~WorkerMeasurer() override;

  /// The device the worker measures on (its hello line).
  const DeviceFingerprint& fingerprint() const { return fingerprint_; }
  /// Workers started after the first one (one per crashed or hung candidate).
  int restarts() const { return restarts_; }

  int sm_count() const override { return fingerprint_.sm_count; }
  std::string describe() const override;
  bool prepare(const EvaluatedSpec& spec) override;
  /// Queues the grouped kernel of `spec` on the parent's compile queue (CompileQueue::prepare_grouped).
  bool prepare_grouped(const EvaluatedSpec& spec, GroupKind kind) override;
  void begin_shape(const Problem& p) override;
  /// Sends the grouped problem with every count listed; a restarted worker gets it again. Candidates are then
  /// compiled here as grouped kernels (waiting for the queue's compile; one that fails is a compile_error trial that
  /// never reaches the worker), and the worker loads each from the shared cubin cache.
  void begin_grouped_shape(const GroupedProblem& g) override;
  std::pair<BaselineRecord, BaselineRecord> baselines() override;
  TrialRecord measure(const EvaluatedSpec& candidate) override;
  std::string protocol_name() const override { return protocol_name_; }
  std::string protocol_json() const override { return protocol_json_; }

 private:
  /// A running worker with the current shape's inputs; starts one (and sends the shape) when needed.
  WorkerProcess& ready();
  /// A reply {"ok":false} rethrown here with the worker's error kind.
  [[noreturn]] void rethrow(const nlohmann::json& reply) const;
  /// Ends the current worker after a failure; the next request starts another.
  void drop();

  WorkerCommand command_;
  WorkerLimits limits_;
  CompileQueue* compiles_;
  std::string protocol_name_, protocol_json_;
  std::unique_ptr<WorkerProcess> proc_;
  DeviceFingerprint fingerprint_;
  std::optional<Problem> problem_;
  std::optional<std::string> grouped_text_;  ///< the current grouped shape's text form (counts listed), if any
  GroupKind grouped_kind_ = GroupKind::kContiguous;  ///< its layout (when grouped_text_ is set)
  bool shape_sent_ = false;
  int restarts_ = 0;
};

}  // namespace dgt
