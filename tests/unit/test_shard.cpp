// `dgtune sweep --shard i/n` (problem/shard.hpp): the parser, the split rule, and shards swept by the fake sweep
// (tests/fake/fake_sweep.cpp, the real sweep loop with a fake measurer) and merged, against one full sweep. No GPU.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "db/maintenance.hpp"
#include "problem/shapes_file.hpp"
#include "problem/shard.hpp"
#include "temp_dir_test.hpp"

namespace dgt {
namespace {

std::string parse_error(const std::string& text) {
  try {
    const Shard s = parse_shard(text);
    return "parsed as " + s.text();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << text;
    return e.message();
  }
}

TEST(Shard, ParsesDecimalIndexAndCount) {
  EXPECT_EQ(parse_shard("0/1").text(), "0/1");
  EXPECT_TRUE(parse_shard("0/1").whole());
  const Shard s = parse_shard("3/4");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  EXPECT_FALSE(s.whole());
  EXPECT_EQ(parse_shard("07/010").text(), "7/10");  // leading zeros are decimal, as for every count of the CLI
  EXPECT_EQ(parse_shard("2147483646/2147483647").index, 2147483646);
}

TEST(Shard, RefusesNamingTheValueAndTheRule) {
  const std::string rule = "want i/n: decimal integers with 0 <= i < n and n >= 1";
  struct Case {
    std::string text, says;
  };
  const Case cases[] = {
      {"4/4", "'4/4': shard index 4 is not below the shard count 4"},
      {"5/4", "shard index 5 is not below the shard count 4"},
      {"0/0", "'0/0': shard count 0: there must be at least one shard"},
      {"3", "'3': no '/' between the shard index and the shard count"},
      {"", "'': no '/'"},
      {"-1/4", "shard index '-1' is not a decimal integer"},
      {"+1/4", "shard index '+1' is not a decimal integer"},
      {"1/-4", "shard count '-4' is not a decimal integer"},
      {"0x1/4", "shard index '0x1' is not a decimal integer"},
      {"1/4/2", "shard count '4/2' is not a decimal integer"},
      {" 1/4", "shard index ' 1' is not a decimal integer"},
      {"1/4 ", "shard count '4 ' is not a decimal integer"},
      {"1/", "shard count '' is not a decimal integer"},
      {"/4", "shard index '' is not a decimal integer"},
      {"1e0/4", "shard index '1e0' is not a decimal integer"},
      {"0/2147483648", "shard count '2147483648' is not a decimal integer up to 2147483647"},
      {"1/4\x1b", "shard count '4\\x1B' is not a decimal integer"},  // quoted input is escaped
  };
  for (const auto& c : cases) {
    const std::string m = parse_error(c.text);
    EXPECT_NE(m.find(c.says), std::string::npos) << "'" << c.text << "': " << m;
    EXPECT_NE(m.find(rule), std::string::npos) << "'" << c.text << "': " << m;
  }
}

/// A shapes file: 7 distinct problems, one repeated (line 5 repeats line 2's problem under another name) and
/// one problem that differs from line 1 only in its scale mode (a distinct problem: the key holds the mode).
const char* kShapes =
    "# comment\n"
    "64 576 7168\n"                    // line 2: problem 0
    "128 2112 7168 name=q\n"           // line 3: problem 1
    "4096 4096 4096\n"                 // line 4: problem 2
    "128 2112 7168 name=q-again\n"     // line 5: problem 1 again
    "64 576 7168 scale=channel\n"      // line 6: problem 3
    "256 7168 2048\n"                  // line 7: problem 4
    "\n"
    "512 512 512 accum=fast\n"         // line 9: problem 5
    "8192 8192 8192\n";                // line 10: problem 6

std::vector<int> lines_of(const ShardSelection& s) {
  std::vector<int> out;
  for (const auto& e : s.entries) out.push_back(e.line);
  return out;
}

TEST(Shard, ProblemJGoesToShardJModNAndARepeatedProblemFollowsItsFirstLine) {
  const auto all = parse_shapes(kShapes, "s.txt");
  ASSERT_EQ(all.size(), 8u);
  // Problems 0..6 are on lines 2, 3, 4, 6, 7, 9, 10; line 5 is problem 1.
  EXPECT_EQ(lines_of(select_shard(all, {0, 3})), (std::vector<int>{2, 6, 10}));  // problems 0, 3, 6
  EXPECT_EQ(lines_of(select_shard(all, {1, 3})), (std::vector<int>{3, 5, 7}));   // problems 1 (twice), 4
  EXPECT_EQ(lines_of(select_shard(all, {2, 3})), (std::vector<int>{4, 9}));      // problems 2, 5
  EXPECT_EQ(select_shard(all, {1, 3}).problems, 2);
  EXPECT_EQ(select_shard(all, {1, 3}).total_problems, 7);
  EXPECT_EQ(lines_of(select_shard(all, {0, 1})), (std::vector<int>{2, 3, 4, 5, 6, 7, 9, 10}));
}

TEST(Shard, EveryProblemIsInExactlyOneShardBalancedAndDeterministic) {
  const auto all = parse_shapes(kShapes, "s.txt");
  for (int n = 1; n <= 9; ++n) {
    std::map<std::string, int> shard_of;  // problem key -> the shard that holds it
    std::multiset<int> lines;
    int smallest = 1 << 30, largest = 0;
    for (int i = 0; i < n; ++i) {
      const ShardSelection sel = select_shard(all, {i, n});
      EXPECT_EQ(lines_of(sel), lines_of(select_shard(all, {i, n}))) << "not deterministic";
      std::set<std::string> mine;
      for (const auto& e : sel.entries) {
        lines.insert(e.line);
        mine.insert(e.problem.key());
      }
      EXPECT_EQ(int(mine.size()), sel.problems);
      for (const auto& k : mine) {
        EXPECT_EQ(shard_of.count(k), 0u) << k << " in shards " << shard_of[k] << " and " << i << " of " << n;
        shard_of[k] = i;
      }
      smallest = std::min(smallest, sel.problems);
      largest = std::max(largest, sel.problems);
    }
    EXPECT_EQ(shard_of.size(), 7u) << "n = " << n;                       // every problem somewhere
    EXPECT_EQ(lines, (std::multiset<int>{2, 3, 4, 5, 6, 7, 9, 10})) << n;  // every line exactly once
    EXPECT_LE(largest - smallest, 1) << "n = " << n;                      // round-robin: balanced
  }
}

TEST(Shard, AnEmptyShardSaysSo) {
  const auto all = parse_shapes("64 64 64\n128 128 128\n", "two.txt");
  const ShardSelection sel = select_shard(all, {2, 3});
  EXPECT_TRUE(sel.entries.empty());
  EXPECT_EQ(sel.summary("two.txt"),
            "shard 2/3 of two.txt: 0 of 2 problems: nothing to sweep (problem j of the file goes to shard j mod 3, "
            "and the file has 2)");
  EXPECT_EQ(select_shard(all, {1, 3}).summary("two.txt"),
            "shard 1/3 of two.txt: 1 of 2 problems (problem j of the file goes to shard j mod 3; lines 2)");
}

// ---- shards swept by the fake sweep and merged ------------------------------------------------------------

class ShardSweep : public test::TempDirTest {
 protected:
  /// Runs dgtune_fake_sweep's `sweep` form; returns its exit code, output in `out`.
  int fake_sweep(const std::vector<std::string>& args, std::string* out = nullptr) {
    const std::string log = path("fake.out");
    const pid_t pid = fork();
    if (pid == 0) {
      if (!std::freopen(log.c_str(), "w", stdout)) _exit(126);
      dup2(fileno(stdout), STDERR_FILENO);
      std::vector<char*> argv{const_cast<char*>(DGT_FAKE_SWEEP_BIN), const_cast<char*>("sweep")};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(DGT_FAKE_SWEEP_BIN, argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    if (out) *out = ss.str();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string shapes_file() {
    const std::string f = path("shapes.txt");
    std::ofstream(f) << kShapes;
    return f;
  }
};

/// Rows of a query as strings (columns joined by ' '), read with SQLite directly, sorted.
std::multiset<std::string> rows(const std::string& db, const std::string& sql) {
  std::multiset<std::string> out;
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << db;
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  while (s && sqlite3_step(s) == SQLITE_ROW) {
    std::string r;
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      const unsigned char* t = sqlite3_column_text(s, i);
      r += (i ? " " : "") + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    out.insert(r);
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

const char* kTrialSet =
    "SELECT p.key, c.key, t.status FROM trial t JOIN problem p ON p.id = t.problem_id JOIN config c ON c.id = "
    "t.config_id";
const char* kWinnerSet =
    "SELECT p.key, c.key FROM winner w JOIN problem p ON p.id = w.problem_id JOIN config c ON c.id = w.config_id";
const char* kProblemsSwept = "SELECT p.key FROM trial t JOIN problem p ON p.id = t.problem_id GROUP BY p.key";

TEST_F(ShardSweep, TwoAndThreeShardsMergedHoldTheSameTrialsAsOneFullSweep) {
  const std::string shapes = shapes_file();
  std::string out;
  ASSERT_EQ(fake_sweep({"--shapes", shapes, "--db", path("full.db"), "--max-candidates", "3"}, &out), 0) << out;
  const auto full = rows(path("full.db"), kTrialSet);
  ASSERT_EQ(full.size(), 7u * 3u) << "7 distinct problems x 3 candidates";
  EXPECT_EQ(rows(path("full.db"), kWinnerSet).size(), 7u);

  for (int n : {2, 3}) {
    std::vector<std::string> dbs;
    std::set<std::string> seen;  // problems swept by some shard
    size_t shard_trials = 0;
    for (int i = 0; i < n; ++i) {
      const std::string db = path("shard-" + std::to_string(n) + "-" + std::to_string(i) + ".db");
      const std::string shard = std::to_string(i) + "/" + std::to_string(n);
      ASSERT_EQ(fake_sweep({"--shapes", shapes, "--shard", shard, "--db", db, "--max-candidates", "3"}, &out), 0)
          << out;
      EXPECT_NE(out.find("shard " + shard + " of " + shapes + ": "), std::string::npos) << out;
      for (const auto& p : rows(db, kProblemsSwept)) {
        EXPECT_TRUE(seen.insert(p).second) << p << " swept by two shards of " << n;
      }
      shard_trials += rows(db, kTrialSet).size();
      dbs.push_back(db);
    }
    EXPECT_EQ(seen.size(), 7u);
    EXPECT_EQ(shard_trials, full.size()) << "shards measured something twice or missed something";
    const std::string merged = path("merged-" + std::to_string(n) + ".db");
    dbm::merge(dbs, merged);
    EXPECT_EQ(rows(merged, kTrialSet), full) << n << " shards";
    EXPECT_EQ(rows(merged, kWinnerSet), rows(path("full.db"), kWinnerSet)) << n << " shards";
    EXPECT_EQ(rows(merged, "SELECT count(*) FROM sweep WHERE complete = 1"), (std::multiset<std::string>{"7"}));
  }
}

TEST_F(ShardSweep, AnEmptyShardExitsZeroWithoutADbAndBadShardsExitTwo) {
  const std::string shapes = path("two.txt");
  std::ofstream(shapes) << "64 64 64\n128 128 128\n";
  std::string out;
  EXPECT_EQ(fake_sweep({"--shapes", shapes, "--shard", "2/3", "--db", path("s2.db")}, &out), 0) << out;
  EXPECT_NE(out.find("shard 2/3 of " + shapes + ": 0 of 2 problems: nothing to sweep"), std::string::npos) << out;
  EXPECT_FALSE(std::ifstream(path("s2.db")).good()) << "an empty shard opened the DB";
  EXPECT_EQ(fake_sweep({"--shapes", shapes, "--shard", "3/3", "--db", path("s3.db")}, &out), 2);
  EXPECT_NE(out.find("--shard: '3/3': shard index 3 is not below the shard count 3"), std::string::npos) << out;
  EXPECT_EQ(fake_sweep({"--shapes", shapes, "--shard", "1/0x2", "--db", path("s3.db")}, &out), 2);
  EXPECT_NE(out.find("shard count '0x2' is not a decimal integer"), std::string::npos) << out;
  EXPECT_FALSE(std::ifstream(path("s3.db")).good());
}

}  // namespace
}  // namespace dgt
