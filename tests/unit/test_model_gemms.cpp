// `dgtune shapes --hf-config`: the dense GEMMs of small config.json files of every family, against shapes computed
// by hand from the published dimensions and vLLM's layer layouts; TP and EP splits; refusals naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "problem/model_gemms.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {
namespace {

struct Want {
  const char* role;
  int64_t n, k;
  bool bias = false;
};

void expect_gemms(const std::vector<ModelGemm>& got, const std::vector<Want>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].role, want[i].role) << what << " #" << i;
    EXPECT_EQ(got[i].n, want[i].n) << what << " " << want[i].role;
    EXPECT_EQ(got[i].k, want[i].k) << what << " " << want[i].role;
    EXPECT_EQ(got[i].bias, want[i].bias) << what << " " << want[i].role;
  }
}

// Llama-3.1-70B: hidden 8192, 64 heads, 8 KV heads (head_dim 128), MLP 28672.
const char* kLlama70b = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "intermediate_size": 28672,
  "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256, "attention_bias": false})";

TEST(ModelGemms, Llama70bAtTp8) {
  const ModelConfig c = parse_model_config(kLlama70b, "llama.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.scale, ScaleMode::kPerTensor);
  // qkv: (64/8 + 2 x 8/8) x 128 = 1280; o: K = 8 x 128; gate_up: 2 x 28672/8; down: K = 3584.
  expect_gemms(dense_gemms(c, {8, 1, false}),
               {{"qkv_proj", 1280, 8192}, {"o_proj", 8192, 1024}, {"gate_up_proj", 7168, 8192}, {"down_proj", 8192, 3584}},
               "tp8");
  // TP 16 > 8 KV heads: each GPU keeps one KV head (replicated), 4 query heads: (4 + 2) x 128.
  expect_gemms(dense_gemms(c, {16, 1, false}),
               {{"qkv_proj", 768, 8192}, {"o_proj", 8192, 512}, {"gate_up_proj", 3584, 8192}, {"down_proj", 8192, 1792}},
               "tp16");
  // The LM head on request: 128256 padded to 64 (128256 already is) / 8.
  const auto with_head = dense_gemms(c, {8, 1, true});
  ASSERT_EQ(with_head.back().role, "lm_head");
  EXPECT_EQ(with_head.back().n, 16032);
  EXPECT_EQ(with_head.back().k, 8192);
}

// Qwen3-32B: hidden 5120, 64 heads of head_dim 128 (given: 64 x 128 = 8192 != 5120), 8 KV heads, MLP 25600.
TEST(ModelGemms, Qwen3_32bAtTp4ReadsHeadDim) {
  const ModelConfig c = parse_model_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 5120,
      "intermediate_size": 25600, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
      "vocab_size": 151936})",
                                           "qwen3.json");
  expect_gemms(dense_gemms(c, {4, 1, false}),
               {{"qkv_proj", 2560, 5120}, {"o_proj", 5120, 2048}, {"gate_up_proj", 12800, 5120}, {"down_proj", 5120, 6400}},
               "qwen3-32b tp4");
}

// Qwen3 without head_dim: 128, transformers' Qwen3Config default that vLLM reads, not hidden / heads (5120 / 64 = 80).
// Qwen3-MoE's config has no such default: there (as for Llama) it is hidden / heads.
TEST(ModelGemms, Qwen3WithoutHeadDimTakesTheConfigDefault) {
  const ModelConfig c = parse_model_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 5120,
      "intermediate_size": 25600, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 151936})",
                                           "qwen3.json");
  EXPECT_EQ(c.head_dim, 128);
  expect_gemms(dense_gemms(c, {4, 1, false}),
               {{"qkv_proj", 2560, 5120}, {"o_proj", 5120, 2048}, {"gate_up_proj", 12800, 5120}, {"down_proj", 5120, 6400}},
               "qwen3 no head_dim tp4");
  const ModelConfig moe = parse_model_config(R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048,
      "num_attention_heads": 32, "num_key_value_heads": 4, "num_experts": 128, "moe_intermediate_size": 768,
      "num_experts_per_tok": 8})",
                                             "qwen3moe.json");
  EXPECT_EQ(moe.head_dim, 64);
}

