// Reading a search-space file (--space): every field is checked against its own rule and every error
// names the file, the JSON path of the field (RFC 6901 pointer), its value and the rule, e.g.
//   space.json: /union/2/block_n/to: 2147483647 is out of range [8, 256]
// Ranges are bounded before they are expanded and the cross product of a space is bounded before it is
// enumerated, so no file makes dgtune loop or exhaust memory; integers must be exact JSON integers (no
// 128.5, no 4294967424 read as 128, no "128").
#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/input_file.hpp"
#include "core/json_text.hpp"
#include "space/resource_model.hpp"
#include "space/search_space.hpp"

namespace dgt {

namespace {

using nlohmann::json;

/// Bounds of an integer axis: the widest values the kernel family has any use for (legality inside
/// them, e.g. BLOCK_M 100, is the resource model's, reported per candidate by `dgtune space`).
struct IntAxis {
  const char* key;
  int64_t min, max;
};

constexpr IntAxis kBlockM{"block_m", 64, 256};
constexpr IntAxis kBlockN{"block_n", 8, 256};
constexpr IntAxis kBlockK{"block_k", 64, 256};
constexpr IntAxis kStages{"num_stages", 2, 32};  // R8
constexpr IntAxis kMathWg{"num_math_wg", 1, 2};
constexpr IntAxis kSwizzle{"swizzle", 32, 128};
constexpr IntAxis kGroup{"group", 1, 64};  // R12
constexpr IntAxis kSplitK{"split_k", 1, kMaxSplitK};
constexpr IntAxis kSms{"sms", 0, 65536};
constexpr IntAxis kPromote{"promote_every", 1, 2048 / 64};  // R18 with the smallest BLOCK_K
constexpr int64_t kClusterMax = 4;                          // R11: at most 4 CTAs per cluster
/// "max-N": N beyond this leaves fewer than 2 stages of the deepest possible pipeline.
constexpr int64_t kMaxStagesMinus = SearchSpace::kMaxAutoStages - 2;

constexpr const char* kAxisKeys[] = {"block_m", "block_n", "block_k",  "num_stages",   "num_math_wg",
                                     "swizzle", "cluster", "raster",   "group",        "epilogue",
                                     "split_k", "sms",     "mainloop", "promote_every", "split_reduce",
                                     "operands"};
constexpr std::string_view kAxisList =
    "block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster, raster, group, epilogue, split_k, sms, "
    "mainloop, promote_every, split_reduce, operands";

/// One field of the file: where it is (for messages) and its value.
struct Field {
  const std::string& source;  ///< the file, escaped
  std::string path;           ///< JSON pointer, "" for the whole document
  const json& value;

  Field at(const std::string& key) const { return {source, fmt::format("{}/{}", path, key), value.at(key)}; }
  Field at(size_t i) const { return {source, fmt::format("{}/{}", path, i), value.at(i)}; }

