// core/json_text.hpp: user JSON (search spaces, gate baselines) nests at most kMaxJsonDepth levels, checked before the
// parser runs, and every syntax error names file:line:column.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_text.hpp"

namespace dgt {
namespace {

/// check_json_depth's message (kUsage) for `text` as "f.json", or "ok".
std::string depth_error(const std::string& text, int max_depth = kMaxJsonDepth) {
  try {
    check_json_depth(text, "f.json", max_depth);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    return e.message();
  }
  return "ok";
}

TEST(JsonText, PositionsAreLineAndColumn) {
  EXPECT_EQ(text_position("abc", 0), "1:1");
  EXPECT_EQ(text_position("abc", 2), "1:3");
  EXPECT_EQ(text_position("a\nbc\nd", 3), "2:2");
  EXPECT_EQ(text_position("a\nbc\nd", 5), "3:1");
  EXPECT_EQ(text_position("ab", 99), "1:3");  // past the end: just after the last byte
}

TEST(JsonText, NestingIsBoundedWhereItGoesTooDeep) {
  EXPECT_EQ(depth_error(std::string(64, '[') + std::string(64, ']')), "ok");
  EXPECT_EQ(depth_error(std::string(65, '[') + std::string(65, ']')),
            "f.json:1:65: JSON nesting is deeper than 64 levels (arrays and objects inside each other); a dgtune file "
            "nests at most a few levels");
  EXPECT_EQ(depth_error(std::string(100000, '[')).rfind("f.json:1:65: ", 0), 0u);
  EXPECT_EQ(depth_error("{\"a\":\n  [{\"b\": [1]}]}", 2).rfind("f.json:2:4: ", 0), 0u);
  // Brackets inside strings (escaped quotes included) are text, not nesting; closing brackets end levels.
  EXPECT_EQ(depth_error("{\"name\": \"[[[[{{{{\\\"[[[[\"}", 1), "ok");
  EXPECT_EQ(depth_error("[[]] [[]] [[]]", 2), "ok");
  EXPECT_EQ(depth_error("]]]]]]]][[", 2), "ok");  // unbalanced: the parser's to report, not a depth
}

TEST(JsonText, ParseErrorsNameFileLineAndColumn) {
  auto message = [](const std::string& text) {
    try {
      const nlohmann::json parsed = nlohmann::json::parse(text);  // [[nodiscard]]: a (void) cast still warns
      (void)parsed;
    } catch (const nlohmann::json::parse_error& e) {
      try {
        throw_invalid_json(text, "dir/b.json", e.byte, e.what());
      } catch (const Error& err) {
        EXPECT_EQ(err.kind(), ErrorKind::kUsage);
        return err.message();
      }
    }
    return std::string("parsed");
  };
  EXPECT_EQ(message("").rfind("dir/b.json:1:1: invalid JSON: syntax error while parsing value - unexpected end of "
                              "input",
                              0),
            0u)
      << message("");
  EXPECT_EQ(
      message("{\n  \"a\": 1,\n}").rfind("dir/b.json:3:1: invalid JSON: syntax error while parsing object key", 0), 0u)
      << message("{\n  \"a\": 1,\n}");
  // A message without nlohmann's position: the byte count gives it.
  try {
    throw_invalid_json("ab\ncd", "x.json", 5, "parse error: something");
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "x.json:2:2: invalid JSON: something");
  }
}

}  // namespace
}  // namespace dgt
