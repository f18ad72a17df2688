// The one JSON style of dgtune's outputs. Every `--format json` output is one object that starts with "schema" (what
// document it is, e.g. "dgtune-space") and "schema_version" (raised when a field changes meaning or goes away), then
// the data: "title" and "rows" for a command that prints one table, "tables" (a list of {"title", "rows"}) for one
// that prints a list of them. Each document's JSON Schema is docs/schemas/<schema>.schema.json, and a test validates
// every output against it. The other formats (table, csv, md) are render()'s and render_all()'s, unchanged.
#pragma once

#include <iosfwd>
#include <string_view>
#include <vector>

#include "report/table.hpp"

namespace dgt::report {

/// Which document an output is: the envelope's "schema" and "schema_version".
struct DocumentType {
  std::string_view schema;
  int version = 1;
};

/// render(table): JSON as the envelope followed by the table's "title" and "rows".
void render_document(const DocumentType& type, const Table& table, Format f, std::ostream& out);

/// render_all(tables): JSON as the envelope followed by "tables" (whatever their count).
void render_document(const DocumentType& type, const std::vector<Table>& tables, Format f, std::ostream& out);

}  // namespace dgt::report
