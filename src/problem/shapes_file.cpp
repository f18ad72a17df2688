#include "problem/shapes_file.hpp"

#include <charconv>
#include <string_view>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/input_file.hpp"

namespace dgt {
namespace {

/// The accepted keys, in the order the error message lists them.
constexpr std::string_view kKeys[] = {"lda", "ldb", "ldd", "a", "b", "d", "scale", "accum", "bias", "act", "name"};
constexpr std::string_view kKeyList = "lda, ldb, ldd, a, b, d, scale, accum, bias, act, name";

bool is_blank(char c) { return c == ' ' || c == '\t'; }

bool is_known_key(std::string_view key) {
  for (std::string_view k : kKeys)
    if (k == key) return true;
  return false;
}

/// Where a line came from, carried through the helpers so every message starts with "FILE:LINE: ".
struct LineRef {
  const std::string& file;
  int line;
  std::string where() const { return escaped(file) + ":" + std::to_string(line); }
};

/// A shapes file is UTF-8 text: a control byte (other than the tab that separates fields) or a byte that
/// is not UTF-8 means a binary or damaged file; refuse it naming the byte rather than read on.
void check_text(const LineRef& at, std::string_view line) {
  size_t offset = 0;
  if (!has_unprintable(line, &offset)) return;
  DGT_THROW(ErrorKind::kUsage,
            "{}: column {}: byte {} is not text (a control character or not UTF-8); a shapes file is UTF-8 text "
            "with fields separated by spaces or tabs",
            at.where(), offset + 1, escaped(line.substr(offset, 1)));
}

/// Removes a trailing '#' comment and a trailing '\r' (files saved with CRLF line endings).
std::string_view strip_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  return line;
}

/// Splits on runs of spaces and tabs.
std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

/// True if `text` is all decimal digits (so "a 4th bare number" can be told from a misspelt key).
bool is_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  return true;
}

/// Parses a positive int64. from_chars rejects signs, spaces and overflow, which is what we want;
/// overflow gets its own message because "not a positive integer" would be wrong for it.
int64_t parse_positive(const LineRef& at, std::string_view field, std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    DGT_THROW(ErrorKind::kUsage, "{}: field '{}': '{}' is too large (expected a positive integer below 2^63)",
              at.where(), field, escaped(text));
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0)
    DGT_THROW(ErrorKind::kUsage, "{}: field '{}': '{}' is not a positive integer", at.where(), field, escaped(text));
  return value;
}

/// a= and b=: only the FP8 formats the kernel reads.
DType parse_fp8(const LineRef& at, std::string_view field, std::string_view text) {
  if (text == "e4m3") return DType::kE4M3;
  if (text == "e5m2") return DType::kE5M2;
  DGT_THROW(ErrorKind::kUsage, "{}: field '{}': '{}' is not a valid value (expected e4m3 or e5m2)", at.where(), field,
            escaped(text));
}

