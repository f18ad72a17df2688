#include "problem/model_gemms.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/input_file.hpp"
#include "core/json_text.hpp"
#include "core/int_math.hpp"

namespace dgt {

namespace {

using nlohmann::json;

/// architectures[0] -> family. The families' layer layouts follow vLLM's model files of the same names.
const std::map<std::string, std::string>& families() {
  static const std::map<std::string, std::string> m = {
      {"LlamaForCausalLM", "llama"},         {"MistralForCausalLM", "llama"},
      {"Qwen2ForCausalLM", "qwen2"},         {"Qwen3ForCausalLM", "qwen3"},
      {"MixtralForCausalLM", "mixtral"},     {"Qwen2MoeForCausalLM", "qwen2_moe"},
      {"Qwen3MoeForCausalLM", "qwen3_moe"},  {"DeepseekV2ForCausalLM", "deepseek_v2"},
      {"DeepseekV3ForCausalLM", "deepseek_v2"}};
  return m;
}

std::string known_architectures() {
  std::string s;
  for (const auto& [name, family] : families()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

/// A JSON value for a message: escaped, cut after 60 characters.
std::string shown(const json& v) {
  const std::string text = v.dump();
  return text.size() <= 60 ? escaped(text) : escaped(text.substr(0, 60)) + fmt::format("... ({} bytes)", text.size());
}

class Fields {
 public:
  Fields(const json& j, const std::string& source, const std::string& architecture)
      : j_(j), source_(source), arch_(architecture) {}

  /// A positive integer field the family needs.
  int64_t need(const char* key, const char* what) const {
    if (!j_.contains(key) || j_[key].is_null())
      DGT_THROW(ErrorKind::kUsage, "{}: missing field '{}': {} needs it for its {}", escaped(source_), key, arch_,
                what);
    return positive(key);
  }
  /// A positive integer field, or `fallback` when absent or null.
  int64_t get(const char* key, int64_t fallback) const {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    return positive(key);
  }
  /// A count where 0 means none (shared experts, leading dense layers): a non-negative integer below 2^31, or
  /// `fallback` when absent or null. (Real configs write `"n_shared_experts": 0` or `"first_k_dense_replace": 0`.)
  int64_t count(const char* key, int64_t fallback) const {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    const json& v = j_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= (int64_t(1) << 31))
      DGT_THROW(ErrorKind::kUsage, "{}: field '{}' is {}, expected a non-negative integer below 2^31",
                escaped(source_), key, shown(v));
    return v.get<int64_t>();
  }
  bool flag(const char* key, bool fallback) const {
    if (!j_.contains(key) || j_[key].is_null()) return fallback;
    if (!j_[key].is_boolean())
      DGT_THROW(ErrorKind::kUsage, "{}: field '{}' is {}, expected true or false", escaped(source_), key,
                shown(j_[key]));
    return j_[key].get<bool>();
  }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  const json& at(const char* key) const { return j_.at(key); }

 private:
  int64_t positive(const char* key) const {
    const json& v = j_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() >= (int64_t(1) << 31))
      DGT_THROW(ErrorKind::kUsage, "{}: field '{}' is {}, expected a positive integer below 2^31", escaped(source_),
                key, shown(v));
    return v.get<int64_t>();
  }
  const json& j_;
  const std::string& source_;
  const std::string& arch_;
};

/// x / tp, refused naming the config file and the field when tp does not divide it.
int64_t split(int64_t x, int64_t tp, const std::string& what, const std::string& source) {
  if (x % tp != 0)
    DGT_THROW(ErrorKind::kUsage, "{}: {} = {} is not divisible by --tp {}", escaped(source), what, x, tp);
  return x / tp;
}

}  // namespace

ModelConfig parse_model_config(const std::string& text, const std::string& source) {
  const json j = parse_json_text(text, source);  // the rules of every JSON file a user gives, repeated keys included
  if (!j.is_object()) DGT_THROW(ErrorKind::kUsage, "{}: a Hugging Face config.json is a JSON object", escaped(source));
  ModelConfig c;
  c.source = source;
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
      !j["architectures"][0].is_string()) {
    // Say what is there: absent, another type (a bare string), an empty list, or a list of something else.
    const std::string what = !j.contains("architectures")          ? "missing field 'architectures'"
                             : !j["architectures"].is_array()      ? fmt::format("field 'architectures' is a {}, not a list",
                                                                                 j["architectures"].type_name())
                             : j["architectures"].empty()          ? "field 'architectures' is an empty list"
                                                                   : fmt::format("architectures[0] is a {}, not a string",
                                                                                 j["architectures"][0].type_name());
    DGT_THROW(ErrorKind::kUsage, "{}: {} (a list whose first entry names the model class, one of: {})",
              escaped(source), what, known_architectures());
  }
  c.architecture = j["architectures"][0].get<std::string>();
  const auto fam = families().find(c.architecture);
  if (fam == families().end())
    DGT_THROW(ErrorKind::kUsage, "{}: architectures[0] = '{}' is not a model family dgtune knows (known: {})",
              escaped(source), escaped(c.architecture.substr(0, 80)), known_architectures());
  c.family = fam->second;
  const Fields f(j, c.source, c.architecture);

