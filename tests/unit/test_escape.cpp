// core/escape.hpp and core/input_file.hpp: how user text is quoted and how input files are refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/input_file.hpp"
#include "temp_dir_test.hpp"

namespace dgt {
namespace {

TEST(Escape, ControlBytesBecomeVisible) {
  EXPECT_EQ(escaped(std::string("a\0b", 3)), "a\\x00b");  // a NUL does not cut the text
  EXPECT_EQ(escaped("a\tb\nc\rd"), "a\\tb\\nc\\rd");
  EXPECT_EQ(escaped("\x1b[31mred"), "\\x1B[31mred");
  EXPECT_EQ(escaped("\x7f\x01\x1f"), "\\x7F\\x01\\x1F");
  EXPECT_EQ(escaped_keep_lines("line 1\n  line\t2"), "line 1\n  line\\t2");
  EXPECT_EQ(escaped_keep_lines(std::string("a\n\0", 3)), "a\n\\x00");
}

TEST(Escape, PrintableTextAndValidUtf8AreKept) {
  EXPECT_EQ(escaped("plain text, with 'quotes' and \\ backslash ~"), "plain text, with 'quotes' and \\ backslash ~");
  EXPECT_EQ(escaped("d\xc3\xa9"
                    "code \xe2\x82\xac \xf0\x9f\x99\x82"),
            "d\xc3\xa9"
            "code \xe2\x82\xac \xf0\x9f\x99\x82");
  EXPECT_FALSE(has_unprintable("d\xc3\xa9\tx"));  // a tab is a field separator, not binary
}

TEST(Escape, InvalidUtf8BytesAreEscapedOneByOne) {
  EXPECT_EQ(escaped("caf\xe9"), "caf\\xE9");                       // Latin-1
  EXPECT_EQ(escaped("\xc3"), "\\xC3");                             // truncated sequence
  EXPECT_EQ(escaped("\xc0\xaf"), "\\xC0\\xAF");                    // overlong '/'
  EXPECT_EQ(escaped("\xed\xa0\x80"), "\\xED\\xA0\\x80");           // UTF-16 surrogate
  EXPECT_EQ(escaped("\xf4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escaped("\xff\xfe"), "\\xFF\\xFE");
  size_t at = 99;
  EXPECT_TRUE(has_unprintable("ok\xe9", &at));
  EXPECT_EQ(at, 2u);
  EXPECT_TRUE(has_unprintable(std::string("ab\0", 3), &at));
  EXPECT_EQ(at, 2u);
}

TEST(Escape, LongValuesAreCutWithTheirLength) {
  // A 1 MB number in a shapes file once became a 1 MB error line.
  const std::string big(1 << 20, '7');
  EXPECT_EQ(escaped(big), std::string(kQuoteKeep, '7') + "... (1048576 bytes)");
  EXPECT_EQ(escaped(std::string(kQuoteLimit, 'x')), std::string(kQuoteLimit, 'x'));  // at the limit: whole
  // A long but real path (a CI workspace, 300 bytes) is still named whole: only values past any sane path are cut.
  std::string long_path;
  while (long_path.size() < 300) long_path += "/runner-workspace-dir";
  EXPECT_EQ(escaped(long_path), long_path);
  // The cut never splits an escape or a UTF-8 character.
  std::string ctl(kQuoteKeep - 2, 'a');
  ctl += std::string(100, '\x01');
  const std::string e = escaped(ctl);
  EXPECT_EQ(e, std::string(kQuoteKeep - 2, 'a') + "... (" + std::to_string(ctl.size()) + " bytes)");
  std::string utf(kQuoteKeep - 1, 'a');
  for (size_t i = 0; i < kQuoteLimit; ++i) utf += "\xc3\xa9";  // past the limit whatever it is
  const std::string u = escaped(utf);  // the first 'é' would straddle the cut: it goes whole
  EXPECT_EQ(u, std::string(kQuoteKeep - 1, 'a') + "... (" + std::to_string(utf.size()) + " bytes)");
  EXPECT_FALSE(has_unprintable(u));
  // A whole message keeps its lines; only a line over kMessageLineLimit is cut.
  const std::string msg = "first line\n" + std::string(kMessageLineLimit + 1, 'z') + "\nlast line";
  const std::string m = escaped_keep_lines(msg);
  EXPECT_EQ(m.rfind("first line\nzzz", 0), 0u);
  EXPECT_NE(m.find("... (" + std::to_string(kMessageLineLimit + 1) + " bytes)\nlast line"), std::string::npos);
  EXPECT_LT(m.size(), kMessageLineLimit + 100);
  EXPECT_EQ(escaped_keep_lines("a\n" + std::string(300, 'b')), "a\n" + std::string(300, 'b'));
}

class InputFile : public test::TempDirTest {};

TEST_F(InputFile, EveryUnreadableKindIsUsageNamingWhatAndPath) {
  auto message = [](const std::string& path) {
    try {
      read_input_file(path, "shapes file");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.message();
      return e.message();
    }
    return std::string("no error");
  };
  const std::string missing = path("missing.txt");
  EXPECT_EQ(message(missing), "cannot read shapes file '" + missing + "': no such file");
  EXPECT_EQ(message(dir_.string()), "cannot read shapes file '" + dir_.string() + "': it is a directory");
  EXPECT_NE(message("/dev/null").find("not a regular file"), std::string::npos);
  EXPECT_EQ(message(""), "cannot read shapes file '': the path is empty");
  EXPECT_EQ(message(std::string("a\x01") + "b"), "cannot read shapes file 'a\\x01b': no such file");
  const std::string ok = path("ok.txt");
  std::ofstream(ok, std::ios::binary) << std::string("1 2 3\n\0", 7);
  EXPECT_EQ(read_input_file(ok, "shapes file"), std::string("1 2 3\n\0", 7));
  EXPECT_NO_THROW(require_input_file(ok, "--db"));
}

TEST_F(InputFile, ARegularFileIsRequiredForADbAndAFifoIsNeverOpened) {
  const std::string fifo = path("ff");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A pipe is a fine shapes file (`--shapes <(...)`) but never a DB: SQLite would wait on it forever. Refused by
  // type, without opening it (opening a FIFO for reading blocks until a writer comes).
  try {
    require_regular_input_file(fifo, "tuning database (--db)");
    ADD_FAILURE() << "a FIFO was accepted as a DB";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(e.message(), "cannot read tuning database (--db) '" + fifo + "': it is a FIFO (named pipe), not a "
                           "regular file");
  }
  EXPECT_THROW(require_regular_input_file("/dev/null", "--db"), Error);
  EXPECT_THROW(require_regular_input_file(dir_.string(), "--db"), Error);
  std::ofstream(path("t.db")) << "x";
  EXPECT_NO_THROW(require_regular_input_file(path("t.db"), "--db"));
}

}  // namespace
}  // namespace dgt
