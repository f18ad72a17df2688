#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "problem/problem.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {
namespace {

/// Parses `text` as "s.txt" and returns the Error's message, failing the test if nothing throws.
std::string parse_error(const std::string& text) {
  try {
    parse_shapes(text, "s.txt");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "expected a parse error for: " << text;
  return "";
}

// ---- good input ---------------------------------------------------------------------------------

TEST(ShapesFile, PlainLineGetsTightLeadingDimsAndDefaults) {
  auto v = parse_shapes("4096 2112 7168\n", "s.txt");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].problem, Problem::dense(4096, 2112, 7168));
  EXPECT_EQ(v[0].problem.lda, 7168);
  EXPECT_EQ(v[0].problem.ldb, 7168);
  EXPECT_EQ(v[0].problem.ldd, 2112);
  EXPECT_EQ(v[0].problem.a, DType::kE4M3);
  EXPECT_EQ(v[0].problem.accum, Accum::kPromote);
  EXPECT_EQ(v[0].name, "");
  EXPECT_EQ(v[0].file, "s.txt");
  EXPECT_EQ(v[0].line, 1);
  EXPECT_EQ(v[0].where(), "s.txt:1");
}

TEST(ShapesFile, AllFields) {
  auto v = parse_shapes("7 1023 80 lda=96 ldb=112 ldd=1024 a=e5m2 b=e4m3 d=bf16 accum=fast name=odd-one\n", "s.txt");
  ASSERT_EQ(v.size(), 1u);
  const Problem& p = v[0].problem;
  EXPECT_EQ(p.m, 7);
  EXPECT_EQ(p.n, 1023);
  EXPECT_EQ(p.k, 80);
  EXPECT_EQ(p.lda, 96);
  EXPECT_EQ(p.ldb, 112);
  EXPECT_EQ(p.ldd, 1024);
  EXPECT_EQ(p.a, DType::kE5M2);
  EXPECT_EQ(p.b, DType::kE4M3);
  EXPECT_EQ(p.d, DType::kBF16);
  EXPECT_EQ(p.accum, Accum::kFast);
  EXPECT_EQ(v[0].name, "odd-one");
}

// shape_line (what a Gemm's record of untuned problems writes) names only the non-default fields and parses back.
TEST(ShapesFile, ShapeLineRoundTrips) {
  EXPECT_EQ(shape_line(Problem::dense(200, 2048, 1024)), "200 2048 1024");
  Problem p = Problem::dense(7, 1023, 80);
  p.lda = 96;
  p.ldb = 112;
  p.ldd = 1024;
  p.a = DType::kE5M2;
  p.d = DType::kF32;
  p.scale = ScaleMode::kChannel;
  p.accum = Accum::kFast;
  p.bias = Bias::kBF16;
  p.act = Act::kGeluTanh;
  const std::string line = shape_line(p, "q.tp8");
  EXPECT_EQ(line, "7 1023 80 lda=96 ldb=112 ldd=1024 a=e5m2 d=f32 scale=channel accum=fast bias=bf16 act=gelu_tanh name=q.tp8");
  const auto v = parse_shapes(line + "\n", "u.txt");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].problem, p);
  EXPECT_EQ(v[0].name, "q.tp8");
  for (ScaleMode s : {ScaleMode::kPerTensor, ScaleMode::kBlock, ScaleMode::kBlock1d1d}) {
    Problem q = Problem::dense(3, 7168, 2048);
    q.scale = s;
    EXPECT_EQ(parse_shapes(shape_line(q) + "\n", "u.txt")[0].problem, q) << shape_line(q);
  }
}

TEST(ShapesFile, ExplicitLeadingDimKeepsDefaultsForTheOthers) {
  auto v = parse_shapes("64 256 63 lda=64\n64 256 100 ldb=112\n64 256 96 ldd=300\n", "s.txt");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].problem.lda, 64);
  EXPECT_EQ(v[0].problem.ldb, 63);   // K
  EXPECT_EQ(v[0].problem.ldd, 256);  // N
  EXPECT_EQ(v[1].problem.lda, 100);
  EXPECT_EQ(v[1].problem.ldb, 112);
  EXPECT_EQ(v[1].problem.ldd, 256);
  EXPECT_EQ(v[2].problem.lda, 96);
  EXPECT_EQ(v[2].problem.ldb, 96);
  EXPECT_EQ(v[2].problem.ldd, 300);
  // Field order does not matter.
  auto w = parse_shapes("64 256 63 accum=fast ldb=64 lda=80\n", "s.txt");
  EXPECT_EQ(w[0].problem.lda, 80);
  EXPECT_EQ(w[0].problem.ldb, 64);
  EXPECT_EQ(w[0].problem.accum, Accum::kFast);
}

