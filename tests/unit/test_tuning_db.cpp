// Tuning database, device fingerprints and the FNV hash. No GPU needed.
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "db/schema.hpp"
#include "db/tuning_db.hpp"
#include "records/records.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Helpers

/// A fresh directory per test (mkdtemp), removed afterwards.
class TuningDbTest : public test::TempDirTest {
 protected:
  std::string db_path(const std::string& name = "tuning.db") const { return path(name); }
};

DeviceFingerprint h200() {
  DeviceFingerprint d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.max_sm_clock_mhz = 1980;
  d.driver_version = 12080;
  d.runtime_version = 12040;
  d.cublaslt_version = 120805;
  d.nvrtc_version = 12040;
  d.kernel_hash = "0123456789abcdef";
  d.dgtune_version = "0.1.0";
  return d;
}

KernelConfig config_with(int block_n, int stages = 4) {
  KernelConfig c;
  c.block_n = block_n;
  c.num_stages = stages;
  return c;
}

TrialRecord ok_trial(const Problem& p, const KernelConfig& c, double median_us) {
  TrialRecord t;
  t.problem = p;
  t.config = c;
  t.status = TrialStatus::kOk;
  t.timing = Timing{median_us, median_us * 0.98, median_us * 1.05, 50, 0.002, 1755.0, false};
  t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
  t.tflops = p.flops() / (median_us * 1e6);
  return t;
}

TrialRecord failed_trial(const Problem& p, const KernelConfig& c, TrialStatus status) {
  TrialRecord t;
  t.problem = p;
  t.config = c;
  t.status = status;
  t.error = std::string("failed: ") + to_string(status);
  return t;
}

BaselineRecord ok_baseline(const Problem& p, const std::string& provider, double median_us) {
  BaselineRecord b;
  b.problem = p;
  b.provider = provider;
  b.status = TrialStatus::kOk;
  b.algo = "algo 66 tile 128x256";
  b.timing = Timing{median_us, median_us, median_us, 20, 0.01, 1700, false};
  b.verification = Verification{true, 2e-3, 2e-6, 0, 0};
  return b;
}

/// One integer from a raw SQL query, through a separate connection.
int64_t raw_int(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

/// Runs SQL through a separate read-write connection (to build files dgtune would not write).
void raw_exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The Error thrown by f, or fails the test.
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an Error";
  return Error(ErrorKind::kInternal, "no error");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------------
// Hash and records

TEST(Hash, Fnv1a64KnownValues) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);  // the offset basis itself
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // Bytes >= 0x80 must hash as unsigned (a signed char would sign-extend before the xor).
  EXPECT_NE(fnv1a64("\xff"), fnv1a64("\x7f"));
  // The seed continues a running hash.
  EXPECT_EQ(fnv1a64("bar", fnv1a64("foo")), fnv1a64("foobar"));
}

TEST(Hash, Hex16) {
  EXPECT_EQ(hex16(0), "0000000000000000");
  EXPECT_EQ(hex16(0xff), "00000000000000ff");
  EXPECT_EQ(hex16(0xaf63dc4c8601ec8cull), "af63dc4c8601ec8c");
  EXPECT_EQ(hex16(~0ull), "ffffffffffffffff");
}

TEST(Records, TrialStatusText) {
  const std::vector<std::pair<TrialStatus, std::string>> all = {
      {TrialStatus::kOk, "ok"},
      {TrialStatus::kInvalid, "invalid"},
      {TrialStatus::kCompileError, "compile_error"},
      {TrialStatus::kLaunchError, "launch_error"},
      {TrialStatus::kVerifyFailed, "verify_failed"},
      {TrialStatus::kTimeout, "timeout"},
      {TrialStatus::kCrashed, "crashed"},
  };
  for (const auto& [status, text] : all) {
    EXPECT_EQ(to_string(status), text);
    EXPECT_EQ(parse_trial_status(text), status);
  }
  Error e = error_of([] { parse_trial_status("OK"); });
  EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  EXPECT_TRUE(contains(e.message(), "'OK'")) << e.message();
}

TEST(Records, FingerprintIsPinned) {
  DeviceFingerprint d = h200();
  // Computed independently (Python) from the documented encoding; changing the encoding would
  // orphan every stored trial, so this value must not change.
  EXPECT_EQ(d.fingerprint(), "7a569a9cbefbfd85");
  const std::string joined =
      "NVIDIA H200\x1f"
      "9\x1f"
      "0\x1f"
      "132\x1f"
      "150754820096\x1f"
      "62914560\x1f"
      "1980\x1f"
      "12080\x1f"
      "12040\x1f"
      "120805\x1f"
      "12040\x1f"
      "0123456789abcdef\x1f"
      "0.1.0";
  EXPECT_EQ(d.fingerprint(), hex16(fnv1a64(joined)));
  EXPECT_EQ(h200().fingerprint(), d.fingerprint());  // stable for equal inputs
  EXPECT_TRUE(std::regex_match(d.fingerprint(), std::regex("[0-9a-f]{16}")));
}

TEST(Records, FingerprintChangesWithEveryField) {
  using Mutation = void (*)(DeviceFingerprint&);
  const std::vector<Mutation> mutations = {
      [](DeviceFingerprint& d) { d.name = "NVIDIA H100 80GB HBM3"; },
      [](DeviceFingerprint& d) { d.cc_major = 10; },
      [](DeviceFingerprint& d) { d.cc_minor = 1; },
      [](DeviceFingerprint& d) { d.sm_count = 114; },
      [](DeviceFingerprint& d) { d.memory_bytes += 1; },
      [](DeviceFingerprint& d) { d.l2_bytes = 52428800; },
      [](DeviceFingerprint& d) { d.max_sm_clock_mhz = 1755; },
      [](DeviceFingerprint& d) { d.driver_version = 12090; },
      [](DeviceFingerprint& d) { d.runtime_version = 12080; },
      [](DeviceFingerprint& d) { d.cublaslt_version = 120901; },
      [](DeviceFingerprint& d) { d.nvrtc_version = 12080; },
      [](DeviceFingerprint& d) { d.kernel_hash = "0123456789abcdee"; },
      [](DeviceFingerprint& d) { d.dgtune_version = "0.1.1"; },
  };
  std::set<std::string> seen = {h200().fingerprint()};
  for (size_t i = 0; i < mutations.size(); ++i) {
    DeviceFingerprint d = h200();
    mutations[i](d);
    EXPECT_TRUE(seen.insert(d.fingerprint()).second) << "mutation " << i << " did not change the fingerprint";
  }
  // The separator keeps neighbouring fields apart: ("ab", "c") != ("a", "bc").
  DeviceFingerprint x = h200(), y = h200();
  x.kernel_hash = "ab", x.dgtune_version = "c";
  y.kernel_hash = "a", y.dgtune_version = "bc";
  EXPECT_NE(x.fingerprint(), y.fingerprint());
  // Integers too: cc 1.11 vs 11.1.
  x = h200(), y = h200();
  x.cc_major = 1, x.cc_minor = 11;
  y.cc_major = 11, y.cc_minor = 1;
  EXPECT_NE(x.fingerprint(), y.fingerprint());
}

