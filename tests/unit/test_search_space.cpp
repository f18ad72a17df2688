#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "space/cost_model.hpp"
#include "space/search_space.hpp"

namespace dgt {
namespace {

std::set<std::string> keys(const std::vector<Candidate>& cs) {
  std::set<std::string> out;
  for (const auto& c : cs) out.insert(c.config.key());
  return out;
}

TEST(SearchSpace, ShippedDefaultIsTheEmbeddedOne) {
  SearchSpace file = SearchSpace::load(std::string(DGT_SOURCE_DIR) + "/configs/spaces/sm90-default.json");
  SearchSpace builtin = SearchSpace::builtin_default();
  EXPECT_EQ(file.name, "sm90-default");
  ASSERT_EQ(file.grids.size(), builtin.grids.size());
  EXPECT_EQ(file.size(), builtin.size());
  const Problem p = Problem::dense(4096, 4096, 4096);
  EXPECT_EQ(keys(enumerate(file, p).kept), keys(enumerate(builtin, p).kept));
}

TEST(SearchSpace, PingpongOnlyForFastAccumulationWithOneTensorCoreSumPerTile) {
  // pp is offered where its single tensor-core sum covers K (P8: K <= P x BLOCK_K <= 2048) in fast mode;
  // promote mode never (R24).
  auto pp_keys = [](int64_t m, int64_t n, int64_t k, Accum accum) {
    Problem p = Problem::dense(m, n, k);
    p.accum = accum;
    std::set<std::string> out;
    for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept)
      if (c.config.mainloop == Mainloop::kPp) out.insert(c.config.key());
    return out;
  };
  const auto short_k = pp_keys(4096, 32768, 512, Accum::kFast);
  EXPECT_GE(short_k.size(), 10u);
  EXPECT_EQ(short_k.count("128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16"), 1u);
  EXPECT_EQ(short_k.count("64x256x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16"), 1u);
  EXPECT_EQ(pp_keys(4096, 7168, 2048, Accum::kFast).size(), short_k.size());  // K = 2048: still one sum
  EXPECT_TRUE(pp_keys(4096, 7168, 2049, Accum::kFast).empty());
  EXPECT_TRUE(pp_keys(4096, 32768, 512, Accum::kPromote).empty());
}

TEST(SearchSpace, DefaultCovers4096CubeOnEveryAxis) {
  const Problem p = Problem::dense(4096, 4096, 4096);
  Enumeration en = enumerate(SearchSpace::builtin_default(), p);
  EXPECT_GE(en.kept.size(), 300u);
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& c : en.kept) {
    const KernelConfig& k = c.config;
    EXPECT_TRUE(c.resources.ok());
    seen["block_m"].insert(std::to_string(k.block_m));
    seen["block_n_odd8"].insert(k.block_n % 16 ? "odd" : "even");
    seen["block_k"].insert(std::to_string(k.block_k));
    seen["swizzle"].insert(std::to_string(k.swizzle));
    seen["wg"].insert(std::to_string(k.num_math_wg));
    seen["cluster"].insert(std::to_string(k.cluster_m) + "x" + std::to_string(k.cluster_n));
    seen["raster"].insert(to_string(k.raster));
    seen["group"].insert(std::to_string(k.group));
    seen["epilogue"].insert(to_string(k.epilogue));
    seen["sms"].insert(std::to_string(k.sms));
    seen["stages"].insert(std::to_string(k.num_stages));
    seen["mainloop"].insert(to_string(k.mainloop));
    EXPECT_EQ(k.promote_every, 1) << "promote mode promotes every k-block (R19)";
    EXPECT_EQ(k.split_k, 1) << "P4: 4096^3 has 1024+ tiles, split-K never pays";
  }
  EXPECT_EQ(seen["block_m"], (std::set<std::string>{"64", "128", "256"}));
  EXPECT_EQ(seen["block_n_odd8"].size(), 2u);
  EXPECT_EQ(seen["block_k"], (std::set<std::string>{"64", "128", "256"}));
  EXPECT_EQ(seen["swizzle"], (std::set<std::string>{"32", "64", "128"}));
  EXPECT_EQ(seen["wg"], (std::set<std::string>{"1", "2"}));
  EXPECT_EQ(seen["cluster"], (std::set<std::string>{"1x1", "2x1", "1x2"}));  // 2x2 measured not to pay: dropped
  EXPECT_EQ(seen["mainloop"], (std::set<std::string>{"1g", "2g", "2o"}));
  EXPECT_EQ(seen["raster"], (std::set<std::string>{"m", "n"}));
  EXPECT_EQ(seen["group"], (std::set<std::string>{"1", "2", "4", "8", "16"}));
  EXPECT_EQ(seen["epilogue"], (std::set<std::string>{"direct", "tma"}));
  EXPECT_EQ(seen["sms"], (std::set<std::string>{"0", "66", "120", "128"}));
  EXPECT_GE(seen["stages"].size(), 5u);
}

