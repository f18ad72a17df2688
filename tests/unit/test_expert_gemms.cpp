// `dgtune shapes --experts`: the routed experts' grouped GEMMs of a MoE config (problem/expert_gemms.hpp): G, N, K,
// the layout per M, expected_m and M_max, the counts, the lines read back, and the refusals. No GPU needed.
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

TEST(ExpertGemms, DeepSeekV3AtEp8) {
  const ModelConfig c = deepseek_v3();
  EXPECT_EQ(c.experts_per_token, 8);
  ModelSplit split;
  split.ep = 8;
  const auto gemms = expert_gemms(c, split, {64, 4096}, ScaleMode::kBlock, Accum::kPromote);
  ASSERT_EQ(gemms.size(), 4u);
  // Decode M = 64: masked, 32 local experts, M x top_k = 512 rows, expected 16 per expert, M_max = 64 x 8 = 512.
  const GroupedProblem& gu = gemms[0].problem;
  EXPECT_EQ(gemms[0].role, "experts.gate_up_proj");
  EXPECT_EQ(gu.kind, GroupKind::kMasked);
  EXPECT_EQ(gu.groups, 32);
  EXPECT_EQ(gu.n, 4096);
  EXPECT_EQ(gu.k, 7168);
  EXPECT_EQ(gu.m_max, 512);
  EXPECT_EQ(gu.expected_m, 16);
  EXPECT_EQ(gu.real_rows(), 64 * 8);
  EXPECT_EQ(gu.scale, ScaleMode::kBlock);
  const GroupedProblem& down = gemms[1].problem;
  EXPECT_EQ(gemms[1].role, "experts.down_proj");
  EXPECT_EQ(down.n, 7168);
  EXPECT_EQ(down.k, 2048);
  EXPECT_EQ(down.rows, gu.rows);  // the same routing feeds both GEMMs
  // Prefill M = 4096: contiguous, 32768 real rows.
  EXPECT_EQ(gemms[2].problem.kind, GroupKind::kContiguous);
  EXPECT_EQ(gemms[2].problem.real_rows(), 4096 * 8);
  EXPECT_EQ(gemms[2].m, 4096);
  // The lines read back to the same problems, each named.
  const auto entries = parse_shapes_with_grouped(expert_shapes_lines(c, split, gemms), "experts.txt");
  ASSERT_EQ(entries.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(entries[i].problem, gemms[i].problem.keyed());
    EXPECT_EQ(entries[i].grouped->rows, gemms[i].problem.rows);
  }
  EXPECT_EQ(entries[0].name, "DeepseekV3.experts.gate_up_proj.ep8.m64");
}

TEST(ExpertGemms, FewerLocalExpertsThanTopKClipExpectedMWithTheCounts) {
  // EP 64: G = 4 < top_k = 8, so a token reaches at most 4 local experts: every group gets every token, and expected_m
  // is that count (it was M x 8 / 4 = 32 for M = 16, twice what any group held).
  ModelSplit split;
  split.ep = 64;
  const auto gemms = expert_gemms(deepseek_v3(), split, {16}, ScaleMode::kBlock, Accum::kPromote);
  ASSERT_FALSE(gemms.empty());
  const GroupedProblem& gu = gemms[0].problem;
  EXPECT_EQ(gu.groups, 4);
  EXPECT_EQ(gu.rows, (std::vector<int64_t>{16, 16, 16, 16}));
  EXPECT_EQ(gu.expected_m, 16);
}

TEST(ExpertGemms, WithoutExpertParallelismTpSplitsTheIntermediate) {
  ModelSplit split;
  split.tp = 8;
  const auto gemms = expert_gemms(deepseek_v3(), split, {8}, ScaleMode::kPerTensor, Accum::kPromote);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[0].problem.groups, 256);
  EXPECT_EQ(gemms[0].problem.n, 2 * 256);  // 2 x 2048 / 8
  EXPECT_EQ(gemms[1].problem.k, 256);
  EXPECT_EQ(gemms[0].problem.expected_m, 1);  // ceil(8 x 8 / 256)
  EXPECT_EQ(gemms[0].problem.m_max, 128);
}

TEST(ExpertGemms, RefusalsNameTheField) {
  auto message = [](const ModelConfig& c, const ModelSplit& s) {
    try {
      expert_gemms(c, s, {64}, ScaleMode::kBlock, Accum::kPromote);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted";
    return std::string();
  };
  EXPECT_NE(message(deepseek_v3(false), ModelSplit{}).find("ds.json: missing field 'num_experts_per_tok'"),
            std::string::npos);
  ModelSplit three;
  three.ep = 3;
  EXPECT_NE(message(deepseek_v3(), three).find("--ep 3 does not divide the 256 routed experts"), std::string::npos);
}

}  // namespace
}  // namespace dgt
