#include "loader/grouped_choice.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "space/grouped_defaults.hpp"
#include "space/grouped_rules.hpp"

namespace dgt {

namespace {

ScaleMode scale_mode_of(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::kPerTensor: return ScaleMode::kPerTensor;
    case Fp8Scaling::kBlock: return ScaleMode::kBlock;
    case Fp8Scaling::kChannel:
    case Fp8Scaling::kBlock1d1d:
      DGT_THROW(ErrorKind::kInvalid,
                "dgt::GroupedGemm: GroupedGemmProblem.scale = {} is not supported: grouped GEMMs take per-tensor "
                "(kPerTensor) or 1x128 / 128x128 block (kBlock) scales (rule G4)",
                static_cast<int>(s) == static_cast<int>(Fp8Scaling::kChannel) ? "kChannel" : "kBlock1d1d");
  }
  DGT_THROW(ErrorKind::kUsage, "dgt::GroupedGemm: GroupedGemmProblem.scale = {} is not a dgt::Fp8Scaling value",
            static_cast<int>(s));
}

}  // namespace

GroupedProblem grouped_problem_of(const GroupedGemmProblem& p) {
  const int layout = static_cast<int>(p.layout);
  if (layout < 0 || layout > static_cast<int>(GroupedLayout::kMasked))
    DGT_THROW(ErrorKind::kUsage, "dgt::GroupedGemm: GroupedGemmProblem.layout = {} is not a dgt::GroupedLayout value "
              "(0 contiguous, 1 masked)", layout);
  const bool masked = p.layout == GroupedLayout::kMasked;
  GroupedProblem g;
  g.kind = masked ? GroupKind::kMasked : GroupKind::kContiguous;
  g.scale = scale_mode_of(p.scale);
  g.n = p.n;
  g.k = p.k;
  if (p.groups < 1 || p.groups > 4096)
    DGT_THROW(ErrorKind::kInvalid, "dgt::GroupedGemm: GroupedGemmProblem.groups = {} must be in 1 .. 4096", p.groups);
  // Checked here, not by validate_grouped: the host never sees the counts, so M itself carries the 128-row rule.
  if (p.m < kGroupRowAlign || p.m % kGroupRowAlign != 0)
    DGT_THROW(ErrorKind::kInvalid,
              "dgt::GroupedGemm: GroupedGemmProblem.m = {} ({}) must be a positive multiple of {} ({})", p.m,
              masked ? "M_max" : "M_sum",
              kGroupRowAlign,
              masked ? "rule G5: every group holds whole m-blocks"
                     : "every group's segment starts at a multiple of 128 rows and holds whole 128-row blocks");
  // Bounded before G x M_max is formed (it wrapped for M near 2^62): A's rows must stay below 2^31.
  if (p.m > ((int64_t(1) << 31) - 1) / (masked ? p.groups : 1))
    DGT_THROW(ErrorKind::kInvalid, "dgt::GroupedGemm: GroupedGemmProblem.m = {} ({}) makes A {} rows of 2^31 or more",
              p.m, masked ? "M_max, times groups" : "M_sum", masked ? "G x M_max" : "M_sum");
  if (masked && p.expected_m < 1)
    DGT_THROW(ErrorKind::kInvalid, "dgt::GroupedGemm: GroupedGemmProblem.expected_m = {} must be >= 1 (masked)",
              p.expected_m);
  if (!masked && p.expected_m != 0)
    DGT_THROW(ErrorKind::kInvalid, "dgt::GroupedGemm: GroupedGemmProblem.expected_m = {} must be 0 for the "
              "contiguous layout (it is the masked layout's hint)", p.expected_m);
  g.groups = p.groups;
  g.rows.assign(static_cast<size_t>(p.groups), 0);
  if (masked) {
    g.m_max = p.m;
    g.expected_m = p.expected_m;
    g.rows_text = "(device)";
  } else {
    g.rows[0] = p.m;  // total_rows() == M_sum; the real split is in m_indices on the device
    g.rows_text = fmt::format("(device; M_sum {})", p.m);
  }
  try {
    validate_grouped(g, "dgt::GroupedGemm");
  } catch (const Error& e) {
    // validate_grouped words its rules for shapes files (kUsage); at run time a rule broken by the key is kInvalid,
    // as dgt::Gemm reports a TMA rule.
    throw Error(ErrorKind::kInvalid, e.message());
  }
  return g;
}

std::optional<GroupedGemmProblem> grouped_key_of(const Problem& keyed) {
  if (!keyed.is_grouped() || keyed.accum != Accum::kPromote) return std::nullopt;
  if (keyed.scale != ScaleMode::kPerTensor && keyed.scale != ScaleMode::kBlock) return std::nullopt;
  GroupedGemmProblem p;
  const bool masked = keyed.group_kind == GroupKind::kMasked;
  p.layout = masked ? GroupedLayout::kMasked : GroupedLayout::kContiguous;
  p.groups = keyed.groups;
  p.m = masked ? keyed.m_max : keyed.m;
  p.expected_m = masked ? keyed.expected_m : 0;
  p.n = keyed.n;
  p.k = keyed.k;
  p.scale = keyed.scale == ScaleMode::kBlock ? Fp8Scaling::kBlock : Fp8Scaling::kPerTensor;
  return p;
}