TEST(SearchSpace, FastModeSearchesPromotionIntervals) {
  Problem p = Problem::dense(4096, 4096, 4096);
  p.accum = Accum::kFast;
  std::set<int> intervals;
  for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) {
    intervals.insert(c.config.promote_every);
    EXPECT_LE(c.config.promote_every * c.config.block_k, 2048) << c.config.key();
    if (c.config.mainloop != Mainloop::k1g) EXPECT_EQ(c.config.promote_every, 1) << c.config.key();
  }
  EXPECT_TRUE(intervals.count(1) && intervals.count(2) && intervals.count(4) && intervals.count(8) &&
              intervals.count(16));
  // "max" resolves per problem: 2048 / BLOCK_K with fast accumulation, 1 with promotion.
  auto j = nlohmann::json::parse(R"({"block_m": [128], "block_n": [128], "block_k": [128, 256], "num_stages": [2],
    "num_math_wg": [2], "swizzle": [128], "cluster": ["1x1"], "raster": ["m"], "group": [8], "split_k": [1],
    "epilogue": ["direct"], "sms": [0], "promote_every": ["max"]})");
  const SearchSpace s = SearchSpace::from_json(j, "x.json");
  std::set<std::string> keys;
  for (const auto& c : enumerate(s, p).kept) keys.insert(c.config.key());
  EXPECT_EQ(keys, (std::set<std::string>{"128x128x128_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p16",
                                         "128x128x256_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p8"}));
  keys.clear();
  for (const auto& c : enumerate(s, Problem::dense(4096, 4096, 4096)).kept) keys.insert(c.config.key());
  EXPECT_EQ(keys, (std::set<std::string>{"128x128x128_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
                                         "128x128x256_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1"}));
  j["mainloop"] = {"3g"};
  EXPECT_THROW(SearchSpace::from_json(j, "x.json"), Error);
  j["mainloop"] = {"2g"};
  j["promote_every"] = {0};
  EXPECT_THROW(SearchSpace::from_json(j, "x.json"), Error);
}

TEST(SearchSpace, SplitKOnlyWhereTilesDoNotFillTheGpu) {
  // 128 x 7168 x 2048: with BLOCK_M 64 and BLOCK_N 128 only 2 x 56 = 112 tiles < 132 SMs.
  Enumeration en = enumerate(SearchSpace::builtin_default(), Problem::dense(128, 7168, 2048));
  int split = 0;
  for (const auto& c : en.kept) split += c.config.split_k > 1;
  EXPECT_GT(split, 10);
  std::map<std::string, int> reasons;
  for (const auto& c : en.rejected) reasons[c.pruned.substr(0, 3)]++;
  EXPECT_GT(reasons["P4:"], 0);  // e.g. BLOCK_N 16: 2 x 448 tiles already fill the GPU
}

TEST(SearchSpace, MaxStagesIsTheDeepestThatFits) {
  const Problem p = Problem::dense(4096, 4096, 4096);
  std::map<std::string, int> stages;
  for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) {
    KernelConfig k = c.config;
    if (k.block_m == 128 && k.block_n == 128 && k.block_k == 128 && k.num_math_wg == 2 && k.cluster_m == 1 &&
        k.cluster_n == 1 && k.group == 8 && k.raster == Raster::kAlongM && k.sms == 0 && k.swizzle == 128)
      stages[to_string(k.epilogue)] = std::max(stages[to_string(k.epilogue)], k.num_stages);
  }
  // direct: 7 * 32 KiB + 112 + 1024 = 230512 <= 232448 (8 stages do not fit).
  EXPECT_EQ(stages["direct"], 7);
  // TMA store stages a 128x128 BF16 tile (32 KiB): 6 * 32 KiB + 32 KiB + 96 + 1024 = 230496.
  EXPECT_EQ(stages["tma"], 6);
}

