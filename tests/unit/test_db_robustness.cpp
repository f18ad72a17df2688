// Robustness on the CPU: the deployed read-only DB, damaged and newer DBs, the cubin cache directory fallback
// and 16 processes on a cold cubin cache with a counting fake compiler.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/paths.hpp"
#include "db/maintenance.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"
#include "db/tuning_db.hpp"
#include "jit/cubin_cache.hpp"
#include "loader/loader_db.hpp"
#include "as_nobody.hpp"
#include "db_fixture.hpp"
#include "temp_dir_test.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

using test::slurp;

bool has_side_files(const std::string& db) { return fs::exists(db + "-wal") || fs::exists(db + "-shm"); }

/// Collects what spdlog logs while it lives.
class LogCapture {
 public:
  LogCapture() : old_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(old_); }
  std::string text() const { return text_.str(); }

 private:
  std::shared_ptr<spdlog::logger> old_;
  std::ostringstream text_;
};

/// A tuning DB (WAL, as sweeps leave it) with one device and one ok trial.
void make_db(const std::string& path) {
  TuningDb db(path);
  test::add_ok_trial(db, 256);
}

using test::as_nobody;

/// SQLite's own read-only open and first query (what the loader did before): its code.
int plain_read_only_open(const std::string& path) {
  sqlite3* h = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_exec(h, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  sqlite3_close_v2(h);
  return rc;
}

/// Trials the reader (TuningDbReader) sees for the fixture's problem (any device row), or -1.
int read_trials(const std::string& path, sql::ReadAccess* access) {
  TuningDbReader db(path);
  sql::Connection c(path, true);
  *access = c.access();
  DeviceScope s{1, 1, ""};
  return static_cast<int>(db.trials(s, Problem::dense(256, 512, 1024)).size());
}

class DbRobustness : public test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);  // nobody may enter
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir_, ec)) fs::permissions(e.path(), fs::perms::all, ec);
    TempDirTest::TearDown();
  }
};

TEST_F(DbRobustness, WalDbInReadOnlyFolderOpensImmutableAsNonRootAndLeavesNoSideFiles) {
  fs::create_directory(path("ro"));
  const std::string db = path("ro/tuning.db");
  make_db(db);
  ASSERT_FALSE(has_side_files(db)) << "the writer's last close removes them";
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                  fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  // The bug: SQLite's plain read-only open fails there (code 8, SQLITE_READONLY: it cannot create -shm).
  EXPECT_EQ(as_nobody([&] { return plain_read_only_open(db) & 0xff; }), SQLITE_READONLY);
  // The fix: read, as immutable, with one notice.
  EXPECT_EQ(as_nobody([&] {
              LogCapture log;
              sql::ReadAccess access{};
              if (read_trials(db, &access) != 1) return 1;
              if (access != sql::ReadAccess::kImmutable) return 2;
              return log.text().find("opened as immutable") == std::string::npos ? 3 : 0;
            }),
            0);
  EXPECT_FALSE(has_side_files(db));
}

TEST_F(DbRobustness, ReadOnlyOpensLeaveNoSideFilesWhereTheFolderIsWritable) {
  const std::string db = path("tuning.db");
  make_db(db);
  // A file nobody cannot write, in a folder it can: SQLite's read-only open would create -wal/-shm and
  // leave them; this one reads the file as immutable.
  fs::permissions(dir_, fs::perms::all);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_EQ(as_nobody([&] {
              sql::ReadAccess access{};
              return read_trials(db, &access) == 1 && access == sql::ReadAccess::kImmutable ? 0 : 1;
            }),
            0);
  EXPECT_FALSE(has_side_files(db));
  // A writable file: query-only, and SQL cannot write through it.
  fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write);
  {
    sql::ReadAccess access{};
    EXPECT_EQ(read_trials(db, &access), 1);
    EXPECT_EQ(access, sql::ReadAccess::kQueryOnly);
    sql::Connection c(db, true);
    EXPECT_THROW(c.exec("DELETE FROM trial"), Error);
  }
  EXPECT_FALSE(has_side_files(db)) << "the last query-only connection removes them";
}

