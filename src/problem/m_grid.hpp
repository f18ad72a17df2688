// The M grid of `dgtune compare --m-grid`: token counts that no ladder tunes, at which the loader's choice (the ladder
// rule, docs/loader.md) is measured against cuBLASLt. Pure and deterministic: the same seed gives the same grid with
// every standard library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem/shapes_file.hpp"

namespace dgt {

/// The grid's two parts (coverage_m_grid returns their union, sorted).
struct CoverageMGrid {
  /// round(sqrt(a * b)) of every two neighbours a < b of default_m_ladder(), ascending; a pair whose midpoint is a
  /// ladder value or equals a or b (only 1-2: sqrt(2) rounds to 1) has none. Computed in integers (exact).
  std::vector<int64_t> midpoints;
  /// M drawn inside each octave [2^i, 2^(i+1)), i = 0..13 (1 to 16383), ascending: `per_octave` per octave, none of
  /// them a ladder value, a midpoint or drawn twice. An octave with no more than `per_octave` such integers gives all
  /// of them (the small octaves: [1, 2) none, [2, 4) none, [4, 8) 5 and 7).
  std::vector<int64_t> drawn;
};

/// The grid's parts for `seed`. The draw, reproducible across compilers and platforms: one std::mt19937_64 seeded with
/// `seed` (the standard fixes its output sequence), octaves in ascending order; each draw takes the next 64-bit output
/// x, u = (x >> 11) * 2^-53 (uniform in [0, 1), 53 bits) and M = floor(2^i * exp2(u)) (log-uniform in the octave),
/// clamped to [2^i, 2^(i+1) - 1]. An M that is a ladder value, a midpoint or already drawn is drawn again, at most 64
/// times; after that the smallest integer of the octave still free is taken (so the count never falls short). exp2 of
/// IEEE doubles agrees across the common C libraries except within an ulp of an integer result, where floor could
/// differ; every M measured is in the report anyway. Throws Error(kUsage) when per_octave < 1.
CoverageMGrid coverage_m_grid_parts(uint64_t seed, int per_octave = 2);

/// midpoints and drawn of coverage_m_grid_parts, sorted ascending, each once: every M in [1, 16383], none a value of
/// default_m_ladder().
std::vector<int64_t> coverage_m_grid(uint64_t seed, int per_octave = 2);

/// The part of a shapes-file name= that names the model: up to the first '.' ("deepseek-v3.q_a_proj.tp1" ->
/// "deepseek-v3"; a name without '.' is the model; "" stays "").
std::string model_of_name(const std::string& name);

/// One problem of the grid: a shapes-file entry (its problem at a grid M, its file and line) and the model it is
/// reported under.
struct GridProblem {
  ShapeEntry entry;
  std::string model;
};

/// The grid problems of a shapes file: its distinct problems with M ignored (every field but M, and the model: `model`
/// when not empty, else model_of_name of the line's name=), in file order, the first line of each kept, each at every
/// M of `ms` in that order. Throws Error(kUsage) naming FILE:LINE when a problem at a grid M breaks a rule
/// (validate_problem; no rule of a valid line depends on M, so this is a broken invariant in practice).
std::vector<GridProblem> grid_problems(const std::vector<ShapeEntry>& shapes, const std::vector<int64_t>& ms,
                                       const std::string& model = "");

}  // namespace dgt