std::string reason_for(const Problem& p, KernelConfig c) {
  SearchSpace s;
  SpaceGrid g;
  g.name = "one";
  g.block_m = {c.block_m};
  g.block_n = {c.block_n};
  g.block_k = {c.block_k};
  g.num_stages = {c.num_stages};
  g.num_math_wg = {c.num_math_wg};
  g.swizzle = {c.swizzle};
  g.group = {c.group};
  g.split_k = {c.split_k};
  g.sms = {c.sms};
  g.cluster = {{c.cluster_m, c.cluster_n}};
  g.raster = {c.raster};
  g.epilogue = {c.epilogue};
  s.grids = {g};
  Enumeration en = enumerate(s, p);
  return en.kept.empty() ? en.rejected.at(0).pruned : "";
}

TEST(SearchSpace, ProblemPruningRules) {
  KernelConfig c;  // 128x128x128 s4 wg2
  EXPECT_EQ(reason_for(Problem::dense(64, 4096, 4096), c).substr(0, 3), "P1:");
  EXPECT_EQ(reason_for(Problem::dense(4096, 100, 4096), c).substr(0, 3), "P2:");
  Problem odd_ldd = Problem::dense(4096, 4096, 4096);
  odd_ldd.ldd = 4100;
  c.epilogue = Epilogue::kTma;
  EXPECT_EQ(reason_for(odd_ldd, c).substr(0, 3), "P3:");
  odd_ldd.ldd = 4104;
  EXPECT_EQ(reason_for(odd_ldd, c), "");
  c.epilogue = Epilogue::kDirect;
  c.split_k = 2;
  EXPECT_EQ(reason_for(Problem::dense(4096, 4096, 4096), c).substr(0, 3), "P4:");
  c.split_k = 6;  // K = 512: 4 k-blocks -> runs as 4 splits
  EXPECT_EQ(reason_for(Problem::dense(128, 1024, 512), c).substr(0, 3), "P5:");
  c.split_k = 4;
  EXPECT_EQ(reason_for(Problem::dense(128, 1024, 512), c), "");
  c.split_k = 1;
  c.cluster_m = 2;  // one m-block: nothing to share B with
  EXPECT_EQ(reason_for(Problem::dense(128, 4096, 4096), c).substr(0, 3), "P6:");
  c.cluster_m = 1;
  c.sms = 120;  // 16 tiles: the grid is 16 CTAs anyway
  EXPECT_EQ(reason_for(Problem::dense(512, 512, 4096), c).substr(0, 3), "P7:");
  EXPECT_EQ(reason_for(Problem::dense(4096, 4096, 4096), c), "");
}

TEST(SearchSpace, JsonErrorsNameTheKey) {
  auto j = nlohmann::json::parse(R"({"block_m": [64], "block_n": [], "block_k": [128], "num_stages": [4],
    "num_math_wg": [1], "swizzle": [128], "cluster": ["1x1"], "raster": ["m"], "group": [8], "split_k": [1],
    "epilogue": ["direct"], "sms": [0]})");
  try {
    SearchSpace::from_json(j, "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "x.json: /block_n: [] is empty (an axis needs at least one value: integers in [8, 256])");
  }
  j["block_n"] = {64};
  j["cluster"] = {"2by1"};
  try {
    SearchSpace::from_json(j, "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "x.json: /cluster/0: \"2by1\" is not one of \"MxN\" with M, N in 1..4");
  }
  j["cluster"] = {"1x1"};
  j["num_stages"] = {"max-0"};
  EXPECT_THROW(SearchSpace::from_json(j, "x.json"), Error);
  j["num_stages"] = {"max-2", 3};
  EXPECT_EQ(SearchSpace::from_json(j, "x.json").grids.at(0).num_stages, (std::vector<int>{-2, 3}));
  j["blockm"] = {64};
  EXPECT_THROW(SearchSpace::from_json(j, "x.json"), Error);
  // A union entry inherits the base and names itself in errors.
  auto u = nlohmann::json::parse(R"({"name": "u", "base": {"block_m": [64], "block_n": [64], "block_k": [128],
    "num_stages": [4], "num_math_wg": [1], "swizzle": [128], "cluster": ["1x1"], "raster": ["m"], "group": [8],
    "split_k": [1], "epilogue": ["direct"], "sms": [0]}, "union": [{"name": "a"}, {"name": "b", "raster": ["q"]}]})");
  try {
    SearchSpace::from_json(u, "u.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "u.json: /union/1/raster/0: \"q\" is not one of \"m\", \"n\"");
  }
}

