// `dgtune shapes --experts` / `tune-model --experts`: the routed experts' grouped GEMMs of a MoE config at the grouped
// ladder (problem/expert_gemms.hpp): G, N, K, M_sum, M_max, expected_m and the keys of DeepSeek-V3 at EP 8, the lines
// and their names, the text tune-model sweeps with and without --experts, and the refusals. No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "problem/expert_gemms.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {
namespace {

ModelConfig deepseek_v3(bool with_topk = true) {
  std::string text = R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_attention_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 256,)";
  if (with_topk) text += R"( "num_experts_per_tok": 8,)";
  text += R"( "n_shared_experts": 1, "first_k_dense_replace": 3, "vocab_size": 129280})";
  return parse_model_config(text, "ds.json");
}

ModelSplit ep(int64_t n) {
  ModelSplit s;
  s.ep = n;
  return s;
}

const std::string kDeepSeekConfig = std::string(DGT_SOURCE_DIR) + "/configs/models/deepseek-v3.json";

/// The message of the Error(kUsage) `f` throws ("" and a failure when it throws none).
template <class F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(ExpertGemms, DeepSeekV3AtEp8Layout) {
  const ExpertLayout l = expert_layout(deepseek_v3(), ep(8));
  EXPECT_EQ(l.groups, 32);           // 256 experts / EP 8
  EXPECT_EQ(l.inter, 2048);          // whole experts: not split by TP
  EXPECT_EQ(l.topk, 8);
  EXPECT_EQ(l.m_max, 2048);          // 256 tokens x EP 8
  EXPECT_EQ(l.max_expected_m, 64);   // ceil(256 x 8 / 32)
  EXPECT_EQ(default_expected_m_ladder(l), (std::vector<int64_t>{1, 2, 4, 8, 16, 24, 32, 48, 64}));
  EXPECT_EQ(default_m_sum_ladder(), (std::vector<int64_t>{4096, 16384, 65536}));
}

TEST(ExpertGemms, DeepSeekV3AtEp8LandsOnTheLadderKeys) {
  const auto gemms = expert_gemms(deepseek_v3(), ep(8), {}, ScaleMode::kBlock, Accum::kPromote);
  ASSERT_EQ(gemms.size(), 2u * (3 + 9));
  // Contiguous first: per M_sum gate_up (N 4096, K 7168) then down (N 7168, K 2048) on the same counts.
  const std::vector<int64_t> m_sums = {4096, 16384, 65536};
  for (size_t i = 0; i < m_sums.size(); ++i) {
    const ExpertGemm& gu = gemms[2 * i];
    const ExpertGemm& down = gemms[2 * i + 1];
    SCOPED_TRACE(m_sums[i]);
    EXPECT_EQ(gu.role, "experts.gate_up_proj");
    EXPECT_EQ(down.role, "experts.down_proj");
    EXPECT_EQ(gu.point, "contiguous.msum" + std::to_string(m_sums[i]));
    EXPECT_EQ(gu.problem.kind, GroupKind::kContiguous);
    EXPECT_EQ(gu.problem.groups, 32);
    EXPECT_EQ(gu.problem.n, 4096);
    EXPECT_EQ(gu.problem.k, 7168);
    EXPECT_EQ(down.problem.n, 7168);
    EXPECT_EQ(down.problem.k, 2048);
    EXPECT_EQ(gu.problem.total_rows(), m_sums[i]);  // the key's M is the ladder value exactly
    EXPECT_EQ(down.problem.rows, gu.problem.rows);
    EXPECT_EQ(gu.problem.real_rows(), gu.route.tokens * 8);
    EXPECT_EQ(gu.problem.scale, ScaleMode::kBlock);
  }
  // The tokens of each point: T0 = (M_sum - 32 x 64) / 8 where it lands (4096: 256, 16384: 1792), else the nearest
  // token count that does (65536: T0 = 7936 overshoots; 7898 is the last count whose segments sum to 65536).
  EXPECT_EQ(gemms[0].route.text(), "route:1:256:8");
  EXPECT_EQ(gemms[2].route.text(), "route:1:1792:8");
  EXPECT_EQ(gemms[4].route.text(), "route:1:7898:8");
  EXPECT_EQ(gemms[0].problem.keyed().key(),
            "grouped-contiguous_G32_4096x4096x7168_lda7168_ldb7168_ldd4096_e4m3.e4m3.bf16_blk_promote");
  EXPECT_EQ(gemms[5].problem.keyed().key(),
            "grouped-contiguous_G32_65536x7168x2048_lda2048_ldb2048_ldd7168_e4m3.e4m3.bf16_blk_promote");
  // Masked: M_max 2048 at every point, expected_m the ladder value, T = 4 E tokens (32 E rows).
  const std::vector<int64_t> ems = {1, 2, 4, 8, 16, 24, 32, 48, 64};
  for (size_t i = 0; i < ems.size(); ++i) {
    const ExpertGemm& gu = gemms[6 + 2 * i];
    const ExpertGemm& down = gemms[7 + 2 * i];
    SCOPED_TRACE(ems[i]);
    EXPECT_EQ(gu.point, "masked.em" + std::to_string(ems[i]));
    EXPECT_EQ(gu.problem.kind, GroupKind::kMasked);
    EXPECT_EQ(gu.problem.groups, 32);
    EXPECT_EQ(gu.problem.m_max, 2048);
    EXPECT_EQ(gu.problem.expected_m, ems[i]);
    EXPECT_EQ(gu.route.tokens, 4 * ems[i]);
    EXPECT_EQ(gu.problem.real_rows(), 32 * ems[i]);
    EXPECT_EQ(down.problem.n, 7168);
    EXPECT_EQ(down.problem.k, 2048);
    EXPECT_EQ(down.problem.rows, gu.problem.rows);
  }
  EXPECT_EQ(gemms[6 + 2 * 4].problem.keyed().key(),
            "grouped-masked_G32_mmax2048_em16_65536x4096x7168_lda7168_ldb7168_ldd4096_e4m3.e4m3.bf16_blk_promote");
}

