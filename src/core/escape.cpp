#include "core/escape.hpp"

#include <fmt/format.h>

namespace dgt {

namespace {

/// Length of the valid UTF-8 sequence of 2-4 bytes starting at text[i], or 0 when there is none there
/// (overlong forms, surrogates and code points above U+10FFFF are invalid, per RFC 3629).
size_t utf8_sequence(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

/// Calls keep(i, n) for each run of n bytes to copy and bad(i) for each byte to escape.
template <class Keep, class Bad>
void scan(std::string_view text, Keep keep, Bad bad) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      keep(i, 1);
      ++i;
    } else if (c >= 0x80) {
      const size_t n = utf8_sequence(text, i);
      if (n) {
        keep(i, n);
        i += n;
      } else {
        bad(i++);
      }
    } else {
      bad(i++);
    }
  }
}

std::string escape(std::string_view text, bool keep_lines) {
  std::string out;
  out.reserve(text.size());
  scan(
      text, [&](size_t i, size_t n) { out.append(text.substr(i, n)); },
      [&](size_t i) {
        const char c = text[i];
        if (c == '\n' && keep_lines)
          out += '\n';
        else if (c == '\t')
          out += "\\t";
        else if (c == '\n')
          out += "\\n";
        else if (c == '\r')
          out += "\\r";
        else
          out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
      });
  return out;
}

}  // namespace

std::string escaped(std::string_view text) { return escape(text, false); }

std::string escaped_keep_lines(std::string_view text) { return escape(text, true); }

bool has_unprintable(std::string_view text, size_t* offset) {
  bool found = false;
  scan(
      text, [](size_t, size_t) {},
      [&](size_t i) {
        if (found || text[i] == '\t') return;
        found = true;
        if (offset) *offset = i;
      });
  return found;
}

}  // namespace dgt