TEST(ShapesFile, CommentsBlankLinesAndLineNumbers) {
  const std::string text =
      "# header comment\n"
      "\n"
      "   \t  \n"
      "1 16 32   # trailing comment\n"
      "    # indented comment\n"
      "2 32 64 name=x#comment right after a value\n"
      "3 48 96";  // no final newline
  auto v = parse_shapes(text, "s.txt");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].problem, Problem::dense(1, 16, 32));
  EXPECT_EQ(v[0].line, 4);
  EXPECT_EQ(v[1].problem, Problem::dense(2, 32, 64));
  EXPECT_EQ(v[1].name, "x");
  EXPECT_EQ(v[1].line, 6);
  EXPECT_EQ(v[2].problem, Problem::dense(3, 48, 96));
  EXPECT_EQ(v[2].line, 7);
}

TEST(ShapesFile, EmptyInputGivesNoEntries) {
  EXPECT_TRUE(parse_shapes("", "s.txt").empty());
  EXPECT_TRUE(parse_shapes("# only a comment\n\n", "s.txt").empty());
}

TEST(ShapesFile, CrlfTabsAndByteOrderMark) {
  auto v = parse_shapes("\xEF\xBB\xBF# saved on Windows\r\n128\t2112\t7168\tname=decode\r\n\r\n1 16 32 accum=fast\r\n",
                        "s.txt");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].problem, Problem::dense(128, 2112, 7168));
  EXPECT_EQ(v[0].name, "decode");  // no '\r' left on the last field
  EXPECT_EQ(v[0].line, 2);
  EXPECT_EQ(v[1].problem.accum, Accum::kFast);
  EXPECT_EQ(v[1].line, 4);
}

// ---- errors -------------------------------------------------------------------------------------

TEST(ShapesFile, ErrorExampleFromTheHeader) {
  EXPECT_EQ(parse_error("1 2 3\n\n\n\n\n\n4096 4096 4096 lda=x12\n"),
            "s.txt:7: field 'lda': 'x12' is not a positive integer");
}

TEST(ShapesFile, FewerThanThreeNumbers) {
  EXPECT_EQ(parse_error("4096 4096\n"),
            "s.txt:1: field 'K': missing in '4096 4096' (expected 3 positive integers M N K, found 2)");
  // A field where K belongs is reported as a missing K, not as a bad number.
  EXPECT_EQ(parse_error("# c\n16 32 lda=16\n"),
            "s.txt:2: field 'K': missing in '16 32 lda=16' (expected 3 positive integers M N K, found 2)");
  EXPECT_EQ(parse_error("64 # N and K forgotten\n"),
            "s.txt:1: field 'N': missing in '64' (expected 3 positive integers M N K, found 1)");
}

TEST(ShapesFile, BadDimensionsNameTheField) {
  EXPECT_EQ(parse_error("0 16 16\n"), "s.txt:1: field 'M': '0' is not a positive integer");
  EXPECT_EQ(parse_error("16 -5 16\n"), "s.txt:1: field 'N': '-5' is not a positive integer");
  EXPECT_EQ(parse_error("16 16 1.5\n"), "s.txt:1: field 'K': '1.5' is not a positive integer");
  EXPECT_EQ(parse_error("16 16 12abc\n"), "s.txt:1: field 'K': '12abc' is not a positive integer");
  EXPECT_EQ(parse_error("16 16 +16\n"), "s.txt:1: field 'K': '+16' is not a positive integer");
  EXPECT_EQ(parse_error("x 16 16\n"), "s.txt:1: field 'M': 'x' is not a positive integer");
}

