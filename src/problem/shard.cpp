#include "problem/shard.hpp"

#include <charconv>
#include <limits>
#include <unordered_map>

#include "core/error.hpp"
#include "core/escape.hpp"

namespace dgt {

namespace {

constexpr const char* kRule = "want i/n: decimal integers with 0 <= i < n and n >= 1, e.g. 0/4, 1/4, 2/4, 3/4";

/// A decimal integer in [0, 2^31-1] from digits only; false for anything else (sign, prefix, space, overflow).
bool decimal(const std::string& s, int& out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || end != s.data() + s.size() || v > std::numeric_limits<int>::max()) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const std::string quoted = fmt::format("'{}'", escaped(text));
  const size_t slash = text.find('/');
  if (slash == std::string::npos)
    DGT_THROW(ErrorKind::kUsage, "{}: no '/' between the shard index and the shard count ({})", quoted, kRule);
  const std::string i_text = text.substr(0, slash), n_text = text.substr(slash + 1);
  Shard s;
  if (!decimal(i_text, s.index))
    DGT_THROW(ErrorKind::kUsage,
              "{}: shard index '{}' is not a decimal integer up to 2147483647 (digits 0-9 only: no sign, no 0x "
              "prefix, no spaces) ({})",
              quoted, escaped(i_text), kRule);
  if (!decimal(n_text, s.count))
    DGT_THROW(ErrorKind::kUsage,
              "{}: shard count '{}' is not a decimal integer up to 2147483647 (digits 0-9 only: no sign, no 0x "
              "prefix, no spaces) ({})",
              quoted, escaped(n_text), kRule);
  if (s.count < 1) DGT_THROW(ErrorKind::kUsage, "{}: shard count 0: there must be at least one shard ({})", quoted, kRule);
  if (s.index >= s.count)
    DGT_THROW(ErrorKind::kUsage, "{}: shard index {} is not below the shard count {} (shards are numbered from 0; {})",
              quoted, s.index, s.count, kRule);
  return s;
}

ShardSelection select_shard(const std::vector<ShapeEntry>& all, const Shard& shard) {
  ShardSelection sel;
  sel.shard = shard;
  std::unordered_map<std::string, int> number;  // problem key -> its index among the file's distinct problems
  for (const auto& e : all) {
    const auto [it, first] = number.emplace(e.problem.key(), static_cast<int>(number.size()));
    if (it->second % shard.count != shard.index) continue;
    sel.entries.push_back(e);
    if (first) ++sel.problems;
  }
  sel.total_problems = static_cast<int>(number.size());
  return sel;
}

std::string ShardSelection::summary(const std::string& file) const {
  std::string s = "shard " + shard.text() + " of " + escaped(file) + ": " + std::to_string(problems) + " of " +
                  std::to_string(total_problems) + " problems";
  if (entries.empty())
    return s + ": nothing to sweep (problem j of the file goes to shard j mod " + std::to_string(shard.count) +
           ", and the file has " + std::to_string(total_problems) + ")";
  s += " (problem j of the file goes to shard j mod " + std::to_string(shard.count) + "; lines";
  constexpr size_t kListed = 16;  // a log line, not a listing: the rest is counted
  for (size_t i = 0; i < entries.size() && i < kListed; ++i) s += (i ? ", " : " ") + std::to_string(entries[i].line);
  if (entries.size() > kListed) s += ", ... " + std::to_string(entries.size() - kListed) + " more";
  return s + ")";
}

}  // namespace dgt
