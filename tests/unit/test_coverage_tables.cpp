// The tables of `dgtune compare --m-grid` (eval/coverage_tables.hpp) from synthetic rounds: the row fields, the ratios
// paired per round, rows without ratios (a failure, cuBLASLt's refusal) and the per-problem summary.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/coverage_tables.hpp"
#include "records/records.hpp"
#include "report/documents.hpp"

namespace dgt {
namespace {

/// Rounds of the given sides (label, us) with every sample at its side's time, 20 rounds, clock 1980 MHz.
RoundsResult rounds_of(const std::vector<std::pair<std::string, double>>& sides) {
  RoundsResult r;
  r.rounds = 20;
  r.reference_clock_mhz = 1980;
  r.clock_floor_mhz = 1485;
  for (const auto& s : sides) r.labels.push_back(s.first);
  for (int round = 0; round < r.rounds; ++round)
    for (size_t i = 0; i < sides.size(); ++i)
      r.samples.push_back(Sample{int(i), round, int(i), sides[i].second, 1980, false});
  summarise(r);
  return r;
}

CoverageShape shape(int64_t m, const std::string& backend, std::optional<RoundsResult> r, const std::string& note = "") {
  CoverageShape c;
  c.problem = Problem::dense(m, 2112, 7168);
  c.model = "deepseek-v3";
  c.protocol = "cold-l2-v2";
  c.grid_seed = 20261202;
  c.source = m == 3 ? "default" : "ladder";
  c.backend = backend;
  c.config_key = "64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1";
  c.result = std::move(r);
  c.note = note;
  return c;
}

nlohmann::json json_of(const std::vector<report::Table>& tables) {
  std::ostringstream out;
  report::render_document(report::kCoverageDocument, tables, report::Format::kJson, out);
  return nlohmann::json::parse(out.str());
}

TEST(CoverageTables, RowsAndSummary) {
  const std::vector<CoverageShape> shapes = {
      // The dispatch (cuBLASLt) beats cuBLASLt-tuned by 1.5, the kernel alone by 1.2.
      shape(20, "cublaslt",
            rounds_of({{kSideDgtune, 10}, {kProviderCublasTuned, 12}, {kProviderCublasDefault, 13}, {kSideDispatch, 8}})),
      // The dispatch is slower: x = 12 / 16 = 0.75, every round.
      shape(28, "dgtune",
            rounds_of({{kSideDgtune, 16}, {kProviderCublasTuned, 12}, {kProviderCublasDefault, 12}, {kSideDispatch, 16}})),
      // Measurement failed: a note, no ratios.
      shape(39, "dgtune", std::nullopt, "verify_failed: dispatch before timing: max_rel_err 1"),
      // cuBLASLt refused: times of the two dgtune sides, no ratios.
      shape(3, "dgtune", rounds_of({{kSideDgtune, 5}, {kSideDispatch, 5}}), "cuBLASLt refuses the problem (x): no ratio"),
  };
  const auto j = json_of(coverage_tables(shapes, stats::PairedOptions{}, "coverage"));
  EXPECT_EQ(j["schema"], "dgtune-coverage");
  ASSERT_EQ(j["tables"].size(), 2u);
  const auto& rows = j["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 4u);
  const auto& a = rows[0];
  EXPECT_EQ(a["shape"], "20x2112x7168");
  EXPECT_EQ(a["n"], 2112);
  EXPECT_EQ(a["k"], 7168);
  EXPECT_EQ(a["m"], 20);
  EXPECT_EQ(a["scale"], "per-tensor");
  EXPECT_EQ(a["accum"], "promote");
  EXPECT_EQ(a["d"], "bf16");
  EXPECT_EQ(a["bias"], "none");
  EXPECT_EQ(a["act"], "none");
  EXPECT_EQ(a["protocol"], "cold-l2-v2");
  EXPECT_EQ(a["model"], "deepseek-v3");
  EXPECT_EQ(a["grid_seed"], 20261202);
  EXPECT_EQ(a["nk_tuned"], true);
  EXPECT_EQ(a["source"], "ladder");
  EXPECT_EQ(a["backend"], "cublaslt");
  EXPECT_DOUBLE_EQ(a["dispatch_us"].get<double>(), 8);
  EXPECT_DOUBLE_EQ(a["kernel_us"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(a["cublas_tuned_us"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(a["cublas_default_us"].get<double>(), 13);
  EXPECT_NEAR(a["x_dispatch"].get<double>(), 1.5, 1e-12);
  EXPECT_NEAR(a["x_lo"].get<double>(), 1.5, 1e-12);  // every round the same ratio: a point interval
  EXPECT_NEAR(a["x_hi"].get<double>(), 1.5, 1e-12);
  EXPECT_NEAR(a["x_dispatch_default"].get<double>(), 13.0 / 8, 1e-12);
  EXPECT_NEAR(a["x_kernel"].get<double>(), 1.2, 1e-12);
  EXPECT_EQ(a["rounds"], 20);
  EXPECT_EQ(a["note"], "");
  EXPECT_NEAR(rows[1]["x_dispatch"].get<double>(), 0.75, 1e-12);
  EXPECT_EQ(rows[2]["note"], "verify_failed: dispatch before timing: max_rel_err 1");
  EXPECT_TRUE(rows[2]["dispatch_us"].is_null());
  EXPECT_TRUE(rows[2]["x_dispatch"].is_null());
  EXPECT_EQ(rows[3]["nk_tuned"], false);
  EXPECT_DOUBLE_EQ(rows[3]["dispatch_us"].get<double>(), 5);
  EXPECT_TRUE(rows[3]["x_dispatch"].is_null());
  EXPECT_TRUE(rows[3]["cublas_tuned_us"].is_null());
  EXPECT_EQ(rows[3]["note"], "cuBLASLt refuses the problem (x): no ratio");

  const auto& summary = j["tables"][1]["rows"];
  ASSERT_EQ(summary.size(), 1u);  // one problem (2112 x 7168, every field but M) and protocol
  const auto& s = summary[0];
  EXPECT_EQ(s["n"], 2112);
  EXPECT_EQ(s["model"], "deepseek-v3");
  EXPECT_EQ(s["protocol"], "cold-l2-v2");
  EXPECT_EQ(s["grid_m"], 4);
  EXPECT_EQ(s["count"], 2);
  EXPECT_NEAR(s["geomean_x_dispatch"].get<double>(), std::sqrt(1.5 * 0.75), 1e-12);
  EXPECT_NEAR(s["min_x_dispatch"].get<double>(), 0.75, 1e-12);
  EXPECT_NEAR(s["share_slower"].get<double>(), 0.5, 1e-12);
  EXPECT_NEAR(s["share_below_1"].get<double>(), 0.5, 1e-12);
  EXPECT_NEAR(s["geomean_x_dispatch_default"].get<double>(), std::sqrt(13.0 / 8 * 12.0 / 16), 1e-12);
  EXPECT_NEAR(s["geomean_x_kernel"].get<double>(), std::sqrt(1.2 * 0.75), 1e-12);
  EXPECT_NEAR(s["min_x_kernel"].get<double>(), 0.75, 1e-12);
  EXPECT_NEAR(s["share_kernel_slower"].get<double>(), 0.5, 1e-12);
  EXPECT_EQ(s["cublaslt_dispatched"], 1);
}

TEST(CoverageTables, SummaryGroupsByProblemModelAndProtocol) {
  std::vector<CoverageSummaryInput> in(4);
  for (auto& r : in) {
    r.n = 4096, r.k = 7168, r.scale = "per-tensor", r.accum = "promote", r.d = "bf16", r.bias = r.act = "none";
    r.model = "m", r.protocol = "cold-l2-v2", r.backend = "dgtune";
    r.x.x_dispatch = 1.1;
  }
  in[1].protocol = "hot-graph-v1";
  in[2].k = 2048;
  in[3].x = {};  // no ratio: counted in grid_m only
  const report::Table t = coverage_summary(in, "s");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][9]), 2);   // grid_m: rows 0 and 3
  EXPECT_EQ(std::get<int64_t>(t.rows[0][10]), 1);  // count: row 0
  EXPECT_EQ(std::get<std::string>(t.rows[1][8]), "hot-graph-v1");
  EXPECT_EQ(std::get<int64_t>(t.rows[2][1]), 2048);
}

}  // namespace
}  // namespace dgt