/// The message of the Error that parsing `text` as "s.json" throws (kUsage), or "no error".
std::string space_error(const std::string& text) {
  try {
    SearchSpace::parse(text, "s.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.message();
    return e.message();
  }
  return "no error";
}

/// A legal one-grid space with `axis` replaced by `value` (JSON text).
std::string grid_with(const std::string& axis, const std::string& value) {
  auto j = nlohmann::json::parse(R"({"block_m": [128], "block_n": [128], "block_k": [128], "num_stages": [4],
    "num_math_wg": [2], "swizzle": [128], "cluster": ["1x1"], "raster": ["m"], "group": [8], "split_k": [1],
    "epilogue": ["direct"], "sms": [0]})");
  std::string text = j.dump();
  if (!axis.empty()) {
    j[axis] = nullptr;
    text = j.dump();
    const std::string null_field = "\"" + axis + "\":null";
    text.replace(text.find(null_field), null_field.size(), "\"" + axis + "\":" + value);
  }
  return text;
}

// Robustness: a space file can neither hang dgtune nor be read as something it does not say.
TEST(SearchSpace, RangesAreBoundedBeforeTheyAreExpanded) {
  EXPECT_EQ(space_error(grid_with("block_n", R"({"from": 8, "to": 2147483647, "step": 1073741824})")),
            "s.json: /block_n/to: 2147483647 is out of range [8, 256]");
  EXPECT_EQ(space_error(grid_with("block_n", R"({"from": 8, "to": 256, "step": 0})")),
            "s.json: /block_n/step: 0 is out of range [1, 256]");
  EXPECT_EQ(space_error(grid_with("block_n", R"({"from": 64, "to": 16, "step": 8})")),
            "s.json: /block_n: {\"from\":64,\"step\":8,\"to\":16} is an empty range: from 64 > to 16");
  EXPECT_EQ(space_error(grid_with("block_n", R"({"from": 8, "to": 16})")),
            "s.json: /block_n: {\"from\":8,\"to\":16} lacks \"step\" (a range is {\"from\", \"to\", \"step\"})");
  EXPECT_EQ(space_error(grid_with("block_n", R"({"from": 8, "to": 16, "step": 8, "by": 2})")),
            "s.json: /block_n/by: 2 is an unknown key of a range (keys: from, to, step)");
  EXPECT_EQ(
      SearchSpace::parse(grid_with("block_m", R"({"from": 64, "to": 256, "step": 64})"), "s.json").grids.at(0).block_m,
      (std::vector<int>{64, 128, 192, 256}));
  // Every axis is bounded: sms and split_k too.
  EXPECT_EQ(space_error(grid_with("sms", "[4294967296]")), "s.json: /sms/0: 4294967296 is out of range [0, 65536]");
  EXPECT_EQ(space_error(grid_with("split_k", "[17]")), "s.json: /split_k/0: 17 is out of range [1, 16]");
  EXPECT_EQ(space_error(grid_with("group", "[-1]")), "s.json: /group/0: -1 is out of range [1, 64]");
}

