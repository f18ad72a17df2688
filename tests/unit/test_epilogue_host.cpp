// Output types and fused epilogues, host side: problem keys (old keys unchanged), shapes-file
// keys, kernel spec keys and codegen, the resource model's staging bytes and rule R23, P3 per output type,
// the epilogue-operand checks, the loader's family rule, the shipped shape sets, default configs. No GPU.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "jit/codegen.hpp"
#include "launch/gemm_kernel.hpp"
#include "loader/choice.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"
#include "problem/shapes_file.hpp"
#include "space/cost_model.hpp"
#include "space/resource_model.hpp"
#include "space/search_space.hpp"

namespace dgt {
namespace {

Problem epi(Problem p, DType d, Bias b, Act a) {
  p.d = d, p.bias = b, p.act = a;
  return p;
}

TEST(EpilogueProblem, KeysOfTheDefaultAreUnchangedAndEveryFieldShows) {
  const Problem base = Problem::dense(4096, 2112, 7168);
  // The key stored before fused epilogues existed: existing DBs keep matching.
  EXPECT_EQ(base.key(), "4096x2112x7168_lda7168_ldb7168_ldd2112_e4m3.e4m3.bf16_pt_promote");
  EXPECT_EQ(epi(base, DType::kF32, Bias::kNone, Act::kNone).key(),
            "4096x2112x7168_lda7168_ldb7168_ldd2112_e4m3.e4m3.f32_pt_promote");
  EXPECT_EQ(epi(base, DType::kE4M3, Bias::kBF16, Act::kGeluTanh).key(),
            "4096x2112x7168_lda7168_ldb7168_ldd2112_e4m3.e4m3.e4m3_pt_promote_bias_gelu_tanh");
  EXPECT_EQ(epi(base, DType::kBF16, Bias::kNone, Act::kRelu).key(),
            "4096x2112x7168_lda7168_ldb7168_ldd2112_e4m3.e4m3.bf16_pt_promote_relu");
  EXPECT_EQ(epi(base, DType::kBF16, Bias::kBF16, Act::kRelu).label(), "4096x2112x7168 +bias relu");
  // f32 output doubles D's bytes; a bias adds N bf16 values.
  EXPECT_DOUBLE_EQ(epi(base, DType::kF32, Bias::kBF16, Act::kNone).min_bytes(),
                   4096.0 * 7168 + 2112.0 * 7168 + 4096.0 * 2112 * 4 + 2112.0 * 2);
  EXPECT_DOUBLE_EQ(epi(base, DType::kE4M3, Bias::kNone, Act::kNone).min_bytes(),
                   4096.0 * 7168 + 2112.0 * 7168 + 4096.0 * 2112);
  // Every combination has its own key.
  std::set<std::string> keys;
  for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3})
    for (Bias b : {Bias::kNone, Bias::kBF16})
      for (Act a : {Act::kNone, Act::kRelu, Act::kGeluTanh}) keys.insert(epi(base, d, b, a).key());
  EXPECT_EQ(keys.size(), 18u);
}

TEST(EpilogueProblem, JsonRoundTripAndOldJsonDefaults) {
  const Problem p = epi(Problem::dense(7, 1024, 80), DType::kE4M3, Bias::kBF16, Act::kRelu);
  nlohmann::json j = p;
  EXPECT_EQ(j["dtype_d"], "e4m3");
  EXPECT_EQ(j["bias"], "bf16");
  EXPECT_EQ(j["act"], "relu");
  EXPECT_EQ(j.get<Problem>(), p);
  j.erase("bias");
  j.erase("act");
  const Problem old = j.get<Problem>();  // JSON written before fused epilogues existed
  EXPECT_EQ(old.bias, Bias::kNone);
  EXPECT_EQ(old.act, Act::kNone);
}

TEST(EpilogueProblem, ValidationAndParsing) {
  Problem p = Problem::dense(64, 64, 64);
  p.d = DType::kE5M2;
  try {
    validate_problem(p);
    ADD_FAILURE() << "e5m2 output must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "operand D has dtype e5m2: the output type must be bf16, f32 or e4m3");
  }
  for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3}) {
    p.d = d;
    EXPECT_NO_THROW(validate_problem(p));
  }
  EXPECT_EQ(parse_output_dtype("f32"), DType::kF32);
  EXPECT_EQ(parse_bias("bf16"), Bias::kBF16);
  EXPECT_EQ(parse_act("gelu_tanh"), Act::kGeluTanh);
  try {
    parse_act("silu");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(e.message(), "unknown activation 'silu' (expected none, relu or gelu_tanh)");
  }
  EXPECT_THROW(parse_output_dtype("e5m2"), Error);
  EXPECT_THROW(parse_bias("f32"), Error);
}

