// How a tuning DB is opened (db/sqlite.hpp, db/writer_check.hpp): something other than a regular file is refused by
// type and never handed to SQLite (a FIFO made every command wait forever); a DB whose write-ahead log cannot be read
// is refused, never read in part; a writer that may not write refuses before SQLite leaves -wal/-shm files; a
// schema version no dgtune writes is refused untouched; SQLite's codes come with words.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "as_nobody.hpp"
#include "core/error.hpp"
#include "db/maintenance.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"
#include "db/tuning_db.hpp"
#include "db/writer_check.hpp"
#include "loader/loader_db.hpp"
#include "db_fixture.hpp"
#include "temp_dir_test.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

using test::slurp;

/// Runs `fn` in a child process and returns its exit code, or -1 when it has not ended after `seconds` (it is
/// killed): a check that blocks on a FIFO must fail the test, not hang it.
int in_child(const std::function<int()>& fn, int seconds = 10) {
  const pid_t pid = fork();
  if (pid == 0) {
    int rc = 98;
    try {
      rc = fn();
    } catch (...) {
      rc = 97;
    }
    _exit(rc);
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

/// The Error's kind and message of `fn`, or kind kInternal and "no error".
std::pair<ErrorKind, std::string> error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.kind(), e.message()};
  }
  return {ErrorKind::kInternal, "no error"};
}

bool has_side_files(const std::string& db) { return fs::exists(db + "-wal") || fs::exists(db + "-shm"); }

using test::add_ok_trial;

class DbOpenRules : public test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir_, ec)) fs::permissions(e.path(), fs::perms::all, ec);
    TempDirTest::TearDown();
  }
};

TEST_F(DbOpenRules, SomethingOtherThanAFileIsRefusedByTypeWithoutWaiting) {
  const std::string fifo = path("ff.db"), sock = path("s.db");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (const auto& [p, kind] : std::vector<std::pair<std::string, std::string>>{{fifo, "a FIFO (named pipe)"},
                                                                                {sock, "a socket"},
                                                                                {"/dev/null", "a character device"},
                                                                                {dir_.string(), "a directory"}}) {
    for (bool read_only : {true, false}) {
      // In a child: before the rule, SQLite waited forever on the FIFO.
      EXPECT_EQ(in_child([&, p = p, kind = kind] {
                  const auto [k, msg] = error_of([&] { sql::Connection c(p, read_only); });
                  return k == ErrorKind::kIo &&
                                 msg == "cannot open tuning database " + p + ": it is " + kind + ", not a database file"
                             ? 0
                             : 1;
                }),
                0)
          << p << (read_only ? " read-only" : " read-write");
    }
    // The writer's check names the flag, before anything opens (bad input: exit 2).
    const auto [k, msg] = error_of([&, p = p] { check_db_writable(p, "--db"); });
    EXPECT_EQ(k, ErrorKind::kUsage) << msg;
    EXPECT_EQ(msg, "--db '" + p + "': it is " + kind + ", not a tuning database file; nothing was written");
    // The loader keeps running on default configs.
    EXPECT_EQ(in_child([&, p = p] { return open_loader_db(p) == nullptr ? 0 : 1; }), 0) << p;
  }
  ::close(fd);
}

