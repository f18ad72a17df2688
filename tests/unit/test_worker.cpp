// The worker process (src/worker/) on the CPU: the sweep loop measuring through dgtune_fake_worker
// (tests/fake/fake_worker.cpp) processes that crash (SIGSEGV), hang, lose their context or refuse to start,
// and two workers sharing the shapes of one sweep (the --devices path). The trials are read back with SQLite
// directly, not through the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <sqlite3.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <fstream>
#include <sstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "db/tuning_db.hpp"
#include "problem/shapes_file.hpp"
#include "space/cost_model.hpp"
#include "space/grouped_defaults.hpp"
#include "space/grouped_rules.hpp"
#include "temp_dir_test.hpp"
#include "tune/sweep_loop.hpp"
#include "worker/wire.hpp"
#include "worker/worker_measurer.hpp"
#include "worker/worker_sweep.hpp"

namespace dgt {
namespace {

constexpr const char* kFakeProtocol = R"({"name":"fake"})";

struct Row {
  std::string problem, config, status, error, pci;
};

std::vector<Row> trials(const std::string& db) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h,
                               "SELECT p.key, c.key, t.status, t.error, t.pci_bus_id FROM trial t JOIN problem p ON "
                               "p.id = t.problem_id JOIN config c ON c.id = t.config_id",
                               -1, &s, nullptr),
            SQLITE_OK);
  std::vector<Row> out;
  auto text = [&](int i) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, i))); };
  while (sqlite3_step(s) == SQLITE_ROW) out.push_back({text(0), text(1), text(2), text(3), text(4)});
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

WorkerCommand fake_command(const std::string& pci) { return WorkerCommand{{DGT_FAKE_WORKER_BIN, pci}, "fake " + pci}; }

WorkerLimits short_limits() {
  WorkerLimits l;
  l.start = std::chrono::seconds(20);
  l.shape = std::chrono::seconds(20);
  l.candidate = std::chrono::milliseconds(500);  // + candidate_timeout_s (>= 2 s): a hang costs ~2.5 s
  return l;
}

class WorkerTest : public test::TempDirTest {
 protected:
  void TearDown() override {
    for (const char* v : {"FAKE_WORKER_FAULTS", "FAKE_WORKER_START", "FAKE_WORKER_DELAY_MS", "FAKE_WORKER_LOG"})
      unsetenv(v);
    TempDirTest::TearDown();
  }
  std::unique_ptr<WorkerMeasurer> measurer(const std::string& pci) {
    return std::make_unique<WorkerMeasurer>(fake_command(pci), short_limits(), nullptr, "fake", kFakeProtocol);
  }
  /// Two fake GPUs of one hardware identity, each with its own connection to the DB at `db_path` (as `--devices`).
  struct TwoLanes {
    TuningDb db0, db1;
    std::unique_ptr<WorkerMeasurer> m0, m1;
    std::vector<SweepLane> lanes;
  };
  std::unique_ptr<TwoLanes> two_lanes(const std::string& db_path) {
    auto l = std::unique_ptr<TwoLanes>(new TwoLanes{TuningDb(db_path), TuningDb(db_path), measurer("0000:01:00.0"),
                                                    measurer("0000:02:00.0"), {}});
    l->lanes = {{&l->db0, l->db0.upsert_device(l->m0->fingerprint()), l->m0.get()},
                {&l->db1, l->db1.upsert_device(l->m1->fingerprint()), l->m1.get()}};
    return l;
  }
  /// The "measured ..." lines the fake workers appended to `log` (not their "worker PID" lines).
  static std::vector<std::string> measured_lines(const std::string& log) {
    std::ifstream in(log);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
      if (line.rfind("measured ", 0) == 0) out.push_back(line);
    return out;
  }
};

