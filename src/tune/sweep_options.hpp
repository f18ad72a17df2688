// What a sweep is asked to do (SweepOptions) and what it did per shape (ShapeOutcome): shared by the sweep
// loop (tune/sweep_loop.hpp), TuningSession and the CLI.
#pragma once

#include <optional>
#include <string>

#include "db/tuning_db.hpp"
#include "problem/shapes_file.hpp"
#include "space/search_space.hpp"

namespace dgt {

/// How a sweep chooses what to measure. Candidates are always measured in estimate_us order (most
/// promising first), so a time budget spends itself on the likely winners.
enum class Strategy {
  kExhaustive,  ///< every kept candidate of the space (capped by max_candidates when set)
  kModel,       ///< only the top_k candidates by the analytic estimate
};

struct SweepOptions {
  SearchSpace space = SearchSpace::builtin_default();
  Strategy strategy = Strategy::kExhaustive;
  /// kModel: how many candidates to measure; a dense line the cut shortened also measures the loader's default config
  /// (dgt::default_config) when it is not among them, a grouped line its default rule's configs.
  int top_k = 16;
  /// kModel: how many candidates to measure for a grouped (MoE) line; 0 = top_k. Grouped kernels take NVRTC several
  /// times as long as dense ones, and the masked lines of one role are ranked on one dense view (G x M_max rows), so
  /// every ladder point of a role gets the same candidates.
  int grouped_top_k = 0;
  int max_candidates = 0;  ///< kExhaustive: 0 = all, else the best N by estimate_us
  double budget_s = 0;     ///< per shape: stop measuring after this many seconds (0 = no limit)
  bool baselines = true;   ///< measure cuBLASLt default and tuned

  /// Candidates a kModel sweep measures per shape: grouped_top_k (when set) for a grouped line, else top_k.
  int top_k_for(bool grouped) const { return grouped && grouped_top_k > 0 ? grouped_top_k : top_k; }
  /// Label stored with the sweep state: "exhaustive", "exhaustive-max64", "model-top16" (a grouped line's with
  /// top_k_for(true)).
  std::string strategy_label(bool grouped = false) const;
};

/// What a sweep did for one shape.
struct ShapeOutcome {
  ShapeEntry entry;
  int candidates = 0;          ///< after pruning and the strategy's selection
  std::string protocol;        ///< protocol name the shape was tuned under ("cold-l2-v1", "hot-graph-v1")
  int measured_now = 0;        ///< trials stored by this run
  int already_stored = 0;      ///< skipped: stored earlier for this device, software environment and protocol
  int measured_elsewhere = 0;  ///< stored meanwhile by another sweep sharing the DB (claimed by it)
  bool complete = false;       ///< every candidate has a stored trial (false when the budget ran out or it was stopped)
  double wall_s = 0;           ///< time spent on this shape in this run (measuring, not compiling ahead)
  std::optional<WinnerRow> winner;  ///< from the DB after the sweep, of `protocol` (baselines included)
};

}  // namespace dgt