TEST(ExpertGemms, LinesReadBackNamedByRoleAndPoint) {
  const ModelConfig c = deepseek_v3();
  const auto gemms = expert_gemms(c, ep(8), {{16384}, {16}}, ScaleMode::kBlock, Accum::kPromote);
  ASSERT_EQ(gemms.size(), 4u);
  const std::string text = expert_shapes_lines(c, ep(8), gemms);
  EXPECT_NE(text.find("kind=contiguous groups=32 m_per_group=route:1:1792:8 4096 7168 scale=block "
                      "name=DeepseekV3.experts.gate_up_proj.ep8.contiguous.msum16384\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kind=masked groups=32 masked_m=route:1:64:8 m_max=2048 expected_m=16 7168 2048 scale=block "
                      "name=DeepseekV3.experts.down_proj.ep8.masked.em16\n"),
            std::string::npos)
      << text;
  const auto entries = parse_shapes_with_grouped(text, "experts.txt");
  ASSERT_EQ(entries.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(entries[i].problem, gemms[i].problem.keyed());
    EXPECT_EQ(entries[i].grouped->rows, gemms[i].problem.rows);
  }
}

TEST(ExpertGemms, GivenLadderIsSortedWithoutRepeats) {
  const ExpertLadder l = resolved_ladder({{65536, 4096, 4096}, {48, 3}}, expert_layout(deepseek_v3(), ep(8)));
  EXPECT_EQ(l.m_sums, (std::vector<int64_t>{4096, 65536}));
  EXPECT_EQ(l.expected_ms, (std::vector<int64_t>{3, 48}));
  // An off-ladder point (what the loader's choice is checked at) lands on its own key the same way.
  const auto gemms = expert_gemms(deepseek_v3(), ep(8), {{8192}, {3}}, ScaleMode::kBlock, Accum::kPromote);
  EXPECT_EQ(gemms[0].problem.total_rows(), 8192);
  EXPECT_EQ(gemms[2].problem.expected_m, 3);
  EXPECT_EQ(gemms[2].problem.m_max, 2048);
}