  /// The value as compact JSON, escaped and shortened with its length (a whole array is not worth quoting).
  std::string shown() const {
    std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 60) s = fmt::format("{}... ({} bytes)", s.substr(0, 57), s.size());
    return escaped(s);
  }
  std::string where() const { return source + ": " + (path.empty() ? "the top level" : path); }
  /// Error(kUsage): "FILE: PATH: VALUE RULE".
  [[noreturn]] void fail(std::string_view rule) const {
    DGT_THROW(ErrorKind::kUsage, "{}: {} {}", where(), shown(), rule);
  }
};

std::string type_name(const json& v) {
  if (v.is_number_float()) return "a non-integer number";
  return std::string(v.is_array() || v.is_object() ? "an " : "a ") + v.type_name();
}

/// An exact integer in [min, max]. nlohmann keeps integers that fit int64/uint64 exactly; anything else
/// (a fraction, an exponent, beyond 2^64) is a float, refused rather than rounded.
int64_t exact_int(const Field& f, int64_t min, int64_t max) {
  if (f.value.is_number_float()) f.fail("is not an integer");
  if (!f.value.is_number_integer()) f.fail(fmt::format("is {}, not an integer", type_name(f.value)));
  bool in_range;
  if (f.value.is_number_unsigned()) {  // every non-negative integer: up to 2^64 - 1, exact
    const uint64_t u = f.value.get<uint64_t>();
    in_range = u <= static_cast<uint64_t>(max) && (min <= 0 || u >= static_cast<uint64_t>(min));
  } else {
    const int64_t v = f.value.get<int64_t>();
    in_range = v >= min && v <= max;
  }
  if (!in_range) f.fail(fmt::format("is out of range [{}, {}]", min, max));
  return f.value.get<int64_t>();
}

const std::string& string_value(const Field& f) {
  if (!f.value.is_string()) f.fail(fmt::format("is {}, not a string", type_name(f.value)));
  return f.value.get_ref<const std::string&>();
}

/// A name shown in tables: printable text.
std::string name_value(const Field& f) {
  const std::string& s = string_value(f);
  if (s.empty()) f.fail("is empty (a name labels the grid in tables)");
  if (has_unprintable(s)) f.fail("holds a control character (a name labels the grid in tables)");
  return s;
}

const json& non_empty_array(const Field& f, std::string_view what) {
  if (!f.value.is_array()) f.fail(fmt::format("is {}, not an array of {}", type_name(f.value), what));
  if (f.value.empty()) f.fail(fmt::format("is empty (an axis needs at least one value: {})", what));
  return f.value;
}

/// An integer axis: an array of integers, or {"from", "to", "step"}, all inside the axis bounds.
std::vector<int> int_axis(const Field& f, const IntAxis& axis) {
  std::vector<int> out;
  const std::string what = fmt::format("integers in [{}, {}]", axis.min, axis.max);
  if (f.value.is_object()) {
    for (const auto& [k, _] : f.value.items())
      if (k != "from" && k != "to" && k != "step")
        f.at(k).fail(fmt::format("is an unknown key of a range (keys: from, to, step)"));
    for (const char* k : {"from", "to", "step"})
      if (!f.value.contains(k)) f.fail(fmt::format("lacks \"{}\" (a range is {{\"from\", \"to\", \"step\"}})", k));
    const int64_t from = exact_int(f.at("from"), axis.min, axis.max);
    const int64_t to = exact_int(f.at("to"), axis.min, axis.max);
    const int64_t step = exact_int(f.at("step"), 1, axis.max);
    if (from > to) f.fail(fmt::format("is an empty range: from {} > to {}", from, to));
    // Bounded above, so at most max - min + 1 values.
    for (int64_t x = from; x <= to; x += step) out.push_back(static_cast<int>(x));
    return out;
  }
  if (!f.value.is_array()) f.fail(fmt::format("is {}, not an array of {} or a range object", type_name(f.value), what));
  non_empty_array(f, what);
  for (size_t i = 0; i < f.value.size(); ++i) out.push_back(static_cast<int>(exact_int(f.at(i), axis.min, axis.max)));
  return out;
}

/// Stages: integers in [2, 32], or "max" / "max-N" (stored as 0 / -N).
std::vector<int> stage_axis(const Field& f) {
  const std::string what = fmt::format("integers in [{}, {}], \"max\" or \"max-N\"", kStages.min, kStages.max);
  non_empty_array(f, what);
  std::vector<int> out;
  for (size_t i = 0; i < f.value.size(); ++i) {
    const Field e = f.at(i);
    if (!e.value.is_string()) {
      out.push_back(static_cast<int>(exact_int(e, kStages.min, kStages.max)));
      continue;
    }
    const std::string& s = e.value.get_ref<const std::string&>();
    if (s == "max") {
      out.push_back(0);
      continue;
    }
    const std::string n = s.rfind("max-", 0) == 0 ? s.substr(4) : std::string();
    const bool digits = !n.empty() && n.size() <= 3 && n.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(n) < 1 || std::stoi(n) > kMaxStagesMinus)
      e.fail(
          fmt::format("is not \"max\" or \"max-N\" with N a decimal integer in [1, {}] (the deepest pipeline is at "
                      "most {} stages)",
                      kMaxStagesMinus, SearchSpace::kMaxAutoStages));
    out.push_back(-std::stoi(n));
  }
  return out;
}

/// promote_every: integers in [1, 32] or "max" (stored as 0).
std::vector<int> promote_axis(const Field& f) {
  const std::string what = fmt::format("integers in [{}, {}] or \"max\"", kPromote.min, kPromote.max);
  non_empty_array(f, what);
  std::vector<int> out;
  for (size_t i = 0; i < f.value.size(); ++i) {
    const Field e = f.at(i);
    if (e.value.is_string()) {
      if (e.value.get_ref<const std::string&>() != "max") e.fail("is not \"max\" (or an integer)");
      out.push_back(0);
    } else {
      out.push_back(static_cast<int>(exact_int(e, kPromote.min, kPromote.max)));
    }
  }
  return out;
}

