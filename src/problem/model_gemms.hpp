// The dense FP8 GEMMs of a served model, from its Hugging Face config.json (`dgtune shapes --hf-config`): the
// linear layers of one transformer block as a serving engine runs them on one GPU at tensor parallelism TP, laid
// out as in vLLM's model code (vllm/model_executor/models/{llama,qwen2,qwen3,mixtral,qwen2_moe,qwen3_moe,
// deepseek_v2}.py, v0.11): fused QKV, fused gate/up, DeepSeek's MLA with the fused q_a/kv_a projection. Each GEMM
// is D[M, N] = A[M, K] x W[N, K]^T with M the tokens of the step, N the layer's output features on this GPU and K
// its input features on this GPU. Routed experts are grouped GEMMs, not listed here (problem/expert_gemms.hpp
// and `dgtune shapes --experts` give them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem/problem.hpp"

namespace dgt {

/// The model dimensions dgtune needs, read from a config.json (parse_model_config).
struct ModelConfig {
  std::string source;        ///< the file, for messages
  std::string architecture;  ///< architectures[0], e.g. "LlamaForCausalLM"
  std::string family;        ///< "llama" | "qwen2" | "qwen3" | "mixtral" | "qwen2_moe" | "qwen3_moe" | "deepseek_v2"
  int64_t hidden = 0;        ///< hidden_size
  int64_t intermediate = 0;  ///< intermediate_size (dense MLP); 0 when the model has none
  int64_t heads = 0;         ///< num_attention_heads
  int64_t kv_heads = 0;      ///< num_key_value_heads (default: heads)
  int64_t head_dim = 0;      ///< head_dim when given, else hidden / heads
  int64_t vocab = 0;         ///< vocab_size
  bool qkv_bias = false;     ///< a bias on the QKV projection (Qwen2, Qwen2-MoE; attention_bias elsewhere)
  bool o_bias = false;       ///< a bias on the output projection (attention_bias of Llama-style configs)
  bool mlp_bias = false;     ///< mlp_bias of Llama-style configs
  // Mixture of experts.
  int64_t experts = 0;                 ///< routed experts (num_local_experts / num_experts / n_routed_experts)
  std::string experts_field;           ///< which of those fields the family reads, for messages
  int64_t expert_intermediate = 0;     ///< the routed experts' intermediate size
  int64_t shared_intermediate = 0;     ///< the shared expert's MLP width (0: none)
  int64_t experts_per_token = 0;       ///< num_experts_per_tok: routed experts per token (top-k); 0 when absent
  bool dense_mlp_layers = false;       ///< some layers are dense MLPs of width `intermediate`
  // DeepSeek's multi-head latent attention.
  int64_t q_lora_rank = 0;  ///< 0: no q compression (q_proj instead of q_a/q_b)
  int64_t kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  ScaleMode scale = ScaleMode::kPerTensor;  ///< kBlock when quantization_config.weight_block_size is [128, 128]
  /// Non-empty when the config's scaling is one dgtune cannot run or read (a weight_block_size other than [128, 128],
  /// or a quantization_config that is neither an object nor null): the reason, refused by scale_mode_of() unless the
  /// caller chose the scale mode itself (--scale).
  std::string scale_refusal;
};

/// The scale mode the shapes get: `scale` when given ("tensor" | "channel" | "block" | "block1d1d"), else the
/// config's. Throws Error(kUsage) with ModelConfig::scale_refusal when `scale` is empty and the config's scaling is one
/// dgtune cannot run or read.
ScaleMode scale_mode_of(const ModelConfig& c, const std::string& scale);

/// Parses a config.json's text. Throws Error(kUsage) naming `source` and the field when the text is not JSON (with
/// line:column) or repeats a key in one object, the architecture is not a known family (naming the families), a field
/// the family needs is missing or not a positive integer below 2^31, a field is of another type than it should be,
/// num_attention_heads is not a multiple of num_key_value_heads, or num_experts_per_tok exceeds the routed experts.
ModelConfig parse_model_config(const std::string& text, const std::string& source);
/// Reads and parses a file (Error(kUsage) when it cannot be read).
ModelConfig load_model_config(const std::string& path);

/// How the model is split over GPUs.
struct ModelSplit {
  int64_t tp = 1;        ///< tensor parallelism: column-parallel layers split N, row-parallel ones split K
  int64_t ep = 1;        ///< expert parallelism: changes no dense GEMM (recorded for the grouped GEMMs)
  bool lm_head = false;  ///< also the LM head (vocabulary padded to a multiple of 64, then split by TP)
};

/// One dense GEMM of a block on one GPU.
struct ModelGemm {
  std::string role;            ///< the layer, e.g. "qkv_proj", "q_b_proj", "shared_experts.down_proj"
  int64_t n = 0, k = 0;        ///< on this GPU
  bool bias = false;           ///< the layer has a (BF16) bias
  bool prefill_only = false;   ///< run only in prefill (DeepSeek's kv_b_proj: absorbed into attention for decode)
  bool replicated = false;     ///< not split by TP (DeepSeek's fused q_a/kv_a projection)
};

/// The dense GEMMs of one block (each distinct one once, in model order). Throws Error(kUsage) naming the field
/// when TP does not divide what it must split (heads, KV heads, intermediate sizes) or tp/ep is < 1.
std::vector<ModelGemm> dense_gemms(const ModelConfig& c, const ModelSplit& split);

/// The default M ladder, 1 to 16384, 46 values: 1, 2, 4, 8, 12, then four steps per octave from 16 up (p, 1.25p,
/// 1.5p, 1.75p: 16, 20, 24, 28, 32, 40, ..., 12288, 14336, 16384). The loader runs an M between two ladder values with
/// a neighbour's winner or the config predicted faster at M (loader/choice.hpp); the nearer the neighbours, the less
/// that pick loses against a tuned one. Swap-AB tiles cover M in steps of 8, so a winner is tuned to its M's tile
/// remainder: with the 1.5x steps this ladder had before (25 values), the tuned Llama-3.1-70B and Qwen3-32B ladders
/// ran the coverage grid 0.6-0.7% slower on an H100 (results/h200/dense-ladder-2026-12-06.md), most of it at M
/// 128-1023. Below 16 every M fits one 64-row tile and the decode kernels differ little.
std::vector<int64_t> default_m_ladder();

/// A shapes file (problem/shapes_file.hpp format) of every GEMM at every M, with name=<model>.<role>.tp<TP>
/// (".prefill" for prefill-only GEMMs), scale= and accum= from `scale` / `accum`, bias=bf16 where the layer has one.
/// The header comment names the config, the split and the source of the layer layout.
std::string model_shapes_file(const ModelConfig& c, const ModelSplit& split, const std::vector<ModelGemm>& gemms,
                              const std::vector<int64_t>& ms, ScaleMode scale, Accum accum);

/// `dgtune shapes`: the shapes file of the model at `config_path` split by `split`, at `ms` (empty: the default
/// ladder), with `scale` (empty: the config's; "tensor" | "channel" | "block" | "block1d1d") and `accum` ("promote" |
/// "fast"). Every line is checked as a shapes-file problem would be (validate_problem): a combination the kernel
/// cannot run (a block scale with fast accumulation) is Error(kUsage) naming it.
std::string model_shapes(const std::string& config_path, const ModelSplit& split, const std::vector<int64_t>& ms,
                         const std::string& scale, const std::string& accum);
/// model_shapes() of a config already read (config files may be pipes, read once).
std::string model_shapes(const ModelConfig& c, const ModelSplit& split, const std::vector<int64_t>& ms,
                         const std::string& scale, const std::string& accum);

}  // namespace dgt
