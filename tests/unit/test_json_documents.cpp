// Every `--format json` output has the one envelope ({"schema", "schema_version", then the data}; report/document.hpp)
// and a JSON Schema under docs/schemas/. The documents of the commands that need a GPU (sweep, run, compare, gate,
// trace) are built here from synthetic measurements through the tables and the renderer the CLI uses; with
// DGT_JSON_SAMPLES_DIR set they are written there, for tests/cli/json_schemas_test.py to validate.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/tables.hpp"
#include "eval/compare_tables.hpp"
#include "eval/coverage_tables.hpp"
#include "eval/grouped_compare_tables.hpp"
#include "eval/gate_decision.hpp"
#include "eval/gate_record.hpp"
#include "eval/gate_report.hpp"
#include "eval/trace_tables.hpp"
#include "jit/bundle.hpp"
#include "report/documents.hpp"
#include "stats/stats.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

std::string render(const report::DocumentType& type, const report::Table& t) {
  std::ostringstream out;
  report::render_document(type, t, report::Format::kJson, out);
  return out.str();
}

std::string render(const report::DocumentType& type, const std::vector<report::Table>& ts) {
  std::ostringstream out;
  report::render_document(type, ts, report::Format::kJson, out);
  return out.str();
}

/// Writes `text` as DGT_JSON_SAMPLES_DIR/<name>.json when the variable is set.
void keep(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("DGT_JSON_SAMPLES_DIR");
  if (!dir || !*dir) return;
  std::ofstream(fs::path(dir) / (name + ".json")) << text;
}

TrialRecord a_trial() {
  TrialRecord t;
  t.problem = Problem::dense(128, 4096, 7168);
  t.config = KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0");
  t.status = TrialStatus::kOk;
  t.set_timing(Timing{20.0, 19.8, 20.5, 40, 0.003, 1755, false});
  t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
  return t;
}

BaselineRecord a_baseline(const char* provider, double us) {
  BaselineRecord b;
  b.problem = Problem::dense(128, 4096, 7168);
  b.provider = provider;
  b.algo = "algo=66";
  b.status = TrialStatus::kOk;
  b.set_timing(Timing{us, us, us, 20, 0.01, 1700, false});
  return b;
}

StoredMeasurement a_measurement(double ours, double tuned) {
  StoredMeasurement m;
  m.problem = Problem::dense(128, 4096, 7168);
  m.protocol_name = "cold-l2-v2";
  m.protocol_json = R"({"kind":"cold-l2","name":"cold-l2-v2","rounds":20,"version":2})";
  m.rounds = 20;
  m.reference_clock_mhz = 1980;
  m.clock_floor_mhz = 1485;
  m.sides = {{0, "dgtune", "config", "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "", "db", 0,
              Verification{true, 1e-3, 1e-6, 0, 0}},
             {1, "cublaslt-tuned", "provider", "", "algo=66", "cublaslt-tuned", 32, std::nullopt}};
  for (int r = 0; r < 20; ++r) {
    const double jitter = 1 + 0.001 * ((r * 7) % 5 - 2);
    m.samples.push_back({0, r, r % 2, ours * jitter, 1900, false});
    m.samples.push_back({1, r, (r + 1) % 2, tuned / jitter, 1900, false});
  }
  return m;
}

gate::GateRecord a_record(double ours, double tuned) {
  gate::GateRecord r;
  r.hardware = {"NVIDIA H200", 9, 0, 132, 150754820096, 62914560};
  r.software = {570, 13000, 130000, 13000, "aaaaaaaaaaaaaaaa", "0.4.0"};
  r.kernel_hash = r.software.kernel_hash;
  r.protocol = R"({"kind":"cold-l2","name":"cold-l2-v2","rounds":20,"version":2})";
  r.created_at = "2026-11-29T12:00:00Z";
  gate::ShapeRecord s;
  s.problem = Problem::dense(128, 4096, 7168);
  s.name = "decode";
  s.config_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0";
  s.config_source = "db";
  s.tuned_algo = "algo=66";
  for (int i = 0; i < 20; ++i) {
    s.rounds.push_back(i);
    s.ours_us.push_back(ours * (1 + 0.002 * (i % 3)));
    s.tuned_us.push_back(tuned * (1 + 0.002 * (i % 4)));
    s.clock_mhz.push_back(1980);
    s.flagged.push_back(false);
  }
  r.shapes.push_back(s);
  return r;
}

