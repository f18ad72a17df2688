// tune/clock_lead.hpp: when a sweep's winner ran at a clock far above its shape's other trials.
#include <gtest/gtest.h>

#include "tune/clock_lead.hpp"

namespace dgt {
namespace {

WinnerRow winner_at(double mhz, double median_mhz, int clocked) {
  WinnerRow w;
  w.trial.status = TrialStatus::kOk;
  w.trial.config.block_n = 160;
  w.trial.timing = Timing{1400.0, 1390.0, 1410.0, 10, 0.01, mhz, false};
  w.trials_median_clock_mhz = median_mhz;
  w.clocked_trials = clocked;
  return w;
}

// The case the warning exists for (8192x7168x16384 promote on an H100: the picked trial at 1966 MHz, the next four at
// 1425-1500 MHz): the message names the shape, the config, both clocks and their ratio.
TEST(ClockLead, WarnsWhenTheWinnerRanFarAboveTheShapesMedianClock) {
  const WinnerRow w = winner_at(1966, 1490, 12);
  const auto msg = clock_lead_warning(w, "8192x7168x16384");
  ASSERT_TRUE(msg.has_value());
  EXPECT_NE(msg->find("8192x7168x16384: the winner " + w.trial.config.key() + " ran at 1966 MHz"), std::string::npos)
      << *msg;
  EXPECT_NE(msg->find("ran at 1966 MHz, 1.32x the 1490 MHz median of the shape's 12 clocked verified trials"),
            std::string::npos)
      << *msg;
  EXPECT_NE(msg->find("dgtune compare --config"), std::string::npos) << *msg;
}

// At and just below the ratio; too few trials; no clock recorded on either side.
TEST(ClockLead, SilentWithinTheRatioOrWithoutEnoughClocks) {
  EXPECT_TRUE(clock_lead_warning(winner_at(1080, 1000, 4), "s").has_value());   // exactly kClockLeadRatio
  EXPECT_FALSE(clock_lead_warning(winner_at(1079, 1000, 4), "s").has_value());
  EXPECT_FALSE(clock_lead_warning(winner_at(1980, 1965, 300), "s").has_value());  // not power-limited
  EXPECT_FALSE(clock_lead_warning(winner_at(1966, 1490, 3), "s").has_value());    // a median of 3 says little
  EXPECT_FALSE(clock_lead_warning(winner_at(0, 1490, 12), "s").has_value());      // the winner recorded no clock
  EXPECT_FALSE(clock_lead_warning(winner_at(1966, 0, 0), "s").has_value());
  WinnerRow untimed = winner_at(1966, 1490, 12);
  untimed.trial.timing.reset();
  EXPECT_FALSE(clock_lead_warning(untimed, "s").has_value());
}

}  // namespace
}  // namespace dgt
