// Sweeps stopped and raced on the CPU: the sweep loop (tune/sweep_loop.hpp) driven by the fake measurer of
// tests/fake/fake_sweep.cpp in separate processes, interrupted by SIGINT, killed by SIGKILL at random
// moments, run two and three at a time on one DB, and run on a full file system.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir_test.hpp"

namespace dgt {
namespace {

constexpr int kCandidates = 24;            // per shape; the fake sweeps two shapes
constexpr int kFullSet = 2 * kCandidates;  // trials a finished sweep holds

/// Starts dgtune_fake_sweep with stdout and stderr into `out`.
pid_t spawn(const std::string& db, const std::string& log, int candidates, int delay_ms, const std::string& out) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(out.c_str(), "w", stdout);
    if (f) dup2(fileno(stdout), STDERR_FILENO);
    const std::string n = std::to_string(candidates), d = std::to_string(delay_ms);
    execl(DGT_FAKE_SWEEP_BIN, DGT_FAKE_SWEEP_BIN, db.c_str(), log.c_str(), n.c_str(), d.c_str(), (char*)nullptr);
    _exit(127);
  }
  return pid;
}

/// Exit code, or 128 + signal.
int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

using test::slurp;

/// Lines of the fake's log, by first word ("measured" / "REMEASURED").
std::vector<std::string> log_lines(const std::string& log, const std::string& kind) {
  std::vector<std::string> out;
  std::istringstream in(slurp(log));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(kind + " ", 0) == 0) out.push_back(line);
  return out;
}

/// "problem config" of a log line (the pid dropped), so lines of different processes compare.
std::string what_of(const std::string& line) {
  std::istringstream in(line);
  std::string kind, pid, problem, config;
  in >> kind >> pid >> problem >> config;
  return problem + " " + config;
}

/// One integer from SQL, read with SQLite directly (not through the code under test).
int64_t query_int(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_busy_timeout(h, 10000);
  sqlite3_stmt* s = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  else
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(h);
  sqlite3_finalize(s);
  sqlite3_close(h);
  return v;
}

/// PRAGMA integrity_check as the next sweep would see the file: read-write, because the WAL of a killed writer
/// is recovered by the next connection that may write (a read-only one gets SQLITE_READONLY_RECOVERY, "attempt
/// to write a readonly database", until then).
std::string integrity(const std::string& db) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr);
  sqlite3_busy_timeout(h, 10000);
  sqlite3_stmt* s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW) out += reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  if (out.empty()) out = std::string("no answer: ") + sqlite3_errmsg(h);
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

int64_t stored_trials(const std::string& db) {
  return query_int(db, "SELECT count(*) FROM trial WHERE status <> 'claimed'");
}
int64_t claims(const std::string& db) { return query_int(db, "SELECT count(*) FROM trial WHERE status = 'claimed'"); }

class SweepRobustness : public test::TempDirTest {};

TEST_F(SweepRobustness, UninterruptedFakeSweepStoresTheFullSetOnceAndResumesWithNothingToDo) {
  const std::string db = path("t.db"), log = path("log");
  ASSERT_EQ(wait_for(spawn(db, log, kCandidates, 0, path("out1"))), 0) << slurp(path("out1"));
  EXPECT_EQ(stored_trials(db), kFullSet);
  EXPECT_EQ(log_lines(log, "measured").size(), size_t(kFullSet));
  ASSERT_EQ(wait_for(spawn(db, log, kCandidates, 0, path("out2"))), 0) << slurp(path("out2"));
  EXPECT_EQ(log_lines(log, "measured").size(), size_t(kFullSet)) << "a finished sweep measured again";
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM sweep WHERE complete = 1"), 2);
}

