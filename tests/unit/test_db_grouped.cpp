// Grouped (MoE) problems in the tuning DB (schema 11): their rows, keys and distribution, the winner under the
// grouped key, and that dense lookups never take a grouped row. No GPU needed.
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <sqlite3.h>

#include <string>

#include "core/error.hpp"
#include "db/maintenance.hpp"
#include "db/tuning_db.hpp"
#include "problem/grouped_problem.hpp"
#include "records/records.hpp"

namespace dgt {
namespace {

class GroupedDbTest : public test::TempDirTest {};

DeviceFingerprint h200() {
  DeviceFingerprint d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.kernel_hash = "0123456789abcdef";
  d.dgtune_version = "0.1.0";
  return d;
}

TrialRecord ok_trial(const Problem& p, int block_n, double median_us) {
  TrialRecord t;
  t.problem = p;
  t.config.block_n = block_n;
  t.status = TrialStatus::kOk;
  t.timing = Timing{median_us, median_us, median_us, 30, 0.002, 1755.0, false};
  t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
  return t;
}

std::string raw_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// Parsed where used (not at namespace scope: a refusal there would end the test binary before gtest runs).
GroupedProblem masked() {
  return parse_grouped_problem("kind=masked groups=8 masked_m=10,20,0,40,50,60,70,250 m_max=256 expected_m=64 4096 "
                               "7168",
                               "t");
}
GroupedProblem contiguous() {
  return parse_grouped_problem("kind=contiguous groups=4 m_per_group=300,0,128,100 4096 7168 scale=block", "t");
}

TEST_F(GroupedDbTest, GroupedRowsKeepTheirIdentityAndWinUnderTheGroupedKey) {
  TuningDb db(path("g.db"));
  const DeviceScope dev = db.upsert_device(h200());
  const GroupedProblem kMasked = masked();
  const Problem m = kMasked.keyed(), c = contiguous().keyed();
  db.put_trial(dev, ok_trial(m, 128, 30.0));
  db.put_trial(dev, ok_trial(m, 256, 20.0));
  db.put_trial(dev, ok_trial(c, 128, 50.0));
  EXPECT_EQ(raw_text(db.path(), "SELECT group_kind || ' ' || groups || ' ' || m_max || ' ' || expected_m || ' ' || m "
                                "FROM problem WHERE key = '" + m.key() + "'"),
            "masked 8 256 64 2048");
  EXPECT_EQ(raw_text(db.path(), "SELECT group_kind || ' ' || groups || ' ' || m_max || ' ' || expected_m || ' ' || m "
                                "FROM problem WHERE key = '" + c.key() + "'"),
            "contiguous 4 0 0 640");
  const auto w = db.winner(dev, m);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->trial.problem, m);  // read back with its grouped fields
  EXPECT_EQ(w->trial.config.block_n, 256);
  EXPECT_DOUBLE_EQ(w->trial.timing->median_us, 20.0);
  // The dense problem of the same dense view is another problem: no winner, no stored trial.
  EXPECT_FALSE(db.winner(dev, kMasked.dense_view()));
  EXPECT_TRUE(db.stored_config_keys(dev, kMasked.dense_view(), kSweepTimerProtocol).empty());
  EXPECT_EQ(db.stored_config_keys(dev, m, kSweepTimerProtocol).size(), 2u);
  // winners() lists both grouped winners with their identity.
  int grouped = 0;
  for (const WinnerRow& r : db.winners(dev, kSweepTimerProtocol)) grouped += r.trial.problem.is_grouped() ? 1 : 0;
  EXPECT_EQ(grouped, 2);
  // db check recomputes every key from its columns, grouped ones included.
  const dbm::CheckReport report = dbm::check(db.path());
  EXPECT_TRUE(report.problems.empty()) << (report.problems.empty() ? "" : report.problems[0]);
}

TEST_F(GroupedDbTest, DenseNearestWinnerNeverTakesAGroupedRow) {
  TuningDb db(path("g.db"));
  const DeviceScope dev = db.upsert_device(h200());
  const GroupedProblem kMasked = masked();
  // A grouped winner whose dense view (2048 x 4096 x 7168) is the dense family's nearest M.
  db.put_trial(dev, ok_trial(kMasked.keyed(), 256, 1.0));
  EXPECT_FALSE(db.nearest_winner(dev, Problem::dense(2048, 4096, 7168)));
  db.put_trial(dev, ok_trial(Problem::dense(64, 4096, 7168), 128, 1.0));
  const auto w = db.nearest_winner(dev, Problem::dense(2048, 4096, 7168));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->trial.problem.m, 64);
  EXPECT_FALSE(w->trial.problem.is_grouped());
}

TEST_F(GroupedDbTest, TheFirstDistributionStaysWithTheProblem) {
  TuningDb db(path("g.db"));
  const GroupedProblem kContiguous = contiguous();
  const Problem p = kContiguous.keyed();
  EXPECT_EQ(db.put_group_rows(p, kContiguous.rows_list(), kContiguous.rows_text), "300,0,128,100");
  // A later sweep of the same key with other counts (same padded total M) keeps the first: it is what was measured.
  EXPECT_EQ(db.put_group_rows(p, "1,1,1,257", "1,1,1,257"), "300,0,128,100");
  EXPECT_EQ(raw_text(db.path(), "SELECT group_rows_text FROM problem WHERE key = '" + p.key() + "'"),
            "300,0,128,100");
  try {
    db.put_group_rows(Problem::dense(64, 64, 64), "1", "1");
    ADD_FAILURE() << "a dense problem was given a distribution";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    EXPECT_NE(std::string(e.what()).find("not grouped"), std::string::npos);
  }
}

}  // namespace
}  // namespace dgt