/// A string axis: an array of strings, each turned into a value by `parse` (which returns false when the
/// string is not one of `allowed`).
template <class T, class Parse>
std::vector<T> string_axis(const Field& f, std::string_view allowed, Parse parse) {
  non_empty_array(f, fmt::format("strings: {}", allowed));
  std::vector<T> out;
  for (size_t i = 0; i < f.value.size(); ++i) {
    const Field e = f.at(i);
    T v{};
    if (!parse(string_value(e), v)) e.fail(fmt::format("is not one of {}", allowed));
    out.push_back(v);
  }
  return out;
}

/// "MxN" with M and N decimal integers in [1, 4].
bool parse_cluster(const std::string& s, std::pair<int, int>& out) {
  const size_t x = s.find('x');
  if (x == std::string::npos || x == 0 || x + 1 == s.size() || x > 1 || s.size() - x - 1 > 1) return false;
  const char m = s[0], n = s[x + 1];
  if (m < '1' || m > '0' + kClusterMax || n < '1' || n > '0' + kClusterMax) return false;
  out = {m - '0', n - '0'};
  return true;
}

void check_keys(const Field& f, bool allow_name, bool allow_union) {
  for (const auto& [k, _] : f.value.items()) {
    bool known = k == "comment" || (allow_name && k == "name") || (allow_union && (k == "base" || k == "union"));
    for (const char* a : kAxisKeys) known = known || k == a;
    if (!known)
      // The key's JSON pointer ("/foo" at the top level), not where() + "/foo": where() words the top level.
      DGT_THROW(ErrorKind::kUsage, "{}: {}/{}: unknown key \"{}\" (known keys: {}; also {}comment{})", f.source,
                f.path, escaped(k), escaped(k), kAxisList, allow_name ? "name, " : "", allow_union ? ", base, union" : "");
  }
  if (f.value.contains("comment")) string_value(f.at("comment"));
}

/// The value of axis `key` for grid `g`: its own, else the base's; `required` axes must be somewhere.
const Field* axis_field(const Field& g, const Field* base, const char* key, std::vector<Field>& keep, bool required) {
  if (g.value.contains(key)) return &keep.emplace_back(g.at(key));
  if (base && base->value.contains(key)) return &keep.emplace_back(base->at(key));
  if (!required) return nullptr;
  DGT_THROW(ErrorKind::kUsage, "{}: lacks \"{}\"{} (axes: {})", g.where(), key,
            base ? " (in the entry and in /base)" : "", kAxisList);
}

SpaceGrid parse_grid(const Field& g, const Field* base, const std::string& default_name) {
  SpaceGrid s;
  s.name = g.value.contains("name") ? name_value(g.at("name")) : default_name;
  std::vector<Field> keep;
  keep.reserve(std::size(kAxisKeys));  // pointers into it stay valid
  auto axis = [&](const char* key) { return *axis_field(g, base, key, keep, true); };
  s.block_m = int_axis(axis("block_m"), kBlockM);
  s.block_n = int_axis(axis("block_n"), kBlockN);
  s.block_k = int_axis(axis("block_k"), kBlockK);
  s.num_stages = stage_axis(axis("num_stages"));
  s.num_math_wg = int_axis(axis("num_math_wg"), kMathWg);
  s.swizzle = int_axis(axis("swizzle"), kSwizzle);
  s.group = int_axis(axis("group"), kGroup);
  s.split_k = int_axis(axis("split_k"), kSplitK);
  s.sms = int_axis(axis("sms"), kSms);
  s.cluster = string_axis<std::pair<int, int>>(axis("cluster"), "\"MxN\" with M, N in 1..4", parse_cluster);
  s.raster = string_axis<Raster>(axis("raster"), "\"m\", \"n\"", [](const std::string& v, Raster& r) {
    if (v != "m" && v != "n") return false;
    r = parse_raster(v, "");
    return true;
  });
  s.epilogue = string_axis<Epilogue>(axis("epilogue"), "\"direct\", \"tma\"", [](const std::string& v, Epilogue& e) {
    if (v != "direct" && v != "tma") return false;
    e = parse_epilogue(v, "");
    return true;
  });
  // Optional axes (spaces written before they existed mean the one-group schedule, P = 1).
  if (const Field* ml = axis_field(g, base, "mainloop", keep, false))
    s.mainloop = string_axis<Mainloop>(*ml, "\"1g\", \"2g\", \"2o\", \"pp\"", [](const std::string& v, Mainloop& m) {
      if (v != "1g" && v != "2g" && v != "2o" && v != "pp") return false;
      m = parse_mainloop(v, "");
      return true;
    });
  if (const Field* pe = axis_field(g, base, "promote_every", keep, false)) s.promote_every = promote_axis(*pe);
  if (const Field* sr = axis_field(g, base, "split_reduce", keep, false))
    s.split_cluster = string_axis<bool>(*sr, "\"workspace\", \"cluster\"", [](const std::string& v, bool& cluster) {
      if (v != "workspace" && v != "cluster") return false;
      cluster = v == "cluster";
      return true;
    });
  // "operands": "ab" (D = A B^T as given) or "swap_ab" (the kernel computes D^T = B A^T: KernelConfig::swap_ab).
  if (const Field* op = axis_field(g, base, "operands", keep, false))
    s.swap_ab = string_axis<bool>(*op, "\"ab\", \"swap_ab\"", [](const std::string& v, bool& swap) {
      if (v != "ab" && v != "swap_ab") return false;
      swap = v == "swap_ab";
      return true;
    });
  return s;
}

