#include "problem/grouped_problem.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/int_math.hpp"

namespace dgt {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

std::optional<int64_t> to_int(std::string_view s) {
  int64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

int64_t int_field(std::string_view value, std::string_view field, std::string_view where) {
  const auto v = to_int(value);
  if (!v) DGT_THROW(ErrorKind::kUsage, "{}: {}='{}' is not an integer", where, field, escaped(value));
  return *v;
}

/// splitmix64 (Steele, Lea, Flood 2014): the same stream on every platform.
struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t below(uint64_t n) { return next() % n; }               // bias negligible for n << 2^64
};

}  // namespace

const char* to_string(GroupKind k) { return k == GroupKind::kMasked ? "masked" : "contiguous"; }

GroupKind parse_group_kind(std::string_view text) {
  if (text == "contiguous") return GroupKind::kContiguous;
  if (text == "masked") return GroupKind::kMasked;
  DGT_THROW(ErrorKind::kUsage, "group kind '{}' is not contiguous or masked", escaped(text));
}

std::vector<int64_t> grouped_rows_from(std::string_view spec, int groups, std::string_view where) {
  const auto parts = split(spec, ':');
  auto num = [&](size_t i, std::string_view what) {
    const auto v = to_int(parts[i]);
    if (!v || *v < 0)
      DGT_THROW(ErrorKind::kUsage, "{}: rows distribution '{}': {} '{}' is not a non-negative integer", where,
                escaped(spec), what, escaped(parts[i]));
    return *v;
  };
  std::vector<int64_t> rows(static_cast<size_t>(groups), 0);
  if (parts[0] == "skew" && parts.size() == 3) {
    SplitMix rng{static_cast<uint64_t>(num(1, "SEED"))};
    const int64_t total = num(2, "TOTAL");
    if (total > (int64_t(1) << 30))
      DGT_THROW(ErrorKind::kUsage, "{}: rows distribution '{}': TOTAL must be <= 2^30", where, escaped(spec));
    // Per-group weights u^4: a few groups take most rows, many get few or none.
    std::vector<double> cum(static_cast<size_t>(groups));
    double acc = 0;
    for (int g = 0; g < groups; ++g) {
      const double u = rng.uniform();
      acc += u * u * u * u;
      cum[static_cast<size_t>(g)] = acc;
    }
    for (int64_t r = 0; r < total; ++r) {
      const double x = rng.uniform() * acc;
      const size_t g = std::min<size_t>(static_cast<size_t>(std::upper_bound(cum.begin(), cum.end(), x) - cum.begin()),
                                        cum.size() - 1);
      ++rows[g];
    }
    return rows;
  }
  if (parts[0] == "route" && parts.size() == 4) {
    SplitMix rng{static_cast<uint64_t>(num(1, "SEED"))};
    const int64_t tokens = num(2, "TOKENS"), topk = num(3, "TOPK");
    if (topk < 1 || topk > groups)
      DGT_THROW(ErrorKind::kUsage, "{}: rows distribution '{}': TOPK must be in 1..groups ({})", where,
                escaped(spec), groups);
    // Bounds by division (TOKENS x TOPK overflowed for huge TOKENS), and on TOKENS x G too: a token's TOPK distinct
    // groups are drawn by rejection, about G ln G draws per token when TOPK is close to G.
    if (tokens > (int64_t(1) << 30) / topk || tokens > (int64_t(1) << 30) / groups)
      DGT_THROW(ErrorKind::kUsage, "{}: rows distribution '{}': TOKENS x TOPK and TOKENS x groups must be <= 2^30",
                where, escaped(spec));
    std::vector<int> picked;
    for (int64_t t = 0; t < tokens; ++t) {
      picked.clear();
      while (static_cast<int64_t>(picked.size()) < topk) {
        const int g = static_cast<int>(rng.below(static_cast<uint64_t>(groups)));
        if (std::find(picked.begin(), picked.end(), g) == picked.end()) picked.push_back(g);
      }
      for (int g : picked) ++rows[static_cast<size_t>(g)];
    }
    return rows;
  }
  DGT_THROW(ErrorKind::kUsage,
            "{}: rows distribution '{}' is not skew:SEED:TOTAL or route:SEED:TOKENS:TOPK", where,
            escaped(spec));
}