// Qwen2-7B: a bias on q, k and v (vLLM's Qwen2Attention), none on o or the MLP.
TEST(ModelGemms, Qwen2HasAQkvBias) {
  const ModelConfig c = parse_model_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584,
      "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064})",
                                           "qwen2.json");
  expect_gemms(dense_gemms(c, {2, 1, false}),
               {{"qkv_proj", 2304, 3584, true}, {"o_proj", 3584, 1792}, {"gate_up_proj", 18944, 3584},
                {"down_proj", 3584, 9472}},
               "qwen2-7b tp2");
}

// DeepSeek-V3: MLA with the fused q_a/kv_a projection (replicated), 128 heads, the first 3 layers dense (MLP
// 18432), one shared expert of 2048, 1x128/128x128 block-scaled FP8 weights. At TP 1 these are the (N, K) pairs of
// configs/shapes/deepseek-v3.txt (DeepGEMM's test shapes), plus the dense MLP.
const char* kDeepseekV3 = R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168,
  "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_attention_heads": 128, "num_key_value_heads": 128,
  "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
  "n_routed_experts": 256, "n_shared_experts": 1, "first_k_dense_replace": 3, "vocab_size": 129280,
  "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})";

TEST(ModelGemms, DeepseekV3MlaAtTp1AndTp8) {
  const ModelConfig c = parse_model_config(kDeepseekV3, "ds3.json");
  EXPECT_EQ(c.scale, ScaleMode::kBlock);
  const auto tp1 = dense_gemms(c, {1, 1, false});
  expect_gemms(tp1,
               {{"fused_qkv_a_proj", 2112, 7168}, {"q_b_proj", 24576, 1536}, {"kv_b_proj", 32768, 512},
                {"o_proj", 7168, 16384}, {"gate_up_proj", 36864, 7168}, {"down_proj", 7168, 18432},
                {"shared_experts.gate_up_proj", 4096, 7168}, {"shared_experts.down_proj", 7168, 2048}},
               "ds3 tp1");
  EXPECT_TRUE(tp1[0].replicated);
  EXPECT_TRUE(tp1[2].prefill_only);
  // TP 8: 16 heads per GPU; the fused q_a/kv_a GEMM is not split.
  expect_gemms(dense_gemms(c, {8, 8, false}),
               {{"fused_qkv_a_proj", 2112, 7168}, {"q_b_proj", 3072, 1536}, {"kv_b_proj", 4096, 512},
                {"o_proj", 7168, 2048}, {"gate_up_proj", 4608, 7168}, {"down_proj", 7168, 2304},
                {"shared_experts.gate_up_proj", 512, 7168}, {"shared_experts.down_proj", 7168, 256}},
               "ds3 tp8 ep8");
  // EP changes no dense GEMM.
  const auto ep1 = dense_gemms(c, {8, 1, false}), ep8 = dense_gemms(c, {8, 8, false});
  ASSERT_EQ(ep1.size(), ep8.size());
  for (size_t i = 0; i < ep1.size(); ++i) EXPECT_TRUE(ep1[i].n == ep8[i].n && ep1[i].k == ep8[i].k);
}

/// The usage error model_shapes gives `c` when the config picks the scale mode (at TP 8, M = 64, promote); "" when it
/// gives none (a failure of the caller's expectations, not of this helper).
std::string scale_refusal_of(const ModelConfig& c) {
  try {
    (void)model_shapes(c, {8, 1, false}, {64}, "", "promote");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    return e.message();
  }
  return "";
}