// ---------------------------------------------------------------------------------------------
// Opening, schema, versions

TEST_F(TuningDbTest, CreatesParentDirectoriesAndSchema) {
  std::string path = (dir_ / "a" / "b" / "tuning.db").string();
  {
    TuningDb db(path);
    EXPECT_EQ(db.path(), path);
  }
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(raw_int(path, "SELECT version FROM schema_version"), schema::latest_version());
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM schema_version"), 1);
  EXPECT_EQ(schema::latest_version(), 12);  // 7: trials, baselines and sweep states per protocol; 8: problem bias, act;
                                            // 9: config split_cluster; 10: baseline algo_data, workspace_bytes;
                                            // 11: grouped problems (group_kind, groups, m_max, expected_m, rows);
                                            // 12: config swap_ab
  for (const char* table : {"device", "environment", "problem", "config", "trial", "baseline", "sweep", "measurement",
                            "measurement_side", "measurement_sample"}) {
    std::string sql = std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '") + table + "'";
    EXPECT_EQ(raw_int(path, sql.c_str()), 1) << table;
  }
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'winner'"), 1);
  // WAL is persistent in the file header (bytes 18 and 19 are 2 in WAL mode).
  std::string bytes = file_bytes(path);
  ASSERT_GE(bytes.size(), 20u);
  EXPECT_EQ(bytes[18], 2);
  EXPECT_EQ(bytes[19], 2);
}

TEST_F(TuningDbTest, NewerSchemaVersionThrowsAndLeavesFileUnchanged) {
  std::string path = db_path();
  {
    TuningDb db(path);
    db.upsert_device(h200());
  }
  const int newer = schema::latest_version() + 1;
  raw_exec(path, ("UPDATE schema_version SET version = " + std::to_string(newer)).c_str());
  std::string before = file_bytes(path);
  Error e = error_of([&] { TuningDb db(path); });
  EXPECT_EQ(e.kind(), ErrorKind::kSqlite);
  EXPECT_TRUE(contains(e.message(), "schema version " + std::to_string(newer))) << e.message();
  EXPECT_TRUE(contains(e.message(), "version " + std::to_string(schema::latest_version()))) << e.message();
  EXPECT_TRUE(contains(e.message(), path)) << e.message();
  EXPECT_TRUE(file_bytes(path) == before) << "the file was modified";
  // Read-only refuses it too: the reader and the writer's read-only open.
  EXPECT_THROW(TuningDbReader{path}, Error);
  EXPECT_THROW(TuningDb(path, true), Error);
  EXPECT_TRUE(file_bytes(path) == before) << "the file was modified";
}

TEST_F(TuningDbTest, NewerSchemaInRollbackJournalFileIsNotSwitchedToWal) {
  // A file in the default rollback-journal mode: setting WAL would rewrite its header, so the
  // version must be checked before the journal mode is touched.
  std::string path = db_path();
  raw_exec(path, "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (13);");
  std::string before = file_bytes(path);
  ASSERT_EQ(before[18], 1);  // legacy (rollback journal) mode
  Error e = error_of([&] { TuningDb db(path); });
  EXPECT_TRUE(contains(e.message(), "schema version 13")) << e.message();
  EXPECT_TRUE(file_bytes(path) == before) << "the file was modified";
}

TEST_F(TuningDbTest, ForeignDatabaseIsRefusedAndUnchanged) {
  std::string path = db_path("other.db");
  raw_exec(path, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('hello');");
  std::string before = file_bytes(path);
  Error e = error_of([&] { TuningDb db(path); });
  EXPECT_EQ(e.kind(), ErrorKind::kSqlite);
  EXPECT_TRUE(contains(e.message(), "not a dgtune tuning database")) << e.message();
  EXPECT_TRUE(file_bytes(path) == before) << "the file was modified";
}

TEST_F(TuningDbTest, ReadOnlyMissingFileThrowsNamingPathAndCreatesNothing) {
  std::string path = (dir_ / "missing" / "tuning.db").string();
  for (const Error& e : {error_of([&] { TuningDbReader db(path); }), error_of([&] { TuningDb db(path, true); })}) {
    EXPECT_TRUE(e.kind() == ErrorKind::kIo || e.kind() == ErrorKind::kSqlite);
    EXPECT_TRUE(contains(e.message(), path)) << e.message();
  }
  EXPECT_FALSE(fs::exists(dir_ / "missing"));
}

TEST_F(TuningDbTest, ReaderAnswersEveryQueryAndLeavesTheFileAsItWas) {
  std::string path = db_path();
  Problem p = Problem::dense(128, 4096, 7168);
  DeviceScope dev;
  {
    TuningDb db(path);
    dev = db.upsert_device(h200());
    db.put_trial(dev, ok_trial(p, config_with(128), 10.0));
    db.put_trial(dev, ok_trial(p, config_with(64), 12.0));
    db.put_sweep_state(dev, p, "space", "exhaustive", SweepState{2, 2, true, ""});
  }
  const std::string before = file_bytes(path);
  {
    TuningDbReader ro(path);
    EXPECT_EQ(ro.path(), path);
    EXPECT_EQ(ro.find_device(h200()), dev);
    EXPECT_EQ(ro.find_hardware(h200().hardware()), dev.device_id);
    EXPECT_TRUE(ro.find_problem(p).has_value());
    EXPECT_TRUE(ro.has_trial(dev, p, config_with(64)));
    EXPECT_EQ(ro.stored_config_keys(dev, p).size(), 2u);
    EXPECT_EQ(ro.trials(dev, p).size(), 2u);
    EXPECT_FALSE(ro.has_baseline(dev, p, kProviderCublasTuned));
    EXPECT_FALSE(ro.baseline(dev, p, kProviderCublasTuned).has_value());
    ASSERT_TRUE(ro.sweep_state(dev, p, "space", "exhaustive").has_value());
    EXPECT_TRUE(ro.sweep_state(dev, p, "space", "exhaustive")->complete);
    ASSERT_TRUE(ro.winner(dev, p).has_value());
    EXPECT_DOUBLE_EQ(ro.winner(dev, p)->trial.timing->median_us, 10.0);
    EXPECT_EQ(ro.winners(dev).size(), 1u);
    EXPECT_EQ(ro.nearest_winner(dev, Problem::dense(100, 4096, 7168))->trial.config, config_with(128));
    EXPECT_EQ(ro.environment_winners(dev.device_id, p).size(), 1u);
    EXPECT_EQ(ro.devices().size(), 1u);
    EXPECT_EQ(ro.export_rows(dev.device_id).size(), 1u);
    EXPECT_TRUE(ro.latest_measurements(dev.device_id).empty());
    EXPECT_TRUE(ro.gate_history("128x4096x7168").empty());
  }
  EXPECT_TRUE(file_bytes(path) == before) << "the reader modified the file";
  for (const char* suffix : {"-journal", "-wal", "-shm"}) EXPECT_FALSE(fs::exists(path + suffix)) << suffix;
}

// The winner carries the median SM clock of its problem's verified ok trials (the sweep's clock-lead warning compares
// the winner's own clock with it): failed, unverified and clockless trials, trials under another protocol and other
// problems do not count.
TEST_F(TuningDbTest, WinnerCarriesTheMedianClockOfItsVerifiedTrials) {
  TuningDb db(db_path());
  const DeviceScope dev = db.upsert_device(h200());
  const Problem p = Problem::dense(8192, 7168, 16384), other = Problem::dense(4096, 7168, 16384);
  auto clocked = [&](const Problem& prob, int block_n, double us, double mhz) {
    TrialRecord t = ok_trial(prob, config_with(block_n), us);
    t.timing->sm_clock_mhz = mhz;
    return t;
  };
  db.put_trial(dev, clocked(p, 128, 1400.0, 1966.0));  // the winner
  db.put_trial(dev, clocked(p, 144, 1450.0, 1480.0));
  db.put_trial(dev, clocked(p, 160, 1460.0, 1500.0));
  db.put_trial(dev, clocked(p, 176, 1470.0, 1425.0));
  db.put_trial(dev, clocked(p, 192, 1500.0, 0.0));  // no clock recorded
  TrialRecord unverified = clocked(p, 208, 1490.0, 1000.0);
  unverified.verification->ok = false;
  db.put_trial(dev, unverified);
  db.put_trial(dev, failed_trial(p, config_with(224), TrialStatus::kCompileError));
  TrialRecord hot = clocked(p, 240, 900.0, 100.0);  // another protocol's trials (and faster: its own winner)
  hot.protocol = R"({"graph_launches":20,"kind":"hot-graph","name":"hot-graph-v1","rounds":10,"version":1})";
  db.put_trial(dev, hot);
  db.put_trial(dev, clocked(other, 128, 700.0, 900.0));
  const auto w = db.winner(dev, p);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->trial.config, config_with(128));
  EXPECT_EQ(w->clocked_trials, 4);
  EXPECT_DOUBLE_EQ(w->trials_median_clock_mhz, (1480.0 + 1500.0) / 2);  // of 1425, 1480, 1500, 1966
  const auto o = db.winner(dev, other);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->clocked_trials, 1);
  EXPECT_DOUBLE_EQ(o->trials_median_clock_mhz, 900.0);
}