TEST(EpilogueProblem, ShapesFileKeys) {
  const auto v = parse_shapes("64 128 256 d=f32\n64 128 256 d=e4m3 bias=bf16 act=gelu_tanh\n64 128 256 act=relu\n",
                              "s.txt");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].problem.d, DType::kF32);
  EXPECT_EQ(v[1].problem.d, DType::kE4M3);
  EXPECT_EQ(v[1].problem.bias, Bias::kBF16);
  EXPECT_EQ(v[1].problem.act, Act::kGeluTanh);
  EXPECT_EQ(v[2].problem.bias, Bias::kNone);
  EXPECT_EQ(v[2].problem.act, Act::kRelu);
}

TEST(EpilogueSpec, KeysAndCodegen) {
  const KernelConfig c = KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  const Problem base = Problem::dense(4096, 4096, 4096);
  EXPECT_EQ(KernelSpec::of(c, base).key(), c.key() + "_e4m3.e4m3_promote");  // unchanged
  const KernelSpec s = KernelSpec::of(c, epi(base, DType::kE4M3, Bias::kBF16, Act::kGeluTanh));
  EXPECT_EQ(s.key(), c.key() + "_e4m3.e4m3_promote_de4m3_bias_gelu_tanh");
  const jit::GeneratedKernel g = jit::generate_gemm(s);
  // The last three template arguments: kOutType 2 (e4m3), kBias true, kAct 2 (gelu_tanh).
  EXPECT_NE(g.name_expression.find(", 0u, 2u, true, 2u>"), std::string::npos) << g.name_expression;
  const jit::GeneratedKernel f = jit::generate_gemm(KernelSpec::of(c, epi(base, DType::kF32, Bias::kNone, Act::kRelu)));
  EXPECT_NE(f.name_expression.find(", 0u, 1u, false, 1u>"), std::string::npos) << f.name_expression;
  EXPECT_NE(jit::generate_gemm(KernelSpec::of(c, base)).name_expression.find(", 0u, 0u, false, 0u>"), std::string::npos);
}