/// Applies one key=value field to `entry`. `seen` holds the keys already given on this line.
void apply_field(const LineRef& at, std::string_view token, std::vector<std::string_view>& seen, ShapeEntry& entry) {
  size_t eq = token.find('=');
  if (eq == std::string_view::npos) {
    if (is_digits(token))
      DGT_THROW(ErrorKind::kUsage, "{}: unexpected 4th number '{}' (expected only M N K, then key=value fields: {})",
                at.where(), escaped(token), kKeyList);
    if (is_known_key(token))
      DGT_THROW(ErrorKind::kUsage, "{}: field '{}': '{}' has no value (expected {}=VALUE)", at.where(), token, token,
                token);
    DGT_THROW(ErrorKind::kUsage, "{}: '{}' is not a key=value field (accepted keys: {})", at.where(), escaped(token),
              kKeyList);
  }
  std::string_view key = token.substr(0, eq);
  std::string_view value = token.substr(eq + 1);
  if (!is_known_key(key))
    DGT_THROW(ErrorKind::kUsage, "{}: unknown field '{}' in '{}' (accepted keys: {})", at.where(), escaped(key),
              escaped(token), kKeyList);
  for (std::string_view k : seen)
    if (k == key)
      DGT_THROW(ErrorKind::kUsage, "{}: field '{}': given twice ('{}'; each key at most once per line)", at.where(),
                key, escaped(token));
  seen.push_back(key);
  if (value.empty())
    DGT_THROW(ErrorKind::kUsage, "{}: field '{}': empty value in '{}' (expected {}=VALUE)", at.where(), key,
              escaped(token), key);

  Problem& p = entry.problem;
  if (key == "lda") {
    p.lda = parse_positive(at, key, value);
  } else if (key == "ldb") {
    p.ldb = parse_positive(at, key, value);
  } else if (key == "ldd") {
    p.ldd = parse_positive(at, key, value);
  } else if (key == "a") {
    p.a = parse_fp8(at, key, value);
  } else if (key == "b") {
    p.b = parse_fp8(at, key, value);
  } else if (key == "d") {
    if (value == "bf16")
      p.d = DType::kBF16;
    else if (value == "f32")
      p.d = DType::kF32;
    else if (value == "e4m3")
      p.d = DType::kE4M3;
    else
      DGT_THROW(ErrorKind::kUsage, "{}: field 'd': '{}' is not a valid value (expected bf16, f32 or e4m3)",
                at.where(), escaped(value));
  } else if (key == "bias") {
    if (value == "none")
      p.bias = Bias::kNone;
    else if (value == "bf16")
      p.bias = Bias::kBF16;
    else
      DGT_THROW(ErrorKind::kUsage, "{}: field 'bias': '{}' is not a valid value (expected none or bf16)", at.where(),
                escaped(value));
  } else if (key == "act") {
    if (value == "none")
      p.act = Act::kNone;
    else if (value == "relu")
      p.act = Act::kRelu;
    else if (value == "gelu_tanh")
      p.act = Act::kGeluTanh;
    else
      DGT_THROW(ErrorKind::kUsage,
                "{}: field 'act': '{}' is not a valid value (expected none, relu or gelu_tanh)", at.where(),
                escaped(value));
  } else if (key == "scale") {
    if (value == "tensor" || value == "per-tensor")  // "per-tensor": the DB's and export's spelling
      p.scale = ScaleMode::kPerTensor;
    else if (value == "channel")
      p.scale = ScaleMode::kChannel;
    else if (value == "block")
      p.scale = ScaleMode::kBlock;
    else if (value == "block1d1d")
      p.scale = ScaleMode::kBlock1d1d;
    else
      DGT_THROW(ErrorKind::kUsage,
                "{}: field 'scale': '{}' is not a valid value (expected tensor, channel, block or block1d1d)",
                at.where(), escaped(value));
  } else if (key == "accum") {
    if (value == "promote")
      p.accum = Accum::kPromote;
    else if (value == "fast")
      p.accum = Accum::kFast;
    else
      DGT_THROW(ErrorKind::kUsage, "{}: field 'accum': '{}' is not a valid value (expected promote or fast)",
                at.where(), escaped(value));
  } else {  // name
    entry.name = std::string(value);
  }
}

/// Parses the fields of one non-empty line: M N K, then key=value fields.
ShapeEntry parse_line(const LineRef& at, std::string_view raw_line, const std::vector<std::string_view>& fields) {
  static constexpr std::string_view kDims[] = {"M", "N", "K"};
  int64_t dims[3] = {0, 0, 0};
  for (size_t i = 0; i < 3; ++i) {
    // A key=value where a number belongs means the line has fewer than 3 numbers: say so rather
    // than calling "lda=16" a bad K.
    if (i >= fields.size() || fields[i].find('=') != std::string_view::npos)
      DGT_THROW(ErrorKind::kUsage, "{}: field '{}': missing in '{}' (expected 3 positive integers M N K, found {})",
                at.where(), kDims[i], escaped(raw_line), i);
    dims[i] = parse_positive(at, kDims[i], fields[i]);
  }
  ShapeEntry entry;
  entry.problem = Problem::dense(dims[0], dims[1], dims[2]);  // lda = ldb = K, ldd = N unless given
  entry.file = at.file;
  entry.line = at.line;
  std::vector<std::string_view> seen;
  for (size_t i = 3; i < fields.size(); ++i) apply_field(at, fields[i], seen, entry);
  return entry;
}

