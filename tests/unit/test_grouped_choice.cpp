// dgt::GroupedGemm's identity rule (loader/grouped_choice.hpp): grouped winners of the tuning DB chosen by the ladder
// over M_sum (contiguous) and expected_m (masked), on synthetic rows and through a real DB. No GPU: the constructor's
// DB read runs in tests/gpu (GroupedApi); everything it decides is choose_grouped_winner over environment_winners.
#include <gtest/gtest.h>

#include "db_fixture.hpp"
#include "temp_dir_test.hpp"

#include <string>
#include <vector>

#include "db/tuning_db.hpp"
#include "loader/grouped_choice.hpp"
#include "space/grouped_rules.hpp"

namespace dgt {
namespace {

const std::string kCurrent = "cccccccccccccccc";
// Three configs every grouped problem below can run (the default rule's and one more stage count).
const char* kA = "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
const char* kB = "128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1";
const char* kC = "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";
const char* kSmall = "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";

/// The run-time key of a contiguous problem (GroupedGemm's view: the counts are on the device).
GroupedProblem contiguous(int groups, int64_t m_sum, int64_t n = 4096, int64_t k = 7168) {
  GroupedGemmProblem p;
  p.layout = GroupedLayout::kContiguous;
  p.groups = groups;
  p.m = m_sum;
  p.n = n;
  p.k = k;
  return grouped_problem_of(p);
}

GroupedProblem masked(int groups, int64_t m_max, int64_t expected_m, int64_t n = 7168, int64_t k = 2048) {
  GroupedGemmProblem p;
  p.layout = GroupedLayout::kMasked;
  p.groups = groups;
  p.m = m_max;
  p.expected_m = expected_m;
  p.n = n;
  p.k = k;
  return grouped_problem_of(p);
}

EnvironmentWinner row(const GroupedProblem& g, const char* config, double us = 100.0,
                      const std::string& protocol = "cold-l2-v1", const std::string& hash = kCurrent) {
  EnvironmentWinner w;
  w.problem = g.keyed();
  w.config_key = config;
  w.median_us = us;
  w.protocol_name = protocol;
  w.environment_id = 1;
  w.env.kernel_hash = hash;
  w.env_key = w.env.key();
  return w;
}

std::optional<StoredChoice> choose(const std::vector<EnvironmentWinner>& rows, const GroupedProblem& g,
                                   const std::string& kind = "cold-l2") {
  return choose_grouped_winner(rows, g, kCurrent, "", kind);
}

TEST(GroupedChoice, LadderAxisIsTotalMForContiguousAndExpectedMForMasked) {
  EXPECT_EQ(grouped_ladder_m(contiguous(32, 16384).keyed()), 16384);
  EXPECT_EQ(grouped_ladder_m(masked(32, 256, 24).keyed()), 24);
  EXPECT_EQ(masked(32, 256, 24).keyed().m, 32 * 256);  // the key's M is the G x M_max view, not the axis
}

TEST(GroupedChoice, ContiguousTakesItsOwnWinnerThenTheUpperNeighbourBetweenTunedTotals) {
  const std::vector<EnvironmentWinner> rows = {row(contiguous(32, 4096), kA), row(contiguous(32, 16384), kB),
                                               row(contiguous(32, 65536), kC)};
  auto c = choose(rows, contiguous(32, 16384));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config.key(), kB);
  EXPECT_EQ(c->source, "db");
  EXPECT_EQ(c->from, contiguous(32, 16384).keyed());
  // 6144 lies between 4096 and 16384: the upper neighbour's winner, although 4096 is nearer in log M.
  c = choose(rows, contiguous(32, 6144));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config.key(), kB);
  EXPECT_EQ(c->source, "ladder");
  EXPECT_EQ(c->from.m, 16384);
  EXPECT_EQ(c->from.key(), contiguous(32, 16384).keyed().key());
  // Outside the tuned totals: the nearest end.
  c = choose(rows, contiguous(32, 1024));
  EXPECT_EQ(c->config.key(), kA);
  EXPECT_EQ(c->source, "nearest");
  c = choose(rows, contiguous(32, 131072));
  EXPECT_EQ(c->config.key(), kC);
  EXPECT_EQ(c->source, "nearest");
}