TEST(ShapesFile, IntegerOverflow) {
  EXPECT_EQ(parse_error("99999999999999999999 16 16\n"),
            "s.txt:1: field 'M': '99999999999999999999' is too large (expected a positive integer below 2^63)");
  EXPECT_EQ(parse_error("16 16 16 ldd=9223372036854775808\n"),
            "s.txt:1: field 'ldd': '9223372036854775808' is too large (expected a positive integer below 2^63)");
  // INT64_MAX itself parses; validate_problem is what rejects it later.
  auto v = parse_shapes("16 16 16 ldd=9223372036854775807\n", "s.txt");
  EXPECT_EQ(v[0].problem.ldd, INT64_MAX);
}

TEST(ShapesFile, UnknownKeyListsAcceptedKeys) {
  EXPECT_EQ(parse_error("16 16 16 ldc=16\n"),
            "s.txt:1: unknown field 'ldc' in 'ldc=16' (accepted keys: lda, ldb, ldd, a, b, d, scale, accum, bias, act, name)");
  EXPECT_EQ(parse_error("16 16 16 LDA=16\n"),  // keys are case-sensitive
            "s.txt:1: unknown field 'LDA' in 'LDA=16' (accepted keys: lda, ldb, ldd, a, b, d, scale, accum, bias, act, name)");
  EXPECT_EQ(parse_error("16 16 16 =16\n"),
            "s.txt:1: unknown field '' in '=16' (accepted keys: lda, ldb, ldd, a, b, d, scale, accum, bias, act, name)");
}

TEST(ShapesFile, DuplicateKey) {
  EXPECT_EQ(parse_error("16 16 16 lda=16 accum=fast lda=32\n"),
            "s.txt:1: field 'lda': given twice ('lda=32'; each key at most once per line)");
}

TEST(ShapesFile, KeyWithoutValue) {
  EXPECT_EQ(parse_error("16 16 16 lda\n"), "s.txt:1: field 'lda': 'lda' has no value (expected lda=VALUE)");
  EXPECT_EQ(parse_error("16 16 16 accum=\n"), "s.txt:1: field 'accum': empty value in 'accum=' (expected accum=VALUE)");
  EXPECT_EQ(parse_error("16 16 16 fast\n"),
            "s.txt:1: 'fast' is not a key=value field (accepted keys: lda, ldb, ldd, a, b, d, scale, accum, bias, act, name)");
  // "lda = 16" with spaces splits into three words; the first is reported.
  EXPECT_EQ(parse_error("16 16 16 lda = 16\n"), "s.txt:1: field 'lda': 'lda' has no value (expected lda=VALUE)");
}

TEST(ShapesFile, BadEnumValues) {
  EXPECT_EQ(parse_error("16 16 16 a=bf16\n"),
            "s.txt:1: field 'a': 'bf16' is not a valid value (expected e4m3 or e5m2)");
  EXPECT_EQ(parse_error("16 16 16 b=E4M3\n"),
            "s.txt:1: field 'b': 'E4M3' is not a valid value (expected e4m3 or e5m2)");
  EXPECT_EQ(parse_error("16 16 16 d=e5m2\n"),
            "s.txt:1: field 'd': 'e5m2' is not a valid value (expected bf16, f32 or e4m3)");
  EXPECT_EQ(parse_error("16 16 16 bias=f32\n"), "s.txt:1: field 'bias': 'f32' is not a valid value (expected none or bf16)");
  EXPECT_EQ(parse_error("16 16 16 act=silu\n"),
            "s.txt:1: field 'act': 'silu' is not a valid value (expected none, relu or gelu_tanh)");
  EXPECT_EQ(parse_error("16 16 16 accum=slow\n"),
            "s.txt:1: field 'accum': 'slow' is not a valid value (expected promote or fast)");
}

