#include "core/json_text.hpp"

#include <algorithm>
#include <functional>
#include <regex>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/escape.hpp"

namespace dgt {

namespace {

using nlohmann::json;

/// Records the first key that appears twice in one object while parsing (JSON keeps only the last one,
/// so the file would silently mean less than it says), with its JSON pointer.
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({false, 0, {}, {}}); break;
      case json::parse_event_t::array_start: frames_.push_back({true, 0, {}, {}}); break;
      case json::parse_event_t::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && first_.empty()) first_ = pointer();
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        next_element();
        break;
      case json::parse_event_t::value: next_element(); break;
    }
    return true;
  }
  /// The pointer of the first duplicate key, empty when none.
  const std::string& first() const { return first_; }

 private:
  struct Frame {
    bool array;
    size_t index;
    std::string key;
    std::set<std::string> keys;
  };
  void next_element() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::string pointer() const {
    std::string p;
    for (const Frame& f : frames_) {
      p += '/';
      p += f.array ? std::to_string(f.index) : escaped(f.key);
    }
    return p;
  }
  std::vector<Frame> frames_;
  std::string first_;
};

}  // namespace

std::string text_position(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return fmt::format("{}:{}", line, offset - line_start + 1);
}

void check_json_depth(std::string_view text, std::string_view source, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        DGT_THROW(ErrorKind::kUsage,
                  "{}:{}: JSON nesting is deeper than {} levels (arrays and objects inside each other); a dgtune file "
                  "nests at most a few levels",
                  escaped(source), text_position(text, i), max_depth);
    } else if (c == ']' || c == '}') {
      depth = std::max(0, depth - 1);  // unbalanced brackets are the parser's to report
    }
  }
}

void throw_invalid_json(std::string_view text, std::string_view source, size_t byte, std::string_view what) {
  std::string reason(what);
  if (const size_t b = reason.find("] "); reason.rfind("[json.exception", 0) == 0 && b != std::string::npos)
    reason = reason.substr(b + 2);
  std::string where;
  static const std::regex kAt(R"(^parse error at line (\d+), column (\d+): )");
  std::smatch m;
  if (std::regex_search(reason, m, kAt)) {
    where = m[1].str() + ":" + m[2].str();
    reason = reason.substr(static_cast<size_t>(m.length(0)));
  } else {
    if (reason.rfind("parse error: ", 0) == 0) reason = reason.substr(13);
    size_t at = byte > 0 ? byte - 1 : 0;
    if (byte == 0) {
      // "number overflow parsing '1111...'": the token is in the text; its first place is where it is.
      const size_t open = reason.find("parsing '");
      const size_t close = open == std::string::npos ? std::string::npos : reason.rfind('\'');
      if (close != std::string::npos && close > open + 9)
        if (const size_t found = text.find(reason.substr(open + 9, close - open - 9)); found != std::string::npos)
          at = found;
    }
    where = text_position(text, at);
  }
  DGT_THROW(ErrorKind::kUsage, "{}:{}: invalid JSON: {}", escaped(source), where, escaped(reason));
}

json parse_json_text(std::string_view text, std::string_view source) {
  check_json_depth(text, source);  // before the parser: deep nesting would exhaust the stack
  DuplicateKeys dup;
  json j;
  try {
    j = json::parse(text, std::ref(dup));
  } catch (const json::parse_error& e) {
    throw_invalid_json(text, source, e.byte, e.what());  // FILE:LINE:COLUMN: invalid JSON: why
  } catch (const json::exception& e) {
    throw_invalid_json(text, source, 0, e.what());  // a number too large for any type: located by its text
  }
  if (!dup.first().empty())
    DGT_THROW(ErrorKind::kUsage, "{}: {}: the key appears twice in one object (JSON would keep only the last one)",
              escaped(source), dup.first());
  return j;
}

}  // namespace dgt