TEST_F(WorkerTest, CrashHangAndLostContextAreStoredAndTheSweepGoesOn) {
  const Problem p = Problem::dense(4096, 4096, 4096);
  SweepOptions opts;
  opts.max_candidates = 10;
  const auto ranked = rank_by_estimate(opts.space, p, 132, 10);
  ASSERT_EQ(ranked.size(), 10u);
  const std::string crash = ranked[1].key(), hang = ranked[4].key(), lose = ranked[7].key();
  setenv("FAKE_WORKER_FAULTS", ("crash:" + crash + ",hang:" + hang + ",lose:" + lose).c_str(), 1);

  const std::string db_path = path("t.db");
  TuningDb db(db_path);
  auto m = measurer("0000:01:00.0");
  const DeviceScope scope = db.upsert_device(m->fingerprint());
  std::vector<ShapeEntry> shapes(1);
  shapes[0].problem = p;
  const auto out = run_sweep(db, scope, *m, shapes, opts);

  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].complete);
  EXPECT_EQ(out[0].measured_now, 10);
  EXPECT_EQ(m->restarts(), 3);  // one new worker after each faulty candidate
  std::map<std::string, Row> by_config;
  for (const Row& r : trials(db_path)) by_config[r.config] = r;
  ASSERT_EQ(by_config.size(), 10u);
  EXPECT_EQ(by_config[crash].status, "crashed");
  EXPECT_NE(by_config[crash].error.find("died while measuring this candidate: signal 11"), std::string::npos)
      << by_config[crash].error;
  EXPECT_EQ(by_config[hang].status, "timeout");
  EXPECT_NE(by_config[hang].error.find("did not answer within"), std::string::npos) << by_config[hang].error;
  EXPECT_EQ(by_config[lose].status, "crashed");
  EXPECT_NE(by_config[lose].error.find("fake sticky error"), std::string::npos) << by_config[lose].error;
  int ok = 0;
  for (const auto& [key, r] : by_config) ok += r.status == "ok" ? 1 : 0;
  EXPECT_EQ(ok, 7);
  ASSERT_TRUE(out[0].winner.has_value());  // the healthy candidates still rank
}

// A grouped line through the worker path: the worker gets the grouped problem with every count listed, a crashing
// candidate is stored as crashed under the grouped key, and the new worker is sent the grouped shape again.
TEST_F(WorkerTest, GroupedShapeSurvivesACrashAndIsStoredUnderItsKey) {
  const auto shapes = parse_shapes_with_grouped(
      "kind=contiguous groups=4 m_per_group=skew:3:1024 4096 7168 scale=block name=moe\n", "s.txt");
  ASSERT_EQ(shapes.size(), 1u);
  const GroupedProblem& g = *shapes[0].grouped;
  SweepOptions opts;
  opts.strategy = Strategy::kModel;
  opts.top_k = 4;
  opts.baselines = false;
  std::vector<std::string> ranked;
  for (const Candidate& c : rank_candidates(opts.space, shapes[0].problem, 132))
    if (grouped_rule_violation(c.config).empty() && ranked.size() < 4) ranked.push_back(c.config.key());
  ASSERT_EQ(ranked.size(), 4u);
  setenv("FAKE_WORKER_FAULTS", ("crash:" + ranked[1]).c_str(), 1);
  const std::string log = path("worker.log");
  setenv("FAKE_WORKER_LOG", log.c_str(), 1);
  const std::string db_path = path("t.db");
  TuningDb db(db_path);
  auto m = measurer("0000:01:00.0");
  const DeviceScope scope = db.upsert_device(m->fingerprint());
  const auto out = run_sweep(db, scope, *m, shapes, opts);
  // The model's four plus the default rule's configs the cut left out (space/grouped_defaults.hpp).
  size_t defaults_added = 0;
  for (const KernelConfig& c : grouped_default_configs(g))
    defaults_added += std::find(ranked.begin(), ranked.end(), c.key()) == ranked.end();
  EXPECT_EQ(out[0].measured_now, int(4 + defaults_added));
  EXPECT_EQ(m->restarts(), 1);
  std::map<std::string, std::string> status;
  for (const Row& r : trials(db_path)) {
    EXPECT_EQ(r.problem, g.keyed().key());
    status[r.config] = r.status;
  }
  EXPECT_EQ(status.size(), 4 + defaults_added);
  EXPECT_EQ(status[ranked[1]], "crashed");
  EXPECT_EQ(status[ranked[0]], "ok");
  EXPECT_EQ(status[ranked[3]], "ok");
  // Both workers were sent the counts themselves (not the skew spec), the second after the crash.
  std::ifstream in(log);
  int grouped_lines = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("grouped ", 0) == 0) {
      ++grouped_lines;
      EXPECT_EQ(line, "grouped 0000:01:00.0 " + g.rows_list());
    }
  EXPECT_EQ(grouped_lines, 2);
}