TEST(EpilogueResources, StagingScalesWithTheOutputTypeAndR23) {
  KernelConfig c = KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  const Problem base = Problem::dense(4096, 4096, 4096);
  EXPECT_EQ(evaluate_resources(KernelSpec::of(c, base)).smem.staging, 128 * 128 * 2);
  EXPECT_EQ(evaluate_resources(KernelSpec::of(c, epi(base, DType::kF32, Bias::kNone, Act::kNone))).smem.staging,
            128 * 128 * 4);
  EXPECT_EQ(evaluate_resources(KernelSpec::of(c, epi(base, DType::kE4M3, Bias::kNone, Act::kNone))).smem.staging,
            128 * 128);
  // f32's larger staging costs a stage where bf16 fits exactly: 6 stages of 32 KiB + 32 KiB staging fit with
  // bf16 (229,600 B), not with f32 (262,368 B).
  c.num_stages = 6;
  EXPECT_TRUE(evaluate_resources(KernelSpec::of(c, base)).ok());
  const ResourceReport f32 = evaluate_resources(KernelSpec::of(c, epi(base, DType::kF32, Bias::kNone, Act::kNone)));
  ASSERT_FALSE(f32.ok());
  EXPECT_EQ(f32.rejection.substr(0, 3), "R9:");
  // R23: e4m3 staging rows are BLOCK_N bytes, a multiple of 16 only for BLOCK_N % 16 == 0.
  KernelConfig odd = KernelConfig::parse_key("128x40x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1");
  EXPECT_TRUE(evaluate_resources(KernelSpec::of(odd, base)).ok());
  const ResourceReport r = evaluate_resources(KernelSpec::of(odd, epi(base, DType::kE4M3, Bias::kNone, Act::kNone)));
  EXPECT_EQ(r.rejection,
            "R23: the TMA-store epilogue with e4m3 output needs BLOCK_N = 40 to be a multiple of 16 (staging rows of "
            "BLOCK_N bytes must be 16-byte multiples, the TMA box rule)");
  odd.epilogue = Epilogue::kDirect;
  EXPECT_TRUE(evaluate_resources(KernelSpec::of(odd, epi(base, DType::kE4M3, Bias::kNone, Act::kNone))).ok());
  // TMA box of D per output type: swizzle span / element bytes.
  EXPECT_EQ(epilogue_swizzle_bytes(128, 4), 128);
  EXPECT_EQ(epilogue_box_cols(128, 4), 32);
  EXPECT_EQ(epilogue_swizzle_bytes(48, 1), 0);  // 48-byte rows: unswizzled, one box of 48 columns
  EXPECT_EQ(epilogue_box_cols(48, 1), 48);
  EXPECT_EQ(epilogue_swizzle_bytes(64, 1), 64);
  EXPECT_EQ(epilogue_box_cols(64, 1), 64);
  EXPECT_EQ(epilogue_swizzle_bytes(40, 4), 32);  // 160-byte rows
  // Epilogue registers counted next to the accumulators.
  EXPECT_EQ(epilogue_regs(DType::kBF16, Bias::kNone, Act::kNone, ScaleMode::kBlock), 0);
  EXPECT_EQ(epilogue_regs(DType::kE4M3, Bias::kBF16, Act::kGeluTanh, ScaleMode::kPerTensor), 0);
  EXPECT_EQ(epilogue_regs(DType::kE4M3, Bias::kBF16, Act::kGeluTanh, ScaleMode::kChannel), 0);
  EXPECT_EQ(epilogue_regs(DType::kE4M3, Bias::kBF16, Act::kGeluTanh, ScaleMode::kBlock), 10);
  EXPECT_EQ(epilogue_regs(DType::kF32, Bias::kBF16, Act::kRelu, ScaleMode::kBlock1d1d), 2);
  // At the R10 limit (3 x 72 + 16 = 232) the epilogue costs nothing with per-tensor scales (measured) ...
  const KernelConfig wide = KernelConfig::parse_key("128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  EXPECT_TRUE(evaluate_resources(KernelSpec::of(wide, epi(base, DType::kE4M3, Bias::kBF16, Act::kGeluTanh))).ok());
  // ... and with block scales kEpiRegs counts: 64x136 one-WG 2g (3 x 68 + 16 + 14 = 234 of 240) is legal alone
  // and refused with e4m3 + bias + GELU (+ 10). (The 256x32 one-WG kernel that spilled 112 B without kEpiRegs
  // when the scales were global loads compiles without spills since they come through shared memory.)
  Problem blk = epi(base, DType::kE4M3, Bias::kBF16, Act::kGeluTanh);
  blk.scale = ScaleMode::kBlock;
  const KernelConfig tall = KernelConfig::parse_key("64x136x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1");
  Problem blk_plain = base;
  blk_plain.scale = ScaleMode::kBlock;
  EXPECT_TRUE(evaluate_resources(KernelSpec::of(tall, blk_plain)).ok());
  EXPECT_EQ(evaluate_resources(KernelSpec::of(tall, blk)).rejection.substr(0, 4), "R10:");
}

TEST(EpilogueResources, P3NeedsSixteenByteRowsPerOutputType) {
  const KernelConfig tma = KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  Problem p = Problem::dense(100, 100, 128);
  p.ldd = 104;  // 208 bytes of bf16: a multiple of 16
  EXPECT_EQ(problem_fit(tma, p), "");
  p.d = DType::kE4M3;  // 104 bytes: not
  EXPECT_EQ(problem_fit(tma, p),
            "P3: TMA-store epilogue needs D rows of 16-byte multiples; ldd = 104 e4m3 elements = 104 bytes is not a "
            "multiple of 16");
  p.d = DType::kF32;
  p.ldd = 100;  // 400 bytes
  EXPECT_EQ(problem_fit(tma, p), "");
  p.ldd = 102;
  EXPECT_NE(problem_fit(tma, p), "");
  // The space prunes those configs instead of failing them.
  p = epi(Problem::dense(100, 100, 128), DType::kE4M3, Bias::kNone, Act::kNone);
  p.ldd = 104;
  for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) EXPECT_EQ(c.config.epilogue, Epilogue::kDirect);
}

