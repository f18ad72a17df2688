// The sweep loop: rank, claim, measure and store every candidate of every shape, resumable and shared
// between processes. Device-free: a Measurer (tune/measurer.hpp) does the measuring.
#pragma once

#include <string>
#include <vector>

#include "db/tuning_db.hpp"
#include "problem/shapes_file.hpp"
#include "tune/measurer.hpp"
#include "tune/sweep_options.hpp"

namespace dgt {

/// One device of a sweep: its own DB connection (SQLite connections are not shared between threads), the
/// scope its trials are stored under (its PCI bus id) and the Measurer that measures on it.
struct SweepLane {
  TuningDb* db;
  DeviceScope scope;
  Measurer* measurer;
};

/// Runs a sweep of `shapes` into `db` under `scope` (TuningSession::sweep with the GPU measurer; tests
/// with a fake). Per shape: enumerate and rank the candidates (estimate_us), cut by the strategy, skip the
/// ones stored earlier (resume), then for each: claim it in the DB (TuningDb::claim_trial with this
/// process as owner), measure, store (the trial replaces the claim in one transaction). A candidate another
/// live sweep claimed is skipped and looked at again after the others: stored by then, or its claim went
/// stale (that process died) and it is measured here; so two sweeps on one DB measure each candidate once
/// and both end with the full set. Baselines missing from the DB are measured first. After each shape its
/// sweep state (candidates, stored, complete) is stored and its winner read back.
/// Stops after the trial in progress once stop_requested() (tune/interrupt.hpp): the current shape's state
/// is stored (incomplete), later shapes are left untouched and their outcomes say incomplete.
/// Throws what the Measurer or the DB throws (a full disk: Error(kSqlite) with SQLite's message); the trial
/// being stored is then rolled back and its claim released when the DB still allows it (a claim left
/// behind belongs to a process that has ended, so the next sweep takes it over).
std::vector<ShapeOutcome> run_sweep(TuningDb& db, const DeviceScope& scope, Measurer& measurer,
                                    const std::vector<ShapeEntry>& shapes, const SweepOptions& options);

/// run_sweep over several devices: the candidates are ranked for lanes[0]'s SM count (the lanes must
/// share one hardware identity) and prepared through lanes[0]'s measurer (lanes share one compile queue);
/// then one thread per lane takes the next unmeasured shape until none is left, the shapes with the most
/// predicted measuring work first (longest-processing-time first: no GPU ends alone on a large shape), so each
/// shape is measured
/// entirely on one GPU (ranking candidates timed on different GPUs would compare GPUs, not configs). The
/// first exception of any lane stops the other lanes after their trial in progress and is rethrown.
std::vector<ShapeOutcome> run_sweep(const std::vector<SweepLane>& lanes, const std::vector<ShapeEntry>& shapes,
                                    const SweepOptions& options);

}  // namespace dgt