// A block size dgtune's block scaling cannot run is refused where the config picks the scale mode, and only there:
// --scale chooses one (the file was refused even with --scale tensor).
TEST(ModelGemms, AnotherWeightBlockSizeNeedsAScaleMode) {
  std::string text = kDeepseekV3;
  text.replace(text.find("[128, 128]"), 10, "[64, 64]");
  const ModelConfig c = parse_model_config(text, "ds3-64.json");
  const std::string refusal = scale_refusal_of(c);
  EXPECT_NE(refusal.find("ds3-64.json: quantization_config.weight_block_size = [64,64]"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("pass --scale"), std::string::npos) << refusal;
  const std::string tensor = model_shapes(c, {8, 1, false}, {64}, "tensor", "promote");
  EXPECT_NE(tensor.find("64 2112 7168 name=DeepseekV3.fused_qkv_a_proj.tp8"), std::string::npos) << tensor;
  EXPECT_EQ(tensor.find("scale=block"), std::string::npos) << tensor;
  EXPECT_NE(model_shapes(c, {8, 1, false}, {64}, "block", "promote").find("scale=block"), std::string::npos);
}

// A quantization_config that is not an object (here a list) is refused the same way, naming the field and its value,
// and null means no quantization config: per-tensor, as when the field is absent.
TEST(ModelGemms, QuantizationConfigOfAnotherTypeNeedsAScaleMode) {
  std::string text = kDeepseekV3;
  const size_t at = text.find("{\"quant_method\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('}', at) + 1 - at, "[]");
  const ModelConfig c = parse_model_config(text, "ds3-list.json");
  const std::string refusal = scale_refusal_of(c);
  EXPECT_NE(refusal.find("ds3-list.json: quantization_config = []: expected an object"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("pass --scale"), std::string::npos) << refusal;
  EXPECT_NE(model_shapes(c, {8, 1, false}, {64}, "block", "promote").find("scale=block"), std::string::npos);
  std::string null_text = kDeepseekV3;
  const size_t q = null_text.find("{\"quant_method\"");
  null_text.replace(q, null_text.find('}', q) + 1 - q, "null");
  const std::string shapes = model_shapes(parse_model_config(null_text, "ds3-null.json"), {8, 1, false}, {64}, "",
                                          "promote");
  EXPECT_EQ(shapes.find("scale=block"), std::string::npos) << shapes;
  EXPECT_NE(shapes.find("64 2112 7168 name=DeepseekV3.fused_qkv_a_proj.tp8"), std::string::npos) << shapes;
}

// DeepSeek-V2-Lite: no q compression (q_lora_rank null): q_proj and the replicated kv_a_proj_with_mqa.
TEST(ModelGemms, DeepseekV2LiteWithoutQCompression) {
  const ModelConfig c = parse_model_config(R"({"architectures": ["DeepseekV2ForCausalLM"], "hidden_size": 2048,
      "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_attention_heads": 16, "q_lora_rank": null,
      "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
      "n_routed_experts": 64, "n_shared_experts": 2, "first_k_dense_replace": 1})",
                                           "v2lite.json");
  expect_gemms(dense_gemms(c, {2, 1, false}),
               {{"q_proj", 1536, 2048}, {"kv_a_proj_with_mqa", 576, 2048}, {"kv_b_proj", 2048, 512},
                {"o_proj", 2048, 1024}, {"gate_up_proj", 10944, 2048}, {"down_proj", 2048, 5472},
                {"shared_experts.gate_up_proj", 2816, 2048}, {"shared_experts.down_proj", 2048, 1408}},
               "v2-lite tp2");
}

// 0 shared experts and 0 leading dense layers are real values (a count, not a size): no shared-expert GEMMs and no
// dense MLP; a negative count is refused naming the field. (Both zeros were refused as "expected a positive integer".)
TEST(ModelGemms, ZeroSharedExpertsAndZeroDenseLayersAreCounts) {
  const std::string v2lite = R"({"architectures": ["DeepseekV2ForCausalLM"], "hidden_size": 2048,
      "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_attention_heads": 16, "q_lora_rank": null,
      "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
      "n_routed_experts": 64, )";
  const ModelConfig c = parse_model_config(v2lite + R"("n_shared_experts": 0, "first_k_dense_replace": 0})", "z.json");
  EXPECT_EQ(c.shared_intermediate, 0);
  EXPECT_FALSE(c.dense_mlp_layers);
  expect_gemms(dense_gemms(c, {2, 1, false}),
               {{"q_proj", 1536, 2048}, {"kv_a_proj_with_mqa", 576, 2048}, {"kv_b_proj", 2048, 512},
                {"o_proj", 2048, 1024}},
               "v2-lite, no shared experts, no dense layers");
  try {
    (void)parse_model_config(v2lite + R"("n_shared_experts": -1})", "neg.json");
    ADD_FAILURE() << "a negative n_shared_experts was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("neg.json: field 'n_shared_experts' is -1, expected a non-negative integer below 2^31"),
              std::string::npos)
        << e.message();
  }
}

