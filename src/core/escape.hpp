// Escaping of user text quoted in messages: a shapes file, a search-space file or an argument may hold
// control characters or binary bytes, and echoing them raw lets a NUL cut the message short, a '\r' or an
// ANSI escape rewrite the terminal line, and a stray byte break the UTF-8 of a log.
#pragma once

#include <string>
#include <string_view>

namespace dgt {

/// A quoted value longer than this (after escaping) is cut: a 1 MB number in a shapes file would otherwise
/// make a 1 MB error line. The cut keeps kQuoteKeep bytes and says how long the value was. The limit is well above
/// the path lengths seen in practice, so a message names a file whole; only a value nobody would type is cut.
inline constexpr size_t kQuoteLimit = 512;
inline constexpr size_t kQuoteKeep = 200;
/// A line of a whole message longer than this is cut the same way (main()'s last guard).
inline constexpr size_t kMessageLineLimit = 4000;

/// `text` with every byte that is not printable text escaped: \t, \n and \r as those two-character
/// escapes, other control bytes (0x00-0x1f, 0x7f) and bytes that are not part of valid UTF-8 as \xNN
/// (upper-case hex). Printable ASCII and valid multi-byte UTF-8 are kept as they are; so is '\', so a
/// path reads as typed (a literal "\x00" in the input is therefore indistinguishable from an escaped
/// NUL; the value is for a human to read, not to parse back). A result longer than kQuoteLimit bytes is
/// cut to its first kQuoteKeep bytes (never inside a UTF-8 character or an escape) followed by
/// "... (N bytes)", N the length of `text`. Every message that quotes user input passes it through this
/// function.
std::string escaped(std::string_view text);

/// The same, but line breaks ('\n') are kept and only lines longer than kMessageLineLimit are cut: for a
/// whole multi-line message (main() passes every error message through it, a last guard for a quoted value
/// that a message forgot to escape or cut).
std::string escaped_keep_lines(std::string_view text);

/// True when `text` holds a byte that escaped() would rewrite (a control byte other than '\t', or
/// invalid UTF-8); `*offset`, if given, receives the first such byte's offset.
bool has_unprintable(std::string_view text, size_t* offset = nullptr);

}  // namespace dgt