  c.hidden = f.need("hidden_size", "every projection");
  c.heads = f.need("num_attention_heads", "attention projections");
  c.vocab = f.get("vocab_size", 0);
  if (c.family == "deepseek_v2") {
    c.q_lora_rank = f.get("q_lora_rank", 0);
    c.kv_lora_rank = f.need("kv_lora_rank", "latent attention (kv_a_proj, kv_b_proj)");
    c.qk_nope_head_dim = f.need("qk_nope_head_dim", "latent attention (q_b_proj, kv_b_proj)");
    c.qk_rope_head_dim = f.need("qk_rope_head_dim", "latent attention (q and kv_a projections)");
    c.v_head_dim = f.need("v_head_dim", "latent attention (kv_b_proj, o_proj)");
    c.experts_field = "n_routed_experts";
    c.experts = f.count("n_routed_experts", 0);
    if (c.experts > 0) {
      c.expert_intermediate = f.need("moe_intermediate_size", "experts");
      c.shared_intermediate = f.count("n_shared_experts", 0) * c.expert_intermediate;
      c.dense_mlp_layers = f.count("first_k_dense_replace", 0) > 0;
    } else {
      c.dense_mlp_layers = true;
    }
    if (c.dense_mlp_layers) c.intermediate = f.need("intermediate_size", "dense MLP layers");
  } else {
    c.kv_heads = f.get("num_key_value_heads", c.heads);
    // Grouped-query attention: each KV head serves the same number of query heads.
    if (c.heads % c.kv_heads != 0)
      DGT_THROW(ErrorKind::kUsage, "{}: num_attention_heads = {} is not a multiple of num_key_value_heads = {} (GQA: "
                "each KV head serves the same number of query heads)", escaped(source), c.heads, c.kv_heads);
    // Without head_dim, vLLM's attention takes getattr(config, "head_dim", None) or hidden_size // heads on the
    // config object transformers builds, and transformers' Qwen3Config (only it among these families) fills an
    // absent head_dim with 128: a Qwen3 config without head_dim has heads of 128, whatever hidden / heads is.
    if (f.has("head_dim")) {
      c.head_dim = f.need("head_dim", "attention projections");
    } else if (c.family == "qwen3") {
      c.head_dim = 128;
    } else {
      if (c.hidden % c.heads != 0)
        DGT_THROW(ErrorKind::kUsage, "{}: hidden_size = {} is not a multiple of num_attention_heads = {} and there "
                  "is no head_dim", escaped(source), c.hidden, c.heads);
      c.head_dim = c.hidden / c.heads;
    }
    // Qwen2 (and Qwen2-MoE) put a bias on q, k and v; Llama-style configs say so with attention_bias.
    const bool qwen2 = c.family == "qwen2" || c.family == "qwen2_moe";
    c.qkv_bias = qwen2 || f.flag("attention_bias", false);
    c.o_bias = !qwen2 && f.flag("attention_bias", false);
    c.mlp_bias = f.flag("mlp_bias", false);
    if (c.family == "mixtral") {
      c.experts_field = "num_local_experts";
      c.experts = f.need("num_local_experts", "experts");
      c.expert_intermediate = f.need("intermediate_size", "experts");
    } else if (c.family == "qwen2_moe" || c.family == "qwen3_moe") {
      c.experts_field = "num_experts";
      c.experts = f.need("num_experts", "experts");
      c.expert_intermediate = f.need("moe_intermediate_size", "experts");
      if (c.family == "qwen2_moe") c.shared_intermediate = f.count("shared_expert_intermediate_size", 0);
      if (f.has("mlp_only_layers") && !f.at("mlp_only_layers").is_array())
        DGT_THROW(ErrorKind::kUsage, "{}: field 'mlp_only_layers' is {}, expected a list of layer indices",
                  escaped(source), shown(f.at("mlp_only_layers")));
      const bool mlp_only = f.has("mlp_only_layers") && !f.at("mlp_only_layers").empty();
      c.dense_mlp_layers = mlp_only || f.get("decoder_sparse_step", 1) > 1;
      if (c.dense_mlp_layers) c.intermediate = f.need("intermediate_size", "dense MLP layers");
    } else {
      c.intermediate = f.need("intermediate_size", "MLP");
      c.dense_mlp_layers = true;
    }
  }
  // Block scaling when the checkpoint says so (DeepSeek-V3's FP8 weights: 128 x 128 blocks). A quantization_config
  // that is not an object (nor null) says nothing readable about the scaling: refused where the config picks the scale
  // mode, as an unknown block size is, instead of silently meaning per-tensor.
  if (j.contains("quantization_config")) {
    const json& q = j["quantization_config"];
    if (!q.is_object()) {
      if (!q.is_null())
        c.scale_refusal = fmt::format("{}: quantization_config = {}: expected an object (e.g. {{\"weight_block_size\": "
                                      "[128, 128]}}) or null; pass --scale to choose the scale mode",
                                      escaped(source), shown(q));
    } else if (q.contains("weight_block_size") && !q["weight_block_size"].is_null()) {
      const json& b = q["weight_block_size"];
      if (b.is_array() && b.size() == 2 && b[0] == 128 && b[1] == 128)
        c.scale = ScaleMode::kBlock;
      else  // refused where the scale mode is taken from the config: --scale chooses another one
        c.scale_refusal = fmt::format("{}: quantization_config.weight_block_size = {}: dgtune's block scaling is "
                                      "[128, 128] (1x128 activations, 128x128 weights); pass --scale to choose the "
                                      "scale mode",
                                      escaped(source), shown(b));
    }
  }
  // Top-k of the router (every MoE family spells it num_experts_per_tok): the rows the routed experts' grouped
  // GEMMs get per token (problem/expert_gemms.hpp).
  if (c.experts > 0) c.experts_per_token = f.get("num_experts_per_tok", 0);
  // The router picks top-k distinct experts: more than there are is a wrong config, not one to clip.
  if (c.experts_per_token > c.experts)
    DGT_THROW(ErrorKind::kUsage, "{}: num_experts_per_tok = {} is more than the {} routed experts ({}): the router "
              "picks that many distinct experts per token", escaped(source), c.experts_per_token, c.experts,
              c.experts_field);
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  return parse_model_config(read_input_file(path, "model config (--hf-config)"), path);
}

