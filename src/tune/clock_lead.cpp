#include "tune/clock_lead.hpp"

#include <fmt/format.h>

namespace dgt {

std::optional<std::string> clock_lead_warning(const WinnerRow& w, const std::string& shape) {
  if (!w.trial.timing || w.clocked_trials < kClockLeadMinTrials || w.trials_median_clock_mhz <= 0) return std::nullopt;
  const double mhz = w.trial.timing->sm_clock_mhz;
  if (!(mhz >= kClockLeadRatio * w.trials_median_clock_mhz)) return std::nullopt;
  return fmt::format("{}: the winner {} ran at {:.0f} MHz, the median of the shape's {} verified trials at {:.0f} MHz "
                     "(x{:.2f}): a single-pass sweep may have picked it for its clock; confirm it against the next "
                     "candidates in interleaved rounds (dgtune compare --config KEY ...)",
                     shape, w.trial.config.key(), mhz, w.clocked_trials, w.trials_median_clock_mhz,
                     mhz / w.trials_median_clock_mhz);
}

}  // namespace dgt
