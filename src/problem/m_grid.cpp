#include "problem/m_grid.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "core/error.hpp"
#include "problem/model_gemms.hpp"

namespace dgt {

namespace {

constexpr int kOctaves = 14;     ///< [1, 2) .. [8192, 16384): the ladder's range, 1 to 16384
constexpr int kMaxRedraws = 64;  ///< draws per M before the smallest free integer of the octave is taken

/// floor(sqrt(x)) for x < 2^62, exactly (the double square root is corrected by one step either way).
int64_t isqrt(int64_t x) {
  auto r = static_cast<int64_t>(std::sqrt(static_cast<double>(x)));
  while (r > 0 && r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

/// round(sqrt(x)) exactly: sqrt(x) >= r + 1/2 iff x >= r^2 + r + 1/4 iff x > r^2 + r (integers).
int64_t rounded_sqrt(int64_t x) {
  const int64_t r = isqrt(x);
  return x > r * r + r ? r + 1 : r;
}

}  // namespace

CoverageMGrid coverage_m_grid_parts(uint64_t seed, int per_octave) {
  if (per_octave < 1) DGT_THROW(ErrorKind::kUsage, "per_octave = {}: want at least 1 M per octave", per_octave);
  const std::vector<int64_t> ladder = default_m_ladder();
  const std::set<int64_t> on_ladder(ladder.begin(), ladder.end());
  CoverageMGrid g;
  for (size_t i = 1; i < ladder.size(); ++i) {
    const int64_t a = ladder[i - 1], b = ladder[i], mid = rounded_sqrt(a * b);
    if (mid != a && mid != b && !on_ladder.count(mid)) g.midpoints.push_back(mid);
  }
  std::set<int64_t> taken(on_ladder);
  taken.insert(g.midpoints.begin(), g.midpoints.end());
  std::mt19937_64 rng(seed);
  for (int i = 0; i < kOctaves; ++i) {
    const int64_t lo = int64_t(1) << i, hi = int64_t(1) << (i + 1);  // [lo, hi)
    std::vector<int64_t> open_m;                                     // the octave's free integers, up to per_octave + 1
    for (int64_t m = lo; m < hi && int64_t(open_m.size()) <= per_octave; ++m)
      if (!taken.count(m)) open_m.push_back(m);
    if (int64_t(open_m.size()) <= per_octave) {  // a small octave: every free integer, no draw
      g.drawn.insert(g.drawn.end(), open_m.begin(), open_m.end());
      taken.insert(open_m.begin(), open_m.end());
      continue;
    }
    for (int n = 0; n < per_octave; ++n) {
      int64_t pick = 0;
      for (int attempt = 0; attempt < kMaxRedraws && pick == 0; ++attempt) {
        const double u = static_cast<double>(rng() >> 11) * 0x1p-53;  // [0, 1), 53 bits
        const auto m = std::clamp(static_cast<int64_t>(std::floor(static_cast<double>(lo) * std::exp2(u))), lo, hi - 1);
        if (!taken.count(m)) pick = m;
      }
      for (int64_t m = lo; pick == 0 && m < hi; ++m)  // draws kept hitting taken M: the smallest free one
        if (!taken.count(m)) pick = m;
      if (pick == 0) break;  // the octave is full (not reached: it had more than per_octave free integers)
      g.drawn.push_back(pick);
      taken.insert(pick);
    }
  }
  std::sort(g.drawn.begin(), g.drawn.end());
  return g;
}

std::vector<int64_t> coverage_m_grid(uint64_t seed, int per_octave) {
  const CoverageMGrid g = coverage_m_grid_parts(seed, per_octave);
  std::vector<int64_t> all = g.midpoints;
  all.insert(all.end(), g.drawn.begin(), g.drawn.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::string model_of_name(const std::string& name) { return name.substr(0, name.find('.')); }

std::vector<GridProblem> grid_problems(const std::vector<ShapeEntry>& shapes, const std::vector<int64_t>& ms,
                                       const std::string& model) {
  std::set<std::pair<std::string, std::string>> seen;  // (problem key at M = 1, model)
  std::vector<GridProblem> out;
  for (const ShapeEntry& e : shapes) {
    const std::string m_model = model.empty() ? model_of_name(e.name) : model;
    Problem at_one = e.problem;
    at_one.m = 1;
    if (!seen.insert({at_one.key(), m_model}).second) continue;
    for (const int64_t m : ms) {
      GridProblem g{e, m_model};
      g.entry.problem.m = m;
      try {
        validate_problem(g.entry.problem);
      } catch (const Error& err) {
        DGT_THROW(ErrorKind::kUsage, "{}: at grid M = {}: {}", e.where(), m, err.message());
      }
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace dgt