TEST(ShapesFile, ScaleModes) {
  auto v = parse_shapes(
      "128 7168 2048 scale=block\n128 7168 2048 scale=block1d1d\n128 7168 2048 scale=channel accum=fast\n"
      "128 7168 2048 scale=tensor\n128 7168 2048 scale=per-tensor\n128 7168 2048\n",
      "s.txt");
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0].problem.scale, ScaleMode::kBlock);
  EXPECT_EQ(v[1].problem.scale, ScaleMode::kBlock1d1d);
  EXPECT_EQ(v[2].problem.scale, ScaleMode::kChannel);
  EXPECT_EQ(v[2].problem.accum, Accum::kFast);
  EXPECT_EQ(v[3].problem.scale, ScaleMode::kPerTensor);
  EXPECT_EQ(v[4].problem.scale, ScaleMode::kPerTensor);
  EXPECT_EQ(v[5].problem.scale, ScaleMode::kPerTensor);  // the default
  EXPECT_EQ(v[3].problem, v[5].problem);
  // The mode is part of the problem: the same dimensions under each mode are four problems.
  EXPECT_NE(v[0].problem.key(), v[1].problem.key());
  EXPECT_NE(v[0].problem.key(), v[3].problem.key());
  EXPECT_NE(v[1].problem.key(), v[2].problem.key());
  EXPECT_NE(v[2].problem.key(), v[3].problem.key());
}

TEST(ShapesFile, BadScaleModes) {
  EXPECT_EQ(parse_error("16 16 16 scale=blocks\n"),
            "s.txt:1: field 'scale': 'blocks' is not a valid value (expected tensor, channel, block or block1d1d)");
  EXPECT_EQ(parse_error("16 16 16\n16 16 16 scale=Block\n"),  // values are case-sensitive
            "s.txt:2: field 'scale': 'Block' is not a valid value (expected tensor, channel, block or block1d1d)");
  EXPECT_EQ(parse_error("16 16 16 scale=\n"), "s.txt:1: field 'scale': empty value in 'scale=' (expected scale=VALUE)");
  EXPECT_EQ(parse_error("16 16 16 scale=block scale=channel\n"),
            "s.txt:1: field 'scale': given twice ('scale=channel'; each key at most once per line)");
  EXPECT_EQ(parse_error("16 16 16 scale\n"), "s.txt:1: field 'scale': 'scale' has no value (expected scale=VALUE)");
}

TEST(ShapesFile, BlockScaleWithFastAccumBreaksTheRule) {
  // The parser reads the line; the rule is validate_problem's (ShapesOption::load reports it with file:line).
  auto v = parse_shapes(
      "128 7168 2048 scale=block accum=fast\n128 7168 2048 scale=block1d1d accum=fast\n"
      "128 7168 2048 scale=channel accum=fast\n",
      "s.txt");
  ASSERT_EQ(v.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    try {
      validate_problem(v[i].problem);
      ADD_FAILURE() << "accepted " << v[i].problem.key();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
      EXPECT_NE(
          e.message().find(i == 0 ? "scale mode block needs accum = promote" : "scale mode block1d1d needs accum"),
          std::string::npos)
          << e.message();
    }
  }
  EXPECT_NO_THROW(validate_problem(v[2].problem));  // channel scales are applied in the epilogue
}

TEST(ShapesFile, FourthBareNumber) {
  EXPECT_EQ(parse_error("16 16 16 16\n"),
            "s.txt:1: unexpected 4th number '16' (expected only M N K, then key=value fields: lda, ldb, ldd, a, b, d, "
            "scale, accum, bias, act, name)");
}

TEST(ShapesFile, StopsAtFirstErrorWithItsLine) {
  // Line 2 is bad, line 3 too: only line 2 is reported.
  EXPECT_EQ(parse_error("16 16 16\n16 0 16\n16 16 16 zz=1\n"), "s.txt:2: field 'N': '0' is not a positive integer");
}