TEST(JsonDocuments, EveryDocumentStartsWithItsSchemaAndVersion) {
  report::Table t;
  t.title = "one table";
  t.columns = {{"shape", "shape", false}, {"x_tuned", "x tuned"}};
  t.rows = {{std::string("128x4096x7168"), report::Number{1.25, 3}}};
  const auto one = nlohmann::ordered_json::parse(render(report::kSpaceDocument, t));
  std::vector<std::string> keys;
  for (const auto& [k, v] : one.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "schema_version", "title", "rows"}));
  EXPECT_EQ(one["schema"], "dgtune-space");
  EXPECT_EQ(one["rows"][0]["x_tuned"], 1.25);  // full precision, as before the envelope
  const auto many = nlohmann::ordered_json::parse(render(report::kTraceDocument, std::vector<report::Table>{t}));
  EXPECT_EQ(many["schema"], "dgtune-trace");
  ASSERT_EQ(many["tables"].size(), 1u);  // a command that prints a list prints a list, whatever its length
  // The other formats are the tables alone.
  std::ostringstream csv;
  report::render_document(report::kSpaceDocument, t, report::Format::kCsv, csv);
  EXPECT_EQ(csv.str(), "shape,x_tuned\n128x4096x7168,1.250\n");  // the column's 3 decimals
}

TEST(JsonDocuments, EveryDocumentHasASchemaFileThatNamesIt) {
  std::set<std::string> names;
  for (const report::DocumentType& d : report::kAllDocuments) {
    EXPECT_TRUE(names.insert(std::string(d.schema)).second) << "two documents named " << d.schema;
    const fs::path file = fs::path(DGT_SOURCE_DIR) / "docs" / "schemas" / (std::string(d.schema) + ".schema.json");
    ASSERT_TRUE(fs::exists(file)) << file;
    std::ifstream in(file);
    const auto schema = nlohmann::json::parse(in);
    EXPECT_EQ(schema["properties"]["schema"]["const"], std::string(d.schema)) << file;
    EXPECT_EQ(schema["properties"]["schema_version"]["const"], d.version) << file;
  }
}

// A kernel bundle's manifest is a document of its own (docs/schemas/dgtune-bundle.schema.json): jit/bundle.hpp names
// it by the same schema and version, and a sample manifest is kept for the schema test.
TEST(JsonDocuments, BundleManifestIsTheBundleDocument) {
  EXPECT_EQ(std::string(jit::kBundleFormat), std::string(report::kBundleDocument.schema));
  EXPECT_EQ(jit::kBundleFormatVersion, report::kBundleDocument.version);
  jit::BundleManifest m;
  m.kernel_hash = "0123456789abcdef";
  m.arch = "sm_90a";
  m.nvrtc_version = "13.0";
  m.dgtune_version = "0.1.0";
  m.device_name = "NVIDIA H200";
  m.hw_key = "f885cfb154e9491c";
  jit::BundleCubin c;
  c.key = "00112233445566ff";
  c.compiled_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1_e4m3.e4m3_promote";
  c.configs = {c.compiled_key};
  c.file = c.key + ".cubin";
  c.bytes = 123456;
  c.fnv = "89abcdef01234567";
  c.lowered_name = "_Z8fp8_gemmILi128EEvv";
  c.registers = 168;
  m.cubins.push_back(c);
  const std::string text = m.to_text();
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema"], "dgtune-bundle");
  EXPECT_EQ(j["schema_version"], 1);
  keep("bundle-manifest", text);
}