std::vector<ModelGemm> dense_gemms(const ModelConfig& c, const ModelSplit& s) {
  if (s.tp < 1) DGT_THROW(ErrorKind::kUsage, "--tp {} must be >= 1", s.tp);
  if (s.ep < 1) DGT_THROW(ErrorKind::kUsage, "--ep {} must be >= 1", s.ep);
  const int64_t tp = s.tp;
  std::vector<ModelGemm> out;
  auto add = [&](std::string role, int64_t n, int64_t k, bool bias = false) {
    out.push_back(ModelGemm{std::move(role), n, k, bias, false, false});
  };
  // A dimension made of several fields (each below 2^31) is formed in 128 bits and must be below 2^31 before it is
  // narrowed: in 64 bits (heads + 2 x kv) x head_dim wrapped to a negative N. The refusal names the fields.
  auto dim = [&](const char* role, const char* formula, __int128 v) {
    if (v >= (__int128(1) << 31))
      DGT_THROW(ErrorKind::kUsage, "{}: {}: {} = {:.0f} is too large (GEMM dimensions must be < 2^31)",
                escaped(c.source), role, formula, static_cast<double>(v));
    return static_cast<int64_t>(v);
  };
  using i128 = __int128;
  if (c.family == "deepseek_v2") {
    const int64_t heads = split(c.heads, tp, "num_attention_heads", c.source);
    const i128 qk_head = i128(c.qk_nope_head_dim) + c.qk_rope_head_dim;
    if (c.q_lora_rank > 0) {
      // q_a_proj and kv_a_proj_with_mqa fused into one replicated GEMM (every GPU computes all of it).
      out.push_back(ModelGemm{"fused_qkv_a_proj",
                              dim("fused_qkv_a_proj", "N = q_lora_rank + kv_lora_rank + qk_rope_head_dim",
                                  i128(c.q_lora_rank) + c.kv_lora_rank + c.qk_rope_head_dim),
                              c.hidden, false, false, true});
      add("q_b_proj", dim("q_b_proj", "N = num_attention_heads / TP x (qk_nope_head_dim + qk_rope_head_dim)",
                          heads * qk_head),
          c.q_lora_rank);
    } else {
      add("q_proj", dim("q_proj", "N = num_attention_heads / TP x (qk_nope_head_dim + qk_rope_head_dim)",
                        heads * qk_head),
          c.hidden);
      out.push_back(ModelGemm{"kv_a_proj_with_mqa",
                              dim("kv_a_proj_with_mqa", "N = kv_lora_rank + qk_rope_head_dim",
                                  i128(c.kv_lora_rank) + c.qk_rope_head_dim),
                              c.hidden, false, false, true});
    }
    // kv_b_proj expands the latent KV for prefill; decode absorbs it into the attention (MLA's weight absorption).
    out.push_back(ModelGemm{"kv_b_proj",
                            dim("kv_b_proj", "N = num_attention_heads / TP x (qk_nope_head_dim + v_head_dim)",
                                heads * (i128(c.qk_nope_head_dim) + c.v_head_dim)),
                            c.kv_lora_rank, false, true, false});
    add("o_proj", c.hidden, dim("o_proj", "K = num_attention_heads / TP x v_head_dim", i128(heads) * c.v_head_dim));
  } else {
    const int64_t heads = split(c.heads, tp, "num_attention_heads", c.source);
    // KV heads are split while TP <= their count and replicated beyond (each GPU keeps one).
    int64_t kv = 0;
    if (tp <= c.kv_heads)
      kv = split(c.kv_heads, tp, "num_key_value_heads", c.source);
    else if (tp % c.kv_heads == 0)
      kv = 1;
    else
      DGT_THROW(ErrorKind::kUsage, "{}: --tp {} is neither a divisor nor a multiple of num_key_value_heads = {}",
                escaped(c.source), tp, c.kv_heads);
    add("qkv_proj",
        dim("qkv_proj", "N = (num_attention_heads + 2 x num_key_value_heads) / TP x head_dim",
            (i128(heads) + 2 * i128(kv)) * c.head_dim),
        c.hidden, c.qkv_bias);
    add("o_proj", c.hidden, dim("o_proj", "K = num_attention_heads / TP x head_dim", i128(heads) * c.head_dim),
        c.o_bias);
  }
  if (c.dense_mlp_layers && c.intermediate > 0) {
    const int64_t inter = split(c.intermediate, tp, "intermediate_size", c.source);
    add("gate_up_proj", dim("gate_up_proj", "N = 2 x intermediate_size / TP", 2 * i128(inter)), c.hidden, c.mlp_bias);
    add("down_proj", c.hidden, inter, c.mlp_bias);
  }
  if (c.shared_intermediate > 0) {
    const int64_t inter = split(c.shared_intermediate, tp, "the shared experts' intermediate size", c.source);
    add("shared_experts.gate_up_proj",
        dim("shared_experts.gate_up_proj", "N = 2 x the shared experts' intermediate size / TP", 2 * i128(inter)),
        c.hidden);
    add("shared_experts.down_proj", c.hidden, inter);
  }
  if (s.lm_head) {
    if (c.vocab <= 0)
      DGT_THROW(ErrorKind::kUsage, "{}: missing field 'vocab_size' (needed for --lm-head)", escaped(c.source));
    add("lm_head", ceil_div(round_up(c.vocab, int64_t(64)), tp), c.hidden);
  }
  // One line per distinct GEMM: a dense MLP and a shared expert of the same width are the same problem.
  std::vector<ModelGemm> unique;
  for (const ModelGemm& g : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const ModelGemm& u) {
      return u.n == g.n && u.k == g.k && u.bias == g.bias;
    });
    if (!seen) unique.push_back(g);
  }
  return unique;
}