// MoE families list their dense GEMMs only: Mixtral's attention (no dense MLP), Qwen2-MoE's attention (with the
// QKV bias) and its shared expert.
TEST(ModelGemms, MoeFamiliesListTheirDenseGemms) {
  const ModelConfig mixtral = parse_model_config(R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
      "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 8})",
                                                 "mixtral.json");
  expect_gemms(dense_gemms(mixtral, {2, 2, false}), {{"qkv_proj", 3072, 4096}, {"o_proj", 4096, 2048}}, "mixtral");
  const ModelConfig qmoe = parse_model_config(R"({"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 2048,
      "intermediate_size": 5632, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
      "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 60, "decoder_sparse_step": 1,
      "mlp_only_layers": []})",
                                              "qwen2moe.json");
  expect_gemms(dense_gemms(qmoe, {1, 1, false}),
               {{"qkv_proj", 6144, 2048, true}, {"o_proj", 2048, 2048},
                {"shared_experts.gate_up_proj", 11264, 2048}, {"shared_experts.down_proj", 2048, 5632}},
               "qwen2-moe");
}

std::string error_of(const std::string& json, int64_t tp = 1) {
  try {
    dense_gemms(parse_model_config(json, "bad.json"), {tp, 1, false});
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    return e.message();
  }
  return "";
}

TEST(ModelGemms, RefusalsNameTheField) {
  EXPECT_NE(error_of(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32})")
                .find("missing field 'intermediate_size'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768})").find("GPT2LMHeadModel"), std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 4096})").find("missing field 'architectures'"), std::string::npos);
  // Present but not a list of strings: named as it is (each was reported as "missing").
  EXPECT_NE(error_of(R"({"architectures": "LlamaForCausalLM"})").find("field 'architectures' is a string, not a list"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures": []})").find("field 'architectures' is an empty list"), std::string::npos);
  EXPECT_NE(error_of(R"({"architectures": [5]})").find("architectures[0] is a number, not a string"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": "4096", "num_attention_heads": 32,
                        "intermediate_size": 11008})")
                .find("field 'hidden_size'"),
            std::string::npos);
  // TP refusals name the config file like every other config error.
  EXPECT_NE(error_of(kLlama70b, 3).find("bad.json: num_attention_heads = 64 is not divisible by --tp 3"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32,
                        "intermediate_size": 28673})", 8)
                .find("bad.json: intermediate_size = 28673 is not divisible by --tp 8"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168,
                        "num_attention_heads": 128, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128})")
                .find("missing field 'kv_lora_rank'"),
            std::string::npos);
  const std::string not_json = error_of("{\n  \"architectures\": [\"LlamaForCausalLM\",\n}");
  EXPECT_NE(not_json.find("bad.json:3:"), std::string::npos) << not_json;
  // Nesting is bounded before the parser sees the text, as for every JSON file a user gives.
  const std::string deep = error_of(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_NE(deep.find("bad.json:1:65: JSON nesting is deeper than 64"), std::string::npos) << deep;
}

