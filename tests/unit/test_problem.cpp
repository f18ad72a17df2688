#include <gtest/gtest.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"

namespace dgt {
namespace {

TEST(Problem, DenseDefaultsAndKey) {
  Problem p = Problem::dense(4096, 2112, 7168);
  EXPECT_EQ(p.lda, 7168);
  EXPECT_EQ(p.ldb, 7168);
  EXPECT_EQ(p.ldd, 2112);
  EXPECT_EQ(p.key(), "4096x2112x7168_lda7168_ldb7168_ldd2112_e4m3.e4m3.bf16_pt_promote");
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 4096 * 2112 * 7168);
  EXPECT_DOUBLE_EQ(p.min_bytes(), 4096.0 * 7168 + 2112.0 * 7168 + 4096.0 * 2112 * 2);
}

TEST(Problem, JsonRoundTrip) {
  Problem p = Problem::dense(7, 1023, 80);
  p.lda = 96;
  p.b = DType::kE5M2;
  p.accum = Accum::kFast;
  nlohmann::json j = p;
  Problem q = j.get<Problem>();
  EXPECT_EQ(p, q);
  EXPECT_EQ(q.key(), p.key());
}

std::string validation_message(const Problem& p) {
  try {
    validate_problem(p);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    return e.message();
  }
  return "";
}

TEST(Problem, ValidateNamesOperandValueAndOnlyTheFailedRule) {
  EXPECT_EQ(validation_message(Problem::dense(4096, 4096, 4096)), "");
  // K = 7 with a tight lda breaks the TMA 16-byte stride rule for A (checked before B).
  std::string msg = validation_message(Problem::dense(1, 16, 7));
  EXPECT_NE(msg.find("operand A"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lda = 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("multiple of 16 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lda = 16"), std::string::npos) << msg;  // the suggested fix
  EXPECT_EQ(msg.find("ldb"), std::string::npos) << "only the failed rule is reported: " << msg;
  // Padded A, tight B: now B is the operand named.
  Problem p = Problem::dense(1, 16, 7);
  p.lda = 16;
  msg = validation_message(p);
  EXPECT_NE(msg.find("operand B: ldb = 7"), std::string::npos) << msg;
  p.ldb = 32;
  EXPECT_EQ(validation_message(p), "");
  // ldd has no TMA rule with the direct-store epilogue, but must cover N.
  p.ldd = 15;
  msg = validation_message(p);
  EXPECT_NE(msg.find("operand D: ldd = 15 is smaller than N = 16"), std::string::npos) << msg;
  EXPECT_NE(validation_message(Problem::dense(0, 16, 16)).find("M = 0"), std::string::npos);
}

// Leading dimensions near the int64 range: refused before any product (ld x bytes wrapped negative and produced a
// "pad the rows, e.g. lda = -9223372036854775792" advice; an ldd of 2^63 - 1 passed and sized D's buffer with a wrapped
// product).
TEST(Problem, ValidateBoundsLeadingDimensionsBeforeAnyProduct) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Problem p = Problem::dense(64, 64, 64);
  p.ldd = kMax;
  std::string msg = validation_message(p);
  EXPECT_NE(msg.find("operand D: 64 rows of ldd = 9223372036854775807 elements (2 bytes each) is too large"),
            std::string::npos)
      << msg;
  p = Problem::dense(64, 64, 64);
  p.lda = kMax;
  msg = validation_message(p);
  EXPECT_NE(msg.find("operand A: lda = 9223372036854775807 elements is too large"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("-9"), std::string::npos) << msg;
  // D has no TMA stride rule (the direct epilogue; the TMA-store one is refused by config rule P3): f32 rows of
  // 2^40 bytes are a legal problem, 64 rows of 2^42 bytes (2^48 in all) are not.
  p = Problem::dense(64, 64, 64);
  p.d = DType::kF32;
  p.ldd = int64_t(1) << 38;
  EXPECT_EQ(validation_message(p), "");
  p.ldd = int64_t(1) << 40;
  EXPECT_NE(validation_message(p).find("operand D: 64 rows of ldd = 1099511627776 elements (4 bytes each) is too large"),
            std::string::npos);
  // A legal stride on 2^31 - 1 rows: 2^70 bytes of A.
  p = Problem::dense((int64_t(1) << 31) - 1, 64, 64);
  p.lda = (int64_t(1) << 39);
  msg = validation_message(p);
  EXPECT_NE(msg.find("operand A: 2147483647 rows of lda = 549755813888 elements (1 bytes each) is too large"),
            std::string::npos)
      << msg;
}

TEST(KernelConfig, KeyRoundTrip) {
  KernelConfig c;
  c.block_m = 64;
  c.block_n = 208;
  c.num_stages = 6;
  c.num_math_wg = 1;
  c.raster = Raster::kAlongN;
  c.group = 4;
  EXPECT_EQ(c.key(), "64x208x128_s6_wg1_sw128_c1x1_rn4_direct_sk1_sm0_1g_p1");
  // Older keys still parse: dgtune 0.1.0 (no sms token), the first sweeps' (no mainloop / promote_every tokens):
  // the one-group schedule and promotion every k-block.
  EXPECT_EQ(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_direct_sk1"), c);
  EXPECT_EQ(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_direct_sk1_sm0"), c);
  c.epilogue = Epilogue::kTma;
  c.split_k = 4;
  c.sms = 66;
  EXPECT_EQ(c.key(), "64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4_sm66_1g_p1");
  EXPECT_EQ(KernelConfig::parse_key(c.key()), c);
  c.mainloop = Mainloop::k2g;
  c.promote_every = 16;
  EXPECT_EQ(c.key(), "64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4_sm66_2g_p16");
  EXPECT_EQ(KernelConfig::parse_key(c.key()), c);
  // Either trailing token alone.
  EXPECT_EQ(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4_sm66_2g").promote_every, 1);
  EXPECT_EQ(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4_sm66_p8").mainloop, Mainloop::k1g);
  nlohmann::json j = c;
  EXPECT_EQ(j.at("block_n"), 208);
  EXPECT_EQ(j.at("mainloop"), "2g");
  EXPECT_EQ(j.at("promote_every"), 16);
  EXPECT_EQ(j.get<KernelConfig>(), c);
  // The epilogue-overlap schedule: key token "2o", JSON "2o".
  KernelConfig o = c;
  o.mainloop = Mainloop::k2o;
  o.promote_every = 1;
  EXPECT_EQ(o.key(), "64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4_sm66_2o_p1");
  EXPECT_EQ(KernelConfig::parse_key(o.key()), o);
  EXPECT_EQ(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4_sm66_2o").mainloop, Mainloop::k2o);
  EXPECT_EQ(nlohmann::json(o).at("mainloop"), "2o");
  EXPECT_EQ(nlohmann::json(o).get<KernelConfig>(), o);
  EXPECT_THROW(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4_sm66_3o"), Error);
  // The cluster split: "sk<S>c", JSON "split_cluster"; its split count is compile-time, so it stays in the
  // compiled key while the workspace split's count is normalised to 2.
  KernelConfig sc = o;
  sc.mainloop = Mainloop::k2g;
  sc.split_cluster = true;
  EXPECT_EQ(sc.key(), "64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4c_sm66_2g_p1");
  EXPECT_EQ(KernelConfig::parse_key(sc.key()), sc);
  EXPECT_EQ(nlohmann::json(sc).at("split_cluster"), true);
  EXPECT_EQ(nlohmann::json(sc).get<KernelConfig>(), sc);
  EXPECT_NE(KernelSpec{sc}.compiled_key().find("_sk4c_"), std::string::npos) << KernelSpec{sc}.compiled_key();
  KernelConfig ws = sc;
  ws.split_cluster = false;
  EXPECT_NE(KernelSpec{ws}.compiled_key().find("_sk2_"), std::string::npos) << KernelSpec{ws}.compiled_key();
  EXPECT_THROW(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_skc_sm66_2g_p1"), Error);
  EXPECT_THROW(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4x_sm66_2g_p1"), Error);
  // JSON written before the fields existed: the old defaults.
  j.erase("mainloop");
  j.erase("promote_every");
  j.erase("key");
  EXPECT_EQ(j.get<KernelConfig>().mainloop, Mainloop::k1g);
  EXPECT_EQ(j.get<KernelConfig>().promote_every, 1);
  j.erase("split_cluster");
  EXPECT_FALSE(j.get<KernelConfig>().split_cluster);
  // Swap AB: a trailing "_swapab", JSON "swap_ab"; it changes the kernel, so the compiled key keeps it.
  KernelConfig sw = sc;
  sw.swap_ab = true;
  EXPECT_EQ(sw.key(), "64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4c_sm66_2g_p1_swapab");
  EXPECT_EQ(KernelConfig::parse_key(sw.key()), sw);
  EXPECT_FALSE(KernelConfig::parse_key(sc.key()).swap_ab);
  EXPECT_EQ(nlohmann::json(sw).at("swap_ab"), true);
  EXPECT_EQ(nlohmann::json(sw).get<KernelConfig>(), sw);
  EXPECT_NE(KernelSpec{sw}.compiled_key().find("_swapab"), std::string::npos) << KernelSpec{sw}.compiled_key();
  EXPECT_THROW(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4c_sm66_2g_p1_swap"), Error);
  EXPECT_THROW(KernelConfig::parse_key("64x208x128_s6_wg1_sw128_c1x1_rn4_tma_sk4c_swapab"), Error);
  j.erase("swap_ab");
  EXPECT_FALSE(j.get<KernelConfig>().swap_ab);
}

TEST(KernelConfig, EpilogueSwizzleFollowsBlockN) {
  // The largest of 128/64/32 bytes dividing a BF16 row of BLOCK_N, else none with one full-width box.
  EXPECT_EQ(epilogue_swizzle_bytes(128), 128);
  EXPECT_EQ(epilogue_box_cols(128), 64);
  EXPECT_EQ(epilogue_swizzle_bytes(192), 128);
  EXPECT_EQ(epilogue_swizzle_bytes(96), 64);
  EXPECT_EQ(epilogue_box_cols(96), 32);
  EXPECT_EQ(epilogue_swizzle_bytes(144), 32);
  EXPECT_EQ(epilogue_box_cols(144), 16);
  EXPECT_EQ(epilogue_swizzle_bytes(176), 32);
  EXPECT_EQ(epilogue_swizzle_bytes(88), 0);
  EXPECT_EQ(epilogue_box_cols(88), 88);
  EXPECT_EQ(epilogue_swizzle_bytes(8), 0);
}

TEST(KernelConfig, ParseKeyNamesTheBadToken) {
  try {
    KernelConfig::parse_key("128x128x128_s4_wgX_sw128_c1x1_rm8_direct_sk1");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(e.message().find("'wgX'"), std::string::npos) << e.message();
  }
  EXPECT_THROW(KernelConfig::parse_key("128x128_s4"), Error);
  EXPECT_THROW(KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_3g_p1"), Error);
  EXPECT_THROW(KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_pX"), Error);
  EXPECT_THROW(KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1_x"), Error);
  EXPECT_THROW(KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_p1_2g"), Error);
}

}  // namespace
}  // namespace dgt

namespace dgt {
namespace {

// The A box of decode shapes: only round_up(M, 8) rows when all of M fits one m-block and A is not
// multicast; a cluster slice otherwise. The kernel's expected bytes (Fp8GemmTraits::a_box_rows) follow the
// same rule; gpu_EdgeShapes and gpu_DefaultSpace verify M = 1..BLOCK_M-1 with it.
TEST(ABoxRows, DecodeShapesLoadOnlyTheRowsTheyHave) {
  const KernelConfig c64 = KernelConfig::parse_key("64x16x128_s12_wg1_sw128_c1x1_rm8_tma_sk1");
  const KernelConfig c128 = KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1");
  const KernelConfig c128n2 = KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x2_rm8_tma_sk1");
  EXPECT_EQ(a_box_rows(c64, 1), 8);
  EXPECT_EQ(a_box_rows(c64, 8), 8);
  EXPECT_EQ(a_box_rows(c64, 9), 16);
  EXPECT_EQ(a_box_rows(c64, 63), 64);
  EXPECT_EQ(a_box_rows(c64, 64), 64);
  EXPECT_EQ(a_box_rows(c64, 4097), 64);  // several m-blocks: the full tile
  EXPECT_EQ(a_box_rows(c128, 68), 72);
  EXPECT_EQ(a_box_rows(c128, 128), 128);
  EXPECT_EQ(a_box_rows(c128n2, 1), 64);  // multicast slices keep their size
  EXPECT_EQ(a_box_rows(c128n2, 4096), 64);
}

// M and N tails: the last m-block loads A through a map whose box holds only round_up(M % BLOCK_M, 8) rows, the last
// n-block B through one of round_up(N % BLOCK_N, 8) rows, unless that operand is multicast (its slices keep their
// size). H200: 128x64x128 at M = 271 (15 rows in the third m-block) took 1.6x its time at M = 384 with a whole box.
// The kernel's expected bytes (Fp8GemmTraits::a_tail_rows / b_tail_rows) follow the same rule; gpu_EdgeShapes
// verifies the tails.
TEST(ABoxRows, TailBlocksLoadOnlyTheRowsTheyHave) {
  const KernelConfig c64 = KernelConfig::parse_key("64x48x128_s12_wg1_sw128_c1x1_rm8_tma_sk1");
  const KernelConfig c128 = KernelConfig::parse_key("128x120x128_s6_wg2_sw128_c1x1_rm8_tma_sk1");
  const KernelConfig c128m2 = KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c2x1_rm8_tma_sk1");
  const KernelConfig c128n2 = KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x2_rm8_tma_sk1");
  EXPECT_EQ(a_tail_box_rows(c128, 271), 16);   // 271 = 2 x 128 + 15
  EXPECT_EQ(a_tail_box_rows(c128, 195), 72);   // 67 rows
  EXPECT_EQ(a_tail_box_rows(c128, 384), 128);  // no tail: the whole tile
  EXPECT_EQ(a_tail_box_rows(c128, 68), a_box_rows(c128, 68));  // one m-block: the decode rule
  EXPECT_EQ(a_tail_box_rows(c64, 4097), 8);
  EXPECT_EQ(a_tail_box_rows(c128m2, 271), 16);  // B multicast along M: A is still per CTA
  EXPECT_EQ(a_tail_box_rows(c128n2, 271), 64);  // A multicast along N: slices keep their size
  EXPECT_EQ(b_box_rows(c128), 120);
  EXPECT_EQ(b_box_rows(c128m2), 64);
  EXPECT_EQ(b_tail_box_rows(c128, 1280), 80);  // 1280 = 10 x 120 + 80
  EXPECT_EQ(b_tail_box_rows(c64, 1280), 32);   // 26 x 48 + 32
  EXPECT_EQ(b_tail_box_rows(c64, 1281), 40);   // 33 rows
  EXPECT_EQ(b_tail_box_rows(c128, 7200), 120);  // no tail
  EXPECT_EQ(b_tail_box_rows(c128n2, 1000), 104);  // A multicast along N: B is still per CTA
  EXPECT_EQ(b_tail_box_rows(c128m2, 1000), 64);   // B multicast along M: slices keep their size
}

}  // namespace
}  // namespace dgt