TEST_F(SweepRobustness, SigintStopsAfterTheCurrentTrialWithExit130AndResumes) {
  const std::string db = path("t.db"), log = path("log");
  const pid_t pid = spawn(db, log, kCandidates, 30, path("out1"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (log_lines(log, "measured").size() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(log_lines(log, "measured").size(), 3u);
  kill(pid, SIGINT);
  EXPECT_EQ(wait_for(pid), 130);
  EXPECT_NE(slurp(path("out1")).find("run the same command again to resume"), std::string::npos) << slurp(path("out1"));
  // The trial in progress was finished and stored, nothing more: every measurement is a stored trial.
  const size_t measured = log_lines(log, "measured").size();
  EXPECT_LT(measured, size_t(kFullSet));
  EXPECT_EQ(stored_trials(db), int64_t(measured));
  EXPECT_EQ(claims(db), 0);
  EXPECT_EQ(integrity(db), "ok");
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM sweep WHERE complete = 0"), 1) << "the stopped shape is incomplete";

  ASSERT_EQ(wait_for(spawn(db, log, kCandidates, 0, path("out2"))), 0) << slurp(path("out2"));
  EXPECT_EQ(stored_trials(db), kFullSet);
  EXPECT_TRUE(log_lines(log, "REMEASURED").empty());
  EXPECT_EQ(log_lines(log, "measured").size(), size_t(kFullSet));
}

/// The `sweep` form of dgtune_fake_sweep with --workers, in a process group of its own (as a shell job).
pid_t spawn_with_workers(const std::string& shapes, const std::string& db, const std::string& log, int workers,
                         int delay_ms, const std::string& out) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    FILE* f = std::freopen(out.c_str(), "w", stdout);
    if (f) dup2(fileno(stdout), STDERR_FILENO);
    const std::string w = std::to_string(workers), d = std::to_string(delay_ms), n = std::to_string(kCandidates);
    execl(DGT_FAKE_SWEEP_BIN, DGT_FAKE_SWEEP_BIN, "sweep", "--shapes", shapes.c_str(), "--db", db.c_str(), "--log",
          log.c_str(), "--workers", w.c_str(), "--delay-ms", d.c_str(), "--max-candidates", n.c_str(), (char*)nullptr);
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Ctrl-C with worker processes (README "Crashing and hanging candidates"): the terminal's SIGINT goes to the
// sweep's process group; the workers are in groups of their own, so the parent finishes the trials in progress,
// stores them, ends its workers and exits 130; the same command then measures only what is missing.
TEST_F(SweepRobustness, SigintWithWorkerProcessesStopsCleanlyAndTheWorkersEnd) {
  const std::string db = path("t.db"), log = path("log"), shapes = path("shapes.txt");
  std::ofstream(shapes) << "4096 4096 4096\n128 2112 7168\n";
  const pid_t pid = spawn_with_workers(shapes, db, log, 2, 30, path("out1"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (log_lines(log, "measured").size() < 6 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(log_lines(log, "measured").size(), 6u);
  kill(-pid, SIGINT);  // what Ctrl-C does: the whole foreground group
  EXPECT_EQ(wait_for(pid), 130) << slurp(path("out1"));
  const auto workers = log_lines(log, "worker");
  EXPECT_EQ(workers.size(), 2u);  // no worker died of the SIGINT (a dead one would have been replaced)
  for (const std::string& line : workers) {
    const pid_t w = std::stoi(line.substr(7));
    EXPECT_TRUE(kill(w, 0) != 0 && errno == ESRCH) << "worker " << w << " outlived the sweep";
  }
  const size_t measured = log_lines(log, "measured").size();
  EXPECT_LT(measured, size_t(kFullSet));
  EXPECT_EQ(stored_trials(db), int64_t(measured)) << "a trial in progress was lost or a stored one is missing";
  EXPECT_EQ(claims(db), 0);
  EXPECT_EQ(integrity(db), "ok");

  ASSERT_EQ(wait_for(spawn_with_workers(shapes, db, log, 2, 0, path("out2"))), 0) << slurp(path("out2"));
  EXPECT_EQ(stored_trials(db), kFullSet);
  std::set<std::string> distinct;
  for (const std::string& line : log_lines(log, "measured")) {
    std::istringstream in(line);
    std::string kind, pci, problem, config;
    in >> kind >> pci >> problem >> config;
    distinct.insert(problem + " " + config);
  }
  EXPECT_EQ(log_lines(log, "measured").size(), size_t(kFullSet)) << "the resume measured a stored trial again";
  EXPECT_EQ(distinct.size(), size_t(kFullSet));
}

TEST_F(SweepRobustness, SigkillAtRandomMomentsNeverRemeasuresStoredTrialsAndEndsWithTheFullSet) {
  const std::string db = path("t.db"), log = path("log");
  std::mt19937 rng(20261129);
  std::uniform_int_distribution<int> wait_ms(5, 120);
  int kills = 0, finished = 0;
  for (int i = 0; i < 60 && !finished; ++i) {
    const pid_t pid = spawn(db, log, kCandidates, 4, path("out"));
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms(rng)));
    kill(pid, SIGKILL);
    const int rc = wait_for(pid);
    if (rc == 128 + SIGKILL)
      ++kills;
    else
      finished = rc == 0 ? 1 : (ADD_FAILURE() << "exit " << rc << ": " << slurp(path("out")), 1);
    if (std::filesystem::exists(db)) ASSERT_EQ(integrity(db), "ok") << "after kill " << kills;
  }
  EXPECT_GE(kills, 3) << "the kills must land during the sweep to test anything";
  ASSERT_EQ(wait_for(spawn(db, log, kCandidates, 0, path("out"))), 0) << slurp(path("out"));
  EXPECT_EQ(stored_trials(db), kFullSet);
  EXPECT_EQ(claims(db), 0) << "claims of killed sweeps must be taken over";
  EXPECT_TRUE(log_lines(log, "REMEASURED").empty()) << log_lines(log, "REMEASURED").front();
  // A kill loses at most the one trial in flight, so repeats are bounded by the kills.
  const auto measured = log_lines(log, "measured");
  EXPECT_GE(measured.size(), size_t(kFullSet));
  EXPECT_LE(measured.size(), size_t(kFullSet + kills));
  EXPECT_EQ(integrity(db), "ok");
}

TEST_F(SweepRobustness, ConcurrentSweepsOnOneDbMeasureEachCandidateOnceWithoutLockErrors) {
  for (int procs : {2, 3}) {
    const std::string db = path("c" + std::to_string(procs) + ".db"), log = path("log" + std::to_string(procs));
    std::vector<pid_t> pids;
    for (int i = 0; i < procs; ++i)
      pids.push_back(spawn(db, log, kCandidates, 5, path("out" + std::to_string(procs) + std::to_string(i))));
    for (int i = 0; i < procs; ++i) {
      const std::string out = slurp(path("out" + std::to_string(procs) + std::to_string(i)));
      EXPECT_EQ(wait_for(pids[i]), 0) << out;
      EXPECT_EQ(out.find("locked"), std::string::npos) << out;
    }
    const auto measured = log_lines(log, "measured");
    std::set<std::string> unique;
    std::set<std::string> by_pid;
    for (const auto& l : measured) {
      unique.insert(what_of(l));
      by_pid.insert(l.substr(9, l.find(' ', 9) - 9));
    }
    EXPECT_EQ(measured.size(), size_t(kFullSet)) << procs << " sweeps: a candidate was measured twice";
    EXPECT_EQ(unique.size(), size_t(kFullSet));
    EXPECT_GE(by_pid.size(), 2u) << "the work was not shared";
    EXPECT_EQ(stored_trials(db), kFullSet);
    EXPECT_EQ(claims(db), 0);
    EXPECT_EQ(query_int(db, "SELECT count(*) FROM baseline"), 4) << "baselines once per shape and provider";
  }
}

/// A sweep on a 512 KiB tmpfs runs out of space (as root; skipped where mounting is not allowed).
TEST_F(SweepRobustness, FullDiskStopsTheSweepWithExit1AndTheDbStaysConsistent) {
  const std::string mnt = path("mnt");
  std::filesystem::create_directory(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=512k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "): needs root";
  struct Unmount {
    std::string dir;
    ~Unmount() { umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string db = mnt + "/t.db", log = path("log");
  const int big = 400;  // candidates per shape: far more than 512 KiB hold
  const int rc = wait_for(spawn(db, log, big, 0, path("out")));
  const std::string out = slurp(path("out"));
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("disk is full"), std::string::npos) << out;
  const int64_t stored = stored_trials(db);
  EXPECT_GT(stored, 0);
  EXPECT_LT(stored, 2 * big);
  EXPECT_EQ(integrity(db), "ok");
  // Room again: the sweep resumes where it stopped and completes, measuring nothing twice.
  ASSERT_EQ(mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT, "size=64m"), 0) << std::strerror(errno);
  ASSERT_EQ(wait_for(spawn(db, log, big, 0, path("out2"))), 0) << slurp(path("out2"));
  EXPECT_TRUE(log_lines(log, "REMEASURED").empty());
  EXPECT_EQ(claims(db), 0);
  EXPECT_EQ(integrity(db), "ok");
  const int64_t full = stored_trials(db);
  EXPECT_GT(full, stored);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM sweep WHERE complete = 1"), 2);
}

}  // namespace
}  // namespace dgt
