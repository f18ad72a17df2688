#include "report/table.hpp"

#include <algorithm>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace dgt::report {
namespace {

// ordered_json keeps the keys of a row in column order; the default json would sort them.
using Json = nlohmann::ordered_json;

/// How a cell is spelled in the text-like formats; `empty` is what an empty cell becomes.
std::string cell_text(const Cell& c, std::string_view empty) {
  if (std::holds_alternative<std::monostate>(c)) return std::string(empty);
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&c)) return *b ? "true" : "false";
  const Number& n = std::get<Number>(c);
  return fmt::format("{:.{}f}", n.value, std::max(0, n.precision));  // a negative precision would throw in fmt
}

/// Width on screen: counts UTF-8 code points, not bytes, so titles such as "µs" line up.
size_t display_width(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

/// Newlines would break a text or markdown row apart; they become spaces there (CSV keeps them).
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string pad(const std::string& s, size_t width, bool right) {
  size_t w = display_width(s);
  if (w >= width) return s;
  std::string fill(width - w, ' ');
  return right ? fill + s : s + fill;
}

void rstrip(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

/// All cells of the table as one-line text (header first), for the aligned formats.
std::vector<std::vector<std::string>> text_grid(const Table& t, std::string_view empty,
                                                std::string (*escape)(std::string)) {
  std::vector<std::vector<std::string>> grid;
  std::vector<std::string> header;
  for (const Column& c : t.columns) header.push_back(escape(c.title));
  grid.push_back(std::move(header));
  for (const auto& row : t.rows) {
    std::vector<std::string> line;
    for (const Cell& c : row) line.push_back(escape(cell_text(c, empty)));
    grid.push_back(std::move(line));
  }
  return grid;
}

std::vector<size_t> column_widths(const std::vector<std::vector<std::string>>& grid, size_t min_width) {
  std::vector<size_t> widths(grid.front().size(), min_width);
  for (const auto& line : grid)
    for (size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], display_width(line[i]));
  return widths;
}

/// Aligned text: title, header, a rule of dashes under each column, rows; columns two spaces apart.
void render_text(const Table& t, std::ostream& out) {
  if (!t.title.empty()) out << t.title << '\n';
  auto grid = text_grid(t, "-", one_line);
  auto widths = column_widths(grid, 1);
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) line += "  ";
      line += pad(cells[i], widths[i], t.columns[i].right_align);
    }
    rstrip(line);  // a left-aligned last column would otherwise leave trailing blanks
    out << line << '\n';
  };
  emit(grid.front());
  std::vector<std::string> rule;
  for (size_t w : widths) rule.push_back(std::string(w, '-'));
  emit(rule);
  for (size_t r = 1; r < grid.size(); ++r) emit(grid[r]);
}

/// RFC 4180: a field holding a comma, quote or line break is quoted and its quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + '"';
}

/// CSV: a header of column ids, then one record per row. Records end in "\n" rather than RFC
/// 4180's CRLF: the output is meant for Unix pipes and diffs, and CSV readers accept both.
void render_csv(const Table& t, std::ostream& out) {
  auto record = [&](const auto& cells, auto to_text) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) line += ',';
      line += csv_field(to_text(cells[i]));
    }
    // A record of one empty field would be a blank line, which many readers skip; quote it.
    if (line.empty() && !cells.empty()) line = "\"\"";
    out << line << '\n';
  };
  record(t.columns, [](const Column& c) { return c.id; });
  for (const auto& row : t.rows) record(row, [](const Cell& c) { return cell_text(c, ""); });
}

Json cell_json(const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return nullptr;
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* i = std::get_if<int64_t>(&c)) return *i;
  if (const auto* b = std::get_if<bool>(&c)) return *b;
  return std::get<Number>(c).value;  // full precision: precision is for human eyes only
}

Json table_json(const Table& t) {
  Json rows = Json::array();
  for (const auto& row : t.rows) {
    Json obj = Json::object();
    for (size_t i = 0; i < row.size(); ++i) obj[t.columns[i].id] = cell_json(row[i]);
    rows.push_back(std::move(obj));
  }
  return Json{{"title", t.title}, {"rows", std::move(rows)}};
}

/// A '|' inside a cell would end the markdown cell early.
std::string md_escape(std::string s) {
  s = one_line(std::move(s));
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

/// GitHub markdown: "## title", a blank line, then a pipe table padded so the source lines up too.
void render_markdown(const Table& t, std::ostream& out) {
  if (!t.title.empty()) out << "## " << t.title << "\n\n";
  auto grid = text_grid(t, "-", md_escape);
  auto widths = column_widths(grid, 3);  // "---" is the shortest delimiter cell GitHub accepts
  auto emit = [&](const std::vector<std::string>& cells) {
    out << '|';
    for (size_t i = 0; i < cells.size(); ++i) out << ' ' << pad(cells[i], widths[i], t.columns[i].right_align) << " |";
    out << '\n';
  };
  emit(grid.front());
  out << '|';
  for (size_t i = 0; i < widths.size(); ++i) {
    // The delimiter cell spans the padded cell width (+2 for the spaces) so the pipes line up.
    std::string dashes(widths[i] + 1, '-');
    out << (t.columns[i].right_align ? dashes + ":" : ":" + dashes) << '|';
  }
  out << '\n';
  for (size_t r = 1; r < grid.size(); ++r) emit(grid[r]);
}

/// Checked before anything is written, so a bad table produces no partial output.
void check_shape(const Table& t) {
  for (size_t r = 0; r < t.rows.size(); ++r)
    if (t.rows[r].size() != t.columns.size())
      DGT_THROW(ErrorKind::kInternal, "table '{}': row {} (0-based) has {} cells but the table has {} columns", t.title,
                r, t.rows[r].size(), t.columns.size());
}

}  // namespace

Format parse_format(std::string_view s) {
  if (s == "table") return Format::kTable;
  if (s == "csv") return Format::kCsv;
  if (s == "json") return Format::kJson;
  if (s == "md") return Format::kMarkdown;
  DGT_THROW(ErrorKind::kUsage, "unknown output format '{}' (expected table, csv, json or md)", s);
}

void render(const Table& t, Format f, std::ostream& out) {
  check_shape(t);
  switch (f) {
    case Format::kTable: render_text(t, out); break;
    case Format::kCsv: render_csv(t, out); break;
    case Format::kJson: out << table_json(t).dump(2) << '\n'; break;
    case Format::kMarkdown: render_markdown(t, out); break;
  }
}

void render_all(const std::vector<Table>& tables, Format f, std::ostream& out) {
  for (const Table& t : tables) check_shape(t);
  if (f == Format::kJson) {
    Json all = Json::array();
    for (const Table& t : tables) all.push_back(table_json(t));
    out << Json{{"tables", std::move(all)}}.dump(2) << '\n';
    return;
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) out << '\n';
    render(tables[i], f, out);
  }
}

}  // namespace dgt::report
