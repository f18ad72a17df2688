// The worker side of the worker process (wire format in worker/wire.hpp): a loop that reads requests on
// one pipe and answers on another, measuring with a WorkerBackend. `dgtune worker` runs it with the GPU
// backend (worker/gpu_backend.hpp); CPU tests run it with a fake (tests/fake/fake_worker.cpp).
#pragma once

#include <utility>

#include "core/error.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"
#include "records/records.hpp"

namespace dgt {

/// What a worker measures with: one device and its input data of one shape at a time.
class WorkerBackend {
 public:
  virtual ~WorkerBackend() = default;
  /// The device, sent to the parent in the hello line (its hardware identity and PCI bus id key the trials).
  virtual DeviceFingerprint fingerprint() const = 0;
  virtual void begin_shape(const Problem& p) = 0;
  /// A grouped shape (the begin_shape request with "grouped"); the default refuses it with Error(kUsage).
  virtual void begin_grouped_shape(const GroupedProblem& g) {
    DGT_THROW(ErrorKind::kUsage, "{}: this worker does not measure grouped problems", g.label());
  }
  virtual std::pair<BaselineRecord, BaselineRecord> baselines() = 0;
  /// One candidate of the current shape; any outcome is a record. After a record whose context_lost() is
  /// true the worker answers and exits.
  virtual TrialRecord measure(const KernelSpec& spec) = 0;
  virtual bool context_lost() const = 0;
};

/// Sends the hello line, then serves requests from `in_fd`, answering on `out_fd`, until "quit", the end of
/// the input (the parent died: exit quietly) or a lost context. An exception of one request is answered as
/// {"ok":false,...} and the loop goes on. Returns the process exit code (0).
int serve_worker(WorkerBackend& backend, int in_fd, int out_fd);

/// Sends {"ok":false,...} for an error that happened before the backend existed (e.g. the device is not
/// sm_90), in place of the hello line. Returns 1 (the worker's exit code).
int refuse_worker_start(int out_fd, const std::exception& e);

}  // namespace dgt