TEST_F(TuningDbTest, ReadOnlyReadsButRefusesWrites) {
  std::string path = db_path();
  Problem p = Problem::dense(128, 4096, 7168);
  DeviceScope dev;
  {
    TuningDb db(path);
    dev = db.upsert_device(h200());
    db.put_trial(dev, ok_trial(p, config_with(128), 10.0));
  }
  TuningDb ro(path, true);
  EXPECT_EQ(ro.find_device(h200()), dev);
  ASSERT_TRUE(ro.winner(dev, p).has_value());
  EXPECT_DOUBLE_EQ(ro.winner(dev, p)->trial.timing->median_us, 10.0);
  Error e = error_of([&] { ro.put_trial(dev, ok_trial(p, config_with(64), 9.0)); });
  EXPECT_EQ(e.kind(), ErrorKind::kSqlite);
  EXPECT_TRUE(contains(e.message(), path)) << e.message();
  EXPECT_THROW(ro.upsert_device(h200()), Error);
  EXPECT_EQ(ro.trials(dev, p).size(), 1u);
}

/// stdout of `cmd` (stderr folded in) and its exit status.
std::pair<std::string, int> run_command(const std::string& cmd) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return {"", -1};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int status = pclose(f);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// The reader links alone (tests/link/db_reader_only.cpp: no writer, schema text, migration or module above db
// in that binary) and reads what the writer stored; it refuses an older file without touching it.
TEST_F(TuningDbTest, ReaderLinkedAloneReadsWhatTheWriterStored) {
  const std::string path = db_path();
  const Problem p = Problem::dense(128, 4096, 7168);
  {
    TuningDb db(path);
    const DeviceScope dev = db.upsert_device(h200());
    db.put_trial(dev, ok_trial(p, config_with(128), 10.0));
    db.put_trial(dev, ok_trial(p, config_with(64), 12.0));
  }
  const std::string before = file_bytes(path);
  auto [out, rc] = run_command(std::string(DGT_DB_READER_ONLY_BIN) + " " + path);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(contains(out, "device 1 " + h200().hardware().key() + " NVIDIA H200 winners 1\n")) << out;
  EXPECT_TRUE(contains(out, "winner " + p.key() + " " + config_with(128).key() + " cold-l2-v1 10.000\n")) << out;
  EXPECT_TRUE(file_bytes(path) == before) << "the reader modified the file";
  raw_exec(path, "UPDATE schema_version SET version = 8");
  const std::string old = file_bytes(path);
  std::tie(out, rc) = run_command(std::string(DGT_DB_READER_ONLY_BIN) + " " + path);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_TRUE(contains(out, "schema version 8, older than version 12")) << out;
  EXPECT_TRUE(file_bytes(path) == old) << "the reader modified the file";
}

TEST_F(TuningDbTest, ReopeningKeepsEverything) {
  std::string path = db_path();
  Problem p = Problem::dense(256, 2112, 7168);
  DeviceScope dev;
  {
    TuningDb db(path);
    dev = db.upsert_device(h200());
    db.put_trial(dev, ok_trial(p, config_with(128), 12.5));
    db.put_trial(dev, failed_trial(p, config_with(256), TrialStatus::kCompileError));
    db.put_baseline(dev, ok_baseline(p, kProviderCublasDefault, 14.0));
  }
  TuningDb db(path);
  EXPECT_EQ(db.find_device(h200()), dev);
  EXPECT_EQ(db.upsert_device(h200()), dev);  // same fingerprint, same row
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM device"), 1);
  EXPECT_TRUE(db.has_trial(dev, p, config_with(128)));
  EXPECT_TRUE(db.has_trial(dev, p, config_with(256)));
  EXPECT_TRUE(db.has_baseline(dev, p, kProviderCublasDefault));
  auto w = db.winner(dev, p);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->trial.config, config_with(128));
  EXPECT_DOUBLE_EQ(w->trial.timing->median_us, 12.5);
  ASSERT_TRUE(w->cublas_default.has_value());
  EXPECT_DOUBLE_EQ(w->cublas_default->timing->median_us, 14.0);
}

