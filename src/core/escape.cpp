#include "core/escape.hpp"

#include <fmt/format.h>

#include <algorithm>

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

/// `out` (escaped text of `original_size` input bytes) cut to `keep` bytes plus the length, when longer than
/// `limit`. The cut never splits a UTF-8 character or a \xNN / \t escape.
std::string cut(std::string out, size_t original_size, size_t limit, size_t keep) {
  if (out.size() <= limit) return out;
  size_t end = keep;
  while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;  // inside a UTF-8 character
  const size_t slash = out.rfind('\\', end);
  if (slash != std::string::npos && end - slash < 4) end = slash;  // inside an escape (at most \xNN)
  out.resize(end);
  return out + fmt::format("... ({} bytes)", original_size);
}

std::string escape(std::string_view text, bool keep_lines) {
  std::string out;
  out.reserve(std::min(text.size(), size_t(1) << 16));
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

std::string escaped(std::string_view text) { return cut(escape(text, false), text.size(), kQuoteLimit, kQuoteKeep); }

std::string escaped_keep_lines(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    out += cut(escape(line, true), line.size(), kMessageLineLimit, kMessageLineLimit - 80);
    if (end == text.size()) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

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