TEST(ShapesFile, ErrorMessageKeepsDgtuneLocationOutOfMessage) {
  try {
    parse_shapes("1 2\n", "dir/x.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message().rfind("dir/x.txt:1: ", 0), 0u) << e.message();
    EXPECT_NE(std::string(e.what()).find("[usage at "), std::string::npos) << e.what();
  }
}

// ---- files --------------------------------------------------------------------------------------

// An unreadable input file is bad input (exit 2), like a malformed one.
TEST(ShapesFile, LoadMissingFileIsUsageErrorNamingThePath) {
  const std::string path = "/nonexistent-dgtune-dir/shapes.txt";
  try {
    load_shapes_file(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(e.message(), "cannot read shapes file '" + path + "': no such file");
  }
  try {
    load_shapes_file(DGT_SOURCE_DIR "/configs");
    FAIL() << "expected an error for a directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(e.message().find("is a directory"), std::string::npos) << e.message();
  }
  try {
    load_shapes_file("/dev/zero");  // read forever if it were read
    FAIL() << "expected an error for a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(e.message().find("not a regular file"), std::string::npos) << e.message();
  }
}

// Control bytes and binary are refused naming line, column and the byte, escaped.
TEST(ShapesFile, ControlBytesAndBinaryAreRefusedEscaped) {
  EXPECT_EQ(parse_error(std::string("64 64 64\n64 64 6\0"
                                    "4\n",
                                    19)),
            "s.txt:2: column 8: byte \\x00 is not text (a control character or not UTF-8); a shapes file is UTF-8 "
            "text with fields separated by spaces or tabs");
  EXPECT_NE(parse_error("64 64 64 name=a\x1b[31m\n").find("column 16: byte \\x1B"), std::string::npos);
  EXPECT_NE(parse_error("64 64 64 name=a\rb\n").find("column 16: byte \\r"), std::string::npos);
  EXPECT_NE(parse_error("# caf\xe9\n").find("s.txt:1: column 6: byte \\xE9"), std::string::npos);
  EXPECT_NE(parse_error("\x7f").find("byte \\x7F"), std::string::npos);
  // Valid UTF-8 in a name or a comment, tabs and CRLF are text.
  auto v = parse_shapes("# µ-batch\r\n64\t64 64 name=décode\r\n", "s.txt");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].name, "décode");
  // A quoted value is escaped even where the byte is allowed through (a tab inside a key=value is a field break).
  EXPECT_EQ(parse_error("64 64 64 lda=\xc3\xa9\n"), "s.txt:1: field 'lda': 'é' is not a positive integer");
}