TEST(SearchSpace, IntegersAreExact) {
  EXPECT_EQ(space_error(grid_with("block_m", "[4294967424]")),
            "s.json: /block_m/0: 4294967424 is out of range [64, 256]");  // not 128 (the low 32 bits)
  EXPECT_EQ(space_error(grid_with("block_m", "[128.5]")), "s.json: /block_m/0: 128.5 is not an integer");
  EXPECT_EQ(space_error(grid_with("block_m", "[128.0]")), "s.json: /block_m/0: 128.0 is not an integer");
  EXPECT_EQ(space_error(grid_with("block_m", "[1e2]")), "s.json: /block_m/0: 100.0 is not an integer");
  EXPECT_EQ(space_error(grid_with("block_m", R"(["128"])")), "s.json: /block_m/0: \"128\" is a string, not an integer");
  EXPECT_EQ(space_error(grid_with("block_m", "[true]")), "s.json: /block_m/0: true is a boolean, not an integer");
  EXPECT_EQ(space_error(grid_with("block_m", "[null]")), "s.json: /block_m/0: null is a null, not an integer");
  EXPECT_EQ(space_error(grid_with("block_m", "128")),
            "s.json: /block_m: 128 is a number, not an array of integers in [64, 256] or a range object");
  EXPECT_EQ(space_error(grid_with("num_stages", R"(["max-99999999999"])")),
            "s.json: /num_stages/0: \"max-99999999999\" is not \"max\" or \"max-N\" with N a decimal integer in [1, "
            "10] (the deepest pipeline is at most 12 stages)");
  EXPECT_EQ(space_error(grid_with("num_stages", "[33]")), "s.json: /num_stages/0: 33 is out of range [2, 32]");
  EXPECT_EQ(space_error(grid_with("promote_every", "[0]")), "s.json: /promote_every/0: 0 is out of range [1, 32]");
  EXPECT_EQ(space_error(grid_with("promote_every", R"(["min"])")),
            "s.json: /promote_every/0: \"min\" is not \"max\" (or an integer)");
  EXPECT_EQ(space_error(grid_with("cluster", R"(["1x1x1"])")),
            "s.json: /cluster/0: \"1x1x1\" is not one of \"MxN\" with M, N in 1..4");
  EXPECT_EQ(space_error(grid_with("cluster", R"(["01x1"])")),
            "s.json: /cluster/0: \"01x1\" is not one of \"MxN\" with M, N in 1..4");
}

TEST(SearchSpace, KeysNamesAndStructure) {
  auto with = [](const std::string& extra) {
    std::string g = grid_with("", "");
    return g.substr(0, g.size() - 1) + "," + extra + "}";
  };
  EXPECT_EQ(space_error(with(R"("name": 5)")), "s.json: /name: 5 is a number, not a string");
  EXPECT_EQ(space_error(with(R"("name": "a\u001bb")")),
            "s.json: /name: \"a\\u001bb\" holds a control character (a name labels the grid in tables)");
  const std::string unknown = space_error(with(R"("blockm": [64])"));
  EXPECT_EQ(unknown.rfind("s.json: /blockm: unknown key \"blockm\" (known keys: block_m, block_n,", 0), 0u)
      << unknown;
  EXPECT_EQ(space_error(with(R"("block_m": [64])")),
            "s.json: /block_m: the key appears twice in one object (JSON would keep only the last one)");
  EXPECT_EQ(space_error(with(R"("base": {})")),
            "s.json: /base: {} is given without \"union\" (a base is what union entries share)");
  EXPECT_EQ(space_error(R"({"union": [{"name": "a"}], "base": {"block_m": [64]}, "block_n": [64]})"),
            "s.json: /block_n: [64] is an axis beside \"union\" (put it in \"base\" to apply it to every entry, or in "
            "an entry)");
  EXPECT_EQ(space_error(R"({"union": [{"name": "a"}], "base": {"block_m": [64]}})"),
            "s.json: /union/0: lacks \"block_n\" (in the entry and in /base) (axes: block_m, block_n, block_k, "
            "num_stages, num_math_wg, swizzle, cluster, raster, group, epilogue, split_k, sms, mainloop, "
            "promote_every, split_reduce, operands)");
  EXPECT_EQ(space_error(R"({"union": [{"a": [1]}, {"b": 1, "b": 2}]})"),
            "s.json: /union/1/b: the key appears twice in one object (JSON would keep only the last one)");
  EXPECT_EQ(space_error("[1, 2]"),
            "s.json: the top level: [1,2] is an array, not an object (a search space is a JSON "
            "object)");
  // Syntax errors name file:line:column, the form of every input error (a shapes file's file:line).
  EXPECT_EQ(space_error("").rfind("s.json:1:1: invalid JSON: syntax error while parsing value", 0), 0u)
      << space_error("");
  EXPECT_EQ(space_error(std::string("{\"a\x01\": 1}"))
                .rfind("s.json:1:4: invalid JSON: "
                       "syntax error while parsing object key - invalid string: "
                       "control character U+0001 (SOH) must be escaped",
                       0),
            0u);
  // The parser stops at the end of the token it did not expect (the "x" after a missing comma): line 4, column 5.
  EXPECT_EQ(space_error("{\n  \"block_m\": [64],\n  \"block_n\": [64]\n  \"x\": 1\n}")
                .rfind("s.json:4:5: invalid JSON: syntax error while parsing object - unexpected string literal", 0),
            0u);
  // Nesting is bounded before the parser runs: 100000 '[' once crashed it (stack overflow).
  EXPECT_EQ(space_error(std::string(100000, '[') + std::string(100000, ']')),
            "s.json:1:65: JSON nesting is deeper than 64 levels (arrays and objects inside each other); a dgtune file "
            "nests at most a few levels");
}

