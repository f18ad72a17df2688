// The regression gate's decision, exit precedence, baseline file and writers (eval/gate_decision.hpp, gate_record.hpp, gate_report.hpp), on synthetic
// samples with known answers. No GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "eval/gate_decision.hpp"
#include "eval/gate_record.hpp"
#include "eval/gate_report.hpp"

namespace dgt::gate {
namespace {

namespace fs = std::filesystem;

/// 20 rounds of deterministic noise: +-0.5% around `base`, a fixed pattern (no RNG).
std::vector<double> noisy(double base, int n = 20, int phase = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(base * (1 + 0.005 * std::sin(1.7 * (i + phase) + 0.3)));
  return v;
}

ShapeRecord shape(int64_t m, double ours, double tuned, int phase = 0, const std::string& name = "") {
  ShapeRecord s;
  s.problem = Problem::dense(m, 4096, 4096);
  s.name = name;
  s.config_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0";
  s.config_source = "db";
  s.ours_us = noisy(ours, 20, phase);
  s.tuned_us = noisy(tuned, 20, phase + 3);
  s.default_us = noisy(tuned * 1.1, 20, phase + 5);
  for (int i = 0; i < 20; ++i) {
    s.rounds.push_back(i);
    s.clock_mhz.push_back(1980);
    s.flagged.push_back(false);
  }
  return s;
}

GateRecord record(std::vector<ShapeRecord> shapes) {
  GateRecord r;
  r.hardware = {"NVIDIA H200", 9, 0, 132, 150754820096, 62914560};
  r.software = {570, 13000, 130000, 13000, "aaaaaaaaaaaaaaaa", "0.4.0"};
  r.kernel_hash = r.software.kernel_hash;
  r.protocol = R"({"kind":"cold-l2","name":"cold-l2-v2","rounds":20,"version":2})";
  r.created_at = "2026-11-29T12:00:00Z";
  r.shapes = std::move(shapes);
  return r;
}

TEST(GateDecision, UnchangedPasses) {
  const ShapeRecord base = shape(128, 100, 100);
  ShapeDecision d = decide_shape(&base, shape(128, 100, 100, 7), {}, true);
  EXPECT_EQ(d.verdict, ShapeVerdict::kPass) << d.reason;
  ASSERT_TRUE(d.ratio_test);
  EXPECT_NEAR(d.ratio_test->slowdown(), 0, 0.01);
}

TEST(GateDecision, KnownAnswersAcrossTheThreshold) {
  const ShapeRecord base = shape(128, 100, 100);
  // 10% slower relative to cuBLASLt: rejected at 5%.
  EXPECT_EQ(decide_shape(&base, shape(128, 110, 100, 4), {}, true).verdict, ShapeVerdict::kRegression);
  // 2% slower: within the 5% threshold.
  EXPECT_EQ(decide_shape(&base, shape(128, 102, 100, 4), {}, true).verdict, ShapeVerdict::kPass);
  // 2% slower fails a 1% threshold (the noise is +-0.5%).
  EXPECT_EQ(decide_shape(&base, shape(128, 102, 100, 4), {0.01, 0.95}, true).verdict, ShapeVerdict::kRegression);
  // Faster: passes.
  EXPECT_EQ(decide_shape(&base, shape(128, 80, 100, 4), {}, true).verdict, ShapeVerdict::kPass);
  // The ratio is what is gated: both sides 20% slower (a slower machine) is not a regression.
  EXPECT_EQ(decide_shape(&base, shape(128, 120, 120, 4), {}, true).verdict, ShapeVerdict::kPass);
}

TEST(GateDecision, CublasSpeedupAloneIsReportedNotARegression) {
  const ShapeRecord base = shape(128, 100, 100);
  ShapeDecision d = decide_shape(&base, shape(128, 100, 85, 4), {}, true);
  EXPECT_EQ(d.verdict, ShapeVerdict::kCublasFaster) << d.reason;
  EXPECT_FALSE(is_failure(d.verdict));
  EXPECT_LT(d.cublas_change, -0.1);
  EXPECT_NE(d.reason.find("cuBLASLt"), std::string::npos);
  // cuBLASLt faster AND dgtune slower in absolute time: a regression.
  EXPECT_EQ(decide_shape(&base, shape(128, 110, 85, 4), {}, true).verdict, ShapeVerdict::kRegression);
  // The same samples with the same cuBLASLt, runtime and driver: cuBLASLt cannot have sped up by itself,
  // its shift is machine state, and the ratio decides.
  EXPECT_EQ(decide_shape(&base, shape(128, 100, 85, 4), {}, false).verdict, ShapeVerdict::kRegression);
}

TEST(GateDecision, CublasFasterNeedsAChangedCublasVersionInTheRecords) {
  const GateRecord base = record({shape(128, 100, 100)});
  const GateRecord same = record({shape(128, 100, 85, 4)});
  EXPECT_EQ(decide(base, same, {}).shapes[0].verdict, ShapeVerdict::kRegression);
  GateRecord upgraded = same;
  upgraded.software.cublaslt_version += 100;
  EXPECT_EQ(decide(base, upgraded, {}).shapes[0].verdict, ShapeVerdict::kCublasFaster);
}

TEST(GateDecision, ShapeWithoutCublasIsGatedOnAbsoluteTime) {
  // cuBLASLt refuses e.g. 1021 x 1023 x 1024 (status 15): no ratio exists, so dgtune's own time is gated.
  auto alone = [](double ours, int phase) {
    ShapeRecord s = shape(1021, ours, 1, phase);
    s.tuned_us.clear();
    s.default_us.clear();
    s.tuned_algo = "unsupported: status 15";
    return s;
  };
  const ShapeRecord base = alone(100, 0);
  ShapeDecision same = decide_shape(&base, alone(100, 4), {}, true);
  EXPECT_EQ(same.verdict, ShapeVerdict::kPass) << same.reason;
  EXPECT_FALSE(same.ratio_test);
  ASSERT_TRUE(same.absolute_test);
  EXPECT_NE(same.reason.find("absolute time"), std::string::npos) << same.reason;
  ShapeDecision slower = decide_shape(&base, alone(110, 4), {}, true);
  EXPECT_EQ(slower.verdict, ShapeVerdict::kRegression) << slower.reason;
  // The baseline file keeps such a shape (empty cublaslt_tuned_us) and reads it back.
  const GateRecord back = parse_record(to_json(record({base})));
  ASSERT_EQ(back.shapes.size(), 1u);
  EXPECT_TRUE(back.shapes[0].tuned_us.empty());
  EXPECT_EQ(back.shapes[0].ours_us.size(), 20u);
}

TEST(GateDecision, VerificationFailureAndErrors) {
  const ShapeRecord base = shape(128, 100, 100);
  ShapeRecord bad = shape(128, 100, 100, 4);
  bad.status = "verify_failed";
  bad.error = "max_rel_err 0.5";
  EXPECT_EQ(decide_shape(&base, bad, {}, true).verdict, ShapeVerdict::kVerifyFailed);
  EXPECT_TRUE(is_failure(ShapeVerdict::kVerifyFailed));
  ShapeRecord err = shape(128, 100, 100, 4);
  err.status = "error";
  err.error = "cuBLASLt refuses";
  EXPECT_EQ(decide_shape(&base, err, {}, true).verdict, ShapeVerdict::kError);
  EXPECT_EQ(decide_shape(nullptr, shape(256, 100, 100), {}, true).verdict, ShapeVerdict::kNew);
  ShapeRecord base_err = base;
  base_err.status = "error";
  base_err.ours_us.clear();
  EXPECT_EQ(decide_shape(&base_err, shape(128, 100, 100, 4), {}, true).verdict,
            ShapeVerdict::kNew);  // baseline defect: not gated
}

TEST(GateDecision, ExitPrecedenceErrorOverRegressionOverPass) {
  EXPECT_EQ(exit_code_for(0, 0), 0);
  EXPECT_EQ(exit_code_for(0, 2), 3);
  EXPECT_EQ(exit_code_for(1, 0), 1);
  EXPECT_EQ(exit_code_for(1, 5), 1);

  const GateRecord base =
      record({shape(128, 100, 100, 0, "a"), shape(256, 100, 100, 0, "b"), shape(512, 100, 100, 0, "c")});
  GateRecord now = record({shape(128, 100, 100, 4, "a"), shape(256, 100, 100, 4, "b"), shape(512, 100, 100, 4, "c")});
  EXPECT_EQ(decide(base, now, {}).exit_code(), 0);
  now.shapes[1] = shape(256, 115, 100, 4, "b");
  GateReport r = decide(base, now, {});
  EXPECT_EQ(r.regressions, 1);
  EXPECT_EQ(r.exit_code(), 3);
  now.shapes[2].status = "error";
  now.shapes[2].error = "CUDA context lost";
  r = decide(base, now, {});
  EXPECT_EQ(r.exit_code(), 1);
  ASSERT_EQ(r.errored().size(), 1u);
  EXPECT_EQ(r.errored()[0], "c");
}

TEST(GateDecision, OtherHardwareIsRefusedNamingTheDifferenceSoftwareIsListed) {
  const GateRecord base = record({shape(128, 100, 100)});
  GateRecord now = record({shape(128, 100, 100, 4)});
  now.hardware.name = "NVIDIA H100 80GB HBM3";
  now.hardware.memory_bytes = 85520809984;
  try {
    decide(base, now, {});
    ADD_FAILURE() << "expected kUsage";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(e.message().find("GPU name: baseline 'NVIDIA H200', now 'NVIDIA H100 80GB HBM3'"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("memory"), std::string::npos);
  }
  now = record({shape(128, 100, 100, 4)});
  now.software.driver_version = 580;
  now.software.kernel_hash = "bbbbbbbbbbbbbbbb";
  const GateReport r = decide(base, now, {});
  EXPECT_EQ(r.exit_code(), 0);
  ASSERT_EQ(r.software_differences.size(), 2u);
  EXPECT_EQ(r.software_differences[0], "driver: baseline 570, now 580");
}

TEST(GateRecordFile, RoundTripAndBadInput) {
  GateRecord r = record({shape(128, 100, 90, 0, "decode"), shape(7, 5, 6)});
  r.shapes[1].status = "error";
  r.shapes[1].error = "x";
  r.shapes[1].flagged[3] = true;
  const GateRecord back = parse_record(to_json(r));
  ASSERT_EQ(back.shapes.size(), 2u);
  EXPECT_EQ(back.hardware.key(), r.hardware.key());
  EXPECT_EQ(back.software.key(), r.software.key());
  EXPECT_EQ(back.shapes[0].problem, r.shapes[0].problem);
  EXPECT_EQ(back.shapes[0].ours_us, r.shapes[0].ours_us);
  EXPECT_EQ(back.shapes[0].tuned_us, r.shapes[0].tuned_us);
  EXPECT_EQ(back.shapes[1].flagged, r.shapes[1].flagged);
  EXPECT_EQ(back.shapes[1].status, "error");
  EXPECT_EQ(back.protocol, r.protocol);
  EXPECT_EQ(to_json(back), to_json(r));
  auto usage = [](const std::string& text, const std::string& needle) {
    try {
      parse_record(text, "b.json");
      ADD_FAILURE() << "expected kUsage for " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
    }
  };
  usage("not json", "b.json:1:2: invalid JSON: syntax error while parsing value");
  usage("{\n \"schema_version\": 2,\n}", "b.json:3:1: invalid JSON");
  usage(std::string(100000, '[') + std::string(100000, ']'), "b.json:1:65: JSON nesting is deeper than 64 levels");
  std::string v3 = to_json(r);
  v3.replace(v3.find("\"schema_version\": 2"), 19, "\"schema_version\": 3");
  usage(v3, "schema_version 3 with \"schema\"");
  usage(R"({"schema_version": 1})", "missing field 'name'");
  usage(R"({"schema": "dgtune-export", "schema_version": 1})", "schema 'dgtune-export' is not a gate baseline");
  // An unknown field (a misspelling would read as absent) is refused, named by its JSON pointer, as in shapes and
  // space files.
  nlohmann::json top = nlohmann::json::parse(to_json(r));
  top["colour"] = "red";
  usage(top.dump(), "b.json: /colour: unknown field");
  nlohmann::json in_problem = nlohmann::json::parse(to_json(r));
  in_problem["shapes"][1]["problem"]["ldaa"] = 16;
  usage(in_problem.dump(), "b.json: /shapes/1/problem/ldaa: unknown field");
  nlohmann::json in_shape = nlohmann::json::parse(to_json(r));
  in_shape["shapes"][0]["ours_us"] = {1.0};  // version 1's name in a version 2 file
  usage(in_shape.dump(), "b.json: /shapes/0/ours_us: unknown field");
  // Integer fields are JSON integers in the int64 range: 4096.5 was read as 4096, 1e20 as INT64_MIN.
  const std::pair<nlohmann::json, std::string> not_integers[] = {
      {4096.5, "field 'm' = 4096.5 is not an integer"},
      {nlohmann::json::parse("99999999999999999999"), "field 'm' = 1e+20 is not an integer"},
      {nlohmann::json::parse("18446744073709551615"), "field 'm' = 18446744073709551615 is not an integer"}};
  for (const auto& [value, says] : not_integers) {
    nlohmann::json m = nlohmann::json::parse(to_json(r));
    m["shapes"][0]["problem"]["m"] = value;
    usage(m.dump(), "b.json: shapes[0]: problem: " + says);
  }
  nlohmann::json no_k = nlohmann::json::parse(to_json(r));
  no_k["shapes"][1]["problem"].erase("k");
  usage(no_k.dump(), "b.json: shapes[1]: problem: missing field 'k'");
}

TEST(GateRecordFile, TheFileHasTheEnvelopeAndTheNamesOfEveryOtherOutput) {
  const std::string text = to_json(record({shape(128, 100, 90)}));
  const auto j = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(j.begin().key(), "schema");
  EXPECT_EQ(j["schema"], "dgtune-gate-baseline");
  EXPECT_EQ(std::next(j.begin()).key(), "schema_version");
  EXPECT_EQ(j["schema_version"], 2);
  const auto& s = j["shapes"][0];
  for (const char* name : {"dgtune_us", "cublas_tuned_us", "cublas_default_us", "cublas_tuned_algo"})
    EXPECT_TRUE(s.contains(name)) << name;
  for (const char* name : {"ours_us", "cublaslt_tuned_us", "tuned_algo"}) EXPECT_FALSE(s.contains(name)) << name;
}

TEST(GateRecordFile, BaselinesWrittenBeforeTheEnvelopeStillLoad) {
  // A baseline `dgtune gate --record` wrote on the H200 (schema_version 1: no "schema", "ours_us" and "cublaslt_*"),
  // and one written by the dgtune of the commit before the envelope (problems with their bias and act fields).
  for (const char* name : {"gate-baseline-v1-h200.json", "gate-baseline-v1-cb25b9e.json"}) {
    const std::string file = std::string(DGT_SOURCE_DIR) + "/tests/unit/fixtures/" + name;
    const GateRecord r = read_record(file);
    ASSERT_FALSE(r.shapes.empty()) << name;
    EXPECT_EQ(r.hardware.name, "NVIDIA H200") << name;
    for (const ShapeRecord& s : r.shapes) {
      EXPECT_EQ(s.ours_us.size(), s.rounds.size()) << name;
      // A shape cuBLASLt does not run (prime-mn) has no tuned side and says why in its algo field.
      if (!s.tuned_us.empty()) EXPECT_EQ(s.tuned_us.size(), s.rounds.size()) << name;
      EXPECT_FALSE(s.tuned_algo.empty()) << name;
      EXPECT_GT(s.ours_us[0], 0) << name;
    }
    // Read back as version 2, every sample kept.
    const GateRecord again = parse_record(to_json(r), "again.json");
    EXPECT_EQ(again.shapes.size(), r.shapes.size());
    EXPECT_EQ(again.shapes[0].ours_us, r.shapes[0].ours_us);
    EXPECT_EQ(again.shapes[0].tuned_us, r.shapes[0].tuned_us);
    EXPECT_EQ(again.shapes[0].default_us, r.shapes[0].default_us);
    EXPECT_EQ(again.shapes[0].problem, r.shapes[0].problem);
    // The baseline gates a measurement of itself: every shape passes.
    const GateReport report = decide(r, again, {});
    EXPECT_EQ(report.exit_code(), 0) << name;
    EXPECT_EQ(report.passed, static_cast<int>(r.shapes.size())) << name;
  }
  const GateRecord h200 = read_record(std::string(DGT_SOURCE_DIR) + "/tests/unit/fixtures/gate-baseline-v1-h200.json");
  ASSERT_EQ(h200.shapes.size(), 6u);
  EXPECT_EQ(h200.shapes[0].problem, Problem::dense(4096, 4096, 4096));
  EXPECT_EQ(h200.shapes[0].rounds.size(), 20u);
}

TEST(GateRecordFile, EveryShapeFollowsTheRulesOfAShapesFile) {
  auto refusal = [](const std::function<void(ShapeRecord&)>& edit) {
    GateRecord r = record({shape(128, 100, 90)});
    edit(r.shapes[0]);
    try {
      parse_record(to_json(r), "b.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      return e.message();
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal([](ShapeRecord& s) { s.problem = Problem::dense(128, 128, 7); })
                .find("b.json: shapes[0]: problem 128x128x7: operand A: lda = 7 elements"),
            std::string::npos);
  EXPECT_NE(refusal([](ShapeRecord& s) { s.problem = Problem::dense(int64_t(1) << 40, 128, 128); })
                .find("M = 1099511627776 is too large"),
            std::string::npos);
  EXPECT_NE(refusal([](ShapeRecord& s) {
              s.problem.scale = ScaleMode::kBlock;
              s.problem.accum = Accum::kFast;
            }).find("scale mode block needs accum = promote"),
            std::string::npos);
  EXPECT_NE(refusal([](ShapeRecord& s) { s.status = "great"; }).find("'great' is not ok, verify_failed or error"),
            std::string::npos);
  // No shapes: a gate that checks nothing is refused, not passed.
  GateRecord empty = record({});
  try {
    parse_record(to_json(empty), "b.json");
    ADD_FAILURE() << "a baseline without shapes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("b.json: shapes: [] is empty: a baseline without shapes gates nothing"),
              std::string::npos)
        << e.message();
  }
}

TEST(GateDecision, TheRatioIsReportedAsXCublasOverDgtune) {
  // dgtune at 90 us, cuBLASLt-tuned at 100 us: x = 100 / 90 > 1 (dgtune faster), the convention of compare.
  const ShapeRecord base = shape(128, 90, 100), now = shape(128, 90, 100, 4);
  const ShapeDecision d = decide_shape(&base, now, {}, false);
  EXPECT_NEAR(d.x_tuned_baseline, 100.0 / 90, 0.01);
  EXPECT_NEAR(d.x_tuned_now, 100.0 / 90, 0.01);
  GateReport r;
  r.shapes = {d};
  // The history DB keeps storing the time ratio dgtune / cuBLASLt (gate_result since schema 6): its inverse.
  const auto rows = history_rows(r);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].ratio_now, 0.9, 0.01);
  EXPECT_DOUBLE_EQ(rows[0].ratio_now, 1 / d.x_tuned_now);
  // Tables and files say x; no "ratio" column is left.
  const report::Table t = gate_table(r, "t");
  std::vector<std::string> ids;
  for (const auto& c : t.columns) ids.push_back(c.id);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "x_tuned_now"), ids.end());
  for (const auto& id : ids) EXPECT_EQ(id.find("ratio"), std::string::npos) << id;
  EXPECT_NEAR(std::get<report::Number>(t.rows[0][4]).value, 100.0 / 90, 0.01);
  const report::Table rec = record_table(record({base}), "r");
  EXPECT_EQ(rec.columns[8].id, "x_tuned");
  EXPECT_NEAR(std::get<report::Number>(rec.rows[0][8]).value, 100.0 / 90, 0.01);
  EXPECT_NE(markdown_summary(r).find("x = cuBLASLt-tuned us / dgtune us"), std::string::npos);
}