TEST(ShapesFile, PathIsEscapedInMessages) {
  try {
    parse_shapes("1 2 x\n", std::string("a\nb.txt"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "a\\nb.txt:1: field 'K': 'x' is not a positive integer");
  }
}

TEST(ShapesFile, LoadUsesThePathInMessages) {
  auto path = std::filesystem::temp_directory_path() / "dgtune_test_shapes_bad.txt";
  {
    std::ofstream f(path, std::ios::binary);
    f << "16 16 16\r\n16 16 16 accum=quick\r\n";
  }
  try {
    load_shapes_file(path.string());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(e.message(),
              path.string() + ":2: field 'accum': 'quick' is not a valid value (expected promote or fast)");
  }
  std::filesystem::remove(path);
}

// ---- the shipped shape sets ---------------------------------------------------------------------

std::vector<ShapeEntry> load_shipped(const std::string& name) {
  return load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/" + name);
}

/// Every entry passes validate_problem, and no problem appears twice in one file.
void expect_all_valid_and_unique(const std::vector<ShapeEntry>& entries) {
  std::vector<std::string> keys;
  for (const ShapeEntry& e : entries) {
    EXPECT_NO_THROW(validate_problem(e.problem)) << e.where() << " " << e.problem.key();
    std::string key = e.problem.key();
    EXPECT_EQ(std::count(keys.begin(), keys.end(), key), 0) << e.where() << " repeats " << key;
    keys.push_back(key);
  }
}

const ShapeEntry* find(const std::vector<ShapeEntry>& v, const Problem& p) {
  for (const ShapeEntry& e : v)
    if (e.problem == p) return &e;
  return nullptr;
}

TEST(ShippedShapes, Smoke) {
  auto v = load_shipped("smoke.txt");
  ASSERT_EQ(v.size(), 6u);
  expect_all_valid_and_unique(v);
  ASSERT_NE(find(v, Problem::dense(1021, 1023, 1024)), nullptr);
  ASSERT_NE(find(v, Problem::dense(128, 2112, 7168)), nullptr);
  ASSERT_NE(find(v, Problem::dense(4096, 4096, 4096)), nullptr);
  Problem fast = Problem::dense(4096, 4096, 4096);
  fast.accum = Accum::kFast;
  ASSERT_NE(find(v, fast), nullptr);
  EXPECT_EQ(find(v, fast)->name, "square-4k-fast");
  // The required special cases are all present.
  int k_not_128 = 0, tiny = 0;
  double total_flops = 0;
  for (const ShapeEntry& e : v) {
    if (e.problem.k % 128 != 0) ++k_not_128;
    if (e.problem.m < 64 && e.problem.n < 64) ++tiny;
    total_flops += e.problem.flops();
  }
  EXPECT_GE(k_not_128, 1);
  EXPECT_GE(tiny, 1);
  EXPECT_LT(total_flops, 0.5e12) << "the smoke set must stay quick";
}

TEST(ShippedShapes, DeepSeekV3) {
  auto v = load_shipped("deepseek-v3.txt");
  ASSERT_EQ(v.size(), 35u);
  expect_all_valid_and_unique(v);
  const int64_t ms[] = {1, 64, 128, 4096, 8192};
  const int64_t nks[][2] = {{2112, 7168},  {576, 7168},  {24576, 1536}, {32768, 512},
                            {7168, 16384}, {4096, 7168}, {7168, 2048}};
  for (int64_t m : ms)
    for (const auto& nk : nks)
      EXPECT_NE(find(v, Problem::dense(m, nk[0], nk[1])), nullptr) << m << "x" << nk[0] << "x" << nk[1];
  // Spot checks on order and line numbers: the first problem and the last line.
  EXPECT_EQ(v.front().problem, Problem::dense(1, 2112, 7168));
  EXPECT_EQ(v.back().problem, Problem::dense(8192, 7168, 2048));
  EXPECT_EQ(v.back().line, 52);  // 7 header lines, then 5 groups of blank + comment + 7 problems
}

/// deepseek-v3-block.txt and deepseek-v3-channel.txt: deepseek-v3.txt's 35 problems in its order, each with `mode`.
void expect_deepseek_v3_with(const std::string& file, ScaleMode mode) {
  const auto plain = load_shipped("deepseek-v3.txt");
  const auto v = load_shipped(file);
  ASSERT_EQ(v.size(), 35u) << file;
  expect_all_valid_and_unique(v);
  for (size_t i = 0; i < v.size(); ++i) {
    Problem want = plain[i].problem;
    EXPECT_EQ(want.scale, ScaleMode::kPerTensor);
    want.scale = mode;
    EXPECT_EQ(v[i].problem, want) << v[i].where();
    EXPECT_NE(v[i].problem.key(), plain[i].problem.key()) << v[i].where();
    EXPECT_EQ(v[i].problem.accum, Accum::kPromote) << v[i].where();
  }
}

TEST(ShippedShapes, DeepSeekV3Block) { expect_deepseek_v3_with("deepseek-v3-block.txt", ScaleMode::kBlock); }

TEST(ShippedShapes, DeepSeekV3Channel) { expect_deepseek_v3_with("deepseek-v3-channel.txt", ScaleMode::kChannel); }

TEST(ShippedShapes, Square) {
  auto v = load_shipped("square.txt");
  ASSERT_EQ(v.size(), 5u);
  expect_all_valid_and_unique(v);
  EXPECT_EQ(v[0].problem, Problem::dense(2048, 2048, 2048));
  EXPECT_EQ(v[3].problem, Problem::dense(8192, 8192, 4096));
  EXPECT_EQ(v[4].problem, Problem::dense(16384, 8192, 8192));
}

TEST(ShippedShapes, Edge) {
  auto v = load_shipped("edge.txt");
  ASSERT_EQ(v.size(), 33u);
  expect_all_valid_and_unique(v);
  for (int64_t m : {1, 2, 7, 63, 65, 127, 129, 255, 257})
    EXPECT_NE(find(v, Problem::dense(m, 4096, 4096)), nullptr) << m;
  for (int64_t odd : {1021, 1023, 4093}) {
    EXPECT_NE(find(v, Problem::dense(odd, 4096, 1024)), nullptr) << odd;
    EXPECT_NE(find(v, Problem::dense(4096, odd, 1024)), nullptr) << odd;
  }
  // K not a multiple of 16 only with padded leading dimensions.
  Problem k7 = Problem::dense(128, 256, 7);
  k7.lda = k7.ldb = 16;
  EXPECT_NE(find(v, k7), nullptr);
  Problem k63 = Problem::dense(4096, 4096, 63);
  k63.lda = k63.ldb = 64;
  EXPECT_NE(find(v, k63), nullptr);
  EXPECT_NE(find(v, Problem::dense(64, 256, 65536)), nullptr);
  // One wave + one tile of 128 x 128 tiles on 132 SMs.
  EXPECT_NE(find(v, Problem::dense(896, 2432, 4096)), nullptr);
  EXPECT_EQ((896 / 128) * (2432 / 128), 133);
  for (int64_t k : {1040, 576, 80}) {
    EXPECT_NE(k % 128, 0);
    EXPECT_NE(find(v, Problem::dense(4096, 4096, k)), nullptr) << k;
  }
  for (int64_t small : {16, 32}) {
    EXPECT_NE(find(v, Problem::dense(4096, small, 4096)), nullptr) << small;
    EXPECT_NE(find(v, Problem::dense(4096, 4096, small)), nullptr) << small;
  }
}

}  // namespace
}  // namespace dgt

