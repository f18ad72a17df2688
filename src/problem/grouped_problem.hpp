// GroupedProblem: one MoE grouped GEMM (DeepGEMM's m-grouped contiguous and masked layouts), its text form and rules.
// The grouped kernel (kernels/gemm/grouped_scheduler.cuh) documents what the device does with these layouts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "problem/problem.hpp"

namespace dgt {

/// The two layouts: GroupKind (problem/problem.hpp), with the layouts each means.

/// Rows of a contiguous segment are aligned to this (DeepGEMM's Hopper alignment); masked M_max is a multiple of it.
inline constexpr int64_t kGroupRowAlign = 128;

/// The most groups (G) a grouped problem may have: what the grouped kernels take.
inline constexpr int kMaxGroups = 4096;

/// One grouped GEMM. Scales (FP32, device memory):
///  - per-tensor: one scale_a and one scale_b for all groups.
///  - block (DeepGEMM's 1x128 activations, 128x128 weights): A's scales MN-major, contiguous one array
///    [ceil(K/128)][M_sum] (ld = M_sum), masked [G][ceil(K/128)][M_max] (ld = M_max); B's [G][ceil(N/128)][K_pad],
///    K_pad = round_up(ceil(K/128), 4) as the dense block layout (ScaleLayout::ld_b).
/// Output bf16, no bias or activation.
struct GroupedProblem {
  GroupKind kind = GroupKind::kContiguous;
  int groups = 0;
  std::vector<int64_t> rows;  ///< real rows per group: contiguous m_per_group, masked masked_m
  int64_t m_max = 0;          ///< masked: rows per group in A and D (a multiple of 128); contiguous: 0
  int64_t expected_m = 0;     ///< masked: the host's hint of rows per group; contiguous: 0
  int64_t n = 0, k = 0;       ///< of one group
  ScaleMode scale = ScaleMode::kPerTensor;
  Accum accum = Accum::kPromote;
  std::string rows_text;      ///< the rows field as given (a list or a distribution), for labels

  /// Rows of A's and D's 2-D view: contiguous sum of round_up(m_g, 128), masked G * M_max.
  int64_t total_rows() const;
  /// sum of m_g: the rows that count for TFLOPS.
  int64_t real_rows() const;
  /// First row of each group in A's and D's 2-D view (contiguous: segment starts; masked: g * M_max).
  std::vector<int64_t> group_starts() const;
  /// 2 x real_rows x N x K.
  double flops() const { return 2.0 * double(real_rows()) * double(n) * double(k); }
  /// The dense problem of the same operand types, scale mode and accumulation over total_rows() x N x K: what the
  /// resource model, the KernelSpec and the dense rules (validate_problem) see.
  Problem dense_view() const;
  /// dense_view() plus the grouped identity (Problem::groups, group_kind, m_max, expected_m): the problem the tuning
  /// DB stores this grouped GEMM's trials, baselines and winner under (Problem::key() documents the key). The
  /// per-group counts (rows) are not part of it: two distributions with the same G and total M (contiguous) or
  /// M_max and expected_m (masked) share one key.
  Problem keyed() const;
  /// The rows as a comma list of G counts ("8192,8192,0,..."), what a measurement ran with (rows_text may be a
  /// seeded distribution instead).
  std::string rows_list() const;
  /// Host copy of the device layout array: contiguous m_indices (total_rows() entries), masked masked_m (G).
  std::vector<int32_t> layout() const;
  /// e.g. "contiguous G4 m=8192,8192,8192,8192 N4096 K7168 block".
  std::string label() const;
};

/// "contiguous" / "masked".
const char* to_string(GroupKind k);
/// Parses to_string's names. Throws Error(kUsage) naming the value and the choices.
GroupKind parse_group_kind(std::string_view text);

/// The text form of `g` that parse_grouped_problem() reads back to `g` (the rows as given in rows_text, masked
/// m_max and expected_m always written, scale and accum only when not the default), e.g.
///   "kind=masked groups=4 masked_m=skew:7:256 m_max=128 expected_m=64 4096 7168 scale=block".
/// No newline; a shapes-file line may follow it with " name=...".
std::string grouped_text(const GroupedProblem& g);

/// Parses the text form (whitespace-separated; `key=value` fields in any order, then N and K as bare integers):
///   kind=contiguous groups=G m_per_group=ROWS N K [scale=tensor|block] [accum=promote|fast]
///   kind=masked groups=G masked_m=ROWS [m_max=M] [expected_m=E] N K [scale=..] [accum=..]
/// ROWS is a comma list of G counts, one count for every group, or a seeded distribution (grouped_rows_from):
///   skew:SEED:TOTAL         TOTAL rows, each drawn from fixed per-group weights u^4 (u uniform per group)
///   route:SEED:TOKENS:TOPK  each token picks TOPK distinct groups uniformly (MoE routing); counts per group
/// m_max defaults to the smallest multiple of 128 >= the largest count (at least 128), expected_m to the mean
/// count rounded up (at least 1). `where` prefixes every error ("--grouped" or "file:line"). Throws
/// Error(kUsage) naming the field and the rule; the result has passed validate_grouped, and a masked line has at least
/// one real row (as validate_grouped requires of a contiguous one).
GroupedProblem parse_grouped_problem(std::string_view text, std::string_view where);

/// Per-group counts of a distribution spec ("skew:..." or "route:..."), deterministic for a seed on every
/// platform (splitmix64, no std:: distribution). Throws Error(kUsage) naming `where` for a malformed spec.
std::vector<int64_t> grouped_rows_from(std::string_view spec, int groups, std::string_view where);

/// The rules: 1 <= groups <= 4096; one count per group, each >= 0; masked: m_max >= 128 and a multiple of 128,
/// every count <= m_max, 1 <= expected_m <= m_max; contiguous: at least one real row; total_rows() < 2^31; N, K and the
/// scale mode as validate_problem requires of dense_view(); scale per-tensor or block. Throws Error(kUsage)
/// prefixed by `where`, naming the field and the rule.
void validate_grouped(const GroupedProblem& g, std::string_view where);

}  // namespace dgt