TEST_F(WorkerTest, TwoLanesShareTheShapesAndEachShapeStaysOnOneDevice) {
  setenv("FAKE_WORKER_DELAY_MS", "5", 1);
  setenv("FAKE_WORKER_LOG", path("measured.log").c_str(), 1);
  const std::string db_path = path("t.db");
  const auto two = two_lanes(db_path);
  ASSERT_EQ(two->m0->fingerprint().hardware().key(), two->m1->fingerprint().hardware().key());
  const std::vector<SweepLane>& lanes = two->lanes;
  std::vector<ShapeEntry> shapes;
  for (int64_t m : {128, 256, 512, 1024, 2048, 4096}) {
    shapes.emplace_back();
    shapes.back().problem = Problem::dense(m, 2112, 7168);
  }
  SweepOptions opts;
  opts.max_candidates = 6;
  const auto out = run_sweep(lanes, shapes, opts);
  for (const auto& o : out) EXPECT_TRUE(o.complete) << o.entry.problem.label();

  const auto rows = trials(db_path);
  EXPECT_EQ(rows.size(), shapes.size() * 6);  // none lost, none twice (problem, config) is the key per device
  std::set<std::pair<std::string, std::string>> keys;
  std::map<std::string, std::set<std::string>> pcis_of_problem;
  std::set<std::string> pcis;
  for (const Row& r : rows) {
    EXPECT_EQ(r.status, "ok");
    keys.insert({r.problem, r.config});
    pcis_of_problem[r.problem].insert(r.pci);
    pcis.insert(r.pci);
  }
  EXPECT_EQ(keys.size(), rows.size());
  for (const auto& [problem, set] : pcis_of_problem) EXPECT_EQ(set.size(), 1u) << problem << " measured on two GPUs";
  EXPECT_EQ(pcis.size(), 2u);  // both devices got shapes

  // Longest work first: the two largest shapes (M = 4096, 2048) are the first the two lanes take, one each. Read per
  // device (its first measured problem), not as the log's first two problems: on a loaded machine one lane can log
  // its second shape before the other lane's first line.
  std::map<std::string, std::string> first_of_pci;
  for (const std::string& line : measured_lines(path("measured.log"))) {
    std::istringstream in(line);
    std::string word, pci, problem;
    in >> word >> pci >> problem;
    first_of_pci.emplace(pci, problem);
  }
  std::set<std::string> first_two;
  for (const auto& [pci, problem] : first_of_pci) first_two.insert(problem);
  EXPECT_EQ(first_two, (std::set<std::string>{shapes[5].problem.key(), shapes[4].problem.key()}));
}

