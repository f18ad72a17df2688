#include "problem/expert_gemms.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/int_math.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {

namespace {
/// "DeepseekV3" of "DeepseekV3ForCausalLM": the model prefix of line names.
std::string model_prefix(const ModelConfig& c) {
  std::string model = c.architecture;
  if (const auto cut = model.find("For"); cut != std::string::npos) model = model.substr(0, cut);
  return model;
}

/// The grouped kernels take per-tensor or block scales (rule G4): a block-scaled model's experts are tuned with
/// block scales, every other mode's with per-tensor ones.
ScaleMode grouped_scale(ScaleMode mode) { return mode == ScaleMode::kBlock ? ScaleMode::kBlock : ScaleMode::kPerTensor; }

std::vector<int64_t> sorted_unique(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}
}  // namespace

ExpertLayout expert_layout(const ModelConfig& c, const ModelSplit& split) {
  const std::string src = escaped(c.source);
  if (c.experts <= 0)
    DGT_THROW(ErrorKind::kUsage, "{}: {} has no routed experts (no grouped GEMMs to list)", src, c.architecture);
  if (c.experts_per_token <= 0)
    DGT_THROW(ErrorKind::kUsage, "{}: missing field 'num_experts_per_tok' (the router's top-k: the rows per token of "
              "the routed experts)", src);
  if (split.ep < 1 || c.experts % split.ep != 0)
    DGT_THROW(ErrorKind::kUsage, "{}: --ep {} does not divide the {} routed experts (n_routed_experts / num_experts)",
              src, split.ep, c.experts);
  // Bounded before G is narrowed to int or any routing is built (a count per group: GBs for 2^31 experts).
  if (c.experts / split.ep > kMaxGroups)
    DGT_THROW(ErrorKind::kUsage, "{}: {} = {} routed experts / --ep {} = {} local experts per GPU: the grouped "
              "kernels take at most G = {} (a larger --ep splits them further)", src, c.experts_field, c.experts,
              split.ep, c.experts / split.ep, kMaxGroups);
  ExpertLayout l;
  l.groups = static_cast<int>(c.experts / split.ep);
  // Without expert parallelism TP splits every expert's intermediate size; with it each GPU holds whole experts.
  const int64_t tp = split.ep > 1 ? 1 : split.tp;
  if (tp < 1 || c.expert_intermediate % tp != 0)
    DGT_THROW(ErrorKind::kUsage, "{}: --tp {} does not divide the experts' intermediate size {} (moe_intermediate_size)",
              src, tp, c.expert_intermediate);
  l.inter = c.expert_intermediate / tp;
  l.topk = std::min<int64_t>(c.experts_per_token, l.groups);
  l.m_max = round_up(kDecodeMaxTokens * split.ep, kGroupRowAlign);
  l.max_expected_m = ceil_div(kDecodeMaxTokens * l.topk, int64_t(l.groups));
  return l;
}

std::vector<int64_t> default_m_sum_ladder() { return {4096, 16384, 65536}; }

std::vector<int64_t> default_expected_m_ladder(const ExpertLayout& layout) {
  // Powers of two to 16, then the 1.5x steps between them: the grouped kernels compile several times slower than the
  // dense ones, and the masked bar is met with these points, so the dense ladder's four steps per octave are not used.
  std::vector<int64_t> points = {1, 2, 4, 8};
  for (int64_t p = 16; p <= layout.max_expected_m; p *= 2) {
    points.push_back(p);
    points.push_back(p + p / 2);
  }
  std::vector<int64_t> out;
  for (int64_t e : points)
    if (e <= layout.max_expected_m) out.push_back(e);
  if (out.empty() || out.back() != layout.max_expected_m) out.push_back(layout.max_expected_m);
  return out;
}

ExpertLadder resolved_ladder(const ExpertLadder& ladder, const ExpertLayout& layout) {
  return ExpertLadder{sorted_unique(ladder.m_sums.empty() ? default_m_sum_ladder() : ladder.m_sums),
                      sorted_unique(ladder.expected_ms.empty() ? default_expected_m_ladder(layout) : ladder.expected_ms)};
}

