// The shapes file: one GEMM problem per line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/escape.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// One parsed line of a shapes file: a dense GEMM, or a grouped (MoE) one.
struct ShapeEntry {
  /// The problem the DB keys it by: a dense line's problem, or grouped->keyed() (Problem::key()).
  Problem problem;
  /// A grouped line's problem with its per-group counts (what is measured); empty for a dense line.
  std::optional<GroupedProblem> grouped;
  std::string file;  ///< path as given
  int line = 0;      ///< 1-based line number
  std::string name;  ///< optional name= field, empty if absent
  /// "FILE:LINE" for messages, the path escaped (core/escape.hpp).
  std::string where() const { return escaped(file) + ":" + std::to_string(line); }
};

/// Format (documented in docs/shapes-and-spaces.md, "Shapes file"):
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
/// Dense lines only: a grouped line (below) is refused with Error(kUsage) naming file:line, so a command that
/// measures dense problems never drops one silently.
std::vector<ShapeEntry> parse_shapes(const std::string& text, const std::string& file_name);

/// Like parse_shapes(), and a line whose first field starts with `kind=` is a grouped (MoE) problem in
/// parse_grouped_problem()'s text form (problem/grouped_problem.hpp), plus an optional `name=NAME`, e.g.
///   kind=contiguous groups=32 m_per_group=skew:1:16384 4096 7168 scale=block name=moe-gate-up
///   kind=masked groups=32 masked_m=route:1:256:8 m_max=128 expected_m=64 7168 2048 name=moe-down
/// Its entry has `grouped` set and `problem` = grouped->keyed(). Errors name file:line, the field and the rule
/// (parse_grouped_problem's message behind "FILE:LINE: "). For the commands that tune grouped problems.
std::vector<ShapeEntry> parse_shapes_with_grouped(const std::string& text, const std::string& file_name);

/// One shapes-file line of `p` (no newline): `M N K`, then only the fields whose value differs from the
/// default (lda, ldb, ldd, a, b, d, scale, accum, bias, act), then ` name=NAME` when `name` is not empty (it must
/// hold no blank or '#'). parse_shapes() of the line gives `p` back.
std::string shape_line(const Problem& p, const std::string& name = "");

/// Reads and parses a file. Throws Error(kUsage) naming the path when it cannot be read (core/input_file.hpp).
std::vector<ShapeEntry> load_shapes_file(const std::string& path);
/// Reads and parses a file with parse_shapes_with_grouped().
std::vector<ShapeEntry> load_shapes_file_with_grouped(const std::string& path);

/// The shapes-file line of a grouped entry: grouped_text(g), then ` name=NAME` when `name` is not empty.
/// parse_shapes_with_grouped() of the line gives `g` back (its counts from rows_text).
std::string grouped_shape_line(const GroupedProblem& g, const std::string& name = "");

}  // namespace dgt