TEST(EpilogueOperands, BadCombinationsNameTheOperand) {
  auto message = [](const Problem& p, const jit::GemmOperands& ops) -> std::string {
    try {
      jit::check_operands(p, ops);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
      return e.message();
    }
    return "";
  };
  const Problem base = Problem::dense(64, 128, 256);
  alignas(16) float word[8] = {};
  jit::GemmOperands ops;
  EXPECT_EQ(message(base, ops), "problem 64x128x256: operand scale_a is null (per-tensor scales need a device pointer)");
  ops.scale_a = word;
  EXPECT_EQ(message(base, ops), "problem 64x128x256: operand scale_b is null (per-tensor scales need a device pointer)");
  ops.scale_b = word + 1;  // 4-byte aligned: enough for per-tensor scales
  EXPECT_EQ(message(base, ops), "");
  Problem block = base;
  block.scale = ScaleMode::kBlock;
  // Block scale modes copy rows of scales with cp.async.bulk: 16-byte aligned addresses only.
  EXPECT_NE(message(block, ops).find("operand scale_b: address"), std::string::npos) << message(block, ops);
  EXPECT_NE(message(block, ops).find("is not 16-byte aligned (block scales"), std::string::npos);
  block.scale = ScaleMode::kBlock1d1d;
  ops.scale_b = word + 4;
  EXPECT_EQ(message(block, ops), "");
  ops.scale_a = word + 2;
  EXPECT_NE(message(block, ops).find("operand scale_a: address"), std::string::npos) << message(block, ops);
  block.scale = ScaleMode::kChannel;  // channel scales are read with plain loads
  EXPECT_EQ(message(block, ops), "");
  ops.scale_a = word;
  EXPECT_EQ(message(epi(base, DType::kE4M3, Bias::kNone, Act::kNone), ops),
            "problem 64x128x256 ->e4m3 has e4m3 output but scale_d is null (e4m3 output needs an FP32 output scale in "
            "device memory: D = e4m3(scale_d x result))");
  EXPECT_EQ(message(epi(base, DType::kBF16, Bias::kBF16, Act::kNone), ops),
            "problem 64x128x256 +bias has a bf16 bias but the bias pointer is null (N = 128 BF16 values needed)");
  ops.amax = word;
  EXPECT_EQ(message(base, ops), "problem 64x128x256: an amax pointer needs e4m3 output (output type is bf16)");
  ops.scale_d = word;
  EXPECT_EQ(message(epi(base, DType::kE4M3, Bias::kNone, Act::kGeluTanh), ops), "");
  ops.bias = reinterpret_cast<const char*>(word) + 1;
  EXPECT_NE(message(epi(base, DType::kE4M3, Bias::kBF16, Act::kNone), ops).find("operand bias: address"),
            std::string::npos);
}

TEST(EpilogueLoader, WinnersOfAnotherEpilogueAreNeverUsed) {
  const Problem want = epi(Problem::dense(128, 7168, 2048), DType::kBF16, Bias::kBF16, Act::kGeluTanh);
  auto winner = [](const Problem& p, const char* key) {
    EnvironmentWinner w;
    w.problem = p;
    w.config_key = key;
    w.median_us = 10;
    w.protocol_name = "cold-l2-v1";
    w.env.kernel_hash = "h";
    return w;
  };
  const char* plain_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1";
  const char* gelu_key = "128x96x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1";
  std::vector<EnvironmentWinner> rows = {winner(Problem::dense(128, 7168, 2048), plain_key),
                                         winner(epi(Problem::dense(128, 7168, 2048), DType::kBF16, Bias::kBF16, Act::kRelu), plain_key)};
  EXPECT_FALSE(choose_stored_winner(rows, want, "h", "", "cold-l2", legal_for_current_kernel).has_value());
  rows.push_back(winner(epi(Problem::dense(64, 7168, 2048), DType::kBF16, Bias::kBF16, Act::kGeluTanh), gelu_key));
  const auto c = choose_stored_winner(rows, want, "h", "", "cold-l2", legal_for_current_kernel);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->config.key(), KernelConfig::parse_key(gelu_key).key());
  EXPECT_EQ(c->source, "nearest");
}

/// deepseek-v3-gelu.txt / -e4m3out.txt: deepseek-v3.txt's 35 problems in its order with the epilogue.
void expect_deepseek_v3_with(const std::string& file, DType d, Bias b, Act a) {
  const std::string dir = std::string(DGT_SOURCE_DIR) + "/configs/shapes/";
  const auto plain = load_shapes_file(dir + "deepseek-v3.txt");
  const auto v = load_shapes_file(dir + file);
  ASSERT_EQ(v.size(), 35u) << file;
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i].problem, epi(plain[i].problem, d, b, a)) << v[i].where();
    EXPECT_NO_THROW(validate_problem(v[i].problem)) << v[i].where();
    // The loader's fallback must be legal for every shipped shape (resolve() throws kInternal otherwise).
    const KernelConfig c = default_config(v[i].problem);
    EXPECT_TRUE(legal_for_current_kernel(c, v[i].problem)) << v[i].where() << " " << c.key();
  }
}

TEST(EpilogueShapes, DeepSeekV3Gelu) {
  expect_deepseek_v3_with("deepseek-v3-gelu.txt", DType::kBF16, Bias::kBF16, Act::kGeluTanh);
}

TEST(EpilogueShapes, DeepSeekV3E4m3Out) {
  expect_deepseek_v3_with("deepseek-v3-e4m3out.txt", DType::kE4M3, Bias::kNone, Act::kNone);
}

TEST(EpilogueShapes, DefaultConfigIsLegalForEveryCombinationOnEdgeShapes) {
  for (const auto& s : load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/edge.txt"))
    for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3})
      for (Act a : {Act::kNone, Act::kRelu, Act::kGeluTanh}) {
        const Problem p = epi(s.problem, d, Bias::kBF16, a);
        const KernelConfig c = default_config(p);
        EXPECT_TRUE(legal_for_current_kernel(c, p)) << p.key() << " " << c.key() << ": " << config_rule_violation(c, p);
      }
}

}  // namespace
}  // namespace dgt