int64_t GroupedProblem::total_rows() const {
  if (kind == GroupKind::kMasked) return int64_t(groups) * m_max;
  int64_t t = 0;
  for (int64_t r : rows) t += round_up(r, kGroupRowAlign);
  return t;
}

int64_t GroupedProblem::real_rows() const { return std::accumulate(rows.begin(), rows.end(), int64_t(0)); }

std::vector<int64_t> GroupedProblem::group_starts() const {
  std::vector<int64_t> s(rows.size());
  int64_t at = 0;
  for (size_t g = 0; g < rows.size(); ++g) {
    s[g] = kind == GroupKind::kMasked ? int64_t(g) * m_max : at;
    at += round_up(rows[g], kGroupRowAlign);
  }
  return s;
}

Problem GroupedProblem::dense_view() const {
  Problem p = Problem::dense(std::max<int64_t>(total_rows(), 1), n, k);
  p.scale = scale;
  p.accum = accum;
  return p;
}

Problem GroupedProblem::keyed() const {
  Problem p = dense_view();
  p.groups = groups;
  p.group_kind = kind;
  p.m_max = kind == GroupKind::kMasked ? m_max : 0;
  p.expected_m = kind == GroupKind::kMasked ? expected_m : 0;
  return p;
}

std::string GroupedProblem::rows_list() const {
  std::string s;
  for (size_t i = 0; i < rows.size(); ++i) s += (i ? "," : "") + std::to_string(rows[i]);
  return s;
}

std::string grouped_text(const GroupedProblem& g) {
  const bool masked = g.kind == GroupKind::kMasked;
  std::string s = fmt::format("kind={} groups={} {}={}", to_string(g.kind), g.groups,
                              masked ? "masked_m" : "m_per_group", g.rows_text.empty() ? g.rows_list() : g.rows_text);
  if (masked) s += fmt::format(" m_max={} expected_m={}", g.m_max, g.expected_m);
  s += fmt::format(" {} {}", g.n, g.k);
  if (g.scale != ScaleMode::kPerTensor) s += fmt::format(" scale={}", to_string(g.scale));
  if (g.accum != Accum::kPromote) s += fmt::format(" accum={}", to_string(g.accum));
  return s;
}

std::vector<int32_t> GroupedProblem::layout() const {
  if (kind == GroupKind::kMasked) return std::vector<int32_t>(rows.begin(), rows.end());
  std::vector<int32_t> m(static_cast<size_t>(total_rows()), -1);
  const auto starts = group_starts();
  for (size_t g = 0; g < rows.size(); ++g)
    std::fill_n(m.begin() + starts[g], rows[g], static_cast<int32_t>(g));
  return m;
}

std::string GroupedProblem::label() const {
  std::string s = fmt::format("{} G{} {}={}", to_string(kind), groups,
                              kind == GroupKind::kMasked ? "masked_m" : "m_per_group", rows_text);
  if (kind == GroupKind::kMasked) s += fmt::format(" m_max={} expected_m={}", m_max, expected_m);
  s += fmt::format(" N{} K{}", n, k);
  if (scale != ScaleMode::kPerTensor) s += " block";
  if (accum == Accum::kFast) s += " fast";
  return s;
}