TEST(GateWriters, JUnitHasOneTestcasePerShapeAndParses) {
  const GateRecord base = record({shape(128, 100, 100, 0, "a&b"), shape(256, 100, 100, 0, "b"), shape(512, 100, 100)});
  GateRecord now = record({shape(128, 100, 100, 4, "a&b"), shape(256, 120, 100, 4, "b"), shape(512, 100, 100, 4),
                           shape(1024, 100, 100, 4, "new<one>")});
  now.shapes[2].status = "error";
  now.shapes[2].error = "cuBLASLt said \"no\"";
  const GateReport r = decide(base, now, {});
  const std::string x = junit_xml(r);
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = x.find(needle); at != std::string::npos; at = x.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<testcase "), 4);
  EXPECT_EQ(count("<failure "), 1);
  EXPECT_EQ(count("<error "), 1);
  EXPECT_EQ(count("<skipped "), 1);
  EXPECT_NE(x.find("a&amp;b"), std::string::npos);
  EXPECT_NE(x.find("new&lt;one&gt;"), std::string::npos);
  EXPECT_NE(x.find("tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\""), std::string::npos);

  // A real XML parser (python3's xml.etree, what CI JUnit readers build on) must accept it and see the same structure.
  if (std::system("python3 -c 'import xml.etree.ElementTree' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const fs::path file = fs::temp_directory_path() / ("dgtune_gate_junit_" + std::to_string(::getpid()) + ".xml");
  std::ofstream(file) << x;
  const std::string cmd =
      "python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); s = "
      "r.find('testsuite'); "
      "cs = s.findall('testcase'); assert r.tag == 'testsuites' and len(cs) == 4, len(cs); "
      "assert [c.find('failure') is not None for c in cs] == [False, True, False, False]; "
      "assert cs[2].find('error').get('message').endswith('\\\"no\\\"'); "
      "assert s.get('failures') == '1' and s.get('errors') == '1'\" " +
      file.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << x;
  // And a JUnit library (junitparser, installed by the script when missing) must read the same counts.
  const std::string lib = std::string("python3 ") + DGT_SOURCE_DIR + "/tests/unit/check_junit.py " + file.string() +
                          " 4 1 1 1";
  const int rc = std::system(lib.c_str());
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
    fs::remove(file);
    GTEST_SKIP() << "junitparser could not be installed (the xml.etree check above ran)";
  }
  EXPECT_EQ(rc, 0) << x;
  fs::remove(file);
}

TEST(GateWriters, MarkdownSummary) {
  const GateRecord base = record({shape(128, 100, 100, 0, "a"), shape(256, 100, 100, 0, "b")});
  GateRecord now = record({shape(128, 100, 100, 4, "a"), shape(256, 120, 100, 4, "b|c")});
  now.software.cublaslt_version = 130100;
  const std::string m = markdown_summary(decide(base, now, {}));
  EXPECT_EQ(m.rfind("## dgtune gate: FAIL (regression)", 0), 0u) << m;
  EXPECT_NE(m.find("### Failing shapes"), std::string::npos);
  EXPECT_NE(m.find("**b\\|c**"), std::string::npos) << m;
  EXPECT_NE(m.find("cuBLASLt: baseline 130000, now 130100"), std::string::npos);
  int rows = 0;
  for (size_t at = m.find("\n| "); at != std::string::npos; at = m.find("\n| ", at + 1)) ++rows;
  EXPECT_EQ(rows, 3);  // header + 2 shapes
  const std::string pass = markdown_summary(decide(base, record({shape(128, 100, 100, 4, "a")}), {}));
  EXPECT_EQ(pass.rfind("## dgtune gate: PASS", 0), 0u);
  EXPECT_EQ(pass.find("Failing"), std::string::npos);
}

TEST(GateWriters, TablesHaveOneRowPerShape) {
  const GateRecord base = record({shape(128, 100, 100)});
  const GateReport r = decide(base, record({shape(128, 100, 100, 4), shape(256, 1, 1)}), {});
  const report::Table t = gate_table(r, "t");
  ASSERT_EQ(t.rows.size(), 2u);
  for (const auto& row : t.rows) EXPECT_EQ(row.size(), t.columns.size());
  const auto hist = history_rows(r);
  ASSERT_EQ(hist.size(), 2u);
  EXPECT_EQ(hist[1].verdict, "new");
  EXPECT_TRUE(std::isnan(hist[1].slowdown));
  EXPECT_EQ(record_table(base, "r").rows.size(), 1u);
}

}  // namespace
}  // namespace dgt::gate
