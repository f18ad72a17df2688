// A sweep times each candidate once, one after the other (cold-l2-v1). On a power-limited shape the SM clock moves
// between trials by 30% or more (1425-1966 MHz among the best five of 8192x7168x16384 on one H100; 855-1980 MHz over
// one exhaustive fast sweep on an H200, results/fits/README.md), and the fastest trial is then often the one that ran
// at the highest clock, not the fastest kernel: interleaved rounds (`dgtune compare`) have found such a pick up to 10%
// slower than the stored winner it replaced (results/h200/one-group-clusters-2026-12-06.md; also
// fast-lookahead-2026-12-04.md, sweep-finals-2026-12-04.md, one-group-clusters-2026-12-05.md). This flags such a
// winner so the user confirms it in rounds. It compares with the median of all the shape's trials, not with the
// runners-up: in an exhaustive sweep slow configs at high clocks can raise that median and hide a pick the clock made.
#pragma once

#include <optional>
#include <string>

#include "db/tuning_db_reader.hpp"

namespace dgt {

/// The winner's clock over the median clock of its shape's trials at or above which a sweep warns: above the
/// 1-2% the clock moves between trials of a shape that is not power-limited.
inline constexpr double kClockLeadRatio = 1.08;
/// Fewest clocked trials for a median worth comparing with.
inline constexpr int kClockLeadMinTrials = 4;

/// A warning naming `shape` (its label), the winner's config and both clocks when the winner `w` recorded an SM clock
/// >= kClockLeadRatio x the median of its shape's verified trials (WinnerRow::trials_median_clock_mhz, at least
/// kClockLeadMinTrials of them); nullopt otherwise (no clock recorded, too few trials, or within the ratio).
std::optional<std::string> clock_lead_warning(const WinnerRow& w, const std::string& shape);

}  // namespace dgt