TEST(ExpertGemms, FewerLocalExpertsThanTopKClipTopK) {
  // EP 64: G = 4 < top_k = 8, so a token reaches at most 4 local experts: every group gets every token.
  const ExpertLayout l = expert_layout(deepseek_v3(), ep(64));
  EXPECT_EQ(l.groups, 4);
  EXPECT_EQ(l.topk, 4);
  EXPECT_EQ(l.m_max, 256 * 64);
  EXPECT_EQ(l.max_expected_m, 256);
  const auto gemms = expert_gemms(deepseek_v3(), ep(64), {{4096}, {16}}, ScaleMode::kBlock, Accum::kPromote);
  ASSERT_EQ(gemms.size(), 4u);
  EXPECT_EQ(gemms[2].problem.rows, (std::vector<int64_t>{16, 16, 16, 16}));
  EXPECT_EQ(gemms[2].problem.expected_m, 16);
  EXPECT_EQ(gemms[0].problem.total_rows(), 4096);
}

TEST(ExpertGemms, WithoutExpertParallelismTpSplitsTheIntermediate) {
  ModelSplit split;
  split.tp = 8;
  const ExpertLayout l = expert_layout(deepseek_v3(), split);
  EXPECT_EQ(l.groups, 256);
  EXPECT_EQ(l.inter, 256);      // 2048 / 8
  EXPECT_EQ(l.m_max, 256);      // 256 tokens x EP 1
  EXPECT_EQ(default_expected_m_ladder(l), (std::vector<int64_t>{1, 2, 4, 8}));  // ceil(256 x 8 / 256) = 8
  const auto gemms = expert_gemms(deepseek_v3(), split, {{65536}, {8}}, ScaleMode::kPerTensor, Accum::kPromote);
  ASSERT_EQ(gemms.size(), 4u);
  EXPECT_EQ(gemms[0].problem.n, 2 * 256);
  EXPECT_EQ(gemms[1].problem.k, 256);
  EXPECT_EQ(gemms[0].problem.total_rows(), 65536);
  EXPECT_EQ(gemms[2].problem.expected_m, 8);
  EXPECT_EQ(gemms[2].problem.real_rows(), 256 * 8);
  // A per-tensor scale is written as the default (no scale= field).
  EXPECT_EQ(expert_shapes_lines(deepseek_v3(), split, gemms).find("scale="), std::string::npos);
}

TEST(ExpertGemms, TuneModelTextHasTheGroupedLinesOnlyWithExperts) {
  const std::string dense = model_shapes(kDeepSeekConfig, ep(8), {}, "", "promote");
  const std::string without = model_tuning_shapes(kDeepSeekConfig, ep(8), {}, "", "promote", false, {});
  EXPECT_EQ(without, dense);  // dense-only tune-model sweeps exactly what it did
  EXPECT_EQ(without.find("kind="), std::string::npos);
  const std::string with = model_tuning_shapes(kDeepSeekConfig, ep(8), {}, "", "promote", true, {});
  ASSERT_EQ(with.compare(0, dense.size(), dense), 0);  // the dense lines first, unchanged
  const auto entries = parse_shapes_with_grouped(with, "tm.txt");
  const auto dense_entries = parse_shapes(dense, "tm.txt");
  ASSERT_EQ(entries.size(), dense_entries.size() + 24);
  int contiguous = 0, masked = 0;
  for (const ShapeEntry& e : entries) {
    if (!e.grouped) continue;
    (e.grouped->kind == GroupKind::kMasked ? masked : contiguous)++;
    EXPECT_EQ(e.grouped->groups, 32);
    EXPECT_EQ(e.grouped->scale, ScaleMode::kBlock) << e.name;  // the config's 128x128 blocks
  }
  EXPECT_EQ(contiguous, 6);
  EXPECT_EQ(masked, 18);
  EXPECT_NE(with.find("name=DeepseekV3.experts.gate_up_proj.ep8.contiguous.msum65536"), std::string::npos);
  // The dense-only parser tune-model uses without --experts refuses the grouped lines, naming the file and line.
  EXPECT_NE(usage_error([&] { parse_shapes(with, "tm.txt"); }).find("tm.txt:"), std::string::npos);
}