TEST(SearchSpace, CrossProductIsBoundedBeforeEnumeration) {
  // 65537 grid sizes x 249 BLOCK_N: 16 million points, each axis inside its bounds; refused before enumeration.
  std::string big = grid_with("sms", R"({"from": 0, "to": 65536, "step": 1})");
  big.replace(big.find(R"("block_n":[128])"), 15, R"("block_n":{"from":8,"to":256,"step":1})");
  const std::string e = space_error(big);
  EXPECT_EQ(e,
            "s.json: the top level: the space has more than 1048576 points (the cross product of the axes); narrow an "
            "axis or split the file");
  // The default space is far inside the bound.
  EXPECT_LT(SearchSpace::builtin_default().size(), SearchSpace::kMaxPoints / 10);
}

TEST(CostModel, DefaultConfigIsLegalAndDocumented) {
  for (auto p : {Problem::dense(1, 4096, 4096), Problem::dense(64, 2112, 7168), Problem::dense(4096, 4096, 4096),
                 Problem::dense(7, 48, 80), Problem::dense(1021, 1023, 1024)}) {
    KernelConfig c = default_config(p);
    EXPECT_TRUE(evaluate_resources(KernelSpec::of(c, p)).ok()) << c.key();
    EXPECT_EQ(c.block_m, p.m <= 64 ? 64 : 128);
  }
  // The TMA-store epilogue where D's rows are 16-byte multiples (P3); its staging tile leaves room for 6 stages.
  EXPECT_EQ(default_config(Problem::dense(4096, 4096, 4096)).key(),
            "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  // An odd ldd (4097 x 2 bytes is no multiple of 16) takes the direct epilogue and its deeper ring:
  // 7 * 32 KiB + 1136 = 230512 <= 232448.
  Problem odd_ldd = Problem::dense(4096, 4096, 4096);
  odd_ldd.ldd = 4097;
  EXPECT_EQ(default_config(odd_ldd).key(), "128x128x128_s7_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1");
  EXPECT_EQ(problem_fit(default_config(odd_ldd), odd_ldd), "");
  // f32 output: ldd % 4; e4m3 output: ldd % 16 (P3 in bytes).
  Problem f32 = Problem::dense(4096, 4096, 4096);
  f32.d = DType::kF32;
  f32.ldd = 4100;
  EXPECT_EQ(default_config(f32).epilogue, Epilogue::kTma);
  f32.ldd = 4098;
  EXPECT_EQ(default_config(f32).epilogue, Epilogue::kDirect);
  Problem fast = Problem::dense(4096, 4096, 4096);
  fast.accum = Accum::kFast;
  EXPECT_EQ(default_config(fast).promote_every, 1);  // two groups in flight promote every k-block (R20)
  EXPECT_TRUE(evaluate_resources(KernelSpec::of(default_config(fast), fast)).ok());
  EXPECT_EQ(default_config(Problem::dense(7, 48, 80)).block_n, 48);
}

TEST(CostModel, MoreWavesCostMore) {
  Problem p = Problem::dense(4096, 4096, 4096);
  KernelSpec small{}, big{};
  small.config.block_n = 64;  // 32*64 = 2048 tiles: 16 waves
  big.config.block_n = 256;   // 32*16 = 512 tiles: 4 waves
  big.config.num_stages = 4;
  big.accum = Accum::kFast;
  small.accum = Accum::kFast;
  EXPECT_GT(estimate_us(small, p, 132), estimate_us(big, p, 132));
  EXPECT_GT(estimate_us(big, p, 132), 0.0);
}

}  // namespace
}  // namespace dgt

