// core/escape.hpp and core/input_file.hpp: how user text is quoted and how input files are refused.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dgt
