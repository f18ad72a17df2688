// compare's copy-limit columns without a GPU: copy_us, copy_fraction and the summary's geomean from a
// synthetic RoundsResult (rebuilt from a StoredMeasurement), and how the side is stored.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/copy_limit_side.hpp"
#include "eval/compare_tables.hpp"

namespace dgt {
namespace {

/// A compare result with dgtune at `ours` us and the copy limit at `copy` us in every round.
CompareShape shape_with_copy(const Problem& p, double ours, double tuned, double copy) {
  StoredMeasurement m;
  m.problem = p;
  m.protocol_name = "cold-l2-v2";
  m.rounds = 5;
  m.reference_clock_mhz = 1980;
  m.clock_floor_mhz = 1485;
  m.sides = {{0, "dgtune", "config", "k", "", "db", 0, std::nullopt},
             {1, kProviderCublasTuned, "provider", "", "", kProviderCublasTuned, 32, std::nullopt},
             {2, kSideCopyLimit, "provider", "", "", kSideCopyLimit, 0, std::nullopt}};
  for (int r = 0; r < 5; ++r) {
    m.samples.push_back({0, r, 0, ours + 0.01 * r, 1900, false});
    m.samples.push_back({1, r, 1, tuned, 1900, false});
    m.samples.push_back({2, r, 2, copy, 1900, false});
  }
  CompareShape c;
  c.problem = p;
  c.result = rounds_from_stored(m);
  return c;
}

const report::Cell& cell(const report::Table& t, size_t row, const std::string& key) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].id == key) return t.rows.at(row).at(i);
  throw std::runtime_error("no column " + key);
}

double number(const report::Cell& c) {
  const auto* n = std::get_if<report::Number>(&c);
  return n ? n->value : std::nan("");
}

TEST(CopyLimitCompare, TableCarriesCopyUsAndFractionAndTheSummaryItsGeomean) {
  std::vector<CompareShape> shapes = {shape_with_copy(Problem::dense(64, 2112, 7168), 10.02, 11, 5),
                                           shape_with_copy(Problem::dense(128, 2112, 7168), 20.02, 20, 16)};
  CompareShape none = shape_with_copy(Problem::dense(256, 2112, 7168), 30, 30, 1);
  none.result->sides.pop_back();  // an old result without the side: no copy columns
  none.result->labels.pop_back();
  std::erase_if(none.result->samples, [](const Sample& s) { return s.side == 2; });
  shapes.push_back(none);
  const auto tables = compare_tables(shapes, stats::PairedOptions{}, "t");
  const report::Table& t = tables.at(0);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_DOUBLE_EQ(number(cell(t, 0, "copy_us")), 5);
  EXPECT_NEAR(number(cell(t, 0, "copy_fraction")), 5 / 10.04, 1e-12);  // dgtune median of 10.02..10.06
  EXPECT_NEAR(number(cell(t, 1, "copy_fraction")), 16 / 20.04, 1e-12);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(cell(t, 2, "copy_us")));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(cell(t, 2, "copy_fraction")));
  // The copy side is not an extra config: no extra-configs table.
  ASSERT_EQ(tables.size(), 2u);
  const report::Table& summary = tables.back();
  bool seen = false;
  for (const auto& row : summary.rows)
    if (std::get<std::string>(row[0]).rfind("geomean copy_fraction", 0) == 0) {
      seen = true;
      EXPECT_NEAR(number(row[1]), std::sqrt(5 / 10.04 * (16 / 20.04)), 1e-9);
    }
  EXPECT_TRUE(seen);
  // Stored as a provider side without a heuristic count.
  const StoredMeasurement m = stored_from_compare(shapes[0], "cold-l2-v2", 32);
  ASSERT_EQ(m.sides.size(), 3u);
  EXPECT_EQ(m.sides[2].label, kSideCopyLimit);
  EXPECT_EQ(m.sides[2].kind, "provider");
  EXPECT_EQ(m.sides[2].heuristic_count, 0);
  EXPECT_EQ(m.sides[1].heuristic_count, 32);
}

}  // namespace
}  // namespace dgt