namespace dgt {
namespace {
// rank_by_estimate is what sweep, --strategy model and gate --search all order by: ascending estimate,
// every kept candidate exactly once, and a limit that keeps the head of the same order.
TEST(CostModel, RankByEstimateIsAscendingCompleteAndLimited) {
  const SearchSpace space = SearchSpace::builtin_default();
  const Problem p = Problem::dense(4096, 2112, 7168);
  const auto all = rank_by_estimate(space, p, 132);
  const auto kept = enumerate(space, p, 132).kept;
  ASSERT_EQ(all.size(), kept.size());
  std::set<std::string> keys;
  double prev = 0;
  for (const KernelConfig& c : all) {
    const double est = estimate_us(KernelSpec::of(c, p), p, 132);
    EXPECT_GE(est, prev) << c.key();
    prev = est;
    keys.insert(c.key());
  }
  EXPECT_EQ(keys.size(), all.size());
  const auto top8 = rank_by_estimate(space, p, 132, 8);
  ASSERT_EQ(top8.size(), 8u);
  for (size_t i = 0; i < top8.size(); ++i) EXPECT_EQ(top8[i].key(), all[i].key());
}
// Fast accumulation: promote_every (P) enters the estimate only through the WGMMA term, so where a unit is bound by its
// L2 (or pipeline-depth) term, candidates that differ only in P estimate exactly the same. The canonical order then put
// the smallest P first; measured on the H200, the largest P was up to 7% faster on 6 of the 19 large fast shapes
// (4096x7168x16384: 700 us for the model's pick, 655 us for P = 16). Such twins now rank by WGMMA time, largest P
// first.
TEST(CostModel, EqualEstimatesRankTheLargestPromotionIntervalFirst) {
  Problem p = Problem::dense(4096, 7168, 16384);
  p.accum = Accum::kFast;
  const std::vector<KernelConfig> ranked = rank_by_estimate(SearchSpace::builtin_default(), p, 132);
  // Twins: the kept candidates that differ only in P, in rank order, with their estimates.
  std::map<std::string, std::vector<std::pair<int, double>>> twins;
  for (const KernelConfig& c : ranked) {
    KernelConfig base = c;
    base.promote_every = 1;
    twins[base.key()].emplace_back(c.promote_every, estimate_us(KernelSpec::of(c, p), p, 132));
  }
  CostConstants wide_l2;  // an L2 too fast to bind
  wide_l2.l2_tbps = 1e3;
  CostConstants unbound = wide_l2;  // nor the pipeline depth: only the WGMMA term is left, and it sees P
  unbound.load_latency_us = 0;
  auto est = [&](const std::string& base, int promote_every, const CostConstants& k) {
    KernelConfig c = KernelConfig::parse_key(base);
    c.promote_every = promote_every;
    return estimate_us(KernelSpec::of(c, p), p, 132, k);
  };
  int tied = 0, l2_bound = 0;
  for (const auto& [base, v] : twins) {
    if (v.size() < 2) continue;
    // Largest P first, tied or not (where P shows, a larger P estimates faster).
    for (size_t i = 1; i < v.size(); ++i)
      EXPECT_GT(v[i - 1].first, v[i].first) << base << ": P " << v[i].first << " ranked after P " << v[i - 1].first;
    double lo = v[0].second, hi = v[0].second;
    int p_min = v[0].first, p_max = v[0].first;
    for (const auto& [promote_every, us] : v) {
      lo = std::min(lo, us), hi = std::max(hi, us);
      p_min = std::min(p_min, promote_every), p_max = std::max(p_max, promote_every);
    }
    if (lo != hi) continue;
    ++tied;
    // The tie hides P: without the L2 and pipeline-depth bounds the largest P estimates fastest.
    EXPECT_LT(est(base, p_max, unbound), est(base, p_min, unbound)) << base;
    l2_bound += est(base, p_max, wide_l2) < lo;  // the L2 term sets the tied estimate
  }
  EXPECT_GE(tied, 5);
  EXPECT_GE(l2_bound, 3);
  // The BLOCK_K 256 twins of 128x176 (9th to 11th since the one-group register overhead of 24 admitted 128x200 and
  // 128x208 (P 1, each with its swap-AB twin) ahead of them; 5th to 7th since 1g clusters got their own cost factor):
  // adjacent, P 8 (the largest legal with BLOCK_K 256) first, where the enumeration puts P 2 first.
  size_t first = 0;
  while (first < ranked.size() && ranked[first].key() != "128x176x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p8") ++first;
  ASSERT_LT(first + 2, ranked.size());
  EXPECT_EQ(first, 8u);
  EXPECT_EQ(ranked[first + 1].key(), "128x176x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p4");
  EXPECT_EQ(ranked[first + 2].key(), "128x176x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p2");
  // An L2-bound twin group: 128x128x128, P 16, 4, 2, 1 in this order.
  std::vector<int> order;
  for (const auto& [promote_every, us] : twins.at("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1"))
    order.push_back(promote_every);
  EXPECT_EQ(order, (std::vector<int>{16, 4, 2, 1}));
}

// Ties between candidates that are not promote_every twins keep the canonical order: with promote accumulation (one P)
// the ranking is the stable sort of the enumeration by estimate alone.
TEST(CostModel, OtherTiesKeepTheCanonicalOrder) {
  const Problem p = Problem::dense(4096, 4096, 4096);
  const SearchSpace space = SearchSpace::builtin_default();
  std::vector<std::pair<double, std::string>> by_estimate;
  for (const Candidate& c : enumerate(space, p, 132).kept)
    by_estimate.emplace_back(estimate_us(KernelSpec::of(c.config, p), p, 132), c.config.key());
  std::stable_sort(by_estimate.begin(), by_estimate.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::vector<KernelConfig> ranked = rank_by_estimate(space, p, 132);
  ASSERT_EQ(ranked.size(), by_estimate.size());
  int ties = 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    EXPECT_EQ(ranked[i].key(), by_estimate[i].second) << "rank " << i + 1;
    ties += i > 0 && by_estimate[i].first == by_estimate[i - 1].first;
  }
  EXPECT_GT(ties, 0);  // there are ties to keep
}
TEST(CostModel, ClusterSplitWavesFollowTheResidentClusterCount) {
  // 4-CTA clusters: 30 resident on the H200 (cuOccupancyMaxActiveClusters), not 132 / 4 = 33. A 128x64 split-4
  // cluster split has 30 tiles (clusters) at N = 1920 and 33 at N = 2112: one wave, then two. Measured at
  // 128x2112x7168: 20.2 us through clusters, 12.9 us through the workspace (which has no cluster limit).
  const KernelConfig c = KernelConfig::parse_key("128x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk4c_sm0_2g_p1");
  const Problem p30 = Problem::dense(128, 1920, 7168), p33 = Problem::dense(128, 2112, 7168);
  const double t30 = estimate_us(KernelSpec::of(c, p30), p30, 132), t33 = estimate_us(KernelSpec::of(c, p33), p33, 132);
  EXPECT_GT(t33, 1.5 * t30);
  CostConstants by_sms;  // the SMs' share, as assumed before the H200 measurement
  by_sms.resident_clusters_4 = 33;
  EXPECT_LT(estimate_us(KernelSpec::of(c, p33), p33, 132, by_sms), 1.2 * estimate_us(KernelSpec::of(c, p30), p30, 132, by_sms));
  // The workspace split of the same tiles is not limited by clusters: 33 x 4 = 132 CTAs are one wave.
  const KernelConfig w = KernelConfig::parse_key("128x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1");
  EXPECT_LT(estimate_us(KernelSpec::of(w, p33), p33, 132), 1.2 * estimate_us(KernelSpec::of(w, p30), p30, 132));
}

}  // namespace
}  // namespace dgt
