#include "problem/expert_gemms.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/int_math.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {

std::vector<ExpertGemm> expert_gemms(const ModelConfig& c, const ModelSplit& split, const std::vector<int64_t>& ms,
                                     ScaleMode scale, Accum accum, int64_t decode_max_m) {
  const std::string src = escaped(c.source);
  if (c.experts <= 0)
    DGT_THROW(ErrorKind::kUsage, "{}: {} has no routed experts (no grouped GEMMs to list)", src, c.architecture);
  if (c.experts_per_token <= 0)
    DGT_THROW(ErrorKind::kUsage, "{}: missing field 'num_experts_per_tok' (the router's top-k: the rows per token of "
              "the routed experts)", src);
  if (split.ep < 1 || c.experts % split.ep != 0)
    DGT_THROW(ErrorKind::kUsage, "{}: --ep {} does not divide the {} routed experts", src, split.ep, c.experts);
  const int groups64 = static_cast<int>(c.experts / split.ep);
  // Without expert parallelism TP splits every expert's intermediate size; with it each GPU holds whole experts.
  const int64_t tp = split.ep > 1 ? 1 : split.tp;
  if (c.expert_intermediate % tp != 0)
    DGT_THROW(ErrorKind::kUsage, "{}: --tp {} does not divide the experts' intermediate size {} (moe_intermediate_size)",
              src, tp, c.expert_intermediate);
  const int64_t inter = c.expert_intermediate / tp;
  const int64_t topk = std::min<int64_t>(c.experts_per_token, groups64);
  std::vector<ExpertGemm> out;
  for (int64_t m : ms) {
    const bool decode = m <= decode_max_m;
    // The counts route each token to topk (top_k clipped to G) local groups; expected_m is their mean.
    const int64_t expected = std::max<int64_t>(1, ceil_div(m * topk, int64_t(groups64)));
    for (const auto& [role, n, k] : {std::tuple<const char*, int64_t, int64_t>{"experts.gate_up_proj", 2 * inter, c.hidden},
                                     {"experts.down_proj", c.hidden, inter}}) {
      std::string text = fmt::format("kind={} groups={} {}=route:1:{}:{}", decode ? "masked" : "contiguous", groups64,
                                     decode ? "masked_m" : "m_per_group", m, topk);
      if (decode)
        text += fmt::format(" m_max={} expected_m={}", round_up(m * split.ep, kGroupRowAlign), expected);
      text += fmt::format(" {} {} scale={}", n, k, scale == ScaleMode::kBlock ? "block" : "tensor");
      if (accum == Accum::kFast) text += " accum=fast";
      const std::string where = fmt::format("{}: {} at M = {}", src, role, m);
      out.push_back(ExpertGemm{role, m, parse_grouped_problem(text, where)});
    }
  }
  return out;
}

std::string expert_shapes_lines(const ModelConfig& c, const ModelSplit& split, const std::vector<ExpertGemm>& gemms) {
  std::string model = c.architecture;
  if (const auto cut = model.find("For"); cut != std::string::npos) model = model.substr(0, cut);
  const int64_t groups = split.ep > 0 ? c.experts / split.ep : c.experts;
  const int64_t inter = split.ep > 1 || split.tp < 1 ? c.expert_intermediate : c.expert_intermediate / split.tp;
  std::string out = fmt::format(
      "# Routed experts: {} experts, top-{} per token, expert parallelism {} -> G = {} grouped GEMMs per GPU;\n"
      "# gate_up N = {} K = {}, down N = {} K = {} ({}). Rows per GPU M x top_k, expected_m = ceil(M x min(top_k, G) / G);\n"
      "# decode M (masked, M_max = round_up(M x EP, 128)), prefill M (contiguous), counts route:1:M:TOPK.\n",
      c.experts, c.experts_per_token, split.ep, groups, 2 * inter, c.hidden, c.hidden, inter,
      split.ep > 1 ? "whole experts" : fmt::format("intermediate split by TP {}", split.tp));
  for (const ExpertGemm& g : gemms)
    out += grouped_shape_line(g.problem, fmt::format("{}.{}.ep{}.m{}", model, g.role, split.ep, g.m)) + "\n";
  return out;
}

std::string model_expert_shapes(const std::string& config_path, const ModelSplit& split, const std::vector<int64_t>& ms,
                                const std::string& scale, const std::string& accum) {
  const ModelConfig c = load_model_config(config_path);
  const std::vector<int64_t> m = ms.empty() ? default_m_ladder() : ms;
  const ScaleMode mode = scale.empty() ? c.scale : parse_scale_mode(scale);
  return expert_shapes_lines(c, split, expert_gemms(c, split, m, mode, accum == "fast" ? Accum::kFast : Accum::kPromote));
}

}  // namespace dgt
