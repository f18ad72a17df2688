// GroupedProblem's text form (every field, the distributions, the refusals naming the field and the rule), its
// derived rows and layout arrays, and the grouped config rules G1-G3 (space/grouped_rules.hpp).
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "space/grouped_rules.hpp"

namespace dgt {
namespace {

std::string refusal(const std::string& text) {
  try {
    parse_grouped_problem(text, "spec.txt:3");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << text;
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

TEST(GroupedProblem, ContiguousList) {
  const GroupedProblem g = parse_grouped_problem("kind=contiguous groups=4 m_per_group=200,0,128,1 4096 7168", "x");
  EXPECT_EQ(g.kind, GroupKind::kContiguous);
  EXPECT_EQ(g.groups, 4);
  EXPECT_EQ(g.rows, (std::vector<int64_t>{200, 0, 128, 1}));
  EXPECT_EQ(g.n, 4096);
  EXPECT_EQ(g.k, 7168);
  EXPECT_EQ(g.scale, ScaleMode::kPerTensor);
  EXPECT_EQ(g.accum, Accum::kPromote);
  EXPECT_EQ(g.real_rows(), 329);
  EXPECT_EQ(g.total_rows(), 256 + 0 + 128 + 128);
  EXPECT_EQ(g.group_starts(), (std::vector<int64_t>{0, 256, 256, 384}));
  EXPECT_DOUBLE_EQ(g.flops(), 2.0 * 329 * 4096 * 7168);
  const std::vector<int32_t> m = g.layout();
  ASSERT_EQ(m.size(), 512u);
  EXPECT_EQ(m[0], 0);
  EXPECT_EQ(m[199], 0);
  EXPECT_EQ(m[200], -1);
  EXPECT_EQ(m[255], -1);
  EXPECT_EQ(m[256], 2);
  EXPECT_EQ(m[383], 2);
  EXPECT_EQ(m[384], 3);
  EXPECT_EQ(m[385], -1);
  EXPECT_EQ(g.dense_view().m, 512);
}

TEST(GroupedProblem, MaskedDefaultsAndFields) {
  GroupedProblem g = parse_grouped_problem("kind=masked groups=4 masked_m=200,0,256,17 4096 7168", "x");
  EXPECT_EQ(g.m_max, 256);  // smallest multiple of 128 >= 256
  EXPECT_EQ(g.expected_m, 119);  // ceil(473 / 4)
  EXPECT_EQ(g.total_rows(), 4 * 256);
  EXPECT_EQ(g.group_starts(), (std::vector<int64_t>{0, 256, 512, 768}));
  EXPECT_EQ(g.layout(), (std::vector<int32_t>{200, 0, 256, 17}));
  g = parse_grouped_problem(
      "kind=masked groups=2 m_max=384 masked_m=5 expected_m=64 7168 2048 scale=block accum=promote", "x");
  EXPECT_EQ(g.rows, (std::vector<int64_t>{5, 5}));  // one count for every group
  EXPECT_EQ(g.m_max, 384);
  EXPECT_EQ(g.expected_m, 64);
  EXPECT_EQ(g.scale, ScaleMode::kBlock);
  // Fields in any order; tabs as separators.
  g = parse_grouped_problem("4096\t7168 masked_m=1 groups=1 kind=masked", "x");
  EXPECT_EQ(g.m_max, 128);
  EXPECT_EQ(g.expected_m, 1);
  g = parse_grouped_problem("kind=contiguous groups=1 m_per_group=64 256 256 accum=fast", "x");
  EXPECT_EQ(g.accum, Accum::kFast);
}

// The key holds what the host knows without reading the device, then the dense view's key.
TEST(GroupedProblem, KeyOfContiguousIsKindGAndTotalM) {
  const GroupedProblem g =
      parse_grouped_problem("kind=contiguous groups=4 m_per_group=200,0,128,1 4096 7168 scale=block", "x");
  const Problem p = g.keyed();
  EXPECT_TRUE(p.is_grouped());
  EXPECT_EQ(p.groups, 4);
  EXPECT_EQ(p.group_kind, GroupKind::kContiguous);
  EXPECT_EQ(p.m, 512);  // padded total M: 256 + 0 + 128 + 128
  EXPECT_EQ(p.m_max, 0);
  EXPECT_EQ(p.expected_m, 0);
  EXPECT_EQ(p.key(), "grouped-contiguous_G4_512x4096x7168_lda7168_ldb7168_ldd4096_e4m3.e4m3.bf16_blk_promote");
  EXPECT_EQ(p.label(), "contiguous G4 512x4096x7168 block");
  // Another distribution with the same G and padded total M shares the key; another total M does not.
  const GroupedProblem same =
      parse_grouped_problem("kind=contiguous groups=4 m_per_group=0,128,256,1 4096 7168 scale=block", "x");
  EXPECT_EQ(same.keyed().key(), p.key());
  const GroupedProblem more =
      parse_grouped_problem("kind=contiguous groups=4 m_per_group=1,1,1,257 4096 7168 scale=block", "x");
  EXPECT_NE(more.keyed().key(), p.key());
  // The dense view itself stays dense: its key is the suffix.
  EXPECT_FALSE(g.dense_view().is_grouped());
  EXPECT_EQ("grouped-contiguous_G4_" + g.dense_view().key(), p.key());
}

TEST(GroupedProblem, KeyOfMaskedIsKindGMmaxAndExpectedM) {
  const GroupedProblem g = parse_grouped_problem("kind=masked groups=32 masked_m=route:3:2048:8 m_max=768 "
                                                 "expected_m=512 4096 7168",
                                                 "x");
  const Problem p = g.keyed();
  EXPECT_EQ(p.m, 32 * 768);
  EXPECT_EQ(p.key(),
            "grouped-masked_G32_mmax768_em512_24576x4096x7168_lda7168_ldb7168_ldd4096_e4m3.e4m3.bf16_pt_promote");
  EXPECT_EQ(p.label(), "masked G32 24576x4096x7168 mmax=768 em=512");
  // expected_m and M_max are part of the identity; the counts are not.
  GroupedProblem other = g;
  other.expected_m = 256;
  EXPECT_NE(other.keyed().key(), p.key());
  other = g;
  other.rows.assign(32, 7);
  EXPECT_EQ(other.keyed().key(), p.key());
  // A contiguous problem of the same dense view never shares a masked key.
  EXPECT_NE(p.key().substr(0, 18), "grouped-contiguous");
}

TEST(GroupedProblem, TextFormRoundTripsAndKeyedJsonKeepsTheIdentity) {
  for (const char* text : {"kind=contiguous groups=4 m_per_group=skew:7:32768 4096 7168 scale=block",
                           "kind=masked groups=8 masked_m=3,0,5,128,1,1,1,9 m_max=256 expected_m=64 2048 7168",
                           "kind=contiguous groups=2 m_per_group=64 256 512 accum=fast"}) {
    const GroupedProblem g = parse_grouped_problem(text, "x");
    const GroupedProblem back = parse_grouped_problem(grouped_text(g), "y");
    EXPECT_EQ(back.rows, g.rows) << grouped_text(g);
    EXPECT_EQ(back.keyed(), g.keyed()) << grouped_text(g);
    EXPECT_EQ(back.rows_text, g.rows_text);
    const nlohmann::json j = g.keyed();
    EXPECT_EQ(j.at("groups").get<int>(), g.groups);
    EXPECT_EQ(j.get<Problem>(), g.keyed()) << j.dump();
  }
  EXPECT_EQ(grouped_text(parse_grouped_problem("kind=masked groups=2 masked_m=5,9 4096 7168", "x")),
            "kind=masked groups=2 masked_m=5,9 m_max=128 expected_m=7 4096 7168");
  EXPECT_EQ(parse_grouped_problem("kind=contiguous groups=3 m_per_group=4,0,17 64 128", "x").rows_list(), "4,0,17");
  // A dense problem's JSON has no grouped field (what was written before grouped problems existed).
  const nlohmann::json dense = Problem::dense(64, 128, 256);
  EXPECT_FALSE(dense.contains("groups"));
  EXPECT_FALSE(dense.contains("group_kind"));
  EXPECT_EQ(parse_group_kind("masked"), GroupKind::kMasked);
  EXPECT_THROW(parse_group_kind("dense"), Error);
}

TEST(GroupedProblem, Distributions) {
  const GroupedProblem s = parse_grouped_problem("kind=contiguous groups=8 m_per_group=skew:7:32768 4096 7168", "x");
  EXPECT_EQ(s.real_rows(), 32768);
  EXPECT_EQ(s.rows_text, "skew:7:32768");
  const auto [lo, hi] = std::minmax_element(s.rows.begin(), s.rows.end());
  EXPECT_GT(*hi, 3 * *lo) << "skewed";
  // Deterministic for a seed, different for another.
  EXPECT_EQ(grouped_rows_from("skew:7:32768", 8, "x"), s.rows);
  EXPECT_NE(grouped_rows_from("skew:8:32768", 8, "x"), s.rows);
  // Routing: TOKENS x TOPK rows in all, no group above TOKENS (distinct picks), some groups empty when sparse.
  const auto r = grouped_rows_from("route:1:16:8", 256, "x");
  EXPECT_EQ(std::accumulate(r.begin(), r.end(), int64_t(0)), 128);
  EXPECT_LE(*std::max_element(r.begin(), r.end()), 16);
  EXPECT_GT(std::count(r.begin(), r.end(), 0), 0);
  const GroupedProblem m = parse_grouped_problem("kind=masked groups=32 masked_m=route:3:64:8 7168 2048", "x");
  EXPECT_EQ(m.real_rows(), 512);
  EXPECT_EQ(m.m_max % 128, 0);
  EXPECT_GE(m.m_max, *std::max_element(m.rows.begin(), m.rows.end()));
}

TEST(GroupedProblem, RefusalsNameTheFieldAndTheRule) {
  auto has = [](const std::string& msg, std::initializer_list<const char*> parts) {
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  };
  has(refusal("groups=2 m_per_group=1 64 64"), {"spec.txt:3", "kind"});
  has(refusal("kind=dense groups=2 m_per_group=1 64 64"), {"kind", "contiguous or masked"});
  has(refusal("kind=contiguous m_per_group=1 64 64"), {"groups="});
  has(refusal("kind=contiguous groups=0 m_per_group=1 64 64"), {"groups=0", "1..4096"});
  has(refusal("kind=contiguous groups=x m_per_group=1 64 64"), {"groups", "not an integer"});
  has(refusal("kind=contiguous groups=2 64 64"), {"m_per_group"});
  has(refusal("kind=contiguous groups=3 m_per_group=1,2 64 64"), {"m_per_group", "2 counts", "groups=3"});
  has(refusal("kind=contiguous groups=2 m_per_group=1,-4 64 64"), {"m_per_group", "group 1", ">= 0"});
  has(refusal("kind=contiguous groups=2 m_per_group=0,0 64 64"), {"m_per_group", "every group is empty"});
  has(refusal("kind=contiguous groups=2 masked_m=1 64 64"), {"masked_m"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 m_max=128 64 64"), {"m_max", "masked field"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64"), {"N and K"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 64 64"), {"N and K"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 6x"), {"K", "not an integer"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 40"), {"K"});  // 40-byte rows break the TMA stride rule
  // A grouped spec has no lda: the advice is a K that is a multiple of 16, never the dense rule's "pad lda".
  const std::string k7 = refusal("kind=contiguous groups=2 m_per_group=1 64 7");
  has(k7, {"spec.txt:3", "K=7", "not a multiple of 16 bytes", "no lda or ldb to pad", "e.g. K=16"});
  EXPECT_EQ(k7.find("lda = "), std::string::npos) << k7;
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 64 colour=red"), {"unknown field", "colour"});
  has(refusal("kind=contiguous groups=2 groups=3 m_per_group=1 64 64"), {"groups", "twice"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 64 scale=channel"), {"scale", "G4"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 64 scale=blocky"), {"scale", "blocky"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 64 accum=slow"), {"accum", "slow"});
  has(refusal("kind=contiguous groups=2 m_per_group=1 64 64 scale=block accum=fast"), {"promote"});
  has(refusal("kind=masked groups=2 masked_m=1 m_max=100 64 64"), {"m_max=100", "multiple of 128", "G5"});
  has(refusal("kind=masked groups=2 masked_m=1,300 m_max=256 64 64"), {"masked_m", "group 1", "300", "m_max=256"});
  has(refusal("kind=masked groups=2 masked_m=1 expected_m=0 64 64"), {"expected_m=0", ">= 1"});
  // A hint of rows per group above M_max (no group holds more), and a masked line without a row, as for contiguous.
  has(refusal("kind=masked groups=2 masked_m=1 m_max=128 expected_m=129 64 64"), {"expected_m=129", "<= m_max=128"});
  EXPECT_EQ(parse_grouped_problem("kind=masked groups=2 masked_m=1 m_max=128 expected_m=128 64 64", "x").expected_m,
            128);
  has(refusal("kind=masked groups=2 masked_m=0,0 64 64"),
      {"spec.txt:3", "masked_m: every group is empty (a masked problem needs at least one row)"});
  has(refusal("kind=masked groups=2 m_per_group=1 64 64"), {"masked_m"});
  has(refusal("kind=masked groups=2 masked_m=skew:1 64 64"), {"skew:SEED:TOTAL"});
  has(refusal("kind=masked groups=2 masked_m=route:1:4:3 64 64"), {"TOPK", "1..groups"});
  has(refusal("kind=masked groups=2 masked_m=skew:a:4 64 64"), {"SEED"});
}

KernelConfig cfg(const char* key) { return KernelConfig::parse_key(key); }

TEST(GroupedRules, G1ToG3) {
  EXPECT_EQ(grouped_rule_violation(cfg("128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1")), "");
  EXPECT_EQ(grouped_rule_violation(cfg("64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1")), "");
  EXPECT_EQ(grouped_rule_violation(cfg("128x128x128_s5_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1")), "");
  auto rule = [](const char* key) { return grouped_rule_violation(cfg(key)).substr(0, 2); };
  EXPECT_EQ(rule("256x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1"), "G1");
  EXPECT_EQ(rule("128x128x128_s5_wg2_sw128_c2x1_rm8_direct_sk1_sm0_2g_p1"), "G2");
  EXPECT_EQ(rule("128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk2_sm0_2g_p1"), "G3");
  // The TMA epilogue is allowed: whole real-row boxes go out with TMA, a group's last block with the row check.
  EXPECT_EQ(grouped_rule_violation(cfg("128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1")), "");
  EXPECT_EQ(rule("128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2o_p1"), "G3");
  EXPECT_EQ(rule("128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p1"), "G3");
  EXPECT_EQ(rule("128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1_swapab"), "G6");
  // The dense rules apply to the dense view too.
  const GroupedProblem g = parse_grouped_problem("kind=masked groups=2 masked_m=3 4096 7168", "x");
  EXPECT_EQ(grouped_config_violation(cfg("128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1"), g), "");
  EXPECT_NE(grouped_config_violation(cfg("128x128x128_s32_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1"), g), "");
}

}  // namespace
}  // namespace dgt