void validate_grouped(const GroupedProblem& g, std::string_view where) {
  if (g.groups < 1 || g.groups > kMaxGroups)
    DGT_THROW(ErrorKind::kUsage, "{}: groups={} must be in 1..{}", where, g.groups, kMaxGroups);
  const char* rows_field = g.kind == GroupKind::kMasked ? "masked_m" : "m_per_group";
  if (static_cast<int64_t>(g.rows.size()) != g.groups)
    DGT_THROW(ErrorKind::kUsage, "{}: {} has {} counts, groups={} (one per group, or one count for all)", where,
              rows_field, g.rows.size(), g.groups);
  for (size_t i = 0; i < g.rows.size(); ++i)
    if (g.rows[i] < 0)
      DGT_THROW(ErrorKind::kUsage, "{}: {}: group {} has {} rows (counts must be >= 0)", where, rows_field, i,
                g.rows[i]);
  // Each count and M_max bounded before any total is formed (the totals are int64 sums and products that wrapped
  // for counts near 2^63, letting a line through the 2^31 rule below under a wrong key).
  constexpr int64_t kMaxRows = (int64_t(1) << 31) - 1;
  for (size_t i = 0; i < g.rows.size(); ++i)
    if (g.rows[i] > kMaxRows)
      DGT_THROW(ErrorKind::kUsage, "{}: {}: group {} has {} rows (must be < 2^31)", where, rows_field, i, g.rows[i]);
  if (g.kind == GroupKind::kMasked && g.m_max > kMaxRows / std::max(g.groups, 1))
    DGT_THROW(ErrorKind::kUsage, "{}: groups={} x m_max={} rows of A in all (must be < 2^31)", where, g.groups, g.m_max);
  if (g.kind == GroupKind::kMasked) {
    if (g.m_max < kGroupRowAlign || g.m_max % kGroupRowAlign != 0)
      DGT_THROW(ErrorKind::kUsage, "{}: m_max={} must be a positive multiple of {} (rule G5: whole m-blocks per group)",
                where, g.m_max, kGroupRowAlign);
    for (size_t i = 0; i < g.rows.size(); ++i)
      if (g.rows[i] > g.m_max)
        DGT_THROW(ErrorKind::kUsage, "{}: masked_m: group {} has {} rows > m_max={} (masked_m[g] <= M_max)", where, i,
                  g.rows[i], g.m_max);
    if (g.expected_m < 1) DGT_THROW(ErrorKind::kUsage, "{}: expected_m={} must be >= 1", where, g.expected_m);
  } else if (g.real_rows() == 0) {
    DGT_THROW(ErrorKind::kUsage, "{}: m_per_group: every group is empty (a contiguous problem needs at least one row)",
              where);
  }
  if (g.total_rows() >= (int64_t(1) << 31))
    DGT_THROW(ErrorKind::kUsage, "{}: {} rows of A in all (must be < 2^31)", where, g.total_rows());
  if (g.scale != ScaleMode::kPerTensor && g.scale != ScaleMode::kBlock)
    DGT_THROW(ErrorKind::kUsage, "{}: scale={} (grouped problems take tensor or block; rule G4)", where,
              to_string(g.scale));
  // The dense rule would advise padding lda or ldb, fields a grouped line does not have: A's and B's rows are K
  // e4m3 elements (bytes) apart, so the TMA stride rule is a rule on K itself.
  if (g.k >= 1 && g.k % 16 != 0)
    DGT_THROW(ErrorKind::kUsage,
              "{}: K={}: the rows of A and B are K e4m3 elements = {} bytes apart, not a multiple of 16 bytes (TMA "
              "rule: every global stride of a tensor map must be a multiple of 16 bytes); a grouped problem has no "
              "lda or ldb to pad: use a K that is a multiple of 16, e.g. K={} with the extra columns of A and B zero",
              where, g.k, g.k, round_up(g.k, int64_t(16)));
  try {
    validate_problem(g.dense_view());
  } catch (const Error& e) {
    // The dense rules speak of A (total rows x K) and B (N x K): name the grouped fields they bound.
    DGT_THROW(ErrorKind::kUsage, "{}: N={} K={}: {}", where, g.n, g.k, e.message());
  }
}