TEST_F(TuningDbTest, SweepStateRoundTripsPerSpaceAndStrategy) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  Problem p = Problem::dense(4096, 4096, 4096);
  EXPECT_FALSE(db.sweep_state(dev, p, "sm90-default", "exhaustive").has_value());
  db.put_sweep_state(dev, p, "sm90-default", "exhaustive", SweepState{341, 120, false, ""});
  db.put_sweep_state(dev, p, "sm90-default", "model-16", SweepState{16, 16, true, ""});
  auto st = db.sweep_state(dev, p, "sm90-default", "exhaustive");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->candidates, 341);
  EXPECT_EQ(st->stored, 120);
  EXPECT_FALSE(st->complete);
  EXPECT_FALSE(st->updated_at.empty());
  db.put_sweep_state(dev, p, "sm90-default", "exhaustive", SweepState{341, 341, true, ""});
  EXPECT_TRUE(db.sweep_state(dev, p, "sm90-default", "exhaustive")->complete);
  EXPECT_TRUE(db.sweep_state(dev, p, "sm90-default", "model-16")->complete);
  EXPECT_FALSE(db.sweep_state(dev, p, "other", "exhaustive").has_value());
}

// ---------------------------------------------------------------------------------------------
// Devices, round trips

TEST_F(TuningDbTest, DevicesAreKeyedByFingerprint) {
  TuningDb db(db_path());
  DeviceFingerprint other = h200();
  other.kernel_hash = "fedcba9876543210";
  EXPECT_FALSE(db.find_device(h200()).has_value());
  DeviceScope a = db.upsert_device(h200());
  DeviceScope b = db.upsert_device(other);
  EXPECT_NE(a, b);
  EXPECT_EQ(db.upsert_device(h200()), a);
  EXPECT_EQ(db.find_device(other), b);
  EXPECT_EQ(raw_int(db.path(), "SELECT cc FROM device WHERE id = 1"), 90);
  EXPECT_EQ(raw_int(db.path(), "SELECT memory_bytes FROM device WHERE id = 1"), 150754820096);
}

TEST_F(TuningDbTest, TrialRoundTripsEveryField) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());

  TrialRecord t;
  t.problem = Problem::dense(4097, 2112, 7168);
  t.problem.lda = 7184;
  t.problem.ldd = 2120;
  t.problem.b = DType::kE5M2;
  t.problem.accum = Accum::kFast;
  t.config.block_m = 64;
  t.config.block_n = 208;
  t.config.block_k = 128;
  t.config.num_stages = 6;
  t.config.num_math_wg = 1;
  t.config.swizzle = 64;
  t.config.cluster_m = 2;
  t.config.cluster_n = 1;
  t.config.raster = Raster::kAlongN;
  t.config.group = 4;
  t.config.split_k = 2;
  t.status = TrialStatus::kVerifyFailed;
  t.error = "max_rel_err 0.5 > 0.01";
  t.compile_ms = 812.25;
  t.registers = 168;
  t.spill_bytes = 24;
  t.smem_bytes = 197632;
  t.timing = Timing{41.5, 40.25, 44.125, 73, 0.0031, 1830.5, true};
  t.verification = Verification{false, 0.5, 0.125, 17, 3};
  t.tflops = 1234.5;
  t.gbps = 2345.25;
  t.protocol = R"({"warmup_ms":50,"samples":73})";
  t.created_at = "2026-11-29T06:30:00Z";
  db.put_trial(dev, t);

  auto all = db.trials(dev, t.problem);
  ASSERT_EQ(all.size(), 1u);
  const TrialRecord& r = all[0];
  EXPECT_EQ(r.problem, t.problem);
  EXPECT_EQ(r.config, t.config);
  EXPECT_EQ(r.status, TrialStatus::kVerifyFailed);
  EXPECT_EQ(r.error, t.error);
  EXPECT_EQ(r.compile_ms, 812.25);
  EXPECT_EQ(r.registers, 168);
  EXPECT_EQ(r.spill_bytes, 24);
  EXPECT_EQ(r.smem_bytes, 197632);
  ASSERT_TRUE(r.timing.has_value());
  EXPECT_EQ(r.timing->median_us, 41.5);
  EXPECT_EQ(r.timing->p10_us, 40.25);
  EXPECT_EQ(r.timing->p90_us, 44.125);
  EXPECT_EQ(r.timing->samples, 73);
  EXPECT_EQ(r.timing->rse, 0.0031);
  EXPECT_EQ(r.timing->sm_clock_mhz, 1830.5);
  EXPECT_TRUE(r.timing->throttled);
  ASSERT_TRUE(r.verification.has_value());
  EXPECT_FALSE(r.verification->ok);
  EXPECT_EQ(r.verification->max_rel_err, 0.5);
  EXPECT_EQ(r.verification->diff, 0.125);
  EXPECT_EQ(r.verification->nan_count, 17);
  EXPECT_EQ(r.verification->pad_touched, 3);
  EXPECT_EQ(r.tflops, 1234.5);
  EXPECT_EQ(r.gbps, 2345.25);
  EXPECT_EQ(r.protocol, t.protocol);
  EXPECT_EQ(r.created_at, "2026-11-29T06:30:00Z");
  // The config's columns hold the same values as its key.
  EXPECT_EQ(raw_int(db.path(), "SELECT block_n * 100 + split_k FROM config"), 20802);
  EXPECT_EQ(raw_int(db.path(), "SELECT raster = 'n' AND group_size = 4 AND cluster_m = 2 FROM config"), 1);
  EXPECT_EQ(raw_int(db.path(), "SELECT lda = 7184 AND dtype_b = 'e5m2' AND accum = 'fast' FROM problem"), 1);
}