TEST(GroupedChoice, MaskedLaddersOverExpectedMAtAnyMmax) {
  const std::vector<EnvironmentWinner> rows = {row(masked(32, 256, 4), kSmall), row(masked(32, 256, 16), kSmall),
                                               row(masked(32, 256, 64), kA)};
  auto c = choose(rows, masked(32, 256, 16));
  EXPECT_EQ(c->source, "db");
  EXPECT_EQ(c->config.key(), kSmall);
  // expected_m 24 (between 16 and 64): the upper point's winner.
  c = choose(rows, masked(32, 256, 24));
  EXPECT_EQ(c->source, "ladder");
  EXPECT_EQ(c->config.key(), kA);
  EXPECT_EQ(c->from.expected_m, 64);
  EXPECT_EQ(c->from.m_max, 256);
  // The same expected_m with another buffer (M_max 512): not the key's own winner, but its ladder point.
  c = choose(rows, masked(32, 512, 16));
  EXPECT_EQ(c->config.key(), kSmall);
  EXPECT_NE(c->source, "db");
  EXPECT_EQ(c->from.expected_m, 16);
  // Beyond the last point: the nearest end.
  c = choose(rows, masked(32, 256, 200));
  EXPECT_EQ(c->source, "nearest");
  EXPECT_EQ(c->config.key(), kA);
}

TEST(GroupedChoice, MaskedWinnersOfSeveralMmaxTakeTheNearestMmax) {
  // The same expected_m tuned at M_max 256, 1024 and 4096 with three configs. By key text "mmax1024" sorts first
  // everywhere; by log distance 3072 takes 4096's (x1.33 against x3), 384 takes 256's, 8192 takes 4096's.
  const std::vector<EnvironmentWinner> rows = {row(masked(32, 4096, 16), kA), row(masked(32, 1024, 16), kB),
                                               row(masked(32, 256, 16), kSmall)};
  EXPECT_EQ(choose(rows, masked(32, 3072, 16))->from.m_max, 4096);
  EXPECT_EQ(choose(rows, masked(32, 3072, 16))->config.key(), kA);
  EXPECT_EQ(choose(rows, masked(32, 384, 16))->config.key(), kSmall);
  EXPECT_EQ(choose(rows, masked(32, 8192, 16))->config.key(), kA);
  EXPECT_EQ(choose(rows, masked(32, 1536, 16))->config.key(), kB);
  // 2048 is as near to 1024 as to 4096 (x2 each, compared exactly): both stand, and the key order takes 1024's.
  EXPECT_EQ(choose(rows, masked(32, 2048, 16))->from.m_max, 1024);
  // The key's own M_max is the nearest of all: "db".
  EXPECT_EQ(choose(rows, masked(32, 4096, 16))->source, "db");
  EXPECT_EQ(choose(rows, masked(32, 4096, 16))->config.key(), kA);
}

TEST(GroupedChoice, AnotherLayoutGroupCountOrShapeIsNeverTaken) {
  // Rows a careless query could return: the other layout at the same N, K; another G; a dense winner of the family.
  std::vector<EnvironmentWinner> rows = {row(masked(32, 128, 64, 4096, 7168), kB), row(contiguous(16, 4096), kB)};
  EnvironmentWinner dense = row(contiguous(32, 4096), kB);
  dense.problem = Problem::dense(4096, 4096, 7168);
  dense.problem.scale = ScaleMode::kBlock;
  rows.push_back(dense);
  EXPECT_FALSE(choose(rows, contiguous(32, 4096)));
  rows.push_back(row(contiguous(32, 8192), kC));
  auto c = choose(rows, contiguous(32, 4096));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config.key(), kC);
  EXPECT_EQ(c->source, "nearest");
}

TEST(GroupedChoice, AWinnerTheGroupedRulesRefuseIsSkipped) {
  // A dense-only config (a cluster: rule G1-G3 refuse it for grouped kernels) stored under the key, e.g. by a future
  // dgtune; and a key this dgtune cannot parse. The next ladder point's legal winner is taken.
  const std::string cluster = "128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1";
  ASSERT_FALSE(grouped_config_violation(KernelConfig::parse_key(cluster), contiguous(32, 4096)).empty());
  std::vector<EnvironmentWinner> rows = {row(contiguous(32, 4096), cluster.c_str()),
                                         row(contiguous(32, 8192), "not-a-config-key"),
                                         row(contiguous(32, 16384), kB)};
  auto c = choose(rows, contiguous(32, 4096));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config.key(), kB);
  EXPECT_EQ(c->from.m, 16384);
}

TEST(GroupedChoice, ProtocolKindAskedForFirstThenTheOther) {
  const std::vector<EnvironmentWinner> rows = {row(contiguous(32, 4096), kA, 100, "cold-l2-v1"),
                                               row(contiguous(32, 4096), kB, 90, "hot-graph-v1")};
  EXPECT_EQ(choose(rows, contiguous(32, 4096), "hot-graph")->config.key(), kB);
  EXPECT_EQ(choose(rows, contiguous(32, 4096), "cold-l2")->config.key(), kA);
  auto c = choose({rows[0]}, contiguous(32, 4096), "hot-graph");
  EXPECT_EQ(c->source, "db-other-protocol");
  EXPECT_EQ(c->protocol_name, "cold-l2-v1");
}