// A worker killed from outside (SIGKILL: the OOM killer, a scheduler's scancel) is not the candidate's fault: the
// sweep stops with an error, nothing is stored for that candidate and its claim is released, so a rerun measures it.
TEST_F(WorkerTest, AWorkerKilledFromOutsideStoresNothingForItsCandidate) {
  const Problem p = Problem::dense(4096, 4096, 4096);
  SweepOptions opts;
  opts.max_candidates = 6;
  const auto ranked = rank_by_estimate(opts.space, p, 132, 6);
  const std::string victim = ranked[2].key();
  setenv("FAKE_WORKER_FAULTS", ("kill:" + victim).c_str(), 1);
  const std::string db_path = path("t.db");
  TuningDb db(db_path);
  auto m = measurer("0000:01:00.0");
  const DeviceScope scope = db.upsert_device(m->fingerprint());
  std::vector<ShapeEntry> shapes(1);
  shapes[0].problem = p;
  try {
    run_sweep(db, scope, *m, shapes, opts);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("ended from outside"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("signal 9"), std::string::npos) << e.message();
  }
  const auto rows = trials(db_path);
  EXPECT_EQ(rows.size(), 2u);  // the two before it; no claim row, no crashed row
  for (const Row& r : rows) {
    EXPECT_EQ(r.status, "ok");
    EXPECT_NE(r.config, victim);
  }
  unsetenv("FAKE_WORKER_FAULTS");
  auto m2 = measurer("0000:01:00.0");
  const auto out = run_sweep(db, scope, *m2, shapes, opts);  // the rerun measures the rest, the victim included
  EXPECT_TRUE(out[0].complete);
  EXPECT_EQ(out[0].measured_now, 4);
  EXPECT_EQ(trials(db_path).size(), 6u);
}

// With several lanes a problem listed twice is measured once, not by two GPUs at the same time.
TEST_F(WorkerTest, ARepeatedShapeIsMeasuredOnceWithSeveralLanes) {
  setenv("FAKE_WORKER_DELAY_MS", "5", 1);
  setenv("FAKE_WORKER_LOG", path("measured.log").c_str(), 1);
  const std::string db_path = path("t.db");
  const auto two = two_lanes(db_path);
  const std::vector<SweepLane>& lanes = two->lanes;
  std::vector<ShapeEntry> shapes(3);
  shapes[0].problem = Problem::dense(4096, 2112, 7168);
  shapes[1].problem = Problem::dense(4096, 2112, 7168);  // the same problem again
  shapes[2].problem = Problem::dense(128, 2112, 7168);
  SweepOptions opts;
  opts.max_candidates = 5;
  const auto out = run_sweep(lanes, shapes, opts);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].measured_now, 5);
  EXPECT_EQ(out[1].measured_now, 0);
  EXPECT_EQ(out[1].already_stored, 5);
  EXPECT_TRUE(out[1].complete);
  ASSERT_TRUE(out[1].winner.has_value());
  EXPECT_EQ(out[1].winner->trial.config.key(), out[0].winner->trial.config.key());
  EXPECT_EQ(measured_lines(path("measured.log")).size(), 10u);  // 2 distinct problems x 5 candidates
  EXPECT_EQ(trials(db_path).size(), 10u);
}

TEST_F(WorkerTest, AWorkerThatRefusesToStartFailsWithItsOwnError) {
  setenv("FAKE_WORKER_START", "fail", 1);
  try {
    measurer("0000:01:00.0");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoDevice);
    EXPECT_NE(e.message().find("could not start: fake: no CUDA device found"), std::string::npos) << e.message();
  }
}