TEST_F(TuningDbTest, TrialWithoutTimingOrVerificationReadsBackAsNullopt) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  TrialRecord t = failed_trial(Problem::dense(64, 256, 512), config_with(96), TrialStatus::kCompileError);
  t.error = "ptxas: 40 bytes spill stores";
  t.registers = 255;
  t.spill_bytes = 40;
  db.put_trial(dev, t);
  auto all = db.trials(dev, t.problem);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, TrialStatus::kCompileError);
  EXPECT_EQ(all[0].error, t.error);
  EXPECT_EQ(all[0].registers, 255);
  EXPECT_EQ(all[0].spill_bytes, 40);
  EXPECT_FALSE(all[0].timing.has_value());
  EXPECT_FALSE(all[0].verification.has_value());
  EXPECT_EQ(raw_int(db.path(), "SELECT median_us IS NULL AND diff IS NULL AND verify_ok IS NULL FROM trial"), 1);
  // created_at was empty: the DB filled in the current UTC time.
  EXPECT_TRUE(std::regex_match(all[0].created_at, std::regex(R"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << all[0].created_at;
}

TEST_F(TuningDbTest, NanDiffKeepsTheVerification) {
  // SQLite stores NaN as NULL; a NaN diff (all-NaN output) must still read back as a verification.
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  TrialRecord t = failed_trial(Problem::dense(64, 256, 512), config_with(96), TrialStatus::kVerifyFailed);
  t.verification = Verification{false, std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::quiet_NaN(), 64 * 256, 0};
  db.put_trial(dev, t);
  auto r = db.trials(dev, t.problem).at(0);
  ASSERT_TRUE(r.verification.has_value());
  EXPECT_FALSE(r.verification->ok);
  EXPECT_TRUE(std::isnan(r.verification->diff));
  EXPECT_TRUE(std::isnan(r.verification->max_rel_err));
  EXPECT_EQ(r.verification->nan_count, 64 * 256);
}

TEST_F(TuningDbTest, BaselineRoundTripsAndIsReplaced) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  Problem p = Problem::dense(1024, 4096, 7168);
  p.accum = Accum::kFast;

  BaselineRecord b;
  b.problem = p;
  b.provider = kProviderCublasTuned;
  b.status = TrialStatus::kOk;
  b.cublas_status = 0;
  b.algo = "id 66 tile 128x256 stages 4 splitK 1";
  b.timing = Timing{25.5, 25.25, 26.75, 40, 0.004, 1785.5, false};
  b.verification = Verification{true, 0.0025, 3.5e-6, 0, 0};
  b.tflops = 2358.25;
  b.gbps = 3100.5;
  b.protocol = R"({"samples":40})";
  b.created_at = "2026-11-29T07:00:00Z";
  EXPECT_FALSE(db.has_baseline(dev, p, kProviderCublasTuned));
  db.put_baseline(dev, b);
  EXPECT_TRUE(db.has_baseline(dev, p, kProviderCublasTuned));
  EXPECT_FALSE(db.has_baseline(dev, p, kProviderCublasDefault));
  EXPECT_FALSE(db.baseline(dev, p, kProviderCublasDefault).has_value());

  auto r = db.baseline(dev, p, kProviderCublasTuned);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->problem, p);
  EXPECT_EQ(r->provider, "cublaslt-tuned");
  EXPECT_EQ(r->status, TrialStatus::kOk);
  EXPECT_EQ(r->cublas_status, 0);
  EXPECT_EQ(r->error, "");
  EXPECT_EQ(r->algo, b.algo);
  ASSERT_TRUE(r->timing.has_value());
  EXPECT_EQ(r->timing->median_us, 25.5);
  EXPECT_EQ(r->timing->p10_us, 25.25);
  EXPECT_EQ(r->timing->p90_us, 26.75);
  EXPECT_EQ(r->timing->samples, 40);
  EXPECT_EQ(r->timing->rse, 0.004);
  EXPECT_EQ(r->timing->sm_clock_mhz, 1785.5);
  EXPECT_FALSE(r->timing->throttled);
  ASSERT_TRUE(r->verification.has_value());
  EXPECT_TRUE(r->verification->ok);
  EXPECT_EQ(r->verification->max_rel_err, 0.0025);
  EXPECT_EQ(r->verification->diff, 3.5e-6);
  EXPECT_EQ(r->verification->nan_count, 0);
  EXPECT_EQ(r->verification->pad_touched, 0);
  EXPECT_EQ(r->tflops, 2358.25);
  EXPECT_EQ(r->gbps, 3100.5);
  EXPECT_EQ(r->protocol, b.protocol);
  EXPECT_EQ(r->created_at, "2026-11-29T07:00:00Z");

  // Replaced: the same (device, problem, provider) now unsupported, without timing.
  BaselineRecord u;
  u.problem = p;
  u.provider = kProviderCublasTuned;
  u.status = TrialStatus::kUnsupported;
  u.cublas_status = 15;
  u.error = "CUBLAS_STATUS_NOT_SUPPORTED";
  db.put_baseline(dev, u);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM baseline"), 1);
  r = db.baseline(dev, p, kProviderCublasTuned);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, TrialStatus::kUnsupported);
  EXPECT_EQ(r->cublas_status, 15);
  EXPECT_EQ(r->error, "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(r->algo, "");
  EXPECT_FALSE(r->timing.has_value());
  EXPECT_FALSE(r->verification.has_value());
  EXPECT_FALSE(r->created_at.empty());
}

// ---------------------------------------------------------------------------------------------
// Trials: resume, replace, order, transactions

TEST_F(TuningDbTest, HasTrialOnlyForSameDeviceProblemAndConfig) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  DeviceFingerprint newer_kernels = h200();
  newer_kernels.kernel_hash = "ffffffffffffffff";
  DeviceScope other_dev = db.upsert_device(newer_kernels);
  Problem p = Problem::dense(128, 4096, 7168);
  Problem q = Problem::dense(128, 4096, 7168);
  q.ldd = 4160;  // same shape, different problem key
  KernelConfig c = config_with(128);

  EXPECT_FALSE(db.has_trial(dev, p, c));
  db.put_trial(dev, failed_trial(p, c, TrialStatus::kTimeout));  // any status counts as done
  EXPECT_TRUE(db.has_trial(dev, p, c));
  EXPECT_FALSE(db.has_trial(other_dev, p, c)) << "another fingerprint must re-measure";
  EXPECT_FALSE(db.has_trial(dev, q, c));
  EXPECT_FALSE(db.has_trial(dev, p, config_with(136)));
  EXPECT_FALSE(db.has_trial(dev, p, config_with(128, 5)));
  EXPECT_TRUE(db.trials(other_dev, p).empty());
  EXPECT_FALSE(db.winner(other_dev, p).has_value());
}

TEST_F(TuningDbTest, PutTrialReplacesTheExistingRow) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  Problem p = Problem::dense(512, 4096, 7168);
  KernelConfig c = config_with(128);
  db.put_trial(dev, ok_trial(p, c, 30.0));
  TrialRecord again = failed_trial(p, c, TrialStatus::kCrashed);
  again.error = "cudaErrorIllegalAddress";
  db.put_trial(dev, again);

  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM trial"), 1);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM problem"), 1);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM config"), 1);
  auto all = db.trials(dev, p);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, TrialStatus::kCrashed);
  EXPECT_EQ(all[0].error, "cudaErrorIllegalAddress");
  EXPECT_FALSE(all[0].timing.has_value());
  EXPECT_FALSE(db.winner(dev, p).has_value()) << "the replaced ok trial must not still win";
}