/// Points of a grid (the cross product of its axes), saturating instead of overflowing.
uint64_t points(const SpaceGrid& g) {
  uint64_t n = 1;
  for (size_t len : {g.block_m.size(), g.block_n.size(), g.block_k.size(), g.num_stages.size(), g.num_math_wg.size(),
                     g.swizzle.size(), g.cluster.size(), g.raster.size(), g.group.size(), g.epilogue.size(),
                     g.split_k.size(), g.sms.size(), g.mainloop.size(), g.promote_every.size(), g.split_cluster.size(),
                     g.swap_ab.size()})
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(len), &n)) return UINT64_MAX;
  return n;
}

}  // namespace

SearchSpace SearchSpace::from_json(const json& j, const std::string& source_path) {
  const std::string source = escaped(source_path);
  const Field top{source, "", j};
  if (!j.is_object()) top.fail(fmt::format("is {}, not an object (a search space is a JSON object)", type_name(j)));
  const bool has_union = j.contains("union");
  check_keys(top, /*allow_name=*/true, /*allow_union=*/true);
  SearchSpace s;
  s.name = j.contains("name") ? name_value(top.at("name")) : source_path;
  if (has_union) {
    // Axes beside "union" would be silently ignored: they belong in "base" or in an entry.
    for (const char* a : kAxisKeys)
      if (j.contains(a))
        top.at(a).fail("is an axis beside \"union\" (put it in \"base\" to apply it to every entry, or in an entry)");
    std::optional<Field> base;
    if (j.contains("base")) {
      base.emplace(top.at("base"));
      if (!base->value.is_object()) base->fail(fmt::format("is {}, not an object of axes", type_name(base->value)));
      check_keys(*base, /*allow_name=*/false, /*allow_union=*/false);
    }
    const Field u = top.at("union");
    non_empty_array(u, "grid objects");
    for (size_t i = 0; i < u.value.size(); ++i) {
      const Field g = u.at(i);
      if (!g.value.is_object()) g.fail(fmt::format("is {}, not a grid object", type_name(g.value)));
      check_keys(g, /*allow_name=*/true, /*allow_union=*/false);
      s.grids.push_back(parse_grid(g, base ? &*base : nullptr, "grid"));
    }
  } else {
    if (j.contains("base")) top.at("base").fail("is given without \"union\" (a base is what union entries share)");
    s.grids.push_back(parse_grid(top, nullptr, s.name));
    s.grids.back().name = s.name;
  }
  uint64_t total = 0;
  for (size_t i = 0; i < s.grids.size(); ++i) {
    const uint64_t n = points(s.grids[i]);
    if (n > kMaxPoints - total)
      DGT_THROW(ErrorKind::kUsage,
                "{}: {}: the space has more than {} points (the cross product of the axes{}); narrow an axis or split "
                "the file",
                source, has_union ? "/union/" + std::to_string(i) : std::string("the top level"), kMaxPoints,
                has_union ? " of every entry up to this one" : "");
    total += n;
  }
  return s;
}

SearchSpace SearchSpace::parse(const std::string& text, const std::string& source) {
  return from_json(parse_json_text(text, source), source);  // depth, syntax and repeated keys: core/json_text.hpp
}

const char* default_space_json();  // generated from configs/spaces/sm90-default.json

SearchSpace SearchSpace::builtin_default() {
  return parse(default_space_json(), "builtin sm90-default (configs/spaces/sm90-default.json)");
}

SearchSpace SearchSpace::load(const std::string& path) {
  return parse(read_input_file(path, "search space file"), path);
}

}  // namespace dgt
