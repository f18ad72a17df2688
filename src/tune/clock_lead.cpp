#include "tune/clock_lead.hpp"

#include <fmt/format.h>

namespace dgt {

std::optional<std::string> clock_lead_warning(const WinnerRow& w, const std::string& shape) {
  if (!w.trial.timing || w.clocked_trials < kClockLeadMinTrials || w.trials_median_clock_mhz <= 0) return std::nullopt;
  const double mhz = w.trial.timing->sm_clock_mhz;
  if (!(mhz >= kClockLeadRatio * w.trials_median_clock_mhz)) return std::nullopt;
  return fmt::format("{}: the winner {} ran at {:.0f} MHz, {:.2f}x the {:.0f} MHz median of the shape's {} clocked "
                     "verified trials: a single-pass sweep may have picked it for its clock; confirm it against the "
                     "next candidates in interleaved rounds (dgtune compare --config KEY ...)",
                     shape, w.trial.config.key(), mhz, mhz / w.trials_median_clock_mhz, w.trials_median_clock_mhz,
                     w.clocked_trials);
}

}  // namespace dgt