TEST_F(TuningDbTest, TrialsOrderFastestOkFirstThenOthersByKey) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  Problem p = Problem::dense(256, 4096, 7168);
  // Keys sort by block_n text: "128x112..." < "128x128..." < "128x144..." < "128x96...".
  db.put_trial(dev, failed_trial(p, config_with(96), TrialStatus::kCompileError));
  db.put_trial(dev, ok_trial(p, config_with(144), 20.0));
  db.put_trial(dev, failed_trial(p, config_with(112), TrialStatus::kInvalid));
  db.put_trial(dev, ok_trial(p, config_with(128), 15.0));
  TrialRecord fast_but_wrong = ok_trial(p, config_with(160), 5.0);
  fast_but_wrong.status = TrialStatus::kVerifyFailed;
  db.put_trial(dev, fast_but_wrong);

  std::vector<int> order;
  for (const auto& t : db.trials(dev, p)) order.push_back(t.config.block_n);
  EXPECT_EQ(order, (std::vector<int>{128, 144, 112, 160, 96}));
}

TEST_F(TuningDbTest, FailedPutRollsBackAndNamesThePath) {
  TuningDb db(db_path());
  Problem p = Problem::dense(256, 4096, 7168);
  // No device row 42: the foreign key fails after the problem and config rows were inserted.
  Error e = error_of([&] { db.put_trial(DeviceScope{42, 42, ""}, ok_trial(p, config_with(128), 1.0)); });
  EXPECT_EQ(e.kind(), ErrorKind::kSqlite);
  EXPECT_TRUE(contains(e.message(), db.path())) << e.message();
  EXPECT_TRUE(contains(e.message(), "FOREIGN KEY")) << e.message();
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM problem"), 0);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM config"), 0);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM trial"), 0);
  // The connection is usable afterwards (no transaction left open).
  DeviceScope dev = db.upsert_device(h200());
  db.put_trial(dev, ok_trial(p, config_with(128), 1.0));
  EXPECT_EQ(db.trials(dev, p).size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Winners

TEST_F(TuningDbTest, WinnerIsFastestOkTrialWithBaselinesAndCounts) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  Problem p = Problem::dense(2048, 7168, 2048);
  db.put_trial(dev, ok_trial(p, config_with(128), 10.0));
  db.put_trial(dev, ok_trial(p, config_with(192), 8.0));
  db.put_trial(dev, ok_trial(p, config_with(256), 9.0));
  TrialRecord fast_but_wrong = ok_trial(p, config_with(64), 5.0);
  fast_but_wrong.status = TrialStatus::kVerifyFailed;
  fast_but_wrong.verification->ok = false;
  db.put_trial(dev, fast_but_wrong);
  TrialRecord ok_untimed = failed_trial(p, config_with(72), TrialStatus::kOk);  // no median: cannot win
  db.put_trial(dev, ok_untimed);
  db.put_trial(dev, failed_trial(p, config_with(80), TrialStatus::kCompileError));
  db.put_trial(dev, failed_trial(p, config_with(88), TrialStatus::kCompileError));
  db.put_trial(dev, failed_trial(p, config_with(104), TrialStatus::kLaunchError));
  db.put_baseline(dev, ok_baseline(p, kProviderCublasDefault, 11.0));
  db.put_baseline(dev, ok_baseline(p, kProviderCublasTuned, 9.5));
  db.put_baseline(dev, ok_baseline(p, "some-other-provider", 1.0));

  auto w = db.winner(dev, p);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->trial.config, config_with(192));
  EXPECT_EQ(w->trial.status, TrialStatus::kOk);
  EXPECT_EQ(w->trial.problem, p);
  EXPECT_DOUBLE_EQ(w->trial.timing->median_us, 8.0);
  ASSERT_TRUE(w->cublas_default.has_value());
  ASSERT_TRUE(w->cublas_tuned.has_value());
  EXPECT_EQ(w->cublas_default->provider, "cublaslt-default");
  EXPECT_DOUBLE_EQ(w->cublas_default->timing->median_us, 11.0);
  EXPECT_EQ(w->cublas_tuned->provider, "cublaslt-tuned");
  EXPECT_DOUBLE_EQ(w->cublas_tuned->timing->median_us, 9.5);
  const std::map<std::string, int> expected = {
      {"ok", 4}, {"verify_failed", 1}, {"compile_error", 2}, {"launch_error", 1}};
  EXPECT_EQ(w->status_counts, expected);
  // The view agrees.
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM winner"), 1);
  EXPECT_EQ(raw_int(db.path(), "SELECT median_us * 10 FROM winner"), 80);
}

TEST_F(TuningDbTest, WinnerTieGoesToLowerConfigKeyAndNoBaselineIsNullopt) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  Problem p = Problem::dense(64, 1024, 1024);
  db.put_trial(dev, ok_trial(p, config_with(128, 6), 7.0));  // "128x128x128_s6..."
  db.put_trial(dev, ok_trial(p, config_with(128, 3), 7.0));  // "128x128x128_s3..." (lower)
  db.put_trial(dev, ok_trial(p, config_with(128, 5), 7.0));
  auto w = db.winner(dev, p);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->trial.config.num_stages, 3);
  EXPECT_FALSE(w->cublas_default.has_value());
  EXPECT_FALSE(w->cublas_tuned.has_value());
  EXPECT_EQ(w->status_counts, (std::map<std::string, int>{{"ok", 3}}));
  // No trial at all, or only failures: no winner.
  EXPECT_FALSE(db.winner(dev, Problem::dense(64, 1024, 2048)).has_value());
  Problem failing = Problem::dense(64, 1024, 4096);
  db.put_trial(dev, failed_trial(failing, config_with(128), TrialStatus::kTimeout));
  EXPECT_FALSE(db.winner(dev, failing).has_value());
}

TEST_F(TuningDbTest, WinnersAreOrderedByProblemAndPerDevice) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  DeviceFingerprint other = h200();
  other.driver_version = 13000;
  DeviceScope other_dev = db.upsert_device(other);
  Problem p1 = Problem::dense(4096, 4096, 4096);
  Problem p2 = Problem::dense(128, 7168, 2048);
  Problem p3 = Problem::dense(128, 2112, 7168);
  Problem p4 = Problem::dense(128, 2112, 7168);
  p4.ldd = 2176;  // same m, n, k as p3: ordered by key ("..._ldd2112_..." < "..._ldd2176_...")
  Problem no_winner = Problem::dense(1, 4096, 4096);
  db.put_trial(dev, ok_trial(p1, config_with(128), 100.0));
  db.put_trial(dev, ok_trial(p4, config_with(128), 4.0));
  db.put_trial(dev, ok_trial(p2, config_with(128), 5.0));
  db.put_trial(dev, ok_trial(p3, config_with(64), 3.0));
  db.put_trial(dev, ok_trial(p3, config_with(128), 2.0));
  db.put_trial(dev, failed_trial(no_winner, config_with(128), TrialStatus::kCrashed));
  db.put_trial(other_dev, ok_trial(Problem::dense(8, 8192, 8192), config_with(128), 1.0));

  auto ws = db.winners(dev);
  ASSERT_EQ(ws.size(), 4u);
  EXPECT_EQ(ws[0].trial.problem, p3);
  EXPECT_EQ(ws[0].trial.config, config_with(128));
  EXPECT_EQ(ws[0].status_counts, (std::map<std::string, int>{{"ok", 2}}));
  EXPECT_EQ(ws[1].trial.problem, p4);
  EXPECT_EQ(ws[2].trial.problem, p2);
  EXPECT_EQ(ws[3].trial.problem, p1);
  EXPECT_EQ(db.winners(other_dev).size(), 1u);
  EXPECT_TRUE(db.winners(DeviceScope{other_dev.device_id + 1, other_dev.environment_id, ""}).empty());
}