TEST_F(DbOpenRules, AWriteAheadLogThatCannotBeReadIsRefusedNeverSkipped) {
  const std::string src = path("src.db");
  {
    TuningDb db(src);
    add_ok_trial(db, 256);
  }
  // A writer that died (or still runs) with a committed transaction in the log: copy the file and its log while the
  // writer holds them, as a backup or a crash leaves them.
  fs::create_directory(path("ro"));
  const std::string db = path("ro/t.db");
  {
    // A reader in the middle of a transaction keeps the writer from folding the log into the file.
    sqlite3* reader = nullptr;
    ASSERT_EQ(sqlite3_open(src.c_str(), &reader), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM trial;", nullptr, nullptr, nullptr), SQLITE_OK);
    {
      TuningDb writer(src);
      add_ok_trial(writer, 512);
    }
    fs::copy_file(src, db);
    fs::copy_file(src + "-wal", db + "-wal");
    sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(reader);
  }
  ASSERT_GT(fs::file_size(db + "-wal"), 32u);
  fs::permissions(path("ro"), fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  const std::string before = slurp(db);
  // As a user who cannot write the folder, SQLite cannot create t.db-shm; an immutable open would miss the trial
  // in the log. The reader refuses and says why and what to do.
  EXPECT_EQ(test::as_nobody([&] {
              const auto [k, msg] = error_of([&] { TuningDbReader r(db); });
              if (k != ErrorKind::kIo) return 1;
              if (msg.find("its write-ahead log " + db + "-wal") == std::string::npos) return 2;
              if (msg.find("holds changes not yet in the file") == std::string::npos) return 3;
              if (msg.find("dgtune db check --db " + db) == std::string::npos) return 4;
              return 0;
            }),
            0);
  // db merge and db check read through the same connection: refused, not merged without the rows.
  EXPECT_EQ(test::as_nobody([&] {
              const auto [k, msg] = error_of([&] { (void)dbm::check(db); });
              return k == ErrorKind::kIo && msg.find("write-ahead log") != std::string::npos ? 0 : 1;
            }),
            0);
  EXPECT_EQ(slurp(db), before);
  EXPECT_FALSE(fs::exists(db + "-shm"));
  // Its owner (root here, who may write the folder) reads everything: both trials. As the last connection it folds
  // the log into the file (what the refusal tells the user to do), after which the other user reads it all too.
  {
    TuningDbReader owner(db);
    const auto devices = owner.devices();
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(owner.trials({devices[0].id, 1, ""}, Problem::dense(512, 512, 1024)).size(), 1u);
    EXPECT_EQ(owner.trials({devices[0].id, 1, ""}, Problem::dense(256, 512, 1024)).size(), 1u);
  }
  EXPECT_FALSE(fs::exists(db + "-wal"));
  EXPECT_EQ(test::as_nobody([&] {
              TuningDbReader r(db);
              return static_cast<int>(r.trials({1, 1, ""}, Problem::dense(512, 512, 1024)).size() +
                                      r.trials({1, 1, ""}, Problem::dense(256, 512, 1024)).size());
            }),
            2);
}

TEST_F(DbOpenRules, AWriterThatMayNotWriteRefusesBeforeSqliteLeavesSideFiles) {
  // The file belongs to root and is read-only for others; the folder is writable by everyone (like /tmp).
  fs::create_directory(path("shared"));
  fs::permissions(path("shared"), fs::perms::all);
  const std::string db = path("shared/t.db");
  {
    TuningDb w(db);
    add_ok_trial(w, 256);
  }
  ASSERT_FALSE(has_side_files(db));
  fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  const std::string before = slurp(db);
  EXPECT_EQ(test::as_nobody([&] {
              const auto [k, msg] = error_of([&] { (void)dbm::prune(db, "other-kernel", /*dry_run=*/false); });
              if (k != ErrorKind::kIo) return 1;
              return msg.find("is not writable by this process") != std::string::npos ? 0 : 2;
            }),
            0);
  EXPECT_FALSE(has_side_files(db)) << "a denied writer left -wal/-shm files owned by another user";
  EXPECT_EQ(test::as_nobody([&] {
              const auto [k, msg] = error_of([&] { check_db_writable(db, "--db"); });
              return k == ErrorKind::kIo && msg.find("is not writable by this process") != std::string::npos ? 0 : 1;
            }),
            0);
  EXPECT_EQ(slurp(db), before);
}

TEST_F(DbOpenRules, ASchemaVersionNoDgtuneWritesIsRefusedUntouched) {
  for (int v : {-1, 0}) {
    const std::string db = path("v" + std::to_string(v) + ".db");
    {
      TuningDb w(db);
      add_ok_trial(w, 256);
    }
    {
      sqlite3* h = nullptr;
      ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
      ASSERT_EQ(
          sqlite3_exec(
              h, ("PRAGMA journal_mode = DELETE; UPDATE schema_version SET version = " + std::to_string(v)).c_str(),
              nullptr, nullptr, nullptr),
          SQLITE_OK);
      sqlite3_close(h);
    }
    const std::string before = slurp(db);
    const std::string want = "has schema version " + std::to_string(v) + ", which no dgtune writes";
    for (const auto& fn : std::vector<std::function<void()>>{
             [&] { TuningDb w(db); }, [&] { TuningDbReader r(db); }, [&] { check_db_writable(db, "--db"); },
             [&] { (void)dbm::prune(db, "k", false); }, [&] { (void)dbm::merge(db, db + ".x", path("m.db")); }}) {
      const auto [k, msg] = error_of(fn);
      EXPECT_NE(k, ErrorKind::kInternal) << "accepted schema version " << v;
      EXPECT_NE(msg.find(std::to_string(v)), std::string::npos) << msg;
    }
    const auto [k, msg] = error_of([&] { TuningDb w(db); });
    EXPECT_EQ(k, ErrorKind::kSqlite);
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
    const dbm::CheckReport r = dbm::check(db);
    ASSERT_FALSE(r.ok()) << "db check said ok for schema version " << v;
    EXPECT_EQ(r.problems[0], "schema version " + std::to_string(v) +
                                 " is not a version any dgtune writes (they start at 1); not checked further");
    EXPECT_EQ(slurp(db), before);
    EXPECT_FALSE(fs::exists(path("m.db")));
  }
}

TEST_F(DbOpenRules, TheWritersCheckReadsOnlyAndAgreesWithTheWriter) {
  // Missing and empty files pass and stay as they were; the writer would create the schema.
  EXPECT_NO_THROW(check_db_writable(path("new.db"), "--db"));
  EXPECT_NO_THROW(check_db_writable(path("a/b/new.db"), "--db"));  // folders created by the writer, later
  EXPECT_FALSE(fs::exists(path("new.db")));
  EXPECT_FALSE(fs::exists(path("a")));
  std::ofstream(path("empty.db")).close();
  EXPECT_NO_THROW(check_db_writable(path("empty.db"), "--db"));
  EXPECT_EQ(fs::file_size(path("empty.db")), 0u);
  // A current and an older DB pass untouched (the writer migrates the older one later, when it has a GPU).
  {
    TuningDb w(path("ok.db"));
    add_ok_trial(w, 256);
  }
  const std::string ok_before = slurp(path("ok.db"));
  EXPECT_NO_THROW(check_db_writable(path("ok.db"), "--db"));
  EXPECT_EQ(slurp(path("ok.db")), ok_before);
  EXPECT_FALSE(has_side_files(path("ok.db")));
  // Damaged, foreign, newer: the writer's own refusal, the file as it was.
  std::ofstream(path("text.db")) << "hello, I am not a database\n";
  const auto [k1, m1] = error_of([&] { check_db_writable(path("text.db"), "--db"); });
  EXPECT_EQ(k1, ErrorKind::kSqlite);
  EXPECT_NE(m1.find("file is not a database (SQLite code 26: SQLITE_NOTADB: the file is not an SQLite database)"),
            std::string::npos)
      << m1;
  EXPECT_EQ(slurp(path("text.db")), "hello, I am not a database\n");
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(path("newer.db").c_str(), &h), SQLITE_OK);
    sqlite3_exec(h, "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (999)",
                 nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  const auto [k2, m2] = error_of([&] { check_db_writable(path("newer.db"), "--db"); });
  EXPECT_EQ(k2, ErrorKind::kSqlite);
  EXPECT_NE(m2.find("has schema version 999, newer than"), std::string::npos) << m2;
}

TEST_F(DbOpenRules, WhatChangesADbInPlaceRefusesAnEmptyOrDamagedOneUntouched) {
  // db prune and db migrate never make a DB of an empty file (only a command that stores results creates one).
  std::ofstream(path("empty.db")).close();
  const auto [k0, m0] = error_of([&] { check_existing_db_writable(path("empty.db"), "--db", "db prune"); });
  EXPECT_EQ(k0, ErrorKind::kSqlite);
  EXPECT_NE(m0.find("is not a dgtune tuning database (the file is empty); db prune works on an existing one"),
            std::string::npos)
      << m0;
  EXPECT_EQ(fs::file_size(path("empty.db")), 0u);
  {
    TuningDb w(path("ok.db"));
    add_ok_trial(w, 256);
  }
  EXPECT_EQ(check_existing_db_writable(path("ok.db"), "--db", "db migrate"), schema::latest_version());
  EXPECT_NO_THROW(check_db_intact(path("ok.db")));
  // Page 3's b-tree header overwritten: the file's header is fine, so it opens; SQLite's quick_check sees the damage.
  fs::copy_file(path("ok.db"), path("hurt.db"));
  {
    std::fstream f(path("hurt.db"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8192);
    f << "XXXXXXXX";
  }
  const std::string before = slurp(path("hurt.db"));
  const std::vector<std::function<void()>> checks{
      [&] { check_db_writable(path("hurt.db"), "--db"); },
      [&] { check_existing_db_writable(path("hurt.db"), "--db", "db prune"); },
      [&] { check_db_intact(path("hurt.db")); }};
  for (const auto& check : checks) {
    const auto [k, m] = error_of(check);
    EXPECT_EQ(k, ErrorKind::kSqlite);
    EXPECT_NE(m.find("tuning database " + path("hurt.db") + " is damaged: SQLite's quick_check reports"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("run `dgtune db check --db " + path("hurt.db") + "`"), std::string::npos) << m;
  }
  EXPECT_EQ(slurp(path("hurt.db")), before);
  EXPECT_FALSE(has_side_files(path("hurt.db")));
}

TEST(SqliteCodes, EveryCodeComesWithWords) {
  EXPECT_EQ(sql::code_text(SQLITE_CANTOPEN),
            "SQLite code 14: SQLITE_CANTOPEN: the file, or a -wal/-shm/-journal file beside it, cannot be opened or "
            "created (a missing folder, no permission, or something other than a file at the path)");
  EXPECT_EQ(sql::code_text(SQLITE_READONLY_DBMOVED).rfind("SQLite code 1032: SQLITE_READONLY: ", 0), 0u);
  EXPECT_EQ(sql::code_text(SQLITE_FULL).rfind("SQLite code 13: SQLITE_FULL: ", 0), 0u);
  EXPECT_EQ(sql::code_text(SQLITE_NOTADB), "SQLite code 26: SQLITE_NOTADB: the file is not an SQLite database");
  for (int rc : {SQLITE_ERROR, SQLITE_BUSY, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_MISMATCH})
    EXPECT_GT(sql::code_text(rc).size(), std::string("SQLite code 99: ").size() + 5) << rc;
}

}  // namespace
}  // namespace dgt
