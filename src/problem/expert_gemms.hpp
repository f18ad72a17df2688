// The routed experts of a MoE model as grouped GEMMs (`dgtune shapes --experts`, `dgtune tune-model --experts`): the
// two grouped GEMMs of one MoE block on one GPU in DeepGEMM's layouts, at the points of the grouped tuning ladder
// (contiguous: padded total M_sum; masked: expected_m), with seeded routing counts that land exactly on each point's
// problem key (problem/routed_counts.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem/grouped_problem.hpp"
#include "problem/model_gemms.hpp"
#include "problem/routed_counts.hpp"

namespace dgt {

/// The largest decode step, in tokens per GPU: masked (decode) buffers are sized for it.
inline constexpr int64_t kDecodeMaxTokens = 256;

/// Where a model's routed experts sit on one GPU (expert_layout).
struct ExpertLayout {
  int groups = 0;              ///< G: experts on this GPU
  int64_t inter = 0;           ///< the experts' intermediate size on this GPU
  int64_t topk = 0;            ///< num_experts_per_tok clipped to G (a token reaches at most G local experts)
  int64_t m_max = 0;           ///< masked M_max: round_up(kDecodeMaxTokens x EP, 128)
  int64_t max_expected_m = 0;  ///< expected_m of the largest decode step: ceil(kDecodeMaxTokens x topk / G)
};

/// The rule:
///  - G = experts / EP when EP > 1 (expert parallelism: each GPU holds whole experts, N and K unsplit); with EP = 1,
///    G = experts and TP splits the experts' intermediate size (as vLLM's fused MoE without expert parallelism).
///  - Per GPU the experts receive M x top_k rows for M tokens per GPU (each of the EP GPUs routes its M tokens to
///    top_k of all experts, 1/EP of them local), so a step's expected_m is ceil(M x topk / G).
///  - Masked (decode) buffers hold M_max = round_up(kDecodeMaxTokens x EP, 128) rows per expert: the most rows one
///    local expert can get in the largest decode step (every token of every EP rank), allocated once by the host, so
///    M_max is the same at every decode step and the loader's ladder over expected_m stays within one M_max.
/// Throws Error(kUsage) naming the config and the field when the model has no routed experts, no
/// num_experts_per_tok, EP does not divide the experts, or TP does not divide the experts' intermediate size.
ExpertLayout expert_layout(const ModelConfig& c, const ModelSplit& split);

/// The grouped tuning ladder: the points whose winners the loader picks from (the upper neighbour between points, as
/// the dense M ladder, loader/choice.hpp).
struct ExpertLadder {
  std::vector<int64_t> m_sums;       ///< contiguous (prefill): padded total M_sum, each a multiple of 128
  std::vector<int64_t> expected_ms;  ///< masked (decode): expected_m
};

/// {4096, 16384, 65536}: prefill steps of about 256, 2048 and 8192 tokens per GPU at DeepSeek-V3's EP 8 (G 32, top-8).
std::vector<int64_t> default_m_sum_ladder();

/// Powers of two up to 16, then the 1.5x steps between them (the dense ladder before it took four steps per octave),
/// up to layout.max_expected_m, plus max_expected_m itself; DeepSeek-V3 at EP 8: 1, 2, 4, 8, 16, 24, 32, 48, 64
/// (decode steps of 4 to 256 tokens). The upper neighbour of any expected_m is then within 2x of it below 16 and 1.5x
/// above; 48 sits where routed counts start to spill past one 64-row tile.
std::vector<int64_t> default_expected_m_ladder(const ExpertLayout& layout);

/// `ladder` with each empty list replaced by its default, both sorted with repeats removed.
ExpertLadder resolved_ladder(const ExpertLadder& ladder, const ExpertLayout& layout);

/// One routed-expert grouped GEMM of a block on one GPU at one ladder point.
struct ExpertGemm {
  std::string role;   ///< "experts.gate_up_proj" | "experts.down_proj"
  std::string point;  ///< "contiguous.msum<M_sum>" | "masked.em<expected_m>"
  RouteSpec route;    ///< the counts (the same for both roles of a point)
  GroupedProblem problem;
};

/// The grouped GEMMs at every point of resolved_ladder(ladder): per M_sum, then per expected_m, gate_up then down.
///  - gate_up: N = 2 x inter, K = hidden; down: N = hidden, K = inter.
///  - contiguous: counts route_for_padded_total(G, topk, M_sum), so total_rows() == M_sum exactly;
///  - masked: counts route_for_expected_m(G, topk, E), M_max = layout.m_max, expected_m = E written in the line.
/// Throws Error(kUsage) as expert_layout(), route_for_padded_total() and route_for_expected_m() do, prefixed by the
/// config and the point, and for a point whose counts break a grouped rule (a count above M_max).
std::vector<ExpertGemm> expert_gemms(const ModelConfig& c, const ModelSplit& split, const ExpertLadder& ladder,
                                     ScaleMode scale, Accum accum);

/// The shapes-file lines (problem/shapes_file.hpp, grouped lines) of `gemms`, after a comment that states the rule,
/// each named <model>.<role>.ep<EP>.<point>, e.g. DeepseekV3.experts.down_proj.ep8.masked.em16.
std::string expert_shapes_lines(const ModelConfig& c, const ModelSplit& split, const std::vector<ExpertGemm>& gemms);

/// `dgtune shapes --experts`: expert_shapes_lines() of config `c` at the points of `ladder` (empty lists: the
/// defaults), scale `scale` (empty: the config's; "tensor" or "block") and `accum` ("promote" | "fast"). Throws
/// Error(kUsage) as expert_gemms() does.
std::string model_expert_shapes(const ModelConfig& c, const ModelSplit& split, const ExpertLadder& ladder,
                                const std::string& scale, const std::string& accum);

/// The shapes text of `dgtune shapes` and `dgtune tune-model`: model_shapes() (the dense GEMMs at `ms`), then with
/// `experts` model_expert_shapes() at `ladder`. Without `experts` it is model_shapes() alone.
std::string model_tuning_shapes(const std::string& config_path, const ModelSplit& split, const std::vector<int64_t>& ms,
                                const std::string& scale, const std::string& accum, bool experts,
                                const ExpertLadder& ladder);
/// model_tuning_shapes() of a config already read: the file is read once (--hf-config may be a pipe).
std::string model_tuning_shapes(const ModelConfig& c, const ModelSplit& split, const std::vector<int64_t>& ms,
                                const std::string& scale, const std::string& accum, bool experts,
                                const ExpertLadder& ladder);

}  // namespace dgt
