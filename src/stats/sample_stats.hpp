// The summary every timer stores with a sample of times: median, p10, p90 and the median's robust relative
// standard error. Pure CPU; built on the one quantile definition of stats/stats.hpp.
#pragma once

#include <vector>

namespace dgt {

/// Robust statistics of a sample of times (microseconds).
struct SampleStats {
  double median = 0, p10 = 0, p90 = 0;  ///< stats::quantile at 0.5, 0.1 and 0.9 (Hyndman-Fan definition 7)
  /// 1.2533 x (1.4826 x MAD) / sqrt(n) / median: the standard error of the median relative to it, from the
  /// median absolute deviation (robust to outliers); 0 when the median is not positive.
  double rse = 0;
};

/// The summary of `samples_us`. An empty sample gives all zeros. Throws Error(kInvalid) on a NaN.
SampleStats sample_stats(const std::vector<double>& samples_us);

}  // namespace dgt