// Configs whose fields are each well formed but do not fit together, or would overflow a GEMM's dimensions, are
// refused naming the fields; so are repeated keys and optional fields of another type.
TEST(ModelGemms, InconsistentConfigsAreRefusedNamingTheFields) {
  const std::string llama = R"({"architectures": ["LlamaForCausalLM"], "intermediate_size": 14336, )";
  // (heads + 2 kv) x head_dim wrapped to a negative N in 64 bits; a product that fits in 64 bits is refused alike.
  const std::string wrap = error_of(llama + R"("hidden_size": 4096, "num_attention_heads": 2147483647,
      "num_key_value_heads": 2147483647, "head_dim": 2147483647})");
  EXPECT_NE(wrap.find("bad.json: qkv_proj: N = (num_attention_heads + 2 x num_key_value_heads) / TP x head_dim = "
                      "13835058042397261824 is too large (GEMM dimensions must be < 2^31)"),
            std::string::npos)
      << wrap;
  const std::string small = error_of(llama + R"("hidden_size": 4096, "num_attention_heads": 65536,
      "num_key_value_heads": 1, "head_dim": 65536})");
  EXPECT_NE(small.find("bad.json: qkv_proj: N = (num_attention_heads + 2 x num_key_value_heads) / TP x head_dim = "
                        "4295098368 is too large"),
            std::string::npos)
      << small;
  // The bound the message states: 2^31 itself is refused, 2^31 - 1 read.
  EXPECT_NE(error_of(llama + R"("hidden_size": 2147483648, "num_attention_heads": 32})")
                .find("bad.json: field 'hidden_size' is 2147483648, expected a positive integer below 2^31"),
            std::string::npos);
  EXPECT_EQ(parse_model_config(llama + R"("hidden_size": 2147483647, "num_attention_heads": 1, "head_dim": 128})",
                               "ok.json")
                .hidden,
            2147483647);
  // GQA: more KV heads than query heads, or a count that does not divide them.
  for (const char* kv : {"64", "12"})
    EXPECT_NE(error_of(llama + R"("hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": )" + kv + "}")
                  .find(std::string("bad.json: num_attention_heads = 32 is not a multiple of num_key_value_heads = ") +
                        kv),
              std::string::npos)
        << kv;
  // Top-k above the expert count (it was clipped to it).
  const std::string mixtral = R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
      "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 8, )";
  EXPECT_NE(error_of(mixtral + R"("num_experts_per_tok": 9})")
                .find("bad.json: num_experts_per_tok = 9 is more than the 8 routed experts (num_local_experts)"),
            std::string::npos);
  EXPECT_EQ(parse_model_config(mixtral + R"("num_experts_per_tok": 8})", "ok.json").experts_per_token, 8);
  // A repeated key (JSON keeps the last one): named by its pointer, at the top level or inside an object.
  EXPECT_NE(error_of(llama + R"("hidden_size": 4096, "num_attention_heads": 32, "hidden_size": 8192})")
                .find("bad.json: /hidden_size: the key appears twice in one object"),
            std::string::npos);
  EXPECT_NE(error_of(llama + R"("hidden_size": 4096, "num_attention_heads": 32, "quantization_config":
      {"weight_block_size": [128, 128], "weight_block_size": null}})")
                .find("bad.json: /quantization_config/weight_block_size: the key appears twice in one object"),
            std::string::npos);
  // An optional field of another type was read as absent.
  const std::string qmoe = R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048,
      "intermediate_size": 6144, "moe_intermediate_size": 768, "num_attention_heads": 32, "num_key_value_heads": 4,
      "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "mlp_only_layers": )";
  EXPECT_NE(error_of(qmoe + R"("yes"})").find("bad.json: field 'mlp_only_layers' is \"yes\", expected a list"),
            std::string::npos);
  EXPECT_TRUE(parse_model_config(qmoe + "[0]}", "ok.json").dense_mlp_layers);
  EXPECT_FALSE(parse_model_config(qmoe + "[]}", "ok.json").dense_mlp_layers);
}

// The shapes file parses back into the problems it lists, with scale, bias and names.
TEST(ModelGemms, ShapesFileRoundTrips) {
  const ModelConfig c = parse_model_config(kDeepseekV3, "ds3.json");
  const auto gemms = dense_gemms(c, {8, 1, false});
  const std::string text = model_shapes_file(c, {8, 1, false}, gemms, {1, 4096}, c.scale, Accum::kPromote);
  const auto entries = parse_shapes(text, "generated");
  ASSERT_EQ(entries.size(), gemms.size() * 2);
  EXPECT_EQ(entries[0].problem.m, 1);
  EXPECT_EQ(entries[0].problem.n, 2112);
  EXPECT_EQ(entries[0].problem.scale, ScaleMode::kBlock);
  EXPECT_EQ(entries[0].name, "DeepseekV3.fused_qkv_a_proj.tp8");
  EXPECT_EQ(entries[5].name, "DeepseekV3.kv_b_proj.tp8.prefill");
  const ModelConfig q = parse_model_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584,
      "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4})",
                                           "qwen2.json");
  const auto qe = parse_shapes(model_shapes_file(q, {1, 1, false}, dense_gemms(q, {1, 1, false}), {64}, ScaleMode::kPerTensor,
                                                 Accum::kFast),
                               "generated");
  EXPECT_EQ(qe[0].problem.bias, Bias::kBF16);
  EXPECT_EQ(qe[0].problem.accum, Accum::kFast);
  EXPECT_EQ(qe[1].problem.bias, Bias::kNone);
}

TEST(ModelGemms, DefaultLadder) {
  const auto m = default_m_ladder();
  EXPECT_EQ(m.front(), 1);
  EXPECT_EQ(m.back(), 16384);
  EXPECT_EQ(m.size(), 46u);
  EXPECT_EQ(std::vector<int64_t>(m.begin(), m.begin() + 10), (std::vector<int64_t>{1, 2, 4, 8, 12, 16, 20, 24, 28, 32}));
  EXPECT_EQ(std::vector<int64_t>(m.end() - 5, m.end()), (std::vector<int64_t>{8192, 10240, 12288, 14336, 16384}));
  for (size_t i = 1; i < m.size(); ++i) EXPECT_LT(m[i - 1], m[i]);
}

}  // namespace
}  // namespace dgt