TEST(JsonDocuments, TheGpuCommandsDocumentsFromSyntheticMeasurements) {
  // sweep: one shape with its winner and both baselines.
  ShapeOutcome o;
  o.entry.problem = Problem::dense(128, 4096, 7168);
  o.entry.name = "decode";
  o.protocol = "cold-l2-v1";
  o.candidates = 300;
  o.measured_now = 300;
  o.complete = true;
  o.wall_s = 12.5;
  WinnerRow w;
  w.trial = a_trial();
  w.protocol_name = "cold-l2-v1";
  w.cublas_default = a_baseline(kProviderCublasDefault, 26.0);
  w.cublas_tuned = a_baseline(kProviderCublasTuned, 24.0);
  w.status_counts = {{"ok", 280}, {"invalid", 20}};
  o.winner = w;
  ShapeOutcome none;
  none.entry.problem = Problem::dense(64, 64, 64);
  none.protocol = "cold-l2-v1";
  const std::string sweep = render(report::kSweepDocument, cli::winners_table({o, none}, "sweep"));
  const auto sj = nlohmann::json::parse(sweep);
  EXPECT_NEAR(sj["rows"][0]["x_cublas_tuned"].get<double>(), 24.0 / 20.0, 1e-9);
  EXPECT_TRUE(sj["rows"][1]["x_cublas_tuned"].is_null());
  keep("sweep", sweep);
  // run: the trial and both baselines.
  const std::string run =
      render(report::kRunDocument,
             cli::run_tables(a_trial(),
                             std::pair{a_baseline(kProviderCublasDefault, 26), a_baseline(kProviderCublasTuned, 24)},
                             "NVIDIA H200"));
  EXPECT_EQ(nlohmann::json::parse(run)["tables"].size(), 2u);
  keep("run", run);
  // compare: a measured shape and one not measured.
  CompareShape measured;
  measured.problem = Problem::dense(128, 4096, 7168);
  measured.name = "decode";
  measured.config_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0";
  measured.config_source = "db";
  measured.tuned_algo = "algo=66";
  measured.result = rounds_from_stored(a_measurement(9, 10));
  CompareShape missing;
  missing.problem = Problem::dense(64, 64, 64);
  missing.note = "error: cuBLASLt refuses";
  const std::string compare =
      render(report::kCompareDocument, compare_tables({measured, missing}, stats::PairedOptions{}, "compare"));
  EXPECT_NEAR(nlohmann::json::parse(compare)["tables"][0]["rows"][0]["x_tuned"].get<double>(), 10.0 / 9, 0.01);
  keep("compare", compare);
  const std::string between =
      render(report::kCompareBetweenDocument,
             between_tables({a_measurement(10, 10)}, {a_measurement(9, 10)}, stats::PairedOptions{}, "between"));
  keep("compare-between", between);
  // compare --m-grid: a measured grid problem (the stored measurement's dgtune side stands in for the dispatch too)
  // and one not measured.
  CoverageShape grid;
  grid.problem = Problem::dense(111, 4096, 7168);
  grid.model = "deepseek-v3";
  grid.protocol = "cold-l2-v2";
  grid.grid_seed = 20261202;
  grid.source = "ladder";
  grid.backend = "dgtune";
  grid.config_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0";
  StoredMeasurement with_dispatch = a_measurement(9, 10);
  with_dispatch.sides.push_back({2, kSideDispatch, "provider", "", "", kSideDispatch, 0, std::nullopt});
  for (int r = 0; r < 20; ++r) with_dispatch.samples.push_back({2, r, 2, 9.5, 1900, false});
  grid.result = rounds_from_stored(with_dispatch);
  CoverageShape refused = grid;
  refused.problem.m = 5;
  refused.result.reset();
  refused.note = "error: cuBLASLt refuses";
  const std::string coverage =
      render(report::kCoverageDocument, coverage_tables({grid, refused}, stats::PairedOptions{}, "coverage"));
  const auto cj = nlohmann::json::parse(coverage);
  EXPECT_NEAR(cj["tables"][0]["rows"][0]["x_dispatch"].get<double>(), 10.0 / 9.5, 0.01);
  EXPECT_EQ(cj["tables"][0]["rows"][0]["nk_tuned"], true);
  keep("coverage", coverage);
  // compare --grouped: a contiguous problem, the grouped kernel at 10 us, the loop at 15, the dense kernel at 9.
  GroupedCompareShape gc;
  gc.problem = parse_grouped_problem("kind=contiguous groups=2 m_per_group=100,50 256 512", "test");
  gc.config_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1";
  gc.dense_config_key = gc.config_key;
  gc.protocol_name = "cold-l2-v2";
  gc.loop_calls = 2;
  gc.loop_algos = "[algo=66] x2";
  gc.result.rounds = 20;
  gc.result.labels = {"grouped", "cublaslt-loop", "dense"};
  for (int r = 0; r < 20; ++r) {
    const double jitter = 1 + 0.001 * ((r * 7) % 5 - 2);
    gc.result.samples.push_back({0, r, 0, 10 * jitter, 1900, false});
    gc.result.samples.push_back({1, r, 1, 15 / jitter, 1900, false});
    gc.result.samples.push_back({2, r, 2, 9, 1900, false});
  }
  summarise(gc.result);
  gc.result.sides[0].check = Verification{true, 1e-3, 1e-6, 0, 0};
  const std::string grouped =
      render(report::kGroupedCompareDocument, grouped_compare_tables({gc}, stats::PairedOptions{}, "grouped"));
  const auto gj = nlohmann::json::parse(grouped)["tables"][0]["rows"][0];
  EXPECT_NEAR(gj["x_loop"].get<double>(), 1.5, 0.01);
  EXPECT_NEAR(gj["x_dense"].get<double>(), 0.9, 0.01);
  EXPECT_EQ(gj["real_rows"], 150);
  EXPECT_NEAR(gj["tflops"].get<double>(), 2.0 * 150 * 256 * 512 / (gj["us"].get<double>() * 1e-6) / 1e12, 1e-3);
  EXPECT_EQ(gj["check"], "ok");
  EXPECT_EQ(gj["loop_check"], "not checked");
  EXPECT_TRUE(gj["m_max"].is_null());
  // Without --vs-config the table is the three-side table: no grouped-vs field, not even a null one.
  for (const char* f : {"vs_config", "vs_us", "x_vs", "x_vs_lo", "x_vs_hi", "vs_sm_clock_mhz_median", "vs_check"})
    EXPECT_FALSE(gj.contains(f)) << f;
  keep("compare-grouped", grouped);
  // compare --grouped --vs-config: the fourth side (grouped-vs) at 11 us, its output wrong; x_vs = 11 / 10.
  GroupedCompareShape gv = gc;
  gv.vs_config_key = "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1";
  gv.result.labels.push_back(kGroupedVsLabel);
  for (int r = 0; r < 20; ++r) gv.result.samples.push_back({kGroupedSideVs, r, 3, 11, 1850, false});
  summarise(gv.result);
  gv.result.sides[kGroupedSideGrouped].check = Verification{true, 1e-3, 1e-6, 0, 0};
  gv.result.sides[kGroupedSideVs].check = Verification{false, 0.5, 1e-2, 0, 12};
  // The same under isolated-v1: the ratio of the medians, no interval.
  GroupedCompareShape gi = gv;
  gi.protocol_name = "isolated-v1";
  // A table with the side holds its columns for every row; a shape without the side has them null.
  const std::string grouped_vs =
      render(report::kGroupedCompareDocument, grouped_compare_tables({gv, gi, gc}, stats::PairedOptions{}, "vs"));
  const auto vj = nlohmann::json::parse(grouped_vs)["tables"][0]["rows"];
  ASSERT_EQ(vj.size(), 3u);
  EXPECT_EQ(vj[0]["vs_config"], gv.vs_config_key);
  EXPECT_NEAR(vj[0]["vs_us"].get<double>(), 11, 1e-9);
  EXPECT_NEAR(vj[0]["x_vs"].get<double>(), 1.1, 0.01);
  EXPECT_LE(vj[0]["x_vs_lo"].get<double>(), vj[0]["x_vs"].get<double>());
  EXPECT_GE(vj[0]["x_vs_hi"].get<double>(), vj[0]["x_vs"].get<double>());
  EXPECT_NEAR(vj[0]["vs_sm_clock_mhz_median"].get<double>(), 1850, 1e-9);
  EXPECT_EQ(vj[0]["vs_check"].get<std::string>().rfind("FAILED", 0), 0u);
  EXPECT_EQ(vj[0]["check"], "ok");
  EXPECT_NEAR(vj[0]["x_loop"].get<double>(), 1.5, 0.01);  // the other sides keep their ratios
  EXPECT_NEAR(vj[0]["x_dense"].get<double>(), 0.9, 0.01);
  EXPECT_NEAR(vj[1]["x_vs"].get<double>(), 11 / vj[1]["us"].get<double>(), 1e-3);
  EXPECT_TRUE(vj[1]["x_vs_lo"].is_null());
  EXPECT_TRUE(vj[1]["x_vs_hi"].is_null());
  for (const char* f : {"vs_config", "vs_us", "x_vs", "x_vs_lo", "x_vs_hi", "vs_sm_clock_mhz_median", "vs_check"})
    EXPECT_TRUE(vj[2][f].is_null()) << f;
  keep("compare-grouped-vs", grouped_vs);
  // compare --shapes with grouped lines: the dense tables, then the grouped lines' table (the loader's choice with its
  // source and tuned key; one line measured, one not) and the grouped summary, in the one compare document.
  GroupedCompareShape line = gc;
  line.problem = parse_grouped_problem("kind=masked groups=2 masked_m=100,50 m_max=128 expected_m=64 256 512", "test");
  line.name = "moe";
  line.config_source = "ladder";
  line.tuned_key = "grouped-masked_G2_mmax128_em32_256x256x512_lda512_ldb512_ldd256_e4m3.e4m3.bf16_tensor_promote";
  GroupedCompareShape not_measured;
  not_measured.problem = gc.problem;
  not_measured.config_key = gc.config_key;
  not_measured.config_source = "default";
  not_measured.protocol_name = "cold-l2-v2";
  not_measured.note = "error: cuBLASLt refuses group 1";
  std::vector<report::Table> with_grouped = compare_tables({measured}, stats::PairedOptions{}, "compare");
  with_grouped.push_back(
      grouped_compare_tables({line, not_measured}, stats::PairedOptions{}, "grouped lines").at(0));
  with_grouped.push_back(grouped_summary_table({line, not_measured}, stats::PairedOptions{}));
  const std::string compare_grouped = render(report::kCompareDocument, with_grouped);
  const auto lj = nlohmann::json::parse(compare_grouped)["tables"];
  ASSERT_EQ(lj.size(), 4u);
  EXPECT_EQ(lj[2]["rows"][0]["config_source"], "ladder");
  EXPECT_EQ(lj[2]["rows"][0]["tuned_key"], line.tuned_key);
  EXPECT_NEAR(lj[2]["rows"][0]["x_loop"].get<double>(), 1.5, 0.01);
  EXPECT_TRUE(lj[2]["rows"][1]["x_loop"].is_null());
  EXPECT_EQ(lj[3]["rows"][0]["what"], "grouped lines measured and verified");
  EXPECT_EQ(lj[3]["rows"][0]["value"], 1);
  keep("compare-grouped-lines", compare_grouped);
  // gate: a record and a verdict against it.
  const gate::GateRecord base = a_record(90, 100), now = a_record(91, 100);
  const std::string record = render(report::kGateRecordDocument, gate::record_table(base, "record"));
  EXPECT_NEAR(nlohmann::json::parse(record)["rows"][0]["x_tuned"].get<double>(), 100.0 / 90, 0.01);
  keep("gate-record", record);
  const std::string verdict = render(report::kGateDocument, gate::gate_table(gate::decide(base, now, {}), "gate"));
  EXPECT_EQ(nlohmann::json::parse(verdict)["rows"][0]["verdict"], "pass");
  keep("gate", verdict);
  keep("gate-baseline", gate::to_json(base));
  // A baseline with a grouped line: its counts as the line's text, its problem's grouped fields, the loop's samples.
  gate::GateRecord grouped_base = base;
  gate::ShapeRecord gs = gate::record_of_grouped(line);
  ASSERT_EQ(gs.status, "ok");
  grouped_base.shapes.push_back(gs);
  const std::string grouped_baseline = gate::to_json(grouped_base);
  const auto gbj = nlohmann::json::parse(grouped_baseline)["shapes"][1];
  EXPECT_EQ(gbj["grouped"], grouped_text(line.problem));
  EXPECT_EQ(gbj["problem"]["group_kind"], "masked");
  EXPECT_EQ(gbj["cublas_tuned_us"].size(), 20u);
  keep("gate-baseline-grouped", grouped_baseline);
  // trace: four CTAs, every point reached.
  KernelTrace t;
  t.problem = Problem::dense(128, 4096, 7168);
  t.config_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0";
  t.device_name = "NVIDIA H200";
  t.grid = t.traced_ctas = 4;
  t.verified = true;
  for (int cta = 0; cta < 4; ++cta)
    for (int p = 0; p < kTracePoints; ++p) {
      t.stamps.push_back(1000000 + 1000ull * cta + 500ull * p);
      t.stamps.push_back(2000000 + 1900ull * cta + 950ull * p);
    }
  const std::string trace = render(report::kTraceDocument, trace_tables(t));
  EXPECT_EQ(nlohmann::json::parse(trace)["schema"], "dgtune-trace");
  keep("trace", trace);
}

}  // namespace
}  // namespace dgt
