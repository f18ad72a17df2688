// core/int_math.hpp, and the guard that it is the only host definition of ceil-division under src/.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "core/int_math.hpp"
#include "source_scan.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

static_assert(ceil_div(0, 7) == 0 && ceil_div(1, 7) == 1 && ceil_div(7, 7) == 1 && ceil_div(8, 7) == 2);
static_assert(round_up(0, 16) == 0 && round_up(1, 16) == 16 && round_up(16, 16) == 16 && round_up(17, 16) == 32);
static_assert(ceil_div(int64_t(1) << 40, 3) == ((int64_t(1) << 40) + 2) / 3, "64-bit");

TEST(IntMath, CeilDivAndRoundUp) {
  for (int64_t b = 1; b <= 70; ++b)
    for (int64_t a = 0; a <= 300; ++a) {
      const int64_t q = ceil_div(a, b);
      ASSERT_GE(q * b, a) << a << "/" << b;
      ASSERT_LT((q - 1) * b, a + (a == 0 ? 1 : 0)) << a << "/" << b;
      ASSERT_EQ(round_up(a, b), q * b);
    }
  EXPECT_EQ(ceil_div(int64_t(1) << 62, int64_t(1) << 31), int64_t(1) << 31);
}

// A ceil-division helper under a name of its own, a lambda, a macro, the (a + b - 1) / b idiom (any
// operands, also with literals such as (x + 15) / 16) or a floating-point ceil of a quotient.
const char* kStems = R"((?:ceil_?div|div_?ceil|div_?up|round_?up|cdiv|align_?up|ceildiv))";

std::vector<std::string> ceil_div_violations(const std::string& text) {
  const std::string code = test::strip_comments_and_strings(text);
  const std::string name = std::string(R"(\w*)") + kStems + R"(\w*)";
  const std::string operand = R"((?:[A-Za-z_][\w.:\[\]]*(?:->[\w.]+)*(?:\([^()]*\))?|\d+|\([^()]*\)))";
  const std::vector<std::regex> res = {
      // declaration or definition: a type (or qualifier) token, then the name, then "(".
      std::regex(
          R"((?:^|[^\w.>:])(?!return\b|co_return\b|else\b|case\b|throw\b|sizeof\b|new\b|delete\b)[A-Za-z_][\w:<>]*\s+)" +
              name + R"(\s*\()",
          std::regex::icase),
      // a lambda or variable holding one
      std::regex(R"(\b)" + name + R"(\s*=\s*[\[&(])", std::regex::icase),
      // a macro
      std::regex(R"(#\s*define\s+)" + name, std::regex::icase),
      // (a + b - 1) / b, (a - 1 + b) / b, (a + (b - 1)) / b
      std::regex(R"(\+\s*)" + operand + R"(\s*-\s*1\s*\)\s*/)"),
      std::regex(R"(-\s*1\s*\+\s*)" + operand + R"(\s*\)\s*/)"),
      std::regex(R"(\+\s*\(\s*)" + operand + R"(\s*-\s*1\s*\)\s*\)\s*/)"),
      // std::ceil(a / b)
      std::regex(R"(\bceil[fl]?\s*\((?:[^();]|\([^()]*\))*/)"),
  };
  std::vector<std::string> out;
  for (const auto& re : res)
    for (auto& m : test::matches(code, re)) out.push_back(std::move(m));
  // (x + 15) / 16: a literal one less than the divisor. Not when the sum is a factor of a product, as in
  // n * (n + 1) / 2 (that divides the product).
  const std::regex lit(R"((\*\s*)?\(\s*)" + operand + R"(\s*\+\s*(\d+)\s*\)\s*/\s*(\d+))");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), lit); it != std::sregex_iterator(); ++it)
    if (!(*it)[1].matched && std::stoll((*it)[2]) + 1 == std::stoll((*it)[3]))
      out.push_back(std::to_string(test::line_of(code, static_cast<size_t>(it->position()))) + ": " + it->str());
  return out;
}

TEST(IntMathSource, ScannerCatchesPlantedHelpers) {
  const char* planted[] = {
      "int64_t div_up(int64_t a, int64_t b) { return a / b; }",
      "static inline int cdiv(int a, int b);",
      "constexpr int64_t round_up(int64_t x, int64_t m) { return x; }",
      "int round_up_1024(int x) { return x; }",
      "double CeilDiv(double a, double b) { return a; }",
      "auto ceil_div = [](int64_t a, int64_t b) { return a / b; };",
      "#define ROUND_UP(x, m) ((x) / (m) * (m))",
      "const int64_t n = (p.n + c.block_n - 1) / c.block_n;",
      "const int64_t per = (kb + std::max(1, c.split_k) - 1) / std::max(1, c.split_k);",
      "return (a - 1 + b) / b;",
      "return (a + (b - 1)) / b;",
      "int pad = (stride_bytes + 15) / 16 * 16;",
      "int half = (n + 1) / 2;",
      "size_t half = (v.size() + 1) / 2;",
      "launch(f, static_cast<unsigned>((p.n + 63) / 64));",
      "const double waves = std::ceil(units / resident);",
      "const double m_blocks = std::ceil(double(p.m) / c.block_m);",
  };
  for (const char* p : planted) EXPECT_FALSE(ceil_div_violations(p).empty()) << "not caught: " << p;
}

TEST(IntMathSource, ScannerLeavesCallsCommentsAndStringsAlone) {
  const char* clean[] = {
      "const int64_t m = ceil_div(p.m, 64);",
      "return ceil_div(a, b) * b;",
      "x = std::min(ceil_div(g.n_blocks, band), g.n_blocks);",
      "fmt::format(\"{}\", round_up(p.m, 64));",
      "// (a + b - 1) / b and int div_up(int a, int b) { in a comment",
      "/* std::ceil(a / b) */ int y = 1;",
      "DGT_THROW(kInvalid, \"pad to (x + 15) / 16 * 16\");",
      "const int64_t k = (p.k + 1) * 2 / 3;",
      "return ceil_div(x, 2) - 1;",
      "const long m = n * (n + 1) / 2;",
      "w.reserve(v.size() * (v.size() + 1) / 2);",
      "const double mean = nd * (nd + 1) / 4.0;",
      "const int64_t units = tiles * ceil_div(a, b) & round_up(c, d);",
      "double r = std::ceil(x) / 2;",
  };
  for (const char* c : clean) EXPECT_TRUE(ceil_div_violations(c).empty()) << "false alarm: " << c;
}

TEST(IntMathSource, OneHostDefinitionOfCeilDiv) {
  const fs::path src = fs::path(DGT_SOURCE_DIR) / "src";
  const fs::path home = fs::path("core") / "int_math.hpp";
  ASSERT_FALSE(ceil_div_violations(test::read_text(src / home)).empty())
      << "the scanner must see core/int_math.hpp's definitions";
  std::vector<std::string> found;
  for (const auto& rel : test::cxx_files(src)) {
    if (rel == home) continue;
    for (const auto& v : ceil_div_violations(test::read_text(src / rel))) found.push_back(rel.string() + ":" + v);
  }
  std::string list;
  for (const auto& f : found) list += "\n  " + f;
  EXPECT_TRUE(found.empty()) << "ceil-division belongs in src/core/int_math.hpp (dgt::ceil_div, dgt::round_up); found:"
                             << list;
}

}  // namespace
}  // namespace dgt