/// A grouped line: parse_grouped_problem() on every field but an optional name=, errors behind "FILE:LINE: ".
ShapeEntry parse_grouped_line(const LineRef& at, const std::vector<std::string_view>& fields) {
  ShapeEntry entry;
  entry.file = at.file;
  entry.line = at.line;
  std::string text;
  bool named = false;
  for (std::string_view f : fields) {
    if (f.substr(0, 5) == "name=") {
      if (named)
        DGT_THROW(ErrorKind::kUsage, "{}: field 'name': given twice ('{}'; each key at most once per line)",
                  at.where(), escaped(f));
      if (f.size() == 5)
        DGT_THROW(ErrorKind::kUsage, "{}: field 'name': empty value in 'name=' (expected name=VALUE)", at.where());
      named = true;
      entry.name = std::string(f.substr(5));
      continue;
    }
    text += std::string(f) + " ";
  }
  entry.grouped = parse_grouped_problem(text, at.where());
  entry.problem = entry.grouped->keyed();
  return entry;
}

/// A grouped line starts with its kind= field (the text form's first field in every example and in shapes files).
bool is_grouped_line(const std::vector<std::string_view>& fields) { return fields[0].substr(0, 5) == "kind="; }

/// Trims spaces and tabs for quoting the line in messages.
std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

/// Every line of a shapes file; grouped lines are parsed when grouped_ok, else refused naming file:line.
std::vector<ShapeEntry> parse_shapes_lines(const std::string& text, const std::string& file_name, bool grouped_ok) {
  std::string_view rest = text;
  // Editors that write CRLF often also write a UTF-8 byte order mark; it is not part of M.
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);
  std::vector<ShapeEntry> entries;
  int line_no = 0;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF line endings
    check_text(LineRef{file_name, line_no}, line);
    std::string_view content = strip_line(line);
    std::vector<std::string_view> fields = split_fields(content);
    if (fields.empty()) continue;
    const LineRef at{file_name, line_no};
    if (is_grouped_line(fields)) {
      if (!grouped_ok)
        DGT_THROW(ErrorKind::kUsage,
                  "{}: a grouped (MoE) problem ('{}'); this command takes dense lines only (M N K [key=value ...]): "
                  "grouped lines are tuned by `dgtune sweep`",
                  at.where(), escaped(fields[0]));
      entries.push_back(parse_grouped_line(at, fields));
      continue;
    }
    for (std::string_view f : fields)
      if (f.substr(0, 5) == "kind=")
        DGT_THROW(ErrorKind::kUsage, "{}: field '{}': a grouped (MoE) line must start with its kind= field", at.where(),
                  escaped(f));
    entries.push_back(parse_line(at, trim(content), fields));
  }
  return entries;
}

}  // namespace

std::vector<ShapeEntry> parse_shapes(const std::string& text, const std::string& file_name) {
  return parse_shapes_lines(text, file_name, false);
}

std::vector<ShapeEntry> parse_shapes_with_grouped(const std::string& text, const std::string& file_name) {
  return parse_shapes_lines(text, file_name, true);
}

std::vector<ShapeEntry> load_shapes_file(const std::string& path) {
  return parse_shapes(read_input_file(path, "shapes file"), path);
}

std::vector<ShapeEntry> load_shapes_file_with_grouped(const std::string& path) {
  return parse_shapes_with_grouped(read_input_file(path, "shapes file"), path);
}

std::string grouped_shape_line(const GroupedProblem& g, const std::string& name) {
  return name.empty() ? grouped_text(g) : grouped_text(g) + " name=" + name;
}

std::string shape_line(const Problem& p, const std::string& name) {
  std::string out = std::to_string(p.m) + " " + std::to_string(p.n) + " " + std::to_string(p.k);
  auto field = [&](const char* key, const std::string& value) { out += std::string(" ") + key + "=" + value; };
  if (p.lda != p.k) field("lda", std::to_string(p.lda));
  if (p.ldb != p.k) field("ldb", std::to_string(p.ldb));
  if (p.ldd != p.n) field("ldd", std::to_string(p.ldd));
  if (p.a != DType::kE4M3) field("a", to_string(p.a));
  if (p.b != DType::kE4M3) field("b", to_string(p.b));
  if (p.d != DType::kBF16) field("d", to_string(p.d));
  if (p.scale != ScaleMode::kPerTensor) field("scale", to_string(p.scale));
  if (p.accum != Accum::kPromote) field("accum", to_string(p.accum));
  if (p.bias != Bias::kNone) field("bias", to_string(p.bias));
  if (p.act != Act::kNone) field("act", to_string(p.act));
  if (!name.empty()) field("name", name);
  return out;
}

}  // namespace dgt