TEST_F(WorkerTest, ASilentWorkerIsKilledAfterTheStartLimit) {
  setenv("FAKE_WORKER_START", "silent", 1);
  WorkerLimits l = short_limits();
  l.start = std::chrono::milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    WorkerMeasurer m(fake_command("0000:01:00.0"), l, nullptr, "fake", kFakeProtocol);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCuda);
    EXPECT_NE(e.message().find("did not answer within the start limit and was killed"), std::string::npos)
        << e.message();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(WorkerWire, RecordsRoundTripExactly) {
  TrialRecord t;
  t.problem = Problem::dense(7, 4099, 513);
  t.config = rank_by_estimate(SearchSpace::builtin_default(), t.problem, 132, 1).at(0);
  t.status = TrialStatus::kOk;
  Timing tm;
  tm.median_us = 12.345678901234;
  tm.p10_us = 11.1;
  tm.p90_us = 13.3;
  tm.samples = 77;
  tm.rse = 0.0042;
  tm.sm_clock_mhz = 1755.5;
  tm.throttled = true;
  t.set_timing(tm);
  t.verification = Verification{true, 1e-3, 2e-6, 0, 0};
  t.protocol = R"({"name":"cold-l2-v1"})";
  t.compile_ms = 1234.5;
  t.registers = 168;
  t.smem_bytes = 200704;
  const TrialRecord back = nlohmann::json(t).get<TrialRecord>();
  EXPECT_EQ(back.problem.key(), t.problem.key());
  EXPECT_EQ(back.config.key(), t.config.key());
  EXPECT_EQ(back.timing->median_us, tm.median_us);
  EXPECT_EQ(back.timing->samples, 77);
  EXPECT_TRUE(back.timing->throttled);
  EXPECT_EQ(back.tflops, t.tflops);
  EXPECT_EQ(back.verification->diff, 2e-6);
  EXPECT_EQ(back.registers, 168);
  EXPECT_EQ(back.smem_bytes, 200704);
  EXPECT_EQ(back.protocol, t.protocol);
  // JSON has no NaN or infinity: they travel as strings and come back (a NaN amax gives an infinite error).
  t.verification->amax_rel_err = std::numeric_limits<double>::infinity();
  t.verification->diff = std::numeric_limits<double>::quiet_NaN();
  const TrialRecord odd = nlohmann::json::parse(nlohmann::json(t).dump()).get<TrialRecord>();
  EXPECT_TRUE(std::isinf(odd.verification->amax_rel_err) && odd.verification->amax_rel_err > 0);
  EXPECT_TRUE(std::isnan(odd.verification->diff));
  EXPECT_EQ(odd.timing->median_us, tm.median_us);

  BaselineRecord b;
  b.problem = t.problem;
  b.provider = kProviderCublasTuned;
  b.status = TrialStatus::kUnsupported;
  b.cublas_status = 15;
  b.error = "not supported";
  const BaselineRecord bb = nlohmann::json(b).get<BaselineRecord>();
  EXPECT_EQ(bb.status, TrialStatus::kUnsupported);
  EXPECT_FALSE(bb.timing.has_value());
  EXPECT_EQ(bb.cublas_status, 15);
  EXPECT_EQ(bb.provider, kProviderCublasTuned);

  SessionOptions so;
  so.device = 3;
  so.kind = ProtocolKind::kHotGraph;
  so.hot_graph_rounds = 17;
  so.protocol.max_samples = 123;
  so.seed = 99;
  const SessionOptions sb = nlohmann::json(so).get<SessionOptions>();
  EXPECT_EQ(sb.device, 3);
  EXPECT_EQ(sb.protocol_json(), so.protocol_json());
  EXPECT_EQ(sb.protocol.max_samples, 123);
  EXPECT_EQ(sb.seed, 99u);
}

TEST(WorkerDevices, ParsesAllAndListsAndRefusesTheRest) {
  EXPECT_EQ(parse_devices("all", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parse_devices("1,0", 2), (std::vector<int>{1, 0}));
  EXPECT_EQ(parse_devices("7", 8), (std::vector<int>{7}));
  auto kind_of = [](const std::string& text, int count) {
    try {
      parse_devices(text, count);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;  // no error
  };
  for (const char* bad : {"", "0,,1", "01", "-1", "0x1", "+1", " 1", "1,", "0,0", "one"})
    EXPECT_EQ(kind_of(bad, 2), ErrorKind::kUsage) << "'" << bad << "'";
  // The text is bad input whatever the machine has: checked before the devices are.
  EXPECT_EQ(kind_of("0,0", 0), ErrorKind::kUsage);
  EXPECT_EQ(kind_of("0,x", 0), ErrorKind::kUsage);
  // A device that is not there is the machine's answer, exit 1, as `--device N` gives for it.
  EXPECT_EQ(kind_of("all", 0), ErrorKind::kNoDevice);
  EXPECT_EQ(kind_of("0", 0), ErrorKind::kNoDevice);
  EXPECT_EQ(kind_of("2", 2), ErrorKind::kNoDevice);
  EXPECT_EQ(kind_of("0,1,5", 2), ErrorKind::kNoDevice);
}

}  // namespace
}  // namespace dgt