TEST(ExpertGemms, RefusalsNameTheConfigAndField) {
  const ModelConfig c = deepseek_v3();
  EXPECT_NE(usage_error([&] { expert_layout(deepseek_v3(false), ModelSplit{}); })
                .find("ds.json: missing field 'num_experts_per_tok'"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { expert_layout(c, ep(3)); }).find("ds.json: --ep 3 does not divide the 256 routed experts"),
            std::string::npos);
  ModelSplit tp3;
  tp3.tp = 3;
  EXPECT_NE(usage_error([&] { expert_layout(c, tp3); })
                .find("ds.json: --tp 3 does not divide the experts' intermediate size 2048 (moe_intermediate_size)"),
            std::string::npos);
  const std::string off = usage_error([&] { expert_gemms(c, ep(8), {{4000}, {}}, ScaleMode::kBlock, Accum::kPromote); });
  EXPECT_NE(off.find("ds.json: routed experts at M_sum = 4000"), std::string::npos) << off;
  EXPECT_NE(off.find("M_sum 4000 is not a multiple of 128"), std::string::npos) << off;
  // One token of top-8 already fills 8 segments of 128 rows: the lower bound is the rule named, not the multiple.
  const std::string low = usage_error([&] { expert_gemms(c, ep(8), {{512}, {}}, ScaleMode::kBlock, Accum::kPromote); });
  EXPECT_NE(low.find("M_sum 512 is below the smallest padded total, top_k x 128 = 1024"), std::string::npos) << low;
  EXPECT_EQ(low.find("multiple"), std::string::npos) << low;
  const std::string high =
      usage_error([&] { expert_gemms(c, ep(8), {{(1 << 20) + 128}, {}}, ScaleMode::kBlock, Accum::kPromote); });
  EXPECT_NE(high.find("M_sum 1048704 is above the largest padded total, 2^20 = 1048576"), std::string::npos) << high;
  // expected_m 3000 routes 12000 tokens: a group's count passes M_max = 2048.
  const std::string big = usage_error([&] { expert_gemms(c, ep(8), {{}, {3000}}, ScaleMode::kBlock, Accum::kPromote); });
  EXPECT_NE(big.find("ds.json: routed experts at expected_m = 3000, experts.gate_up_proj"), std::string::npos) << big;
  EXPECT_NE(big.find("> m_max=2048"), std::string::npos) << big;
  // Fast accumulation: the run-time grouped GEMM promotes only, so such winners could never be used.
  const std::string fast =
      usage_error([&] { expert_gemms(c, ep(8), {}, ScaleMode::kPerTensor, Accum::kFast); });
  EXPECT_NE(fast.find("ds.json: --accum fast with --experts"), std::string::npos) << fast;
  EXPECT_NE(fast.find("promotion only"), std::string::npos) << fast;
  const std::string llama = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})";
  EXPECT_NE(usage_error([&] { expert_layout(parse_model_config(llama, "llama.json"), ModelSplit{}); })
                .find("llama.json: LlamaForCausalLM has no routed experts"),
            std::string::npos);
}

// G = experts / EP above what the grouped kernels take is refused naming the field, before G is narrowed to int or a
// count per group is allocated (2^30 experts made G a billion groups; 2^31 wrapped it).
TEST(ExpertGemms, TooManyLocalExpertsAreRefusedBeforeRouting) {
  const auto config = [](const char* experts) {
    return parse_model_config(std::string(R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168,
      "moe_intermediate_size": 2048, "num_attention_heads": 128, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
      "qk_rope_head_dim": 64, "v_head_dim": 128, "num_experts_per_tok": 8, "n_routed_experts": )") +
                                  experts + "}",
                              "ds.json");
  };
  const std::string huge = usage_error([&] { expert_gemms(config("1073741824"), ep(1), {}, ScaleMode::kBlock,
                                                          Accum::kPromote); });
  EXPECT_NE(huge.find("ds.json: n_routed_experts = 1073741824 routed experts / --ep 1 = 1073741824 local experts per "
                      "GPU: the grouped kernels take at most G = 4096"),
            std::string::npos)
      << huge;
  EXPECT_NE(usage_error([&] { expert_layout(config("8192"), ep(1)); }).find("= 8192 local experts per GPU"),
            std::string::npos);
  EXPECT_EQ(expert_layout(config("8192"), ep(2)).groups, 4096);  // the largest G taken
  EXPECT_NE(usage_error([&] { config("2147483648"); }).find("field 'n_routed_experts' is 2147483648"),
            std::string::npos);
}

}  // namespace
}  // namespace dgt