std::vector<int64_t> default_m_ladder() {
  std::vector<int64_t> m = {1, 2, 4, 8, 12};
  for (int64_t p = 16; p < 16384; p *= 2)
    for (int64_t q = 4; q < 8; ++q) m.push_back(p * q / 4);  // p, 1.25p, 1.5p, 1.75p
  m.push_back(16384);
  return m;
}

std::string model_shapes_file(const ModelConfig& c, const ModelSplit& s, const std::vector<ModelGemm>& gemms,
                              const std::vector<int64_t>& ms, ScaleMode scale, Accum accum) {
  std::string model = c.architecture;
  const auto cut = model.find("For");
  if (cut != std::string::npos) model = model.substr(0, cut);
  std::string out = fmt::format(
      "# The dense FP8 GEMMs of {} ({}) at tensor parallelism {}{}, one block, as vLLM's model code lays them out:\n"
      "# D[M, N] = A[M, K] x W[N, K]^T on one GPU (column-parallel layers split N, row-parallel ones K). Routed experts\n"
      "# are grouped GEMMs, listed after these only with --experts. Written by `dgtune shapes`.\n",
      c.architecture, escaped(c.source), s.tp, s.ep > 1 ? fmt::format(", expert parallelism {}", s.ep) : "");
  for (const ModelGemm& g : gemms) {
    out += fmt::format("# {}: N = {}, K = {}{}{}{}\n", g.role, g.n, g.k, g.bias ? ", bf16 bias" : "",
                       g.replicated ? ", replicated (not split by TP)" : "",
                       g.prefill_only ? ", prefill only (decode absorbs it)" : "");
    for (int64_t m : ms) {
      out += fmt::format("{} {} {}", m, g.n, g.k);
      if (scale != ScaleMode::kPerTensor) out += fmt::format(" scale={}", to_string(scale));
      // K and N are rarely off the 16-byte TMA rule; where K is, the operand rows are padded (lda, ldb).
      if (g.k % 16 != 0) out += fmt::format(" lda={0} ldb={0}", round_up(g.k, int64_t(16)));
      if (accum == Accum::kFast) out += " accum=fast";
      if (g.bias) out += " bias=bf16";
      out += fmt::format(" name={}.{}.tp{}{}\n", model, g.role, s.tp, g.prefill_only ? ".prefill" : "");
    }
  }
  return out;
}