int64_t grouped_ladder_m(const Problem& keyed) {
  return keyed.group_kind == GroupKind::kMasked ? keyed.expected_m : keyed.m;
}

std::optional<StoredChoice> choose_grouped_winner(const std::vector<EnvironmentWinner>& candidates,
                                                  const GroupedProblem& g, const std::string& kernel_hash,
                                                  const std::string& env_key, const std::string& protocol_kind) {
  // The dense rule ladders over Problem::m: each grouped problem carries its ladder axis there instead (injective:
  // masked m is G x M_max, and M_max stays in the problem), then the stored problem is put back into `from`.
  auto project = [](Problem q) {
    q.m = grouped_ladder_m(q);
    return q;
  };
  const Problem key = g.keyed();
  std::vector<EnvironmentWinner> projected;
  std::vector<const EnvironmentWinner*> origin;
  for (const EnvironmentWinner& c : candidates) {
    const Problem& q = c.problem;
    if (!q.is_grouped() || q.group_kind != key.group_kind || q.groups != key.groups) continue;
    projected.push_back(c);
    projected.back().problem = project(q);
    origin.push_back(&c);
  }
  // Masked winners of several M_max at one expected_m (same environment and protocol): only those of the M_max nearest
  // to g's in log distance stand (the dense rule would order them by key text). Two equally near (one above, one
  // below) both stand, and the dense rule's order decides between them.
  if (key.group_kind == GroupKind::kMasked) {
    // True when |log a - log M| < |log b - log M| for g's M_max M, exactly: max(a, M) / min(a, M) < max(b, M) /
    // min(b, M), cross-multiplied in 128 bits (M_max < 2^31).
    auto nearer = [&](int64_t a, int64_t b) {
      using u128 = unsigned __int128;
      const int64_t m = key.m_max;
      return u128(std::max(a, m)) * u128(std::min(b, m)) < u128(std::max(b, m)) * u128(std::min(a, m));
    };
    std::vector<bool> keep(projected.size(), true);
    for (size_t i = 0; i < projected.size(); ++i)
      for (size_t j = 0; j < projected.size(); ++j) {
        const EnvironmentWinner &a = projected[i], &b = projected[j];
        if (i != j && a.problem.m == b.problem.m && a.environment_id == b.environment_id &&
            a.protocol_name == b.protocol_name && nearer(b.problem.m_max, a.problem.m_max))
          keep[i] = false;
      }
    size_t w = 0;
    for (size_t i = 0; i < projected.size(); ++i)
      if (keep[i]) {
        if (w != i) projected[w] = std::move(projected[i]);  // never a self-move
        origin[w++] = origin[i];
      }
    projected.resize(w);
    origin.resize(w);
  }
  // A winner of another problem is legal only when the grouped kernel can run it on g (the ladder may cross a rule:
  // e.g. a config whose BLOCK_M does not divide g's M_max).
  const LegalFn legal = [&](const KernelConfig& config, const Problem&) {
    return grouped_config_violation(config, g).empty();
  };
  std::optional<StoredChoice> w = choose_stored_winner(projected, project(key), kernel_hash, env_key, protocol_kind, legal);
  if (!w) return w;
  for (size_t i = 0; i < projected.size(); ++i)
    if (projected[i].problem == w->from && projected[i].environment_id == w->environment_id &&
        projected[i].protocol_name == w->protocol_name) {
      w->from = origin[i]->problem;
      break;
    }
  return w;
}

GroupedResolved resolve_grouped_choice(const GroupedGemmProblem& p, const std::string& explicit_config,
                                       const GroupedLookup* lookup) {
  return resolve_grouped_problem(grouped_problem_of(p), explicit_config, lookup);
}

GroupedResolved resolve_grouped_problem(const GroupedProblem& g, const std::string& explicit_config,
                                        const GroupedLookup* lookup) {
  GroupedResolved r;
  r.problem = g;
  if (!explicit_config.empty()) {
    try {
      r.config = KernelConfig::parse_key(explicit_config);
    } catch (const Error& e) {
      DGT_THROW(ErrorKind::kUsage, "dgt::GroupedGemm: GroupedGemmOptions.config '{}': {}", explicit_config,
                e.message());
    }
    r.choice.source = "explicit";
  } else if (std::optional<StoredChoice> w =
                 lookup ? choose_grouped_winner(lookup->candidates, r.problem, lookup->kernel_hash, lookup->env_key,
                                                lookup->protocol_kind)
                        : std::nullopt) {
    r.config = w->config;
    r.choice.source = w->source;
    r.choice.protocol = w->protocol_name;
    r.choice.tuned_key = w->from.key();
    r.choice.tuned_us = w->tuned_us;
    r.choice.older_kernel = w->older_kernel;
  } else {
    r.config = default_grouped_config(r.problem);
    r.choice.source = "default";
  }
  if (const std::string v = grouped_config_violation(r.config, r.problem); !v.empty())
    DGT_THROW(ErrorKind::kInvalid, "dgt::GroupedGemm: config {} ({}) cannot run {}: {}", r.config.key(),
              r.choice.source, r.problem.label(), v);
  r.choice.config_key = r.config.key();
  return r;
}

GroupedGemmChoice grouped_gemm_choice(const GroupedGemmProblem& problem, const std::string& config) {
  return resolve_grouped_choice(problem, config).choice;
}

}  // namespace dgt
