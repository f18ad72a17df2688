// `dgtune compare` on the GPU, end to end through the binary ($DGTUNE_BIN when set, for a build carried to another
// path; else the build's, DGT_DGTUNE_BIN): two shapes (one with a DB
// winner, one without: default config) in both protocols, samples saved with --save; and the loader
// reading an exported table (GemmOptions::table) instead of a DB.
#include "harness.hpp"

#include <stdio.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "db/tuning_db.hpp"
#include "dgtune/gemm.hpp"
#include "launch/environment.hpp"
#include "tune/session.hpp"

namespace dgt::test {
namespace {

struct CliRun {
  int rc = -1;
  std::string out, err;
};

/// The dgtune binary: $DGTUNE_BIN when set (a build copied elsewhere, e.g. to a GPU machine), else the build's.
std::string dgtune_bin() {
  const char* env = std::getenv("DGTUNE_BIN");
  return env && *env ? env : DGT_DGTUNE_BIN;
}

CliRun run_dgtune(const std::string& args, const std::string& err_file) {
  CliRun r;
  const std::string cmd = dgtune_bin() + " " + args + " 2>" + err_file;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  const int st = pclose(f);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

TEST(Compare, BothProtocolsOnTwoShapes) {
  char tmpl[] = "/tmp/dgtune-compare-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db_path = dir + "/tuning.db", save_path = dir + "/samples.db", shapes = dir + "/shapes.txt";
  const Problem tuned = Problem::dense(128, 2112, 7168);
  const KernelConfig tuned_config = KernelConfig::parse_key("64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk4_sm0");
  {
    SessionOptions so;
    so.db_path = db_path;
    so.protocol.max_seconds = 0.2;
    TuningSession session(so);
    TrialRecord t = session.run_one(tuned, tuned_config, /*with_baselines=*/false);
    ASSERT_EQ(t.status, TrialStatus::kOk) << t.error;
  }
  std::ofstream(shapes) << "128 2112 7168 name=decode\n2048 2048 2048 name=square\n";
  const auto size_before = std::filesystem::file_size(db_path);

  for (const char* protocol : {"cold-l2", "hot-graph"}) {
    const CliRun r = run_dgtune(std::string("compare --shapes ") + shapes + " --db " + db_path + " --protocol " +
                                    protocol + " --rounds 10 --format json --save " + save_path,
                                dir + "/err.txt");
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    ASSERT_EQ(doc["tables"].size(), 2u);
    std::map<std::string, nlohmann::json> rows;
    for (const auto& row : doc["tables"][0]["rows"]) rows[row["name"].get<std::string>()] = row;
    ASSERT_EQ(rows.size(), 2u) << r.out;
    // The DB holds a cold-l2 winner only (run_one times with the sweep Timer): asked for hot-graph, the loader
    // takes it as the shape's other-protocol winner and says so.
    EXPECT_EQ(rows["decode"]["config_source"], std::string(protocol) == "cold-l2" ? "db" : "db-other-protocol")
        << protocol;
    EXPECT_EQ(rows["decode"]["config"], tuned_config.key()) << protocol;
    EXPECT_EQ(rows["square"]["config_source"], "default") << protocol;
    for (const auto& [name, row] : rows) {
      EXPECT_TRUE(row["note"].get<std::string>().empty()) << protocol << " " << name << ": " << row["note"];
      EXPECT_GT(row["dgtune_us"].get<double>(), 0) << protocol << " " << name;
      EXPECT_GT(row["cublas_tuned_us"].get<double>(), 0) << protocol << " " << name;
      EXPECT_GT(row["x_tuned"].get<double>(), 0.2) << protocol << " " << name;
      EXPECT_LE(row["x_tuned_lo"].get<double>(), row["x_tuned"].get<double>());
      EXPECT_GE(row["x_tuned_hi"].get<double>(), row["x_tuned"].get<double>());
      EXPECT_TRUE(row["verdict"] == "faster" || row["verdict"] == "slower" || row["verdict"] == "equivalent" ||
                  row["verdict"] == "inconclusive");
      EXPECT_GT(row["clock_mhz"].get<double>(), 0);
      // The copy limit ran in the same rounds (on by default). Cold, every byte comes from HBM for both
      // sides, so the copy is a bound: below dgtune's time (2048^3 is compute-bound; the decode shape
      // moves 16 MB). Hot, both read L2 and only copy_us > 0 must hold.
      EXPECT_GT(row["copy_us"].get<double>(), 0) << protocol << " " << name;
      EXPECT_NEAR(row["copy_fraction"].get<double>(),
                  row["copy_us"].get<double>() / row["dgtune_us"].get<double>(), 1e-9);
      if (std::string(protocol) == "cold-l2")
        EXPECT_LT(row["copy_fraction"].get<double>(), 1.0) << protocol << " " << name;
      EXPECT_EQ(row["rounds"], 10);
      EXPECT_NE(row["cublas_tuned_algo"].get<std::string>().find("requested=32"), std::string::npos);
    }
  }
  // The --db file was only read.
  EXPECT_EQ(std::filesystem::file_size(db_path), size_before);
  // --no-copy-limit: the GEMM sides only, no copy columns.
  {
    const CliRun r = run_dgtune("compare --shapes " + shapes + " --db " + db_path +
                                    " --rounds 3 --no-copy-limit --format json",
                                dir + "/err-nocopy.txt");
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    for (const auto& row : nlohmann::json::parse(r.out)["tables"][0]["rows"]) {
      EXPECT_TRUE(row["copy_us"].is_null()) << row.dump();
      EXPECT_TRUE(row["copy_fraction"].is_null()) << row.dump();
      EXPECT_GT(row["dgtune_us"].get<double>(), 0) << row.dump();
    }
  }
  // Both protocols' samples were saved: 2 shapes x 2 protocols, 4 sides x 10 rounds each, every GEMM side
  // checked; the copy limit last, a provider side without a check.
  TuningDbReader saved(save_path);
  const auto devices = saved.devices();
  ASSERT_EQ(devices.size(), 1u);
  const auto ms = saved.latest_measurements(devices[0].id);
  ASSERT_EQ(ms.size(), 4u);
  for (const StoredMeasurement& m : ms) {
    EXPECT_EQ(m.samples.size(), 40u) << m.problem.label() << " " << m.protocol_name;
    ASSERT_EQ(m.sides.size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
      const StoredSide& s = m.sides[i];
      ASSERT_TRUE(s.check.has_value()) << s.label;
      EXPECT_TRUE(s.check->ok) << s.label;
    }
    EXPECT_EQ(m.sides[3].label, "copy-limit");
    EXPECT_EQ(m.sides[3].kind, "provider");
    EXPECT_FALSE(m.sides[3].check.has_value());
    EXPECT_EQ(m.sides[2].heuristic_count, m.sides[1].heuristic_count);
    EXPECT_GE(m.sides[2].heuristic_count, 1);
  }
  // The saved DB compares against itself (identical samples): never "faster" or "slower".
  const CliRun self =
      run_dgtune("compare --between " + save_path + " " + save_path + " --format json", dir + "/err2.txt");
  ASSERT_EQ(self.rc, 0) << self.out << self.err;
  const auto self_rows = nlohmann::json::parse(self.out)["tables"][0]["rows"];
  EXPECT_EQ(self_rows.size(), 4u);
  for (const auto& row : self_rows) {
    EXPECT_NE(row["verdict"], "faster") << row.dump();
    EXPECT_NE(row["verdict"], "slower") << row.dump();
    EXPECT_DOUBLE_EQ(row["change"].get<double>(), 1.0) << row.dump();
  }
}

// The timing-protocol study's variants (docs/measurement.md): the idle gap before each sample is not inside the
// sample, the reversed order and the isolated protocol time the same kernels, and every side reports its median
// SM clock. 2048^3 runs in ~15 us, so a 300 us gap counted into a sample would multiply its time.
TEST(Compare, StudyVariantsTimeTheKernelNotTheGap) {
  char tmpl[] = "/tmp/dgtune-study-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string shapes = dir + "/shapes.txt";
  std::ofstream(shapes) << "2048 2048 2048 name=square\n";
  auto row_of = [&](const std::string& extra, const std::string& tag) {
    const CliRun r = run_dgtune("compare --shapes " + shapes + " --db /nonexistent/none.db --format json " + extra,
                                dir + "/err-" + tag + ".txt");
    EXPECT_EQ(r.rc, 0) << tag << ": " << r.out << r.err;
    if (r.rc != 0) return nlohmann::json();
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["tables"][0]["rows"].size(), 1u) << tag;
    return doc["tables"][0]["rows"][0];
  };
  const auto base = row_of("--rounds 8", "williams");
  const auto gap = row_of("--rounds 8 --gap-us 300", "gap");
  const auto reversed = row_of("--rounds 8 --side-order reversed", "reversed");
  const auto isolated = row_of("--protocol isolated --rounds 5 --launches 10", "isolated");
  const auto filled = row_of("--protocol isolated-v2", "isolated-v2");  // its own default: 30 samples per side
  ASSERT_FALSE(base.is_null() || gap.is_null() || reversed.is_null() || isolated.is_null() || filled.is_null());
  const double base_us = base["dgtune_us"].get<double>(), base_cublas = base["cublas_tuned_us"].get<double>();
  ASSERT_GT(base_us, 0);
  ASSERT_LT(base_us, 100) << "2048^3 should take ~15 us on an H100/H200";
  for (const auto* side : {"dgtune_us", "cublas_tuned_us"}) {
    const double b = base[side].get<double>();
    EXPECT_LT(gap[side].get<double>(), 1.5 * b + 5) << side << ": the gap leaked into the sample";
    EXPECT_GT(gap[side].get<double>(), 0.5 * b) << side;
    EXPECT_LT(reversed[side].get<double>(), 1.5 * b + 5) << side;
    EXPECT_GT(reversed[side].get<double>(), 0.5 * b) << side;
    // Isolated: launches 2..10 of a sample find the 8 MB of operands in L2, so it may be faster than cold-l2,
    // never several times slower (one event pair around 10 launches, divided by 10).
    EXPECT_LT(isolated[side].get<double>(), 1.5 * b + 5) << side;
    EXPECT_GT(isolated[side].get<double>(), 0.2 * b) << side;
    // isolated-v2: one launch after an 8 GB zero fill, operands from HBM as in cold-l2 (the fill is not timed).
    EXPECT_LT(filled[side].get<double>(), 1.5 * b + 5) << side << ": the zero fill leaked into the sample";
    EXPECT_GT(filled[side].get<double>(), 0.5 * b) << side;
  }
  EXPECT_GT(base_cublas, 0);
  for (const auto* row : {&base, &gap, &reversed, &isolated, &filled}) {
    for (const auto* clk : {"dgtune_sm_clock_mhz_median", "cublas_tuned_sm_clock_mhz_median"}) {
      ASSERT_TRUE((*row)[clk].is_number()) << clk << ": " << row->dump();
      EXPECT_GT((*row)[clk].get<double>(), 500) << clk;
      EXPECT_LT((*row)[clk].get<double>(), 2500) << clk;
    }
  }
  EXPECT_EQ(isolated["rounds"], 5);
  EXPECT_EQ(filled["rounds"], 30);  // isolated-v2's own default (the rows carry no protocol name; the title does)
}

TEST(Compare, LoaderTakesAnExportedTable) {
  Gpu& gpu = Gpu::get();
  const std::string hw = gpu.device.hardware().key();
  const SoftwareEnv env = current_software_env(gpu.device);
  static const TunedEntry entries[] = {
      {257, 1024, 1040, 1040, 1040, 1024, "e4m3", "e4m3", "promote", "64x96x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0",
       12.5, "not-this-kernel"},
      {257, 1024, 1040, 1040, 1040, 1024, "e4m3", "e4m3", "promote", "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0",
       11.0, "older-kernel"},
  };
  std::vector<TunedEntry> current(std::begin(entries), std::end(entries));
  current[0].kernel_hash = env.kernel_hash.c_str();  // entry 0 measured with the running kernel: preferred
  TunedTable table{hw.c_str(), gpu.device.name.c_str(), env.kernel_hash.c_str(),
                   "test",     current.data(),          current.size()};
  GemmOptions o;
  o.db_path = "/nonexistent/never-opened.db";
  o.table = &table;
  {
    Gemm gemm(o);
    GemmChoice c = gemm.choose(257, 1024, 1040, 1040, 1040, 1024);
    EXPECT_EQ(c.source, "db");
    EXPECT_EQ(c.config_key, KernelConfig::parse_key("64x96x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0").key());
    EXPECT_DOUBLE_EQ(c.tuned_us, 12.5);
    // Same N, K, another M: the nearest tuned M.
    EXPECT_EQ(gemm.choose(300, 1024, 1040, 1040, 1040, 1024).source, "nearest");
    EXPECT_EQ(gemm.choose(300, 2048, 1040, 1040, 1040, 2048).source, "default");
    // The table's config runs and matches the reference.
    ProblemData data(Problem::dense(257, 1024, 1040), *gpu.util, 5, gpu.stream);
    const jit::GemmOperands ops = data.operands();
    data.poison_output(gpu.stream);
    gemm.run(ops.a, ops.b, ops.d, 257, 1024, 1040, 1040, 1040, 1024, ops.scale_a, ops.scale_b, gpu.stream);
    ASSERT_EQ(cudaStreamSynchronize(gpu.stream), cudaSuccess);
    EXPECT_TRUE(data.verify(gpu.stream).ok);
  }
  {
    // Another hardware identity: the table is not used.
    const std::string other = "0000000000000000";
    TunedTable foreign = table;
    foreign.hw_key = other.c_str();
    o.table = &foreign;
    Gemm gemm(o);
    EXPECT_EQ(gemm.choose(257, 1024, 1040, 1040, 1040, 1024).source, "default");
  }
}

}  // namespace
}  // namespace dgt::test
