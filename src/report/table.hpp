// Render-only printers: a Table of typed cells written as an aligned text table, CSV, JSON or
// markdown. Nothing here computes; callers fill the cells.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dgt::report {

enum class Format { kTable, kCsv, kJson, kMarkdown };
/// Parse "table", "csv", "json", "md". Throws Error(kUsage) listing the accepted values.
Format parse_format(std::string_view s);

/// A cell: empty (rendered "-" in table/markdown, empty in CSV, null in JSON), text, integer, a number rendered
/// with `precision` digits after the decimal point, or a truth value ("true"/"false"; JSON true/false).
struct Number {
  double value = 0;
  int precision = 2;
};
using Cell = std::variant<std::monostate, std::string, int64_t, Number, bool>;

struct Column {
  std::string id;     ///< JSON key and CSV header, e.g. "median_us"
  std::string title;  ///< text table / markdown header, e.g. "us"
  bool right_align = true;
};

struct Table {
  std::string title;  ///< printed above a text table ("## title" in markdown); not in CSV/JSON rows
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;  ///< each row has columns.size() cells
};

/// Writes the table. JSON: {"title": ..., "rows": [{id: value, ...}, ...]} with numbers as JSON
/// numbers (full precision). CSV: RFC 4180 quoting. Throws Error(kInternal) if a row has the wrong
/// number of cells.
void render(const Table& t, Format f, std::ostream& out);

/// Several tables as one document: JSON becomes {"tables": [...]}, the others are concatenated with
/// a blank line between tables.
void render_all(const std::vector<Table>& tables, Format f, std::ostream& out);

}  // namespace dgt::report
