#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "space/cost_model.hpp"
#include "space/search_space.hpp"

namespace dgt {
namespace {

TEST(SearchSpace, ShippedDefaultEqualsBuiltin) {
  SearchSpace file = SearchSpace::load(std::string(DGT_SOURCE_DIR) + "/configs/spaces/sm90-default.json");
  SearchSpace builtin = SearchSpace::builtin_default();
  EXPECT_EQ(file.name, builtin.name);
  EXPECT_EQ(file.block_m, builtin.block_m);
  EXPECT_EQ(file.block_n, builtin.block_n);
  EXPECT_EQ(file.block_k, builtin.block_k);
  EXPECT_EQ(file.num_stages, builtin.num_stages);
  EXPECT_EQ(file.num_math_wg, builtin.num_math_wg);
  EXPECT_EQ(file.swizzle, builtin.swizzle);
  EXPECT_EQ(file.cluster, builtin.cluster);
  EXPECT_EQ(file.raster, builtin.raster);
  EXPECT_EQ(file.group, builtin.group);
  EXPECT_EQ(file.split_k, builtin.split_k);
  EXPECT_EQ(builtin.block_n.size(), 16u);  // 16..256 step 16
  EXPECT_EQ(builtin.size(), 3u * 16 * 1 * 7 * 2);
}

/// Independent count of legal candidates for 4096^3 promote: enumerate by hand with the rules.
int expected_kept_4096(Accum accum) {
  int kept = 0;
  for (int bm : {64, 128, 256})
    for (int bn = 16; bn <= 256; bn += 16)
      for (int st = 2; st <= 8; ++st)
        for (int wg : {1, 2}) {
          if (bm % (64 * wg)) continue;
          const int smem = st * (bm + bn) * 128 + 16 * st + 1024;
          if (smem > 232448) continue;
          const int acc = (bm / wg / 64) * (bn / 2) * (accum == Accum::kPromote ? 2 : 1);
          if (acc + 48 > (wg == 1 ? 240 : 232)) continue;
          ++kept;
        }
  return kept;
}

TEST(SearchSpace, EnumerationOf4096Cube) {
  for (Accum accum : {Accum::kPromote, Accum::kFast}) {
    Problem p = Problem::dense(4096, 4096, 4096);
    p.accum = accum;
    Enumeration en = enumerate(SearchSpace::builtin_default(), p);
    EXPECT_EQ(static_cast<int>(en.kept.size()), expected_kept_4096(accum));
    EXPECT_EQ(en.kept.size() + en.rejected.size(), SearchSpace::builtin_default().size());
    for (const auto& c : en.rejected) EXPECT_FALSE(c.pruned.empty());
    for (const auto& c : en.kept) EXPECT_TRUE(c.resources.ok());
  }
  // Sanity of the hand count itself: the two modes differ (promotion doubles accumulators).
  EXPECT_GT(expected_kept_4096(Accum::kFast), expected_kept_4096(Accum::kPromote));
  EXPECT_GE(expected_kept_4096(Accum::kPromote), 150);
}

TEST(SearchSpace, ProblemPruningForSmallShapes) {
  Enumeration en = enumerate(SearchSpace::builtin_default(), Problem::dense(7, 48, 80));
  for (const auto& c : en.kept) {
    EXPECT_EQ(c.config.block_m, 64) << c.config.key();   // P1: 128 >= 2 * 64
    EXPECT_LE(c.config.block_n, 48 + 15) << c.config.key();  // P2
  }
  bool saw_p1 = false, saw_p2 = false;
  for (const auto& c : en.rejected) {
    saw_p1 |= c.pruned.rfind("P1:", 0) == 0;
    saw_p2 |= c.pruned.rfind("P2:", 0) == 0;
  }
  EXPECT_TRUE(saw_p1);
  EXPECT_TRUE(saw_p2);
  EXPECT_FALSE(en.kept.empty());
}

TEST(SearchSpace, JsonErrorsNameTheKey) {
  auto j = nlohmann::json::parse(R"({"block_m": [64], "block_n": [], "block_k": [128], "num_stages": [4],
    "num_math_wg": [1], "swizzle": [128], "cluster": ["1x1"], "raster": ["m"], "group": [8], "split_k": [1]})");
  try {
    SearchSpace::from_json(j, "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("x.json: \"block_n\" is empty"), std::string::npos) << e.message();
  }
  j["block_n"] = {64};
  j["cluster"] = {"2by1"};
  try {
    SearchSpace::from_json(j, "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cluster \"2by1\""), std::string::npos) << e.message();
  }
  j["cluster"] = {"1x1"};
  j["blockm"] = {64};
  EXPECT_THROW(SearchSpace::from_json(j, "x.json"), Error);
}

TEST(CostModel, DefaultConfigIsLegalAndDocumented) {
  for (auto p : {Problem::dense(1, 4096, 4096), Problem::dense(64, 2112, 7168), Problem::dense(4096, 4096, 4096),
                 Problem::dense(7, 48, 80), Problem::dense(1021, 1023, 1024)}) {
    KernelConfig c = default_config(p);
    EXPECT_TRUE(evaluate_resources(KernelSpec::of(c, p)).ok()) << c.key();
    EXPECT_EQ(c.block_m, p.m <= 64 ? 64 : 128);
  }
  EXPECT_EQ(default_config(Problem::dense(4096, 4096, 4096)).key(), "128x128x128_s7_wg2_sw128_c1x1_rm8_direct_sk1");  // 7 * 32 KiB + 1136 = 230512 <= 232448
  EXPECT_EQ(default_config(Problem::dense(7, 48, 80)).block_n, 48);
}

TEST(CostModel, MoreWavesCostMore) {
  Problem p = Problem::dense(4096, 4096, 4096);
  KernelSpec small{}, big{};
  small.config.block_n = 64;   // 32*64 = 2048 tiles: 16 waves
  big.config.block_n = 256;    // 32*16 = 512 tiles: 4 waves
  big.config.num_stages = 4;
  big.accum = Accum::kFast;
  small.accum = Accum::kFast;
  EXPECT_GT(estimate_us(small, p, 132), estimate_us(big, p, 132));
  EXPECT_GT(estimate_us(big, p, 132), 0.0);
}

}  // namespace
}  // namespace dgt
