// core/output_file.hpp: a file a command writes is never one of its inputs or its DB (links resolved: device and
// inode), is checked before anything runs, and is replaced only by a complete file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "as_nobody.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "temp_dir_test.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

using test::slurp;

class OutputFile : public test::TempDirTest {
 protected:
  void put(const std::string& name, const std::string& text) { std::ofstream(path(name), std::ios::binary) << text; }
  /// The message of check_output_path's Error (kUsage), or "ok".
  std::string refusal(const std::string& out, const std::vector<NamedPath>& inputs) {
    try {
      check_output_path(out, "--out", inputs);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.message();
      return e.message();
    }
    return "ok";
  }
  /// Names of the files in the test directory (a left-over temporary file shows up here).
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir_)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
};

// A DB the command will create has no inode yet: its name alone makes an output the same file (gate --markdown new.db
// --history new.db, tune-model --db DIR/MODEL-tpN.shapes.txt ran to the GPU before).
TEST_F(OutputFile, ADbThatDoesNotExistYetIsRefusedByName) {
  const std::vector<NamedPath> inputs{{"--db", path("new.db"), true}};
  for (const std::string& out : {path("new.db"), dir_.string() + "/./new.db"}) {
    const std::string why = refusal(out, inputs);
    EXPECT_NE(why.find("it is the same file as --db '" + path("new.db") + "'"), std::string::npos) << why;
  }
  EXPECT_NE(refusal(path("new.db-wal"), inputs).find("the -wal file of the tuning database"), std::string::npos);
  EXPECT_EQ(refusal(path("other.db"), inputs), "ok");
  EXPECT_FALSE(fs::exists(path("new.db")));
}

TEST_F(OutputFile, TheDbAndEveryInputAreRefusedByPathLinkAndInode) {
  put("t.db", "database bytes");
  put("shapes.txt", "64 64 64\n");
  fs::create_symlink(path("t.db"), path("link.db"));
  fs::create_hard_link(path("t.db"), path("hard.db"));
  const std::vector<NamedPath> inputs{{"--db", path("t.db"), true}, {"--shapes", path("shapes.txt")}};
  for (const std::string& out : {path("t.db"), path("link.db"), path("hard.db"), dir_.string() + "/./t.db"}) {
    const std::string why = refusal(out, inputs);
    EXPECT_NE(why.find("it is the same file as --db '" + path("t.db") + "'"), std::string::npos) << out << ": " << why;
    EXPECT_NE(why.find("writing over it would destroy it"), std::string::npos) << why;
    EXPECT_NE(why.find("nothing was written"), std::string::npos) << why;
  }
  EXPECT_NE(refusal(path("shapes.txt"), inputs).find("the same file as --shapes"), std::string::npos);
  // The DB's side files hold its data too; by name while they are missing (SQLite removes them when the DB closes,
  // and deletes or replays a file found there when it next opens the DB), through any spelling of the DB's path.
  const std::vector<NamedPath> via_link{{"--db", path("link.db"), true}};
  for (const std::string side : {"-wal", "-shm", "-journal"}) {
    const std::string want = "it is the " + side + " file of the tuning database --db";
    for (const std::string& out : {path("t.db") + side, dir_.string() + "/x/../t.db" + side}) {
      EXPECT_NE(refusal(out, inputs).find(want), std::string::npos) << out;
      EXPECT_NE(refusal(out, via_link).find(want), std::string::npos) << out;
    }
    EXPECT_FALSE(fs::exists(path("t.db") + side));
  }
  put("t.db-wal", "");
  EXPECT_NE(refusal(path("t.db-wal"), inputs).find("it is the -wal file of the tuning database --db"),
            std::string::npos);
  // A new file, another existing file, /dev/null: fine.
  EXPECT_EQ(refusal(path("new.csv"), inputs), "ok");
  put("old.csv", "old");
  EXPECT_EQ(refusal(path("old.csv"), inputs), "ok");
  EXPECT_EQ(refusal("/dev/null", inputs), "ok");
  EXPECT_EQ(slurp(path("t.db")), "database bytes");
}

