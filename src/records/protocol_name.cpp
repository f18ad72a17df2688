#include "records/protocol_name.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace dgt {

std::string protocol_kind_of(std::string_view name) {
  const size_t at = name.rfind("-v");
  if (at == std::string_view::npos || at + 2 == name.size()) return std::string(name);
  const std::string_view digits = name.substr(at + 2);
  if (!std::all_of(digits.begin(), digits.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
    return std::string(name);
  return std::string(name.substr(0, at));
}

void check_protocol_kind(std::string_view kind, std::string_view what) {
  if (kind != "cold-l2" && kind != "hot-graph")
    DGT_THROW(ErrorKind::kUsage, "{}: '{}' is not a protocol; choose cold-l2 or hot-graph", what, kind);
}

}  // namespace dgt