namespace dgt {
namespace {

// Grouped (MoE) lines: parse_grouped_problem's text form plus name=, read only by parse_shapes_with_grouped.
TEST(ShapesFileGrouped, GroupedLinesBesideDenseOnes) {
  const auto v = parse_shapes_with_grouped(
      "64 4096 7168 name=dense\n"
      "kind=contiguous groups=4 m_per_group=200,0,128,1 4096 7168 scale=block name=gate_up  # prefill\n"
      "\tkind=masked groups=2 masked_m=5,9 m_max=256 expected_m=8 7168 2048\n",
      "s.txt");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_FALSE(v[0].grouped);
  EXPECT_EQ(v[0].problem, Problem::dense(64, 4096, 7168));
  ASSERT_TRUE(v[1].grouped);
  EXPECT_EQ(v[1].name, "gate_up");
  EXPECT_EQ(v[1].line, 2);
  EXPECT_EQ(v[1].grouped->rows, (std::vector<int64_t>{200, 0, 128, 1}));
  EXPECT_EQ(v[1].problem.key(),
            "grouped-contiguous_G4_512x4096x7168_lda7168_ldb7168_ldd4096_e4m3.e4m3.bf16_blk_promote");
  ASSERT_TRUE(v[2].grouped);
  EXPECT_EQ(v[2].name, "");
  EXPECT_EQ(v[2].problem.key(),
            "grouped-masked_G2_mmax256_em8_512x7168x2048_lda2048_ldb2048_ldd7168_e4m3.e4m3.bf16_pt_promote");
  // The line written back reads back to the same problem and name.
  const std::string line = grouped_shape_line(*v[1].grouped, v[1].name);
  const auto back = parse_shapes_with_grouped(line + "\n", "u.txt");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].problem, v[1].problem);
  EXPECT_EQ(back[0].grouped->rows, v[1].grouped->rows);
  EXPECT_EQ(back[0].name, "gate_up");
}

TEST(ShapesFileGrouped, DenseCallersRefuseAGroupedLineNamingFileAndLine) {
  try {
    parse_shapes("64 64 64\n\nkind=masked groups=2 masked_m=5 64 64\n", "dense.txt");
    ADD_FAILURE() << "a grouped line was accepted by the dense parser";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    const std::string m = e.what();
    EXPECT_NE(m.find("dense.txt:3: a grouped (MoE) problem ('kind=masked')"), std::string::npos) << m;
    EXPECT_NE(m.find("dgtune sweep"), std::string::npos) << m;
  }
}

TEST(ShapesFileGrouped, ErrorsNameFileLineAndTheField) {
  auto message = [](const std::string& text) {
    try {
      parse_shapes_with_grouped(text, "g.txt");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted: " << text;
    return std::string();
  };
  EXPECT_NE(message("1 2 3\nkind=contiguous m_per_group=4 64 64\n").find("g.txt:2: missing groups="),
            std::string::npos);
  EXPECT_NE(message("kind=masked groups=2 masked_m=300 m_max=256 64 64\n").find("g.txt:1: "), std::string::npos);
  EXPECT_NE(message("kind=dense groups=2 m_per_group=3 64 64\n").find("g.txt:1: kind='dense'"), std::string::npos);
  EXPECT_NE(message("kind=contiguous groups=1 m_per_group=3 64 64 name=a name=b\n").find("g.txt:1: field 'name': given twice"),
            std::string::npos);
  EXPECT_NE(message("kind=contiguous groups=1 m_per_group=3 64 64 lda=64\n").find("g.txt:1: unknown field 'lda'"),
            std::string::npos);
}

}  // namespace
}  // namespace dgt
