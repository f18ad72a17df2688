// The seam between the sweep loop (tune/sweep_loop.hpp) and the device: what it takes to measure the
// candidates of a shape. The GPU implementation is TuningSession's (tune/session.cpp); CPU tests drive the
// same loop with a deterministic fake (tests/fake/fake_sweep.cpp).
#pragma once

#include <string>
#include <utility>

#include "core/error.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"
#include "records/protocol_name.hpp"
#include "records/records.hpp"
#include "space/resource_model.hpp"

namespace dgt {

/// Measures candidates and baselines of one shape at a time. The loop stores what it returns (one
/// transaction per record); an implementation that finds the device unusable may store the trial itself
/// and throw (TuningSession's ContextLost).
class Measurer {
 public:
  virtual ~Measurer() = default;

  /// SM count the search space is enumerated and ranked for.
  virtual int sm_count() const = 0;
  /// Where the work goes, for the sweep's first log line (e.g. "cache /root/.cache/dgtune").
  virtual std::string describe() const = 0;
  /// Called for every candidate the sweep may measure, in measuring order, before anything is measured:
  /// starts work that can run ahead (compiling). Returns true when that queued new work (the log's count).
  /// A candidate comes with the resource report enumerating the space computed (EvaluatedSpec): measurers
  /// pass it on instead of evaluating the spec again.
  virtual bool prepare(const EvaluatedSpec& spec) = 0;
  /// prepare() for a candidate of a grouped shape of layout `kind`: the grouped kernel of the spec is what may be
  /// compiled ahead (jit::generate_grouped_gemm; a different cubin than the dense kernel). A measurer without a
  /// compile queue keeps this default: nothing queued.
  virtual bool prepare_grouped(const EvaluatedSpec& spec, GroupKind kind) {
    (void)spec;
    (void)kind;
    return false;
  }
  /// Starts problem `p`: called before baselines() and measure() for it (input data, say).
  virtual void begin_shape(const Problem& p) = 0;
  /// Starts grouped problem `g` (a shapes file's grouped line) instead: baselines() then times the per-group
  /// cuBLASLt loop and measure() the grouped kernel of each candidate, whose records carry g.keyed(). The sweep
  /// prepares a grouped shape's candidates with prepare_grouped(), never prepare(). A measurer that cannot
  /// measure grouped problems keeps this default, which throws Error(kUsage).
  virtual void begin_grouped_shape(const GroupedProblem& g) {
    DGT_THROW(ErrorKind::kUsage, "{}: this measurer does not measure grouped problems", g.label());
  }
  /// cuBLASLt default and tuned for the current shape, in that order.
  virtual std::pair<BaselineRecord, BaselineRecord> baselines() = 0;
  /// Verifies and times one candidate of the current shape; any outcome (ok, compile_error, ...) is a
  /// record, not an exception. Its records carry protocol_json() as their protocol.
  virtual TrialRecord measure(const EvaluatedSpec& spec) = 0;
  /// Name of the protocol the records are timed under ("cold-l2-v1", "hot-graph-v1"): the sweep's
  /// resume, claims, baselines and winners are per protocol name (schema 7).
  virtual std::string protocol_name() const { return kSweepTimerProtocol; }
  /// The protocol JSON stored with claims (and, by measure(), with trials); "" = the sweep Timer's.
  virtual std::string protocol_json() const { return ""; }
};

}  // namespace dgt
