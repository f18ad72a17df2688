// The routed experts of a MoE model as grouped GEMMs (`dgtune shapes --experts`): the two grouped GEMMs of one MoE
// block on one GPU, per token count M, in DeepGEMM's layouts (contiguous for prefill, masked for decode).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem/grouped_problem.hpp"
#include "problem/model_gemms.hpp"

namespace dgt {

/// One routed-expert grouped GEMM of a block on one GPU at one M.
struct ExpertGemm {
  std::string role;  ///< "experts.gate_up_proj" | "experts.down_proj"
  int64_t m = 0;     ///< tokens of the step on this GPU
  GroupedProblem problem;
};

/// The routed experts' grouped GEMMs at every M of `ms`, gate_up then down per M. The rule:
///  - G = experts / EP when EP > 1 (expert parallelism: each GPU holds whole experts, N and K unsplit); with EP = 1,
///    G = experts and TP splits the experts' intermediate size (as vLLM's fused MoE without expert parallelism).
///  - gate_up: N = 2 x expert_intermediate (/ TP), K = hidden; down: N = hidden, K = expert_intermediate (/ TP).
///  - Per GPU the experts receive M x top_k rows on average (each of the EP GPUs routes its M tokens to top_k of all
///    experts, 1/EP of them local), so expected_m = max(1, ceil(M x top_k / G)); the counts are the seeded routing
///    route:1:M:TOPK (M tokens each picking min(top_k, G) distinct local groups), whose mean is that.
///  - M <= decode_max_m is a decode step: masked, M_max = round_up(M x EP, 128) (the most rows one local expert can
///    get: every token of every EP rank), so the host sizes its buffers without reading the device; larger M is
///    prefill: contiguous (the padded total M follows from the counts).
/// Throws Error(kUsage) naming the config and the field when the model has no routed experts, no
/// num_experts_per_tok, EP does not divide the experts, or TP does not divide the experts' intermediate size.
std::vector<ExpertGemm> expert_gemms(const ModelConfig& c, const ModelSplit& split, const std::vector<int64_t>& ms,
                                     ScaleMode scale, Accum accum, int64_t decode_max_m = 256);

/// The shapes-file lines (problem/shapes_file.hpp, grouped lines) of `gemms`, with a comment that states the rule
/// above, each named <model>.<role>.ep<EP>.m<M>.
std::string expert_shapes_lines(const ModelConfig& c, const ModelSplit& split, const std::vector<ExpertGemm>& gemms);

/// `dgtune shapes --experts`: expert_shapes_lines() of the config at `config_path` at every M of `ms` (empty: the
/// default ladder), scale `scale` (empty: the config's; "tensor" or "block") and `accum` ("promote" | "fast"). Throws
/// Error(kUsage) as load_model_config() and expert_gemms() do.
std::string model_expert_shapes(const std::string& config_path, const ModelSplit& split, const std::vector<int64_t>& ms,
                                const std::string& scale, const std::string& accum);

}  // namespace dgt
