// Interleaved rounds: K sides (our kernel, cuBLASLt default, cuBLASLt tuned, candidates ...) each
// sampled once per round, for a fixed number of rounds, so that drift and clock changes hit all
// sides alike and side X and side Y of the same round can be paired (stats/stats.hpp).
//
// This file is the host-only half of the engine: the round order, the bookkeeping of samples, the
// clock flags and the per-side summaries. It drives a SampleSource; bench/device_sides.hpp is the
// GPU one, unit tests use a fake.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/side_order.hpp"
#include "stats/sample_stats.hpp"
#include "records/records.hpp"

namespace dgt {

/// The order of the K sides in round `round` (0-based): a Williams design, i.e. the rows of a
/// balanced Latin square. Row 0 is 0, 1, K-1, 2, K-2, ...; row r is row 0 plus r (mod K); for odd
/// K the rows K..2K-1 are rows 0..K-1 reversed. Over one period (round_order_period(K) rounds)
/// every side is at every position equally often AND follows every other side equally often, so
/// neither "who goes first" nor "who ran just before" (L2 contents, clock) favours a side. The
/// rows are rotations of each other (plus their mirrors for odd K). K = 1: {0}; K = 2: 01, 10, ...
std::vector<int> round_order(int sides, int round);
/// K for even K, 2K for odd K (1 for K = 1).
int round_order_period(int sides);

/// One timed sample as a SampleSource returns it.
struct RawSample {
  double time_us = 0;       ///< time of one launch (hot-graph: replay time / graph launches)
  double sm_clock_mhz = 0;  ///< SM clock probed right after the sample; <= 0 = unknown (never flagged)
};

/// What the round runner drives: K sides that can each be sampled once at a time.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual int side_count() const = 0;
  virtual std::string side_label(int side) const = 0;
  /// Everything untimed before round 0: warm-up launches of every side (hot-graph: then capture).
  virtual void prepare() = 0;
  /// Takes one sample of each side listed in `order` (a permutation of 0..K-1), back to back in
  /// that order; returns them in the same order (result[i] is side order[i]).
  virtual std::vector<RawSample> run_round(std::span<const int> order) = 0;
};

/// One recorded sample.
struct Sample {
  int side = 0;
  int round = 0;
  int position = 0;  ///< place of the side in its round's order (0 = ran first)
  double time_us = 0;
  double sm_clock_mhz = 0;
  bool flagged = false;  ///< clock known and below the floor (RoundsOptions)
};

/// One side's samples summarised, with and without the flagged ones.
struct SideSummary {
  std::string label;
  int samples = 0;
  int flagged = 0;
  SampleStats all;                       ///< over every sample (rse as sample_stats computes it)
  std::optional<SampleStats> unflagged;  ///< over the samples not flagged; empty when every one is flagged
  double median_clock_mhz = 0;           ///< over the samples with a known clock (0 if none)
  double min_clock_mhz = 0;              ///< lowest known clock (0 if none)
  /// Post-run check of the output (bench/device_sides.hpp: verify after replay); empty when not run.
  std::optional<Verification> check;

  /// As a Timing record (median/p10/p90/rse from `all`, or from `unflagged` when drop_flagged and
  /// any remain); sm_clock_mhz = median clock; throttled = any sample flagged.
  Timing timing(bool drop_flagged = false) const;
};

struct RoundsOptions {
  int rounds = 20;
  double reference_clock_mhz = 0;  ///< the device's max (default) SM clock; 0 = unknown: flag nothing
  double clock_floor = 0.75;       ///< flag a sample when 0 < clock < clock_floor x reference
  SideOrder order = SideOrder::kWilliams;  ///< the order of the sides in each round (bench/side_order.hpp)
};

/// Round-aligned times of two sides (input of stats::compare_paired).
struct PairedTimes {
  std::vector<int> rounds;         ///< the rounds kept
  std::vector<double> x_us, y_us;  ///< x_us[i], y_us[i]: the two sides' times in round rounds[i]
};

/// Everything one run of the engine measured.
struct RoundsResult {
  std::string protocol;  ///< MeasureProtocol::to_json() (empty when the runner was used bare)
  int rounds = 0;
  double reference_clock_mhz = 0;
  double clock_floor_mhz = 0;       ///< clock_floor x reference (0: nothing could be flagged)
  std::vector<std::string> labels;  ///< labels[side]
  std::vector<Sample> samples;      ///< in the order they ran: round by round, position by position
  std::vector<SideSummary> sides;   ///< sides[side]

  int side_count() const { return static_cast<int>(labels.size()); }
  /// Whether a sample at `sm_clock_mhz` is flagged: its clock is known (> 0) and below clock_floor_mhz (when set).
  bool below_clock_floor(double sm_clock_mhz) const {
    return clock_floor_mhz > 0 && sm_clock_mhz > 0 && sm_clock_mhz < clock_floor_mhz;
  }
  /// The sample of `side` in `round`, or nullptr when there is none (e.g. samples read back from a
  /// DB after an interrupted run). O(K) when samples are round-major as run_rounds stores them.
  const Sample* find_sample(int round, int side) const;
  /// Same, throwing Error(kInternal) when there is no such sample.
  const Sample& at(int round, int side) const;
  /// Index of the side with this label, or -1.
  int find(const std::string& label) const;
  /// The times of one side in round order (without the flagged ones when drop_flagged).
  std::vector<double> side_times(int side, bool drop_flagged = false) const;
  /// Times of sides x and y round by round; rounds where either side has no sample, and with
  /// drop_flagged rounds where either is flagged, are left out. Throws Error(kInternal) on a bad
  /// side index.
  PairedTimes paired(int x, int y, bool drop_flagged = false) const;
  /// {"protocol": {...}, "rounds", "reference_clock_mhz", "clock_floor_mhz",
  ///  "sides": [{"label", "samples", "flagged", "median_us", "p10_us", "p90_us",
  ///             "unflagged": {"median_us", "p10_us", "p90_us"} | null, "median_clock_mhz", ...}],
  ///  "samples": [{"side", "round", "position", "time_us", "sm_clock_mhz", "flagged"}]}
  std::string to_json() const;
};

/// Fills r.sides from r.labels and r.samples (flags as stored). With run_rounds' fields set by hand
/// (protocol, rounds, clock floor, labels, samples), this rebuilds a result from stored samples.
void summarise(RoundsResult& r);

/// The round runner: prepare(), then opts.rounds rounds in side_order(opts.order, ...) (Williams by default); flags each sample
/// against the clock floor and summarises per side. Exceptions of the source propagate.
RoundsResult run_rounds(SampleSource& source, const RoundsOptions& opts);

}  // namespace dgt