TEST_F(TuningDbTest, NearestWinnerPicksNearestMOnALogScale) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  DeviceFingerprint other = h200();
  other.name = "NVIDIA H100";
  DeviceScope other_dev = db.upsert_device(other);
  const int64_t n = 4096, k = 7168;
  for (int64_t m : {64, 256, 512, 4096})
    db.put_trial(dev, ok_trial(Problem::dense(m, n, k), config_with(int(m % 200 + 8)), 1.0));
  // Distractors at M = 128 that must be ignored: other N, other K, other types, other
  // accumulation, only failed trials, another device.
  db.put_trial(dev, ok_trial(Problem::dense(128, 2048, k), config_with(8), 1.0));
  db.put_trial(dev, ok_trial(Problem::dense(128, n, 2048), config_with(8), 1.0));
  Problem e5 = Problem::dense(128, n, k);
  e5.b = DType::kE5M2;
  db.put_trial(dev, ok_trial(e5, config_with(8), 1.0));
  Problem fast = Problem::dense(128, n, k);
  fast.accum = Accum::kFast;
  db.put_trial(dev, ok_trial(fast, config_with(8), 1.0));
  Problem padded = Problem::dense(128, n, k);
  padded.lda = k + 16;
  db.put_trial(dev, failed_trial(padded, config_with(8), TrialStatus::kCompileError));
  db.put_trial(other_dev, ok_trial(Problem::dense(128, n, k), config_with(8), 1.0));

  auto nearest_m = [&](int64_t m) -> int64_t {
    auto w = db.nearest_winner(dev, Problem::dense(m, n, k));
    return w ? w->trial.problem.m : -1;
  };
  EXPECT_EQ(nearest_m(1000), 512);   // 1000/512 = 1.95 < 4096/1000 = 4.1
  EXPECT_EQ(nearest_m(2000), 4096);  // 2000/512 = 3.9 > 4096/2000 = 2.05 (linear distance would pick 512)
  EXPECT_EQ(nearest_m(128), 256);    // 128/64 == 256/128: tie goes to the larger M
  EXPECT_EQ(nearest_m(1), 64);
  EXPECT_EQ(nearest_m(65536), 4096);
  EXPECT_EQ(nearest_m(256), 256);  // exact
  // Leading dimensions may differ: a padded query still finds the dense winners.
  Problem padded_query = Problem::dense(300, n, k);
  padded_query.lda = k + 128;
  auto w = db.nearest_winner(dev, padded_query);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->trial.problem.m, 256);
  EXPECT_EQ(w->trial.problem.lda, k);
  // The matching fields select a different family, or none.
  auto wf = db.nearest_winner(dev, fast);
  ASSERT_TRUE(wf.has_value());
  EXPECT_EQ(wf->trial.problem, fast);
  EXPECT_FALSE(db.nearest_winner(dev, Problem::dense(128, 1024, k)).has_value());
  EXPECT_EQ(db.nearest_winner(other_dev, Problem::dense(4096, n, k))->trial.problem.m, 128);
  EXPECT_THROW(db.nearest_winner(dev, Problem::dense(0, n, k)), Error);
}

TEST_F(TuningDbTest, NearestWinnerPrefersTheQueriedProblemAmongEqualM) {
  TuningDb db(db_path());
  DeviceScope dev = db.upsert_device(h200());
  Problem dense = Problem::dense(128, 4096, 7168);
  Problem padded = dense;
  padded.ldd = 4160;  // key sorts after the dense one
  db.put_trial(dev, ok_trial(dense, config_with(64), 1.0));
  db.put_trial(dev, ok_trial(padded, config_with(128), 1.0));
  EXPECT_EQ(db.nearest_winner(dev, padded)->trial.problem, padded);
  EXPECT_EQ(db.nearest_winner(dev, dense)->trial.problem, dense);
  Problem third = dense;
  third.ldd = 4608;  // neither stored: the lower key wins
  EXPECT_EQ(db.nearest_winner(dev, third)->trial.problem, dense);
}

// ---------------------------------------------------------------------------------------------
// Concurrency: parallel tuning processes share one file