GroupedProblem parse_grouped_problem(std::string_view text, std::string_view where) {
  GroupedProblem g;
  std::optional<std::string_view> kind, groups, rows, m_max, expected_m;
  std::vector<int64_t> bare;
  std::vector<std::string_view> tokens;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) tokens.push_back(text.substr(start, i - start));
  }
  for (std::string_view tok : tokens) {
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos) {
      bare.push_back(int_field(tok, bare.empty() ? "N" : "K", where));
      continue;
    }
    const std::string_view key = tok.substr(0, eq), value = tok.substr(eq + 1);
    std::optional<std::string_view>* slot = key == "kind"       ? &kind
                                            : key == "groups"   ? &groups
                                            : key == "m_per_group" || key == "masked_m" ? &rows
                                            : key == "m_max"      ? &m_max
                                            : key == "expected_m" ? &expected_m
                                                                  : nullptr;
    if (key == "scale") {
      try {
        g.scale = parse_scale_mode(value);
      } catch (const Error& e) {
        DGT_THROW(ErrorKind::kUsage, "{}: scale: {}", where, e.message());
      }
      continue;
    }
    if (key == "accum") {
      try {
        g.accum = parse_accum(value);
      } catch (const Error& e) {
        DGT_THROW(ErrorKind::kUsage, "{}: accum: {}", where, e.message());
      }
      continue;
    }
    if (slot == nullptr)
      DGT_THROW(ErrorKind::kUsage,
                "{}: unknown field '{}' (expected kind, groups, m_per_group, masked_m, m_max, expected_m, scale, "
                "accum, then N and K)",
                where, escaped(key));
    if (*slot) DGT_THROW(ErrorKind::kUsage, "{}: field {} given twice", where, escaped(key));
    *slot = value;
    if (key == "m_per_group" || key == "masked_m") g.rows_text = std::string(value);
    if (key == "masked_m" && kind && *kind == "contiguous")
      DGT_THROW(ErrorKind::kUsage, "{}: masked_m is a masked field (kind=contiguous takes m_per_group)", where);
  }
  if (!kind) DGT_THROW(ErrorKind::kUsage, "{}: missing kind= (contiguous or masked)", where);
  if (*kind == "contiguous")
    g.kind = GroupKind::kContiguous;
  else if (*kind == "masked")
    g.kind = GroupKind::kMasked;
  else
    DGT_THROW(ErrorKind::kUsage, "{}: kind='{}' (expected contiguous or masked)", where, escaped(*kind));
  const bool masked = g.kind == GroupKind::kMasked;
  const char* rows_field = masked ? "masked_m" : "m_per_group";
  if (text.find(masked ? "m_per_group=" : "masked_m=") != std::string_view::npos)
    DGT_THROW(ErrorKind::kUsage, "{}: kind={} takes {}=, not {}=", where, *kind, rows_field,
              masked ? "m_per_group" : "masked_m");
  if (!groups) DGT_THROW(ErrorKind::kUsage, "{}: missing groups=", where);
  const int64_t ng = int_field(*groups, "groups", where);
  if (ng < 1 || ng > kMaxGroups) DGT_THROW(ErrorKind::kUsage, "{}: groups={} must be in 1..{}", where, ng, kMaxGroups);
  g.groups = static_cast<int>(ng);
  if (!rows) DGT_THROW(ErrorKind::kUsage, "{}: missing {}= (a list, one count, or a distribution)", where, rows_field);
  if (rows->find(':') != std::string_view::npos) {
    g.rows = grouped_rows_from(*rows, g.groups, where);
  } else {
    for (std::string_view v : split(*rows, ',')) g.rows.push_back(int_field(v, rows_field, where));
    if (g.rows.size() == 1) g.rows.assign(static_cast<size_t>(g.groups), g.rows[0]);
  }
  if (bare.size() != 2)
    DGT_THROW(ErrorKind::kUsage, "{}: expected N and K as two bare integers after the fields, got {}", where,
              bare.size());
  g.n = bare[0], g.k = bare[1];
  if (masked) {
    const int64_t biggest = g.rows.empty() ? 0 : *std::max_element(g.rows.begin(), g.rows.end());
    g.m_max = m_max ? int_field(*m_max, "m_max", where) : std::max(kGroupRowAlign, round_up(biggest, kGroupRowAlign));
    g.expected_m = expected_m ? int_field(*expected_m, "expected_m", where)
                              : std::max<int64_t>(1, ceil_div(g.real_rows(), int64_t(g.groups)));
  } else {
    if (m_max) DGT_THROW(ErrorKind::kUsage, "{}: m_max is a masked field (kind=contiguous)", where);
    if (expected_m) DGT_THROW(ErrorKind::kUsage, "{}: expected_m is a masked field (kind=contiguous)", where);
  }
  validate_grouped(g, where);
  // As for contiguous (validate_grouped): a line names the counts it is tuned and measured at, and a masked line
  // without a row would time a kernel that computes nothing under a key real decode steps look up. Checked here, not
  // in validate_grouped: the run-time key (dgt::GroupedGemm) never sees the counts, and a step may route no token.
  if (masked && g.real_rows() == 0)
    DGT_THROW(ErrorKind::kUsage, "{}: masked_m: every group is empty (a masked problem needs at least one row)", where);
  // A hint of rows per group: no group holds more than M_max, so a larger hint describes no problem a line could
  // mean. Checked here too: the run-time op passes the serving engine's hint through, and keys stored before keep
  // their lookups.
  if (masked && g.expected_m > g.m_max)
    DGT_THROW(ErrorKind::kUsage, "{}: expected_m={} must be <= m_max={} (no group has more than M_max rows)", where,
              g.expected_m, g.m_max);
  return g;
}

}  // namespace dgt