TEST_F(DbRobustness, ExportFormatDbWritesADeleteJournalCopyThatNonRootReadsFromAReadOnlyFolder) {
  const std::string src = path("tuning.db");
  make_db(src);
  fs::create_directory(path("deploy"));
  const std::string copy = path("deploy/tuned.db");
  dbm::deployable_copy(src, copy);
  const std::string header = slurp(copy).substr(0, 20);
  EXPECT_EQ(header[18], 1) << "journal_mode=DELETE (1), not WAL (2)";
  EXPECT_EQ(header[19], 1);
  EXPECT_THROW(dbm::deployable_copy(src, copy), Error) << "never overwrites";
  fs::permissions(copy, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(path("deploy"),
                  fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read | fs::perms::others_exec);
  EXPECT_EQ(plain_read_only_open(copy), SQLITE_OK) << "SQLite itself reads a DELETE-journal copy there";
  EXPECT_EQ(as_nobody([&] {
              sql::ReadAccess access{};
              return read_trials(copy, &access) == 1 ? 0 : 1;
            }),
            0);
  EXPECT_FALSE(has_side_files(copy));
}

TEST_F(DbRobustness, DamagedDbGivesTheLoaderOneWarningAndDefaultsAndSweepsRefuseWithoutTouchingIt) {
  const std::string db = path("damaged.db");
  std::string bytes = std::string("SQLite format 3") + '\0';
  for (int i = 0; i < 8192; ++i) bytes += static_cast<char>((i * 7919) & 0xff);
  std::ofstream(db, std::ios::binary) << bytes;
  {
    LogCapture log;
    EXPECT_EQ(open_loader_db(db), nullptr);
    const std::string text = log.text();
    EXPECT_NE(text.find(db), std::string::npos) << text;
    EXPECT_NE(text.find("file is not a database"), std::string::npos) << text;
    EXPECT_NE(text.find("using default configs"), std::string::npos) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << "one warning: " << text;
  }
  try {
    TuningDb w(db);  // what `dgtune sweep` opens
    ADD_FAILURE() << "a damaged DB was opened for writing";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kSqlite);  // exit 1
    EXPECT_NE(e.message().find("file is not a database"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("dgtune db check --db " + db), std::string::npos) << e.message();
  }
  EXPECT_EQ(slurp(db), bytes) << "nothing in the file changed";
  EXPECT_FALSE(has_side_files(db));
  EXPECT_FALSE(fs::exists(db + "-journal"));
}

TEST_F(DbRobustness, NewerSchemaIsRefusedForWritingNamingBothVersionsAndTheLoaderUsesDefaults) {
  const std::string db = path("newer.db");
  make_db(db);
  const int newer = schema::latest_version() + 1;
  {
    sql::Connection c(db, false);
    c.exec("UPDATE schema_version SET version = " + std::to_string(newer) + "; PRAGMA wal_checkpoint(TRUNCATE)");
  }
  const std::string before = slurp(db);
  try {
    TuningDb w(db);
    ADD_FAILURE() << "a newer DB was opened for writing";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kSqlite);
    EXPECT_NE(e.message().find("schema version " + std::to_string(newer)), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("version " + std::to_string(schema::latest_version())), std::string::npos);
  }
  LogCapture log;
  EXPECT_EQ(open_loader_db(db), nullptr);
  EXPECT_NE(log.text().find("schema version " + std::to_string(newer)), std::string::npos) << log.text();
  EXPECT_EQ(slurp(db), before) << "the file was not modified";
}

/// Sets or unsets an environment variable for one scope.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~EnvVar() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST_F(DbRobustness, CacheDirFallsBackWithOneNoticeWhenHomeIsUnsetOrTheDirIsUnusable) {
  EnvVar a("DGTUNE_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", nullptr), d("TMPDIR", dir_.c_str());
  const std::string temp = path("dgtune-cache-" + std::to_string(getuid()));
  {
    LogCapture log;
    EXPECT_EQ(usable_cache_dir(""), temp) << "no HOME: the per-user temp directory, silently (it is the default)";
    EXPECT_EQ(log.text(), "");
  }
  std::ofstream(path("file")) << "x";  // a directory below a regular file cannot exist, even for root
  EnvVar e("XDG_CACHE_HOME", path("xdg").c_str());
  LogCapture log;
  EXPECT_EQ(usable_cache_dir(path("file/cache")), path("xdg/dgtune"));
  const std::string text = log.text();
  EXPECT_NE(text.find(path("file/cache")), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_EQ(cache_dir_candidates(path("file/cache")).back(), temp);
}

