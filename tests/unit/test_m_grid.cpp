// The M grid of `dgtune compare --m-grid` (problem/m_grid.hpp): ladder midpoints plus log-uniform draws per octave,
// never a ladder M, deterministic per seed; the grid problems of a shapes file and their shards
// (eval/coverage_run.hpp coverage_problems).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.hpp"
#include "eval/coverage_run.hpp"
#include "problem/m_grid.hpp"
#include "problem/model_gemms.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {
namespace {

constexpr uint64_t kSeed = 20261202;

int octave_of(int64_t m) {
  int i = 0;
  while ((int64_t(2) << i) <= m) ++i;
  return i;
}

TEST(MGrid, NoLadderMAndEveryValueInRange) {
  const auto ladder = default_m_ladder();
  const std::set<int64_t> on_ladder(ladder.begin(), ladder.end());
  for (const int per_octave : {1, 2, 5}) {
    const auto grid = coverage_m_grid(kSeed, per_octave);
    ASSERT_FALSE(grid.empty());
    EXPECT_TRUE(std::is_sorted(grid.begin(), grid.end()));
    EXPECT_EQ(std::set<int64_t>(grid.begin(), grid.end()).size(), grid.size()) << "no M twice";
    for (const int64_t m : grid) {
      EXPECT_FALSE(on_ladder.count(m)) << m << " is a ladder M";
      EXPECT_GE(m, 1);
      EXPECT_LE(m, 16384);
    }
  }
}

TEST(MGrid, EveryMidpointIsPresent) {
  const auto ladder = default_m_ladder();
  const auto grid = coverage_m_grid(kSeed);
  const std::set<int64_t> in_grid(grid.begin(), grid.end());
  // Hand-computed: round(sqrt(2 * 4)) = 3, round(sqrt(4 * 8)) = 6, round(sqrt(8 * 12)) = 10 (9.80),
  // round(sqrt(12 * 16)) = 14 (13.86), round(sqrt(16 * 20)) = 18 (17.89), round(sqrt(20 * 24)) = 22 (21.91),
  // round(sqrt(14336 * 16384)) = 15326 (15325.83); 1-2 has none (sqrt(2) rounds to 1).
  const CoverageMGrid parts = coverage_m_grid_parts(kSeed);
  EXPECT_EQ(std::vector<int64_t>(parts.midpoints.begin(), parts.midpoints.begin() + 6),
            (std::vector<int64_t>{3, 6, 10, 14, 18, 22}));
  EXPECT_EQ(parts.midpoints.back(), 15326);
  EXPECT_EQ(parts.midpoints.size(), ladder.size() - 2);  // every pair but 1-2
  for (size_t i = 1; i < ladder.size(); ++i) {
    const int64_t a = ladder[i - 1], b = ladder[i];
    if (a == 1) continue;
    bool found = false;
    for (int64_t m = a + 1; m < b; ++m) {
      // The rounded geometric mean: (m - 1/2)^2 <= a b < (m + 1/2)^2, in integers times 4.
      if ((2 * m - 1) * (2 * m - 1) <= 4 * a * b && 4 * a * b < (2 * m + 1) * (2 * m + 1)) {
        EXPECT_TRUE(in_grid.count(m)) << "midpoint " << m << " of " << a << "-" << b;
        found = true;
      }
    }
    EXPECT_TRUE(found) << a << "-" << b;
  }
}

TEST(MGrid, PerOctaveCounts) {
  for (const int per_octave : {1, 2, 3}) {
    const CoverageMGrid g = coverage_m_grid_parts(kSeed, per_octave);
    std::vector<int> count(14, 0);
    for (const int64_t m : g.drawn) ++count[size_t(octave_of(m))];
    EXPECT_EQ(count[0], 0) << "[1, 2) holds only the ladder's 1";
    EXPECT_EQ(count[1], 0) << "[2, 4): 3 is the midpoint of 2-4";
    EXPECT_EQ(count[2], std::min(per_octave, 2)) << "[4, 8): 5 and 7 are free";
    for (int i = 3; i < 14; ++i) EXPECT_EQ(count[size_t(i)], per_octave) << "octave " << i;
    const std::set<int64_t> mids(g.midpoints.begin(), g.midpoints.end());
    for (const int64_t m : g.drawn) EXPECT_FALSE(mids.count(m)) << m << " drawn and a midpoint";
  }
  EXPECT_EQ(coverage_m_grid(kSeed).size(), 44u + 2u + 11u * 2u);  // 44 midpoints (45 pairs but 1-2), 5 and 7, 2 per octave
}

TEST(MGrid, DeterministicPerSeedAndSeedsDiffer) {
  EXPECT_EQ(coverage_m_grid(kSeed), coverage_m_grid(kSeed));
  EXPECT_EQ(coverage_m_grid_parts(7).drawn, coverage_m_grid_parts(7).drawn);
  EXPECT_NE(coverage_m_grid_parts(kSeed).drawn, coverage_m_grid_parts(7).drawn);
  EXPECT_NE(coverage_m_grid(1), coverage_m_grid(2));
  // The midpoints do not depend on the seed.
  EXPECT_EQ(coverage_m_grid_parts(1).midpoints, coverage_m_grid_parts(2).midpoints);
}

TEST(MGrid, DrawsAreSpreadInLogSpace) {
  // Log-uniform inside an octave: over many seeds, about half the draws of [8192, 16384) lie below 2^13.5 = 11585.
  int below = 0, total = 0;
  for (uint64_t seed = 0; seed < 200; ++seed)
    for (const int64_t m : coverage_m_grid_parts(seed).drawn)
      if (m >= 8192) {
        ++total;
        below += m < 11585;
      }
  ASSERT_EQ(total, 400);
  EXPECT_GT(below, 160);
  EXPECT_LT(below, 240);
}

TEST(MGrid, RefusesZeroPerOctave) { EXPECT_THROW(coverage_m_grid(kSeed, 0), Error); }

TEST(MGrid, ModelOfName) {
  EXPECT_EQ(model_of_name("deepseek-v3.q_a_proj.tp1"), "deepseek-v3");
  EXPECT_EQ(model_of_name("decode"), "decode");
  EXPECT_EQ(model_of_name(""), "");
}

TEST(MGrid, GridProblemsIgnoreMAndKeepTheFirstLine) {
  const auto shapes = parse_shapes(
      "64 2112 7168 name=deepseek-v3.q_a_proj.tp1\n"
      "128 2112 7168 name=deepseek-v3.q_a_proj.tp1\n"            // the same problem at another M: once
      "64 2112 7168 accum=fast name=deepseek-v3.q_a_proj.tp1\n"  // another accumulation: its own
      "64 4096 7168\n"
      "64 4096 7168 name=llama.o_proj\n",  // the same problem under another model: its own
      "s.txt");
  const std::vector<int64_t> ms = {3, 5};
  const auto g = grid_problems(shapes, ms);
  ASSERT_EQ(g.size(), 8u);
  EXPECT_EQ(g[0].entry.problem.m, 3);
  EXPECT_EQ(g[1].entry.problem.m, 5);
  EXPECT_EQ(g[0].entry.problem.n, 2112);
  EXPECT_EQ(g[0].entry.line, 1);
  EXPECT_EQ(g[0].model, "deepseek-v3");
  EXPECT_EQ(g[2].entry.problem.accum, Accum::kFast);
  EXPECT_EQ(g[2].entry.line, 3);
  EXPECT_EQ(g[4].model, "");
  EXPECT_EQ(g[4].entry.problem.n, 4096);
  EXPECT_EQ(g[6].model, "llama");
  // --model names every problem's model: the last two lines become one problem.
  const auto named = grid_problems(shapes, ms, "m1");
  ASSERT_EQ(named.size(), 6u);
  for (const GridProblem& p : named) EXPECT_EQ(p.model, "m1");
}

TEST(MGrid, ShardsPartitionTheGridProblems) {
  CoverageRunOptions o;
  o.shapes = parse_shapes("64 2112 7168\n64 4096 7168\n", "s.txt");
  const auto all = coverage_problems(o);
  ASSERT_EQ(all.size(), 2 * coverage_m_grid(o.grid_seed).size());
  std::multiset<std::string> seen;
  size_t total = 0;
  for (int i = 0; i < 3; ++i) {
    o.shard = Shard{i, 3};
    const auto mine = coverage_problems(o);
    total += mine.size();
    int first_problem = 0;
    for (const GridProblem& g : mine) {
      seen.insert(g.entry.problem.key());
      first_problem += g.entry.problem.n == 2112;
    }
    EXPECT_GT(first_problem, 0) << "shard " << i << " holds M of the first problem";
    EXPECT_LT(size_t(first_problem), mine.size()) << "shard " << i << " holds M of the second problem";
  }
  EXPECT_EQ(total, all.size());
  for (const GridProblem& g : all) EXPECT_EQ(seen.count(g.entry.problem.key()), 1u) << "in exactly one shard";
}

}  // namespace
}  // namespace dgt