TEST_F(TuningDbTest, TrialsBaselinesSweepsAndWinnersArePerProtocol) {
  TuningDb db(db_path());
  const DeviceScope s = db.upsert_device(h200());
  const Problem p = Problem::dense(128, 4096, 7168);
  const std::string cold = R"({"name":"cold-l2-v1","warmup":3})";
  const std::string hot = R"({"graph_launches":20,"kind":"hot-graph","name":"hot-graph-v1","rounds":10,"version":1})";
  // The same (device, environment, problem, config) timed under both protocols: two trials.
  TrialRecord a_cold = ok_trial(p, config_with(128), 10.0), a_hot = ok_trial(p, config_with(128), 6.0);
  TrialRecord b_cold = ok_trial(p, config_with(256), 12.0), b_hot = ok_trial(p, config_with(256), 5.0);
  a_cold.protocol = b_cold.protocol = cold;
  a_hot.protocol = b_hot.protocol = hot;
  for (const TrialRecord* t : {&a_cold, &a_hot, &b_cold, &b_hot}) db.put_trial(s, *t);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM trial"), 4);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM trial WHERE protocol_name = 'hot-graph-v1'"), 2);
  EXPECT_TRUE(db.has_trial(s, p, config_with(128), "hot-graph-v1"));
  EXPECT_FALSE(db.has_trial(s, p, config_with(64), "hot-graph-v1"));
  EXPECT_EQ(db.stored_config_keys(s, p, "hot-graph-v1"),
            (std::set<std::string>{config_with(128).key(), config_with(256).key()}));
  EXPECT_TRUE(db.stored_config_keys(s, p, "hot-graph-v2").empty());  // resume is per protocol name
  // Re-putting one protocol's trial replaces only that protocol's row.
  a_hot.timing->median_us = 4.0;
  db.put_trial(s, a_hot);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM trial"), 4);
  ASSERT_EQ(db.trials(s, p, "cold-l2-v1").size(), 2u);
  EXPECT_DOUBLE_EQ(db.trials(s, p, "cold-l2-v1")[0].timing->median_us, 10.0);
  EXPECT_DOUBLE_EQ(db.trials(s, p, "hot-graph-v1")[0].timing->median_us, 4.0);

  // One winner per protocol in the view and through the API: the cold winner is 128, the hot one 128 at 4 us.
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM winner"), 2);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(DISTINCT protocol_name) FROM winner"), 2);
  auto wc = db.winner(s, p, "cold-l2-v1"), wh = db.winner(s, p, "hot-graph-v1");
  ASSERT_TRUE(wc && wh);
  EXPECT_EQ(wc->trial.config, config_with(128));
  EXPECT_DOUBLE_EQ(wc->trial.timing->median_us, 10.0);
  EXPECT_EQ(wc->protocol_name, "cold-l2-v1");
  EXPECT_EQ(wh->trial.config, config_with(128));
  EXPECT_DOUBLE_EQ(wh->trial.timing->median_us, 4.0);
  EXPECT_EQ(wh->trial.protocol, hot);
  EXPECT_EQ(wh->status_counts, (std::map<std::string, int>{{"ok", 2}}));
  EXPECT_EQ(db.winner(s, p)->trial.protocol, cold);  // the default protocol is the sweep Timer's
  EXPECT_EQ(db.winners(s, "hot-graph-v1").size(), 1u);
  EXPECT_FALSE(db.winner(s, p, "hot-graph-v2").has_value());
  EXPECT_EQ(db.nearest_winner(s, Problem::dense(100, 4096, 7168), "hot-graph-v1")->trial.timing->median_us, 4.0);
  // A faster hot trial of another config moves only the hot winner.
  b_hot.timing->median_us = 3.0;
  db.put_trial(s, b_hot);
  EXPECT_EQ(db.winner(s, p, "hot-graph-v1")->trial.config, config_with(256));
  EXPECT_EQ(db.winner(s, p, "cold-l2-v1")->trial.config, config_with(128));

  // Baselines per protocol, and the winner carries its own protocol's.
  BaselineRecord bc;
  bc.problem = p;
  bc.provider = kProviderCublasTuned;
  bc.protocol = cold;
  bc.set_timing(Timing{11.0, 11.0, 11.0, 20, 0.01, 1700, false});
  BaselineRecord bh = bc;
  bh.protocol = hot;
  bh.set_timing(Timing{7.0, 7.0, 7.0, 10, 0.01, 1700, false});
  db.put_baseline(s, bc);
  EXPECT_FALSE(db.has_baseline(s, p, kProviderCublasTuned, "hot-graph-v1"));
  db.put_baseline(s, bh);
  EXPECT_EQ(raw_int(db.path(), "SELECT count(*) FROM baseline"), 2);
  EXPECT_DOUBLE_EQ(db.baseline(s, p, kProviderCublasTuned, "hot-graph-v1")->timing->median_us, 7.0);
  EXPECT_DOUBLE_EQ(db.winner(s, p, "hot-graph-v1")->cublas_tuned->timing->median_us, 7.0);
  EXPECT_DOUBLE_EQ(db.winner(s, p, "cold-l2-v1")->cublas_tuned->timing->median_us, 11.0);

  // Sweep states per protocol.
  db.put_sweep_state(s, p, "sm90-default", "exhaustive", SweepState{10, 10, true, ""}, "cold-l2-v1");
  db.put_sweep_state(s, p, "sm90-default", "exhaustive", SweepState{10, 4, false, ""}, "hot-graph-v1");
  EXPECT_TRUE(db.sweep_state(s, p, "sm90-default", "exhaustive", "cold-l2-v1")->complete);
  EXPECT_EQ(db.sweep_state(s, p, "sm90-default", "exhaustive", "hot-graph-v1")->stored, 4);

  // Export: one row per (environment, problem, protocol), each with its protocol and its protocol's baseline.
  const auto rows = db.export_rows(s.device_id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].protocol_name, "cold-l2-v1");
  EXPECT_EQ(rows[1].protocol_name, "hot-graph-v1");
  EXPECT_DOUBLE_EQ(rows[1].cublas_tuned->timing->median_us, 7.0);
  EXPECT_EQ(rows[1].trial.config, config_with(256));
}

TEST_F(TuningDbTest, ProtocolNameComesFromTheJsonElseTheSweepTimers) {
  TuningDb db(db_path());
  const DeviceScope s = db.upsert_device(h200());
  const Problem p = Problem::dense(128, 4096, 7168);
  const std::pair<const char*, const char*> cases[] = {{"", "cold-l2-v1"},
                                                       {"not json", "cold-l2-v1"},
                                                       {R"({"samples":3})", "cold-l2-v1"},
                                                       {R"({"name":7})", "cold-l2-v1"},
                                                       {R"({"name":"hot-graph-v1"})", "hot-graph-v1"},
                                                       {R"({"name":"cold-l2-v2"})", "cold-l2-v2"}};
  int block_n = 64;
  for (const auto& [json, name] : cases) {
    TrialRecord t = ok_trial(p, config_with(block_n += 8), 10.0);
    t.protocol = json;
    db.put_trial(s, t);
    EXPECT_TRUE(db.has_trial(s, p, t.config, name)) << json;
    EXPECT_EQ(db.trials(s, p, name).back().protocol, json) << "the JSON text itself is kept";
  }
}

TEST_F(TuningDbTest, ConcurrentOpenersAndWritersLoseNothing) {
  // Several connections create the same new file at once (one must create the schema, the others
  // must see it) and then write interleaved transactions; the busy timeout serialises them.
  const std::string path = db_path();
  constexpr int kThreads = 4, kTrialsEach = 25;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        TuningDb db(path);
        DeviceScope dev = db.upsert_device(h200());
        for (int j = 0; j < kTrialsEach; ++j)
          db.put_trial(dev, ok_trial(Problem::dense(128 * (i + 1), 4096, 7168), config_with(8 * (j + 1)), 10.0 + j));
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(errors[i], "") << "thread " << i;
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM schema_version"), 1);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM device"), 1);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM trial"), kThreads * kTrialsEach);
  EXPECT_EQ(raw_int(path, "SELECT count(*) FROM config"), kTrialsEach);
  TuningDb db(path);
  auto ws = db.winners(*db.find_device(h200()));
  ASSERT_EQ(ws.size(), size_t(kThreads));
  for (const auto& w : ws) EXPECT_EQ(w.trial.config, config_with(8));  // median 10.0, the fastest
}

}  // namespace
}  // namespace dgt
