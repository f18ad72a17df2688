#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "report/table.hpp"

namespace dgt::report {
namespace {

/// Two rows covering every cell kind: text, Number with two precisions, integer, empty, and a
/// text cell that CSV must quote.
Table sample() {
  Table t;
  t.title = "GEMM";
  t.columns = {
      {"shape", "shape", false}, {"median_us", "us", true}, {"tflops", "TFLOPS", true}, {"note", "note", false}};
  t.rows.push_back({std::string("4096x4096x4096"), Number{123.456, 1}, Number{1234.5678, 2}, std::monostate{}});
  t.rows.push_back({std::string("7x48x80"), Number{5.0, 1}, int64_t{3}, std::string("a, \"b\"")});
  return t;
}

std::string render_str(const Table& t, Format f) {
  std::ostringstream out;
  render(t, f, out);
  return out.str();
}

TEST(Report, ParseFormat) {
  EXPECT_EQ(parse_format("table"), Format::kTable);
  EXPECT_EQ(parse_format("csv"), Format::kCsv);
  EXPECT_EQ(parse_format("json"), Format::kJson);
  EXPECT_EQ(parse_format("md"), Format::kMarkdown);
  try {
    parse_format("markdown");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(e.message(), "unknown output format 'markdown' (expected table, csv, json or md)");
  }
}

TEST(Report, TextTable) {
  // Left-aligned text columns, right-aligned numbers, "-" for the empty cell, no trailing blanks.
  EXPECT_EQ(render_str(sample(), Format::kTable),
            "GEMM\n"
            "shape              us   TFLOPS  note\n"
            "--------------  -----  -------  ------\n"
            "4096x4096x4096  123.5  1234.57  -\n"
            "7x48x80           5.0        3  a, \"b\"\n");
}

TEST(Report, TextTableCountsCodePointsNotBytes) {
  Table t;
  t.columns = {{"t", "\xC2\xB5s", true}};  // "µs": 2 code points, 3 bytes
  t.rows = {{Number{1.5, 1}}};
  EXPECT_EQ(render_str(t, Format::kTable),
            " \xC2\xB5s\n"
            "---\n"
            "1.5\n");
}

TEST(Report, Csv) {
  // Ids (not titles) in the header, empty cell as nothing, the comma-and-quote cell quoted with
  // its quotes doubled.
  EXPECT_EQ(render_str(sample(), Format::kCsv),
            "shape,median_us,tflops,note\n"
            "4096x4096x4096,123.5,1234.57,\n"
            "7x48x80,5.0,3,\"a, \"\"b\"\"\"\n");
}

TEST(Report, CsvQuotesNewlinesAndLeavesPlainFieldsAlone) {
  Table t;
  t.columns = {{"a", "a"}, {"b,c", "bc"}};
  t.rows = {{std::string("line1\nline2"), std::string("it's plain")}, {std::string("x\ry"), std::string("\"")}};
  EXPECT_EQ(render_str(t, Format::kCsv),
            "a,\"b,c\"\n"
            "\"line1\nline2\",it's plain\n"
            "\"x\ry\",\"\"\"\"\n");
}

TEST(Report, Json) {
  // Keys in column order, full precision for Number, integers as integers, null for empty.
  EXPECT_EQ(render_str(sample(), Format::kJson),
            "{\n"
            "  \"title\": \"GEMM\",\n"
            "  \"rows\": [\n"
            "    {\n"
            "      \"shape\": \"4096x4096x4096\",\n"
            "      \"median_us\": 123.456,\n"
            "      \"tflops\": 1234.5678,\n"
            "      \"note\": null\n"
            "    },\n"
            "    {\n"
            "      \"shape\": \"7x48x80\",\n"
            "      \"median_us\": 5.0,\n"
            "      \"tflops\": 3,\n"
            "      \"note\": \"a, \\\"b\\\"\"\n"
            "    }\n"
            "  ]\n"
            "}\n");
  auto j = nlohmann::json::parse(render_str(sample(), Format::kJson));
  EXPECT_TRUE(j["rows"][0]["note"].is_null());
  EXPECT_TRUE(j["rows"][1]["tflops"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["rows"][0]["tflops"].get<double>(), 1234.5678);
}

TEST(Report, TruthValues) {
  // A bool cell: "true"/"false" in the text formats, a JSON boolean (not a string or 0/1) in JSON.
  Table t;
  t.columns = {{"tuned", "tuned", false}};
  t.rows = {{true}, {false}};
  EXPECT_EQ(render_str(t, Format::kCsv), "tuned\ntrue\nfalse\n");
  EXPECT_EQ(render_str(t, Format::kTable), "tuned\n-----\ntrue\nfalse\n");
  auto j = nlohmann::json::parse(render_str(t, Format::kJson));
  EXPECT_TRUE(j["rows"][0]["tuned"].is_boolean());
  EXPECT_EQ(j["rows"][0]["tuned"], true);
  EXPECT_EQ(j["rows"][1]["tuned"], false);
}

TEST(Report, Markdown) {
  EXPECT_EQ(render_str(sample(), Format::kMarkdown),
            "## GEMM\n"
            "\n"
            "| shape          |    us |  TFLOPS | note   |\n"
            "|:---------------|------:|--------:|:-------|\n"
            "| 4096x4096x4096 | 123.5 | 1234.57 | -      |\n"
            "| 7x48x80        |   5.0 |       3 | a, \"b\" |\n");
}

TEST(Report, MarkdownEscapesPipesAndHasNoTitleLineWithoutTitle) {
  Table t;
  t.columns = {{"x", "x", false}};
  t.rows = {{std::string("a|b")}};
  EXPECT_EQ(render_str(t, Format::kMarkdown),
            "| x    |\n"
            "|:-----|\n"
            "| a\\|b |\n");
}

TEST(Report, PrecisionZeroAndRounding) {
  Table t;
  t.columns = {{"v", "v"}};
  t.rows = {{Number{2.4, 0}}, {Number{0.126, 2}}, {Number{-1.0, 3}}, {Number{7.0, -1}}};
  // Values away from ties so the expected rounding does not depend on the tie rule; a negative
  // precision is treated as 0.
  EXPECT_EQ(render_str(t, Format::kCsv), "v\n2\n0.13\n-1.000\n7\n");
}

TEST(Report, RenderAllText) {
  Table a;
  a.title = "A";
  a.columns = {{"n", "n"}};
  a.rows = {{int64_t{1}}};
  Table b;
  b.title = "B";
  b.columns = {{"s", "s", false}};
  b.rows = {{std::string("x")}, {std::monostate{}}};
  std::ostringstream out;
  render_all({a, b}, Format::kTable, out);
  EXPECT_EQ(out.str(), "A\nn\n-\n1\n\nB\ns\n-\nx\n-\n");
  std::ostringstream csv;
  render_all({a, b}, Format::kCsv, csv);
  // A lone empty field is written as "" so the record is not a blank line that readers skip.
  EXPECT_EQ(csv.str(), "n\n1\n\ns\nx\n\"\"\n");
}

TEST(Report, RenderAllJson) {
  Table a;
  a.title = "A";
  a.columns = {{"n", "n"}};
  a.rows = {{int64_t{1}}};
  Table b;
  b.title = "B";
  b.columns = {{"s", "s", false}};
  std::ostringstream out;
  render_all({a, b}, Format::kJson, out);
  EXPECT_EQ(out.str(),
            "{\n"
            "  \"tables\": [\n"
            "    {\n"
            "      \"title\": \"A\",\n"
            "      \"rows\": [\n"
            "        {\n"
            "          \"n\": 1\n"
            "        }\n"
            "      ]\n"
            "    },\n"
            "    {\n"
            "      \"title\": \"B\",\n"
            "      \"rows\": []\n"
            "    }\n"
            "  ]\n"
            "}\n");
}

TEST(Report, WrongRowSizeThrowsBeforeWriting) {
  Table t = sample();
  t.rows[1].pop_back();
  for (Format f : {Format::kTable, Format::kCsv, Format::kJson, Format::kMarkdown}) {
    std::ostringstream out;
    try {
      render(t, f, out);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInternal);
      EXPECT_EQ(e.message(), "table 'GEMM': row 1 (0-based) has 3 cells but the table has 4 columns");
    }
    EXPECT_EQ(out.str(), "") << "no partial output";
  }
  // render_all checks every table first: the good first table is not written either.
  std::ostringstream out;
  EXPECT_THROW(render_all({sample(), t}, Format::kTable, out), Error);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace dgt::report
