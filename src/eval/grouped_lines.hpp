// A shapes file's grouped (MoE) lines in `dgtune compare` and `dgtune gate`: each line measured with what
// dgt::GroupedGemm would run for its run-time key (the tuning DB's grouped winner by the loader's own rule,
// loader/grouped_choice.hpp over loader/grouped_lookup.hpp, else the default rule), against the per-group cuBLASLt loop
// (eval/grouped_measure.hpp). The choice is GPU-free (GroupedChooser); the measurement is not.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/measure_protocol.hpp"
#include "db/tuning_db_reader.hpp"
#include "eval/grouped_measure.hpp"
#include "loader/grouped_choice.hpp"
#include "problem/shapes_file.hpp"
#include "records/records.hpp"

namespace dgt {

/// dgt::GroupedGemm's choice for the grouped lines of one run, from a read-only tuning DB, for one hardware identity
/// and software environment: the same lookup (grouped_lookup) and rule (resolve_grouped_problem) the loader runs.
class GroupedChooser {
 public:
  /// `db_path`: the tuning DB, opened read-only when the file exists (never created); a missing file means the default
  /// rule for every line. `protocol`: the kind being measured, whose winners are preferred (GroupedGemmOptions::
  /// protocol); isolated-v1 has no winners of its own and takes cold-l2's, as the dense compare does. Throws
  /// Error(kSqlite) for a damaged, foreign or other-schema DB.
  GroupedChooser(const std::string& db_path, const HardwareIdentity& hardware, const SoftwareEnv& env,
                 ProtocolKind protocol);
  ~GroupedChooser();

  /// True when the DB holds trials of this hardware identity (else every line takes the default rule).
  bool has_device() const { return has_device_; }
  /// What dgt::GroupedGemm runs for g's key: GroupedResolved::choice.source is "db", "db-other-protocol", "ladder",
  /// "nearest", "ladder-other-protocol", "nearest-other-protocol" or "default"; its problem is `g` (with its counts).
  /// Throws Error(kInvalid) when the default rule's config cannot run g (a bug: the rule must cover every problem).
  GroupedResolved choose(const GroupedProblem& g) const;

 private:
  std::unique_ptr<TuningDbReader> db_;
  HardwareIdentity hardware_;
  SoftwareEnv env_;
  std::string protocol_kind_;
  bool has_device_ = false;
};

/// Refuses every grouped line of `shapes` for an option that does not apply to grouped lines: Error(kUsage)
/// "FILE:LINE: a grouped (MoE) line: FLAG REASON" naming the first one (a line read from a gate baseline is named by
/// its file and index instead). Nothing is refused when there is no grouped line.
void refuse_grouped_lines(const std::vector<ShapeEntry>& shapes, const std::string& flag, const std::string& reason);

/// One grouped line measured now: choose (GroupedChooser), then measure (GroupedMeasurer, with the dense side when
/// `dense`). The result carries the line's name, the config, its source and tuned key. A line that cannot be measured
/// (a kernel that does not build, cuBLASLt refusing a group: any dgt::Error but a CUDA or driver one) comes back with
/// its note and no rounds; a wrong output after the rounds comes back measured, with a note (status() says which).
/// CUDA and driver errors (a lost context) are thrown.
GroupedCompareShape measure_grouped_line(GroupedMeasurer& measurer, const GroupedChooser& chooser,
                                         const ShapeEntry& line, bool dense);

}  // namespace dgt
