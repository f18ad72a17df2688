// The shapes file: one GEMM problem per line.
#pragma once

#include <string>
#include <vector>

#include "core/escape.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// One parsed line of a shapes file.
struct ShapeEntry {
  Problem problem;
  std::string file;  ///< path as given
  int line = 0;      ///< 1-based line number
  std::string name;  ///< optional name= field, empty if absent
  /// "FILE:LINE" for messages, the path escaped (core/escape.hpp).
  std::string where() const { return escaped(file) + ":" + std::to_string(line); }
};

/// Format (documented in README.md, "Shapes file"):
///   - one problem per line: `M N K` (positive integers) then optional `key=value` fields, separated
///     by spaces or tabs; `#` starts a comment (whole line or trailing); blank lines are ignored.
///   - keys: lda, ldb, ldd (positive integers, elements; default K, K, N), a and b (e4m3|e5m2,
///     default e4m3), d (bf16), scale (tensor|channel|block|block1d1d, default tensor; per-tensor is
///     accepted for tensor: ScaleMode),
///     accum (promote|fast, default promote), name (free text without spaces).
///   - each key at most once per line.
/// Every error names file:line, the field and what was expected, e.g.
///   "shapes.txt:7: field 'lda': 'x12' is not a positive integer".
/// A control byte other than a tab (a '\r' only as part of a CRLF line end) or a byte that is not UTF-8
/// is refused naming its column, the byte escaped. Every quoted value is escaped (core/escape.hpp).
/// Parsing stops at the first error and throws Error(kUsage). Rule checks on the values (TMA
/// alignment, lda >= K, a block scale mode needs accum=promote) are validate_problem's job, reported
/// with the same file:line by the caller (ShapesOption::load).
std::vector<ShapeEntry> parse_shapes(const std::string& text, const std::string& file_name);

/// One shapes-file line of `p` (no newline): `M N K`, then only the fields whose value differs from the
/// default (lda, ldb, ldd, a, b, d, scale, accum, bias, act), then ` name=NAME` when `name` is not empty (it must
/// hold no blank or '#'). parse_shapes() of the line gives `p` back.
std::string shape_line(const Problem& p, const std::string& name = "");

/// Reads and parses a file. Throws Error(kUsage) naming the path when it cannot be read (core/input_file.hpp).
std::vector<ShapeEntry> load_shapes_file(const std::string& path);

}  // namespace dgt
