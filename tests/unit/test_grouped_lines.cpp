// `dgtune compare` and `gate` on a shapes file's grouped lines, without a GPU: the per-line choice (GroupedChooser, the
// loader's lookup and rule over a DB written here: db, ladder, nearest, default), the grouped table's choice columns
// and a line that was not measured, the grouped summary, and the gate's record of a grouped line (its baseline JSON,
// the loop as the baseline side, the refusals when reading one back).
#include <gtest/gtest.h>

#include "db_fixture.hpp"
#include "temp_dir_test.hpp"

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/tuning_db.hpp"
#include "eval/gate_decision.hpp"
#include "eval/gate_record.hpp"
#include "eval/gate_run.hpp"
#include "eval/grouped_compare_tables.hpp"
#include "eval/grouped_lines.hpp"
#include "loader/grouped_choice.hpp"
#include "problem/shapes_file.hpp"
#include "report/document.hpp"
#include "report/documents.hpp"

namespace dgt {
namespace {

const char* kA = "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";     // the default rule's 128-row config
const char* kC = "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";     // not a default: only a DB gives it
const char* kD = "128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1";     // likewise here (N < K)
const char* kSmall = "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";  // the default for masked expected_m <= 64

DeviceFingerprint h200() { return test::h200_fingerprint("cccccccccccccccc"); }

GroupedProblem line(const std::string& text) { return parse_grouped_problem(text, "test"); }

class GroupedLinesDb : public test::TempDirTest {
 protected:
  /// A DB with cold-l2 winners of the masked family G4 N512 K1024 (block) at expected_m 16 (kC) and 64 (kD), both at
  /// M_max 256, and of the contiguous family G4 N512 K1024 at M_sum 512 (kC) and 2048 (kD).
  void SetUp() override {
    test::TempDirTest::SetUp();
    db_path_ = path("g.db");
    TuningDb db(db_path_);
    const DeviceScope env = db.upsert_device(h200());
    auto put = [&](const GroupedProblem& g, const char* config, double us) {
      TrialRecord t;
      t.problem = g.keyed();
      t.config = KernelConfig::parse_key(config);
      t.set_timing(Timing{us, us, us, 10, 0.001, 1800, false});
      db.put_trial(env, t);
    };
    put(line("kind=masked groups=4 masked_m=16,16,16,16 m_max=256 expected_m=16 512 1024 scale=block"), kC, 10);
    put(line("kind=masked groups=4 masked_m=16,16,16,16 m_max=256 expected_m=16 512 1024 scale=block"), kA, 12);
    put(line("kind=masked groups=4 masked_m=64,64,64,64 m_max=256 expected_m=64 512 1024 scale=block"), kD, 20);
    put(line("kind=contiguous groups=4 m_per_group=128,128,128,128 512 1024"), kC, 30);
    put(line("kind=contiguous groups=4 m_per_group=512,512,512,512 512 1024"), kD, 90);
  }
  std::string db_path_;
};

TEST_F(GroupedLinesDb, EachLineRunsWhatTheLoaderRunsForItsKey) {
  const DeviceFingerprint fp = h200();
  const GroupedChooser chooser(db_path_, fp.hardware(), fp.software(), ProtocolKind::kColdL2);
  EXPECT_TRUE(chooser.has_device());
  struct Case {
    const char* text;
    const char* source;
    const char* config;
    const char* tuned_from;  // the line whose key the winner was tuned on; "" for the default rule
  };
  const Case cases[] = {
      // Its own key (other counts than the tuned ones: the counts are not part of the key).
      {"kind=masked groups=4 masked_m=1,30,0,33 m_max=256 expected_m=16 512 1024 scale=block", "db", kC,
       "kind=masked groups=4 masked_m=16,16,16,16 m_max=256 expected_m=16 512 1024 scale=block"},
      // expected_m 32 lies between the tuned 16 and 64: the upper point's winner.
      {"kind=masked groups=4 masked_m=40,20,30,38 m_max=256 expected_m=32 512 1024 scale=block", "ladder", kD,
       "kind=masked groups=4 masked_m=64,64,64,64 m_max=256 expected_m=64 512 1024 scale=block"},
      // Above the last point: the nearest end; another M_max at a tuned expected_m is a ladder point, never "db".
      {"kind=masked groups=4 masked_m=100,90,0,128 m_max=128 expected_m=100 512 1024 scale=block", "nearest", kD,
       "kind=masked groups=4 masked_m=64,64,64,64 m_max=256 expected_m=64 512 1024 scale=block"},
      // Contiguous: the ladder over the total (padded) M; 384 + 256 + 128 = 768 lies between 512 and 2048.
      {"kind=contiguous groups=4 m_per_group=300,0,200,100 512 1024", "ladder", kD,
       "kind=contiguous groups=4 m_per_group=512,512,512,512 512 1024"},
      {"kind=contiguous groups=4 m_per_group=1,0,0,0 512 1024", "nearest", kC,
       "kind=contiguous groups=4 m_per_group=128,128,128,128 512 1024"},
      // Another family (G 8): no winner, the default rule (masked, expected_m <= 64: the 64-row config).
      {"kind=masked groups=8 masked_m=16 m_max=128 expected_m=16 512 1024 scale=block", "default", kSmall, ""},
  };
  for (const Case& c : cases) {
    const GroupedProblem g = line(c.text);
    const GroupedResolved r = chooser.choose(g);
    EXPECT_EQ(r.choice.source, c.source) << c.text;
    EXPECT_EQ(r.choice.config_key, c.config) << c.text;
    EXPECT_EQ(r.config.key(), c.config) << c.text;
    EXPECT_EQ(r.choice.tuned_key, *c.tuned_from ? line(c.tuned_from).keyed().key() : std::string()) << c.text;
    EXPECT_EQ(r.problem.rows, g.rows) << "the line's own counts are measured";
    // The loader itself, asked with the run-time key (no counts), gives the same answer.
    GroupedGemmProblem key;
    key.layout = g.kind == GroupKind::kMasked ? GroupedLayout::kMasked : GroupedLayout::kContiguous;
    key.groups = g.groups;
    key.m = g.kind == GroupKind::kMasked ? g.m_max : g.total_rows();
    key.expected_m = g.expected_m;
    key.n = g.n;
    key.k = g.k;
    key.scale = g.scale == ScaleMode::kBlock ? Fp8Scaling::kBlock : Fp8Scaling::kPerTensor;
    TuningDbReader db(db_path_);
    GroupedLookup lookup;
    lookup.candidates = db.environment_winners(*db.find_hardware(fp.hardware()), g.keyed());
    lookup.kernel_hash = fp.software().kernel_hash;
    lookup.env_key = fp.software().key();
    const GroupedResolved loader = resolve_grouped_choice(key, "", &lookup);
    EXPECT_EQ(loader.choice.source, r.choice.source) << c.text;
    EXPECT_EQ(loader.choice.config_key, r.choice.config_key) << c.text;
  }
}

TEST_F(GroupedLinesDb, ProtocolKindsMissingDbAndOtherHardware) {
  const DeviceFingerprint fp = h200();
  const GroupedProblem g = line("kind=masked groups=4 masked_m=1,30,0,33 m_max=256 expected_m=16 512 1024 scale=block");
  // The winners are cold-l2's: hot-graph takes them as the other protocol's; isolated (no winners of its own) as its
  // own, as the dense compare does.
  EXPECT_EQ(GroupedChooser(db_path_, fp.hardware(), fp.software(), ProtocolKind::kHotGraph).choose(g).choice.source,
            "db-other-protocol");
  EXPECT_EQ(GroupedChooser(db_path_, fp.hardware(), fp.software(), ProtocolKind::kIsolated).choose(g).choice.source,
            "db");
  // No DB file: the default rule, and nothing is created.
  const GroupedChooser none(path("missing.db"), fp.hardware(), fp.software(), ProtocolKind::kColdL2);
  EXPECT_FALSE(none.has_device());
  EXPECT_EQ(none.choose(g).choice.source, "default");
  EXPECT_EQ(none.choose(g).choice.config_key, kSmall);
  EXPECT_FALSE(std::filesystem::exists(path("missing.db")));
  // Another GPU model's DB: no trials of this hardware, the default rule.
  DeviceFingerprint h100 = fp;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.memory_bytes = 85520809984;
  const GroupedChooser other(db_path_, h100.hardware(), h100.software(), ProtocolKind::kColdL2);
  EXPECT_FALSE(other.has_device());
  EXPECT_EQ(other.choose(g).choice.source, "default");
}

/// A measured line: the grouped kernel at `us`, the loop at `loop_us`, the dense kernel at 9 us, 20 rounds.
GroupedCompareShape measured(const std::string& text, const char* source, double us, double loop_us,
                             bool grouped_ok = true) {
  GroupedCompareShape c;
  c.problem = line(text);
  c.name = "n";
  c.config_key = kA;
  c.dense_config_key = kA;
  c.config_source = source;
  c.tuned_key = std::string(source) == "default" ? "" : c.problem.keyed().key();
  c.protocol_name = "cold-l2-v2";
  c.loop_calls = 4;
  c.loop_algos = "[algo=66] x4";
  c.result.rounds = 20;
  c.result.labels = {"grouped", "cublaslt-loop", "dense"};
  for (int r = 0; r < 20; ++r) {
    const double jitter = 1 + 0.001 * ((r * 7) % 5 - 2);
    c.result.samples.push_back({0, r, 0, us * jitter, 1900, false});
    c.result.samples.push_back({1, r, 1, loop_us / jitter, 1850, r == 3});
    c.result.samples.push_back({2, r, 2, 9, 1900, false});
  }
  summarise(c.result);
  c.result.sides[0].check = grouped_ok ? Verification{true, 1e-3, 1e-6, 0, 0} : Verification{false, 0.5, 0.1, 0, 3};
  c.result.sides[1].check = Verification{true, 1e-3, 1e-6, 0, 0};
  return c;
}

const char* kMasked32 = "kind=masked groups=4 masked_m=40,20,30,38 m_max=256 expected_m=32 512 1024 scale=block";
const char* kMasked16 = "kind=masked groups=4 masked_m=1,30,0,33 m_max=256 expected_m=16 512 1024 scale=block";
const char* kContig768 = "kind=contiguous groups=4 m_per_group=300,0,200,100 512 1024";
const char* kContig512 = "kind=contiguous groups=4 m_per_group=128,128,128,128 512 1024";

TEST(GroupedLinesTables, ChoiceColumnsANoteAndTheSummary) {
  std::vector<GroupedCompareShape> shapes{measured(kMasked32, "ladder", 10, 16), measured(kMasked16, "db", 10, 20),
                                          measured(kContig768, "ladder", 20, 25), measured(kContig512, "db", 10, 12),
                                          measured(kMasked16, "db", 10, 100, /*grouped_ok=*/false)};
  GroupedCompareShape refused;
  refused.problem = line(kContig512);
  refused.config_key = kA;
  refused.config_source = "default";
  refused.protocol_name = "cold-l2-v2";
  refused.note = "error: cuBLASLt refuses group 2";
  shapes.push_back(refused);
  const std::vector<report::Table> tables = grouped_compare_tables(shapes, stats::PairedOptions{}, "grouped lines");
  ASSERT_EQ(tables.size(), 1u);
  std::ostringstream out;
  report::render_document(report::kCompareDocument, {tables[0], grouped_summary_table(shapes, {})},
                          report::Format::kJson, out);
  const auto doc = nlohmann::json::parse(out.str());
  const auto& rows = doc["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0]["config_source"], "ladder");
  EXPECT_EQ(rows[0]["tuned_key"], line(kMasked32).keyed().key());
  EXPECT_EQ(rows[0]["name"], "n");
  EXPECT_NEAR(rows[0]["x_loop"].get<double>(), 1.6, 0.01);
  EXPECT_NEAR(rows[0]["x_dense"].get<double>(), 0.9, 0.01);
  EXPECT_NEAR(rows[0]["tflops"].get<double>(),
              line(kMasked32).flops() / (rows[0]["us"].get<double>() * 1e-6) / 1e12, 0.1);
  EXPECT_NEAR(rows[0]["loop_sm_clock_mhz_median"].get<double>(), 1850, 1e-9);
  EXPECT_EQ(rows[0]["check"], "ok");
  EXPECT_EQ(rows[0]["note"], "");
  EXPECT_EQ(rows[4]["check"].get<std::string>().rfind("FAILED", 0), 0u);
  // The line that was not measured: its problem, config, source and note; no measurement.
  EXPECT_EQ(rows[5]["config_source"], "default");
  EXPECT_EQ(rows[5]["tuned_key"], "");
  EXPECT_EQ(rows[5]["note"], "error: cuBLASLt refuses group 2");
  for (const char* f : {"us", "tflops", "loop_us", "x_loop", "x_dense", "check", "rounds"})
    EXPECT_TRUE(rows[5][f].is_null()) << f;
  // The summary: the geomean of x_loop over the two verified masked lines (1.6 and 2.0), not the failed one (10.0);
  // the contiguous family's TFLOPS per line in file order.
  std::map<std::string, nlohmann::json> summary;
  for (const auto& r : doc["tables"][1]["rows"]) summary[r["what"].get<std::string>()] = r["value"];
  EXPECT_EQ(summary["grouped lines measured and verified"], 4);
  EXPECT_EQ(summary["grouped lines not measured or not verified"], 2);
  EXPECT_NEAR(summary["geomean x_loop, masked lines"].get<double>(), std::sqrt(1.6 * 2.0), 0.01);
  EXPECT_NEAR(summary["min x_loop, masked lines"].get<double>(), 1.6, 0.01);
  EXPECT_EQ(summary["masked lines in the geomean"], 2);
  const std::string family = "TFLOPS contiguous G4 N512 K1024 per-tensor promote M_sum ";
  ASSERT_TRUE(summary.count(family + "768 (ladder)")) << doc["tables"][1].dump();
  EXPECT_NEAR(summary[family + "768 (ladder)"].get<double>(), 2.0 * 600 * 512 * 1024 / 20e-6 / 1e12, 0.1);
  EXPECT_NEAR(summary[family + "512 (db)"].get<double>(), 2.0 * 512 * 512 * 1024 / 10e-6 / 1e12, 0.1);
  EXPECT_EQ(doc["tables"][1]["rows"].size(), 7u);  // five counts and statistics, two contiguous lines
  // compare --grouped (no source): the table it always had, without the choice columns.
  GroupedCompareShape plain = measured(kMasked32, "", 10, 16);
  const report::Table t = grouped_compare_tables({plain}, {}, "t")[0];
  for (const report::Column& c : t.columns)
    for (const char* f : {"name", "config_source", "tuned_key", "note"}) EXPECT_NE(c.id, f);
}

TEST(GroupedLinesGate, RecordOfAGroupedLineGatesTheLoopAndRoundTrips) {
  GroupedCompareShape c = measured(kMasked32, "ladder", 10, 16);
  c.result.samples.erase(c.result.samples.begin() + 3);  // round 1's grouped sample: that round is left out
  summarise(c.result);
  c.result.sides[0].check = Verification{true, 1e-3, 1e-6, 0, 0};
  const gate::ShapeRecord rec = gate::record_of_grouped(c);
  EXPECT_EQ(rec.status, "ok");
  EXPECT_EQ(rec.problem, line(kMasked32).keyed());
  ASSERT_TRUE(rec.grouped);
  EXPECT_EQ(rec.grouped->rows, line(kMasked32).rows);
  EXPECT_EQ(rec.config_source, "ladder");
  EXPECT_EQ(rec.tuned_algo, "[algo=66] x4");
  ASSERT_EQ(rec.rounds.size(), 19u);
  EXPECT_EQ(rec.rounds[1], 2);
  EXPECT_NEAR(rec.ours_us[0], 10 * 0.998, 1e-9);
  EXPECT_NEAR(rec.tuned_us[0], 16 / 0.998, 1e-9);  // the loop is the baseline side
  EXPECT_TRUE(rec.default_us.empty());
  EXPECT_TRUE(rec.flagged[2]) << "round 3's loop sample is flagged";
  // A wrong grouped output is verify_failed, with no samples; a line not measured is an error with its note.
  const gate::ShapeRecord bad = gate::record_of_grouped(measured(kMasked32, "ladder", 10, 16, false));
  EXPECT_EQ(bad.status, "verify_failed");
  EXPECT_TRUE(bad.ours_us.empty());
  GroupedCompareShape refused;
  refused.problem = line(kContig512);
  refused.note = "error: cuBLASLt refuses group 2";
  EXPECT_EQ(gate::record_of_grouped(refused).status, "error");
  EXPECT_EQ(gate::record_of_grouped(refused).error, "error: cuBLASLt refuses group 2");

  // The baseline file keeps the counts as the line's text, and reads back to the same record.
  gate::GateRecord base;
  base.hardware = h200().hardware();
  base.software = h200().software();
  base.kernel_hash = base.software.kernel_hash;
  base.protocol = R"({"kind":"cold-l2","name":"cold-l2-v2","rounds":20,"version":2})";
  base.created_at = "2026-12-04T12:00:00Z";
  base.shapes.push_back(rec);
  const std::string text = gate::to_json(base);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["shapes"][0]["grouped"], grouped_text(line(kMasked32)));
  EXPECT_EQ(j["shapes"][0]["problem"]["groups"], 4);
  const gate::GateRecord back = gate::parse_record(text, "base.json");
  ASSERT_TRUE(back.shapes[0].grouped);
  EXPECT_EQ(back.shapes[0].grouped->rows, line(kMasked32).rows);
  EXPECT_EQ(back.shapes[0].problem, rec.problem);
  EXPECT_EQ(back.shapes[0].tuned_us, rec.tuned_us);

  // The same rule as a dense line, against the loop: 8% slower relative to the loop fails a 5% threshold.
  gate::GateRecord now = base;
  for (double& us : now.shapes[0].ours_us) us *= 1.08;
  const gate::GateReport report = gate::decide(base, now, {});
  ASSERT_EQ(report.shapes.size(), 1u);
  EXPECT_EQ(report.shapes[0].verdict, gate::ShapeVerdict::kRegression);
  EXPECT_NE(report.shapes[0].reason.find("slower vs the per-group cuBLASLt loop"), std::string::npos)
      << report.shapes[0].reason;
  EXPECT_NEAR(report.shapes[0].x_tuned_baseline, 1.6, 0.01);

  // A grouped problem without its counts, or counts of another key, is refused naming the shape.
  nlohmann::json no_counts = j;
  no_counts["shapes"][0].erase("grouped");
  try {
    gate::parse_record(no_counts.dump(), "base.json");
    FAIL() << "a grouped shape without counts was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(e.message().find("base.json: shapes[0]: problem grouped-masked_G4_mmax256_em32_"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("has no 'grouped' field"), std::string::npos) << e.message();
  }
  nlohmann::json other = j;
  other["shapes"][0]["grouped"] = "kind=masked groups=4 masked_m=1,2,3,4 m_max=256 expected_m=64 512 1024 scale=block";
  try {
    gate::parse_record(other.dump(), "base.json");
    FAIL() << "counts of another key were read";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("is the problem grouped-masked_G4_mmax256_em64_"), std::string::npos) << e.message();
  }
  // gate --baseline with --shapes: a grouped line of the baseline's key but other counts is refused before the GPU
  // (the key leaves the counts out: it would gate another workload), naming the line and both counts.
  {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dgtune-grouped-gate-counts";
    std::filesystem::create_directories(dir);
    const std::string base_path = (dir / "base.json").string();
    gate::write_record(base, base_path);
    GateRunOptions o;
    o.baseline_path = base_path;
    o.db_path = (dir / "t.db").string();
    o.shapes = parse_shapes_with_grouped(
        "kind=masked groups=4 masked_m=10,20,30,40 m_max=256 expected_m=32 512 1024 scale=block\n", "g.txt");
    ASSERT_EQ(o.shapes[0].problem, rec.problem) << "the same key, other counts";
    o.shapes_path = (dir / "g.txt").string();
    try {
      run_gate(o);
      FAIL() << "other counts under the baseline's key were gated";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(e.message().find("g.txt:1: the grouped line's per-group counts (10,20,30,40) are not those of"),
                std::string::npos)
          << e.message();
      EXPECT_NE(e.message().find("shapes[0] (40,20,30,38)"), std::string::npos) << e.message();
    }
    // A problem given twice (identical lines) is refused before the GPU, naming both lines: a record holds each key
    // once and its reader refuses a repeat.
    GateRunOptions rec_o;
    rec_o.record_path = (dir / "rec.json").string();
    rec_o.db_path = o.db_path;
    rec_o.shapes = parse_shapes_with_grouped(std::string(kMasked32) + "\n64 64 64\n" + kMasked32 + "\n", "twice.txt");
    try {
      run_gate(rec_o);
      FAIL() << "a problem given twice was gated";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(e.message().find("twice.txt:3: the problem of twice.txt:1 again"), std::string::npos) << e.message();
    }
    EXPECT_FALSE(std::filesystem::exists(rec_o.record_path));
    std::filesystem::remove_all(dir);
  }
  nlohmann::json broken = j;
  broken["shapes"][0]["grouped"] = "kind=masked groups=4 masked_m=300,2,3,4 m_max=256 512 1024";
  try {
    gate::parse_record(broken.dump(), "base.json");
    FAIL() << "a grouped line that breaks a rule was read";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("base.json: shapes[0]: grouped: masked_m: group 0 has 300 rows > m_max=256"),
              std::string::npos)
        << e.message();
  }
}

TEST(GroupedLinesRefusals, NameTheLineTheFlagAndWhy) {
  const std::vector<ShapeEntry> shapes =
      parse_shapes_with_grouped(std::string("64 64 64\n") + kMasked32 + " name=moe\n", "f.txt");
  try {
    refuse_grouped_lines(shapes, "--search", "does not apply");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(e.message(), "f.txt:2: a grouped (MoE) line (" + line(kMasked32).label() + "): --search does not apply");
  }
  EXPECT_NO_THROW(refuse_grouped_lines({shapes[0]}, "--search", "x"));
  // A shape read back from a gate baseline has no line number: named by its index.
  std::vector<ShapeEntry> from_baseline = shapes;
  for (ShapeEntry& e : from_baseline) {
    e.file = "base.json";
    e.line = 0;
  }
  try {
    refuse_grouped_lines(from_baseline, "--search", "does not apply");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("base.json: shapes[1]: a grouped (MoE) line", 0), 0u) << e.message();
  }
}

}  // namespace
}  // namespace dgt
