#include "space/grouped_defaults.hpp"

#include <algorithm>

#include "space/grouped_rules.hpp"

namespace dgt {

namespace {

// The H200 measurements' candidates (results/h200/grouped-epilogue-2026-12-03.md and grouped-scales-2026-12-03.md,
// tools/grouped_bench).
constexpr const char* kBlock128 = "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
// The same tile walking along N first (rn1): it won every contiguous down problem (N 7168 > K 2048) in both machine
// starts of grouped-scales-2026-12-03.md, by 4-6% over rm8, which won gate_up (N 4096 < K 7168).
constexpr const char* kBlock128AlongN = "128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1";
constexpr const char* kBlock64 = "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
// Rows per group up to which the 64-row tile won the masked rows of that report (1, 16, 64 won; 256 lost).
constexpr int64_t kSmallExpectedM = 64;

}  // namespace

KernelConfig default_grouped_config(const GroupedProblem& g) {
  const bool small = g.kind == GroupKind::kMasked && g.expected_m <= kSmallExpectedM;
  const bool along_n = g.kind == GroupKind::kContiguous && g.n > g.k;
  return KernelConfig::parse_key(small ? kBlock64 : along_n ? kBlock128AlongN : kBlock128);
}

std::vector<KernelConfig> grouped_default_configs(const GroupedProblem& g) {
  std::vector<KernelConfig> out{default_grouped_config(g)};
  for (const char* key : {kBlock128, kBlock128AlongN, kBlock64}) {
    const KernelConfig c = KernelConfig::parse_key(key);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  std::erase_if(out, [&](const KernelConfig& c) { return !grouped_config_violation(c, g).empty(); });
  return out;
}

}  // namespace dgt