std::vector<ExpertGemm> expert_gemms(const ModelConfig& c, const ModelSplit& split, const ExpertLadder& ladder,
                                     ScaleMode scale, Accum accum) {
  const ExpertLayout l = expert_layout(c, split);
  const ExpertLadder points = resolved_ladder(ladder, l);
  const std::string src = escaped(c.source);
  // Winners of accum=fast grouped lines could never run: dgt::GroupedGemm, its C API and the Python grouped ops
  // promote (their key has no accumulation field), so the loader and the bundle pass them over.
  if (accum == Accum::kFast)
    DGT_THROW(ErrorKind::kUsage,
              "{}: --accum fast with --experts: the run-time grouped GEMM (dgt::GroupedGemm, the Python grouped ops) "
              "accumulates with promotion only, so fast-accumulation grouped winners would never be used; tune the "
              "experts without --accum fast (a shapes-file line may still say accum=fast for `dgtune sweep`)",
              src);
  const ScaleMode gscale = grouped_scale(scale);
  std::vector<ExpertGemm> out;
  // One point: both roles on the same counts (the same routed tokens feed gate_up, then down).
  auto add = [&](bool masked, int64_t value) {
    const std::string where = fmt::format("{}: routed experts at {} = {}", src, masked ? "expected_m" : "M_sum", value);
    const RouteSpec route = masked ? route_for_expected_m(l.groups, l.topk, value, where)
                                   : route_for_padded_total(l.groups, l.topk, value, where);
    for (const auto& [role, n, k] : {std::tuple<const char*, int64_t, int64_t>{"experts.gate_up_proj", 2 * l.inter, c.hidden},
                                     {"experts.down_proj", c.hidden, l.inter}}) {
      std::string text = fmt::format("kind={} groups={} {}={}", masked ? "masked" : "contiguous", l.groups,
                                     masked ? "masked_m" : "m_per_group", route.text());
      if (masked) text += fmt::format(" m_max={} expected_m={}", l.m_max, value);
      text += fmt::format(" {} {} scale={}", n, k, to_string(gscale));
      if (accum == Accum::kFast) text += " accum=fast";
      ExpertGemm g{role, fmt::format("{}{}", masked ? "masked.em" : "contiguous.msum", value), route,
                   parse_grouped_problem(text, fmt::format("{}, {}", where, role))};
      out.push_back(std::move(g));
    }
  };
  for (int64_t m_sum : points.m_sums) add(false, m_sum);
  for (int64_t e : points.expected_ms) add(true, e);
  return out;
}

std::string expert_shapes_lines(const ModelConfig& c, const ModelSplit& split, const std::vector<ExpertGemm>& gemms) {
  const ExpertLayout l = expert_layout(c, split);
  std::string out = fmt::format(
      "# Routed experts: {} experts, top-{} per token, expert parallelism {} -> G = {} local experts per GPU; gate_up\n"
      "# N = {} K = {}, down N = {} K = {} ({}). M tokens per GPU give M x top_k rows, expected_m = ceil(M x {} / {}).\n"
      "# Contiguous (prefill) at padded total M_sum: counts route:SEED:T:{} with T the tokens nearest (M_sum - G x 64)\n"
      "# / {} whose 128-row segments sum to exactly M_sum. Masked (decode) at expected_m E: route:1:T:{} with\n"
      "# T = floor(E x G / {}), M_max = {} rows per expert (the largest decode step, {} tokens per GPU, x EP).\n",
      c.experts, c.experts_per_token, split.ep, l.groups, 2 * l.inter, c.hidden, c.hidden, l.inter,
      split.ep > 1 ? "whole experts" : fmt::format("intermediate split by TP {}", split.tp), l.topk, l.groups, l.topk,
      l.topk, l.topk, l.topk, l.m_max, kDecodeMaxTokens);
  const std::string model = model_prefix(c);
  for (const ExpertGemm& g : gemms)
    out += grouped_shape_line(g.problem, fmt::format("{}.{}.ep{}.{}", model, g.role, split.ep, g.point)) + "\n";
  return out;
}

std::string model_expert_shapes(const ModelConfig& c, const ModelSplit& split, const ExpertLadder& ladder,
                                const std::string& scale, const std::string& accum) {
  const ScaleMode mode = scale_mode_of(c, scale);
  return expert_shapes_lines(c, split, expert_gemms(c, split, ladder, mode, accum == "fast" ? Accum::kFast : Accum::kPromote));
}

std::string model_tuning_shapes(const std::string& config_path, const ModelSplit& split, const std::vector<int64_t>& ms,
                                const std::string& scale, const std::string& accum, bool experts,
                                const ExpertLadder& ladder) {
  return model_tuning_shapes(load_model_config(config_path), split, ms, scale, accum, experts, ladder);
}

std::string model_tuning_shapes(const ModelConfig& c, const ModelSplit& split, const std::vector<int64_t>& ms,
                                const std::string& scale, const std::string& accum, bool experts,
                                const ExpertLadder& ladder) {
  std::string text = model_shapes(c, split, ms, scale, accum);
  if (experts) text += model_expert_shapes(c, split, ladder, scale, accum);
  return text;
}

}  // namespace dgt