TEST_F(DbRobustness, RelativeXdgCacheHomeAndHomeAreIgnoredNotCreatedInTheWorkingDirectory) {
  // The XDG base directory rule: a relative value is invalid. dgtune once created ./rel/dgtune.
  EnvVar a("DGTUNE_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", "rel"), c("HOME", "home-rel"), d("TMPDIR", dir_.c_str());
  const auto dirs = cache_dir_candidates("");
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], path("dgtune-cache-" + std::to_string(getuid())));
  EnvVar e("XDG_CACHE_HOME", path("xdg").c_str()), f("HOME", path("home").c_str());
  EXPECT_EQ(cache_dir_candidates(""), (std::vector<std::string>{path("xdg") + "/dgtune", path("home") + "/.cache/dgtune",
                                                                 path("dgtune-cache-" + std::to_string(getuid()))}));
}

TEST_F(DbRobustness, DbPathsAreAbsoluteAndTheLoaderNeverUsesTheWorkingDirectory) {
  EnvVar a("DGTUNE_DB", nullptr);
  const std::string cwd = fs::current_path().string();
  EXPECT_EQ(resolve_db_path(""), cwd + "/results/tuning.db");  // the CLI's default, named absolute
  EXPECT_EQ(resolve_db_path("x.db"), cwd + "/x.db");
  EXPECT_EQ(resolve_db_path("./a/./x.db"), cwd + "/a/x.db");
  EXPECT_EQ(resolve_db_path("/abs/x.db"), "/abs/x.db");
  EXPECT_EQ(loader_db_path(""), "") << "no DB given: untuned, never results/tuning.db below the working directory";
  EXPECT_EQ(loader_db_path("/opt/app/t.db"), "/opt/app/t.db");
  EnvVar b("DGTUNE_DB", "rel.db");
  EXPECT_EQ(loader_db_path(""), cwd + "/rel.db");
  EXPECT_EQ(resolve_db_path(""), cwd + "/rel.db");
  // The loader's one warning names the file and where its path came from.
  LogCapture log;
  EXPECT_EQ(open_loader_db(path("missing.db"), "$DGTUNE_DB"), nullptr);
  EXPECT_NE(log.text().find("no tuning database at " + path("missing.db") + " ($DGTUNE_DB); running untuned"),
            std::string::npos)
      << log.text();
}

/// A compile that counts itself (one line per call in `counter`) and takes a while, so racers overlap.
jit::CompiledKernel fake_compile(const std::string& counter, const std::string& source) {
  const int fd = ::open(counter.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const std::string line = source + "\n";
  EXPECT_EQ(::write(fd, line.data(), line.size()), ssize_t(line.size()));
  ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  jit::CompiledKernel k;
  k.cubin = "cubin of " + source;
  k.lowered_name = "k";
  return k;
}

TEST_F(DbRobustness, SixteenProcessesOnAColdCubinCacheCompileEachKeyOnceAndAllSucceed) {
  const std::string dir = path("cache"), counter = path("compiles");
  constexpr int kProcs = 16, kKeys = 4;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      jit::CubinCache cache(
          dir, [&](const std::string& s, const std::string&, const std::string&) { return fake_compile(counter, s); });
      for (int j = 0; j < kKeys; ++j) {
        const std::string src = "kernel " + std::to_string((i + j) % kKeys);  // different orders per process
        if (cache.get_or_compile(jit::GeneratedKernel{src, "", "p"}).cubin != "cubin of " + src) _exit(1);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::map<std::string, int> per_key;
  std::istringstream in(slurp(counter));
  std::string line;
  while (std::getline(in, line)) ++per_key[line];
  EXPECT_EQ(per_key.size(), size_t(kKeys));
  for (const auto& [key, n] : per_key) EXPECT_EQ(n, 1) << key << " compiled " << n << " times";
  int temps = 0;
  for (const auto& e : fs::directory_iterator(dir)) temps += e.path().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(temps, 0) << "every publish renamed its temp file";
}

TEST_F(DbRobustness, SixteenThreadsOnAColdCubinCacheCompileOnce) {
  std::atomic<int> compiles{0};
  jit::CubinCache cache(path("cache"), [&](const std::string& s, const std::string&, const std::string&) {
    ++compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    jit::CompiledKernel k;
    k.cubin = "cubin of " + s;
    return k;
  });
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      wrong += cache.get_or_compile(jit::GeneratedKernel{"k", "", "p"}).cubin != "cubin of k";
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiles.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace dgt