TEST(GroupedChoice, ResolveUsesTheWinnerUnlessAConfigIsGiven) {
  GroupedGemmProblem p;
  p.layout = GroupedLayout::kContiguous;
  p.groups = 32;
  p.m = 6144;
  p.n = 4096;
  p.k = 7168;
  GroupedLookup lookup;
  lookup.kernel_hash = kCurrent;
  lookup.candidates = {row(contiguous(32, 4096), kA, 50), row(contiguous(32, 16384), kC, 123.5)};
  GroupedResolved r = resolve_grouped_choice(p, "", &lookup);
  EXPECT_EQ(r.choice.config_key, kC);
  EXPECT_EQ(r.choice.source, "ladder");
  EXPECT_EQ(r.choice.protocol, "cold-l2-v1");
  EXPECT_EQ(r.choice.tuned_key, contiguous(32, 16384).keyed().key());
  EXPECT_DOUBLE_EQ(r.choice.tuned_us, 123.5);
  EXPECT_FALSE(r.choice.older_kernel);
  // An explicit config wins over the DB; no candidates: the default rule (contiguous, N 4096 <= K 7168: kA).
  r = resolve_grouped_choice(p, kB, &lookup);
  EXPECT_EQ(r.choice.config_key, kB);
  EXPECT_EQ(r.choice.source, "explicit");
  EXPECT_TRUE(r.choice.tuned_key.empty());
  lookup.candidates.clear();
  r = resolve_grouped_choice(p, "", &lookup);
  EXPECT_EQ(r.choice.source, "default");
  EXPECT_EQ(r.choice.config_key, kA);
  // An older kernel's winner is flagged.
  lookup.candidates = {row(contiguous(32, 6144), kC, 80, "cold-l2-v1", "0000000000000000")};
  r = resolve_grouped_choice(p, "", &lookup);
  EXPECT_EQ(r.choice.source, "db");
  EXPECT_TRUE(r.choice.older_kernel);
}

// Through the DB: winners stored under grouped keys come back from environment_winners of the run-time key (whose
// rows are the device's, not the tuned distribution) and the rule picks them.
class GroupedChoiceDb : public test::TempDirTest {};

TEST_F(GroupedChoiceDb, RunTimeKeyFindsTheTunedGroupedWinners) {
  TuningDb db((dir_ / "g.db").string());
  const DeviceScope env = db.upsert_device(test::h200_fingerprint(kCurrent));
  auto put = [&](const GroupedProblem& g, const char* config, double us) {
    test::put_ok_trial(db, env, g.keyed(), KernelConfig::parse_key(config), us);
  };
  GroupedProblem tuned = parse_grouped_problem(
      "kind=masked groups=32 masked_m=route:1:64:8 m_max=256 expected_m=16 7168 2048 scale=block", "test");
  put(tuned, kSmall, 20.0);
  put(tuned, kA, 25.0);  // slower: not the winner
  tuned = parse_grouped_problem(
      "kind=masked groups=32 masked_m=route:1:256:8 m_max=256 expected_m=64 7168 2048 scale=block", "test");
  put(tuned, kA, 40.0);
  // Other families in the same DB: contiguous at the same N, K; masked with another G.
  put(parse_grouped_problem("kind=contiguous groups=32 m_per_group=route:1:512:8 7168 2048 scale=block", "test"), kB,
      1.0);
  put(parse_grouped_problem("kind=masked groups=8 masked_m=route:1:64:8 m_max=256 expected_m=64 7168 2048 "
                            "scale=block", "test"),
      kB, 1.0);

  GroupedGemmProblem p;
  p.layout = GroupedLayout::kMasked;
  p.groups = 32;
  p.m = 256;
  p.expected_m = 24;
  p.n = 7168;
  p.k = 2048;
  const GroupedProblem key = grouped_problem_of(p);
  GroupedLookup lookup;
  lookup.kernel_hash = kCurrent;
  lookup.candidates = db.environment_winners(env.device_id, key.keyed());
  ASSERT_EQ(lookup.candidates.size(), 2u);  // the two masked G = 32 points
  GroupedResolved r = resolve_grouped_choice(p, "", &lookup);
  EXPECT_EQ(r.choice.source, "ladder");
  EXPECT_EQ(r.choice.config_key, kA);
  EXPECT_DOUBLE_EQ(r.choice.tuned_us, 40.0);
  p.expected_m = 16;
  lookup.candidates = db.environment_winners(env.device_id, grouped_problem_of(p).keyed());
  r = resolve_grouped_choice(p, "", &lookup);
  EXPECT_EQ(r.choice.source, "db");
  EXPECT_EQ(r.choice.config_key, kSmall);
  EXPECT_DOUBLE_EQ(r.choice.tuned_us, 20.0);
}

}  // namespace
}  // namespace dgt