TEST_F(OutputFile, PathsThatCannotTakeAFileAreRefusedNamingWhy) {
  EXPECT_NE(refusal(dir_.string(), {}).find("it is a directory, not a file to write"), std::string::npos);
  EXPECT_NE(refusal(path("missing/x.csv"), {}).find("its directory '" + path("missing") + "' does not exist"),
            std::string::npos);
  EXPECT_NE(refusal("", {}).find("the path is empty"), std::string::npos);
  put("file", "x");
  EXPECT_NE(refusal(path("file/x.csv"), {}).find("Not a directory"), std::string::npos)
      << refusal(path("file/x.csv"), {});
  // A folder the user cannot write: refused before anything runs (as nobody: root writes anywhere).
  fs::create_directory(path("ro"));
  fs::permissions(path("ro"), fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  EXPECT_EQ(test::as_nobody([&] {
              try {
                check_output_path(path("ro/x.csv"), "--out", {});
              } catch (const Error& e) {
                return e.message().find("is not writable") != std::string::npos ? 0 : 1;
              }
              return 2;
            }),
            0);
  // Two outputs naming one file.
  try {
    check_output_paths({{"--junit", path("r.out")}, {"--markdown", path("r.out")}}, {});
    ADD_FAILURE() << "two outputs on one file were accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("--markdown '" + path("r.out") + "': --junit names the same file"), std::string::npos)
        << e.message();
  }
}

TEST_F(OutputFile, WritesReplaceTheFileWholeKeepItsModeAndFollowLinks) {
  put("out.csv", "old text");
  ::chmod(path("out.csv").c_str(), 0640);
  write_output_file(path("out.csv"), "new text\n");
  EXPECT_EQ(slurp(path("out.csv")), "new text\n");
  struct stat st {};
  ASSERT_EQ(::stat(path("out.csv").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  // A symbolic link stays a link: the file it names is replaced.
  fs::create_symlink(path("out.csv"), path("link.csv"));
  write_output_file(path("link.csv"), "through the link");
  EXPECT_TRUE(fs::is_symlink(path("link.csv")));
  EXPECT_EQ(slurp(path("out.csv")), "through the link");
  // A new file gets 0666 minus the umask, like any new file.
  const mode_t mask = ::umask(022);
  write_output_file(path("new.md"), "# x\n");
  ::umask(mask);
  ASSERT_EQ(::stat(path("new.md").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  // No temporary file is left behind.
  EXPECT_EQ(names(), (std::vector<std::string>{"link.csv", "new.md", "out.csv"}));
  EXPECT_NO_THROW(write_output_file("/dev/null", "into a device, in place"));
}

TEST_F(OutputFile, PendingFileIsRemovedUnlessCommittedAndNeverReplacesAFileThatAppeared) {
  {
    PendingFile p(path("merged.db"));
    EXPECT_TRUE(fs::exists(p.temp_path()));
    EXPECT_EQ(fs::path(p.temp_path()).parent_path(), dir_);
    EXPECT_EQ(fs::path(p.temp_path()).filename().string().rfind(".merged.db.", 0), 0u) << p.temp_path();
  }
  EXPECT_TRUE(names().empty());
  PendingFile p(path("merged.db"));
  std::ofstream(p.temp_path()) << "complete";
  put("merged.db", "another process's file");
  try {
    p.commit(/*replace=*/false);
    ADD_FAILURE() << "an existing file was replaced";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(e.message().find("appeared while it was being written"), std::string::npos);
  }
  EXPECT_EQ(slurp(path("merged.db")), "another process's file");
  fs::remove(path("merged.db"));
  PendingFile q(path("merged.db"));
  std::ofstream(q.temp_path()) << "complete";
  q.commit(false);
  EXPECT_EQ(slurp(path("merged.db")), "complete");
  // p's temporary file goes with p: only the committed output stays.
}

}  // namespace
}  // namespace dgt
