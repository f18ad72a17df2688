#include "report/document.hpp"

#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace dgt::report {

namespace {

/// The envelope, then the keys of `body` (render()'s JSON: it owns cell types and full precision) in their order.
void write_enveloped(const DocumentType& type, const std::string& body, std::ostream& out) {
  nlohmann::ordered_json doc;
  doc["schema"] = std::string(type.schema);
  doc["schema_version"] = type.version;
  nlohmann::ordered_json data = nlohmann::ordered_json::parse(body);  // named: items() refers into it
  for (auto& [key, value] : data.items()) doc[key] = std::move(value);
  out << doc.dump(2) << '\n';
}

}  // namespace

void render_document(const DocumentType& type, const Table& table, Format f, std::ostream& out) {
  if (f != Format::kJson) return render(table, f, out);
  std::ostringstream body;
  render(table, f, body);
  write_enveloped(type, body.str(), out);
}

void render_document(const DocumentType& type, const std::vector<Table>& tables, Format f, std::ostream& out) {
  if (f != Format::kJson) return render_all(tables, f, out);
  std::ostringstream body;
  render_all(tables, f, body);
  write_enveloped(type, body.str(), out);
}

}  // namespace dgt::report