ScaleMode scale_mode_of(const ModelConfig& c, const std::string& scale) {
  if (!scale.empty()) return parse_scale_mode(scale);
  if (!c.scale_refusal.empty()) DGT_THROW(ErrorKind::kUsage, "{}", c.scale_refusal);
  return c.scale;
}

std::string model_shapes(const std::string& config_path, const ModelSplit& split, const std::vector<int64_t>& ms,
                         const std::string& scale, const std::string& accum) {
  return model_shapes(load_model_config(config_path), split, ms, scale, accum);
}

std::string model_shapes(const ModelConfig& c, const ModelSplit& split, const std::vector<int64_t>& ms,
                         const std::string& scale, const std::string& accum) {
  const std::vector<ModelGemm> gemms = dense_gemms(c, split);
  const std::vector<int64_t> m = ms.empty() ? default_m_ladder() : ms;
  const ScaleMode mode = scale_mode_of(c, scale);
  const Accum acc = accum == "fast" ? Accum::kFast : Accum::kPromote;
  for (const ModelGemm& g : gemms)
    for (int64_t mm : m) {
      Problem p = Problem::dense(mm, g.n, g.k);
      p.lda = p.ldb = round_up(g.k, int64_t(16));
      p.scale = mode;
      p.accum = acc;
      p.bias = g.bias ? Bias::kBF16 : Bias::kNone;
      try {
        validate_problem(p);
      } catch (const Error& e) {
        DGT_THROW(ErrorKind::kUsage, "{}: {} at M = {}: {}", escaped(c.source), g.role, mm, e.message());
      }
    }
  return model_shapes_file(c, split, gemms, m, mode, acc);
}

}  // namespace dgt
