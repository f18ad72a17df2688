// Helpers of the grep-style source tests (IntMathSource.*, KernelCacheSource.*): read the tree,
// blank out comments and string/character literals (keeping line breaks, so line numbers hold),
// and report regex hits with file:line.
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace dgt::test {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `text` with every comment and string or character literal replaced by spaces (newlines kept).
/// Raw string literals are not special-cased (src/ uses them only for regexes in tests).
inline std::string strip_comments_and_strings(const std::string& text) {
  std::string out = text;
  enum { kCode, kLine, kBlock, kString, kChar } state = kCode;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = text[i], next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (state) {
      case kCode:
        if (c == '/' && next == '/')
          state = kLine, out[i] = ' ';
        else if (c == '/' && next == '*')
          state = kBlock, out[i] = ' ';
        else if (c == '"')
          state = kString;
        else if (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))
          state = kChar;  // 1'000
        break;
      case kLine:
        if (c == '\n')
          state = kCode;
        else
          out[i] = ' ';
        break;
      case kBlock:
        if (c == '*' && next == '/')
          out[i] = out[i + 1] = ' ', ++i, state = kCode;
        else if (c != '\n')
          out[i] = ' ';
        break;
      case kString:
      case kChar:
        if (c == '\\') {
          out[i] = ' ';
          if (i + 1 < out.size() && next != '\n') out[++i] = ' ';
        } else if ((state == kString && c == '"') || (state == kChar && c == '\'')) {
          state = kCode;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
    }
  }
  return out;
}

inline int line_of(const std::string& text, size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

/// Every match of `re` in `code` as "line: matched text".
inline std::vector<std::string> matches(const std::string& code, const std::regex& re) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(std::to_string(line_of(code, static_cast<size_t>(it->position()))) + ": " + it->str());
  return out;
}

/// C++ sources and headers under `root` (relative paths, sorted).
inline std::vector<std::filesystem::path> cxx_files(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".cpp" || ext == ".hpp" || ext == ".h" || ext == ".cc"))
      out.push_back(std::filesystem::relative(e.path(), root));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dgt::test
