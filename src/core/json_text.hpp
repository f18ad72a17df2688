// JSON text a user gives (search-space files, gate baselines, model configs): the checks made before and around
// the parse, so that every such file is refused the same way. Nesting is bounded before the parser sees the text (a
// file of 100000 '[' would otherwise exhaust the stack), and every syntax error names the file, line and column.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace dgt {

/// The deepest nesting of arrays and objects accepted in a user's JSON file. dgtune's own files nest at most 4
/// levels (a baseline's shapes[i].problem); 64 leaves room for any hand-made variant.
inline constexpr int kMaxJsonDepth = 64;

/// "LINE:COLUMN" of byte `offset` of `text`, both 1-based (the column counts bytes).
std::string text_position(std::string_view text, size_t offset);

/// Throws Error(kUsage) "SOURCE:LINE:COL: JSON nesting is deeper than MAX levels ..." at the first '[' or '{' that
/// opens level max_depth + 1 (brackets inside strings do not count). `source` is the file's path (escaped here).
void check_json_depth(std::string_view text, std::string_view source, int max_depth = kMaxJsonDepth);

/// Throws Error(kUsage) "SOURCE:LINE:COL: invalid JSON: REASON" for a parse error of `text`: `what` is the parser's
/// message (nlohmann's "[json.exception.parse_error.101] parse error at line L, column C: REASON"; its line and
/// column are used when present, else those of `byte`, the parser's 1-based byte count; byte 0: the first place the
/// token the message quotes, "... parsing 'TOKEN'", appears in the text, e.g. for a number too large to hold).
[[noreturn]] void throw_invalid_json(std::string_view text, std::string_view source, size_t byte,
                                     std::string_view what);

/// Parses a user's JSON file with the checks above (check_json_depth first, syntax errors as throw_invalid_json) and
/// refuses a key that appears twice in one object (JSON keeps only the last one, so the file would silently mean less
/// than it says): Error(kUsage) "SOURCE: POINTER: the key appears twice in one object ...", POINTER the JSON pointer
/// of the first such key.
nlohmann::json parse_json_text(std::string_view text, std::string_view source);

}  // namespace dgt
