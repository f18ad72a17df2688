#include "stats/sample_stats.hpp"

#include <cmath>

#include "stats/stats.hpp"

namespace dgt {

SampleStats sample_stats(const std::vector<double>& v) {
  SampleStats s;
  if (v.empty()) return s;
  s.median = stats::quantile(v, 0.5);
  s.p10 = stats::quantile(v, 0.1);
  s.p90 = stats::quantile(v, 0.9);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - s.median));
  const double sigma = 1.4826 * stats::quantile(dev, 0.5);
  s.rse = s.median > 0 ? 1.2533 * sigma / std::sqrt(double(v.size())) / s.median : 0;
  return s;
}

}  // namespace dgt
