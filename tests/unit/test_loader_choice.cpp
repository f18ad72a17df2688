// The loader's identity rule (loader/choice.hpp) on synthetic DB rows. No GPU needed: dgt::Gemm itself
// opens a device, so its choose() runs in tests/gpu/test_gpu_loader.cpp; everything it decides from the
// DB is choose_stored_winner() over TuningDb::environment_winners(), tested here.
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "db/tuning_db.hpp"
#include "loader/capture_rule.hpp"
#include "loader/choice.hpp"
#include "records/protocol_name.hpp"
#include "records/records.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

const std::string kCurrent = "cccccccccccccccc";  // the running kernel hash
const std::string kOld = "0000000000000000";      // an older kernel version

KernelConfig cfg(int block_n, int stages = 4) {
  KernelConfig c;
  c.block_n = block_n;
  c.num_stages = stages;
  return c;
}

EnvironmentWinner row(const Problem& p, const KernelConfig& c, const std::string& kernel_hash, int64_t env_id,
                      double us = 10.0, const std::string& protocol = "cold-l2-v1") {
  EnvironmentWinner w;
  w.problem = p;
  w.protocol_name = protocol;
  w.config_key = c.key();
  w.median_us = us;
  w.environment_id = env_id;
  w.env.kernel_hash = kernel_hash;
  w.env.driver_version = 12000 + int(env_id);
  w.env_key = w.env.key();
  return w;
}

bool always_legal(const KernelConfig&, const Problem&) { return true; }

std::optional<StoredChoice> choose(const std::vector<EnvironmentWinner>& rows, const Problem& p,
                                   const LegalFn& legal = always_legal, const std::string& env_key = "none",
                                   const std::string& protocol_kind = "cold-l2") {
  return choose_stored_winner(rows, p, kCurrent, env_key, protocol_kind, legal);
}

TEST(LoaderChoice, PrefersTheRunningKernelHash) {
  const Problem p = Problem::dense(128, 4096, 7168);
  // The older hash's winner is faster and newer: still the running hash's winner is taken.
  auto c = choose({row(p, cfg(256), kOld, 5, 1.0), row(p, cfg(128), kCurrent, 1, 10.0)}, p);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config, cfg(128));
  EXPECT_EQ(c->source, "db");
  EXPECT_FALSE(c->older_kernel);
  EXPECT_EQ(c->kernel_hash, kCurrent);
  EXPECT_DOUBLE_EQ(c->tuned_us, 10.0);
}

TEST(LoaderChoice, OlderKernelHashWinnerIsUsedWhileItsConfigIsLegal) {
  const Problem p = Problem::dense(128, 4096, 7168);
  auto c = choose({row(p, cfg(192), kOld, 1)}, p);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config, cfg(192));
  EXPECT_EQ(c->source, "db");
  EXPECT_TRUE(c->older_kernel);
  EXPECT_EQ(c->kernel_hash, kOld);
  // Not legal any more for the running kernel: skipped, and with nothing else the default is used.
  auto not_192 = [](const KernelConfig& k, const Problem&) { return k.block_n != 192; };
  EXPECT_FALSE(choose({row(p, cfg(192), kOld, 1)}, p, not_192).has_value());
  // Of two older environments the newest legal one wins.
  c = choose({row(p, cfg(192), kOld, 1), row(p, cfg(160), "1111111111111111", 2)}, p);
  EXPECT_EQ(c->config, cfg(160));
  c = choose({row(p, cfg(192), kOld, 1), row(p, cfg(160), "1111111111111111", 2)}, p,
             [](const KernelConfig& k, const Problem&) { return k.block_n != 160; });
  EXPECT_EQ(c->config, cfg(192));
}

TEST(LoaderChoice, ExactShapeOfAnOlderHashBeatsNearestOfTheRunningHash) {
  const Problem p = Problem::dense(128, 4096, 7168);
  const Problem near = Problem::dense(256, 4096, 7168);
  auto c = choose({row(near, cfg(128), kCurrent, 2), row(p, cfg(192), kOld, 1)}, p);
  EXPECT_EQ(c->source, "db");
  EXPECT_TRUE(c->older_kernel);
  // When the exact older winner is illegal, the nearest of the running hash is used.
  c = choose({row(near, cfg(128), kCurrent, 2), row(p, cfg(192), kOld, 1)}, p,
             [](const KernelConfig& k, const Problem&) { return k.block_n != 192; });
  EXPECT_EQ(c->source, "nearest");
  EXPECT_FALSE(c->older_kernel);
  EXPECT_EQ(c->from, near);
}

TEST(LoaderChoice, NearestPrefersTheRunningHashThenLogDistance) {
  const Problem p = Problem::dense(1000, 4096, 7168);
  std::vector<EnvironmentWinner> rows = {
      row(Problem::dense(512, 4096, 7168), cfg(64), kOld, 1),        // nearest, but older hash
      row(Problem::dense(4096, 4096, 7168), cfg(128), kCurrent, 2),  // 4096/1000 = 4.1
      row(Problem::dense(64, 4096, 7168), cfg(96), kCurrent, 2),     // 1000/64 = 15.6
  };
  auto c = choose(rows, p);
  EXPECT_EQ(c->source, "ladder");  // 1000 lies between the running hash's 64 and 4096: the upper one
  EXPECT_EQ(c->from.m, 4096);
  EXPECT_FALSE(c->older_kernel);
  // Only older-hash winners in the family: the nearest legal one, flagged.
  c = choose({rows[0]}, p);
  EXPECT_EQ(c->from.m, 512);
  EXPECT_TRUE(c->older_kernel);
  // Between two tuned M the upper one, whatever the log distance.
  const Problem q = Problem::dense(128, 4096, 7168);
  c = choose({row(Problem::dense(64, 4096, 7168), cfg(64), kCurrent, 1),
              row(Problem::dense(256, 4096, 7168), cfg(96), kCurrent, 1)},
             q);
  EXPECT_EQ(c->from.m, 256);
}

TEST(LoaderChoice, LadderRuleTakesTheUpperNeighbourBetweenTunedM) {
  // A DeepSeek-V3 (N, K) tuned at M = 64, 128, 256 and 4096; each winner tells which M it came from.
  std::vector<EnvironmentWinner> rows;
  for (int64_t m : {4096, 64, 256, 128}) rows.push_back(row(Problem::dense(m, 2112, 7168), cfg(int(m % 1000) + 8), kCurrent, 1));
  auto pick = [&](int64_t m) {
    auto c = choose(rows, Problem::dense(m, 2112, 7168));
    return std::make_pair(c->from.m, c->source);
  };
  // M = 200 ran the M = 128 winner under the nearest-M rule (0.729x cuBLASLt on the H200): now M = 256's.
  EXPECT_EQ(pick(200), std::make_pair(int64_t(256), std::string("ladder")));
  EXPECT_EQ(pick(129), std::make_pair(int64_t(256), std::string("ladder")));
  EXPECT_EQ(pick(65), std::make_pair(int64_t(128), std::string("ladder")));
  // 300 is nearer 256 in log distance, yet the ladder rule takes the upper neighbour.
  EXPECT_EQ(pick(300), std::make_pair(int64_t(4096), std::string("ladder")));
  EXPECT_EQ(pick(256), std::make_pair(int64_t(256), std::string("db")));
  // Outside the tuned range: the nearest end, labelled "nearest".
  EXPECT_EQ(pick(1), std::make_pair(int64_t(64), std::string("nearest")));
  EXPECT_EQ(pick(16384), std::make_pair(int64_t(4096), std::string("nearest")));
  // Another leading dimension at a tuned M counts as that M (distance 0), above any other.
  Problem padded = Problem::dense(128, 2112, 7168);
  padded.ldd = 2112 + 64;
  auto c = choose(rows, padded);
  EXPECT_EQ(c->from.m, 128);
  EXPECT_EQ(c->source, "nearest");
  // The other protocol kind's ladder is labelled as such.
  std::vector<EnvironmentWinner> hot;
  for (int64_t m : {64, 256}) hot.push_back(row(Problem::dense(m, 2112, 7168), cfg(int(m)), kCurrent, 1, 5.0, "hot-graph-v1"));
  c = choose(hot, Problem::dense(100, 2112, 7168));
  EXPECT_EQ(c->from.m, 256);
  EXPECT_EQ(c->source, "ladder-other-protocol");
}

StoredCublasLtAlgo lt_row(const Problem& p, int64_t env_id, double us, const std::string& protocol = "cold-l2-v1") {
  StoredCublasLtAlgo a;
  a.problem = p;
  a.algo = "algo=66 env " + std::to_string(env_id);
  a.algo_data.assign(64, uint8_t(env_id));
  a.median_us = us;
  a.protocol_name = protocol;
  a.environment_id = env_id;
  return a;
}

TEST(LoaderChoice, CublasLtRivalIsTheWinnersOwnProblemAndProtocol) {
  const Problem p = Problem::dense(200, 2112, 7168), upper = Problem::dense(256, 2112, 7168);
  // The ladder picks M = 256's winner (environment 2): its rival is M = 256's cuBLASLt algorithm, never M = 200's
  // (not tuned here) or another protocol's.
  auto w = choose({row(upper, cfg(128), kCurrent, 2, 12.0), row(Problem::dense(128, 2112, 7168), cfg(96), kCurrent, 2)},
                  p);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->environment_id, 2);
  std::vector<StoredCublasLtAlgo> algos = {lt_row(Problem::dense(128, 2112, 7168), 2, 5.0),
                                           lt_row(upper, 2, 11.0, "hot-graph-v1"), lt_row(upper, 1, 9.0),
                                           lt_row(upper, 3, 10.0)};
  // No algorithm of the winner's environment (2): none, since another sweep's cuBLASLt time does not compare with
  // this winner's.
  EXPECT_EQ(cublaslt_rival(algos, *w), nullptr);
  // The winner's own environment's, even when another environment is newer.
  algos.push_back(lt_row(upper, 2, 13.0));
  const StoredCublasLtAlgo* r = cublaslt_rival(algos, *w);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->environment_id, 2);
  EXPECT_DOUBLE_EQ(r->median_us, 13.0);  // slower than the winner (12 us): the caller keeps dgtune's kernel
  // Nothing stored for the winner's problem and protocol: no rival.
  EXPECT_EQ(cublaslt_rival({lt_row(upper, 2, 5.0, "hot-graph-v1"), lt_row(p, 2, 5.0)}, *w), nullptr);
}

TEST(LoaderChoice, CublasLtBeatsTheKernelOnlyWithAStoredAlgorithmAndNotForE4m3Output) {
  const Problem p = Problem::dense(512, 4096, 4096);
  EXPECT_TRUE(stored_algo_beats_kernel(p, 40.0, 30.0, 64));
  EXPECT_FALSE(stored_algo_beats_kernel(p, 40.0, 50.0, 64));  // slower
  EXPECT_FALSE(stored_algo_beats_kernel(p, 40.0, 30.0, 0));   // stored before schema 10: nothing to replay
  Problem e4m3 = p;
  e4m3.d = DType::kE4M3;
  EXPECT_FALSE(stored_algo_beats_kernel(e4m3, 40.0, 30.0, 64));
}

// A stored cuBLASLt algorithm runs only at the M it was tuned at; a ladder or nearest winner's rival is not replayed at
// another M (the heuristic runs instead): on the H200 coverage grid the neighbour's algorithm was 1.3-3.1 us slower.
TEST(LoaderChoice, StoredCublasLtAlgorithmIsReplayedOnlyAtItsOwnM) {
  StoredChoice w;
  w.from = Problem::dense(384, 1280, 8192);
  w.source = "db";
  EXPECT_TRUE(replay_stored_algo(w, Problem::dense(384, 1280, 8192)));
  w.source = "ladder";
  EXPECT_FALSE(replay_stored_algo(w, Problem::dense(271, 1280, 8192)));
  w.source = "nearest";
  EXPECT_FALSE(replay_stored_algo(w, Problem::dense(20000, 1280, 8192)));
}

/// A stored choice of `source` timed at `from` in `us`, protocol cold-l2-v1, environment 2 (lt_row's default).
StoredChoice stored_at(const std::string& source, const Problem& from, double us) {
  StoredChoice w;
  w.source = source;
  w.tuned_us = us;
  w.from = from;
  w.protocol_name = "cold-l2-v1";
  w.environment_id = 2;
  return w;
}

TEST(LoaderChoice, LadderDispatchComparesTheScaledKernelWithInterpolatedCublasLt) {
  const Problem p = Problem::dense(271, 1280, 8192);
  const StoredChoice w = stored_at("ladder", Problem::dense(384, 1280, 8192), 10.0);
  const std::vector<StoredCublasLtAlgo> algos = {lt_row(Problem::dense(256, 1280, 8192), 2, 8.0),
                                                 lt_row(Problem::dense(384, 1280, 8192), 2, 12.0),
                                                 lt_row(Problem::dense(128, 1280, 8192), 2, 1.0),  // not a neighbour
                                                 lt_row(Problem::dense(300, 1280, 8192), 2, 1.0, "hot-graph-v1")};
  // The same row tiles at 271 as at 384: the kernel keeps its 10 us; cuBLASLt at 271 = 8 + (15/128) x 4 = 8.47 us.
  LadderDispatch d = ladder_dispatch(w, p, 1.0, algos);
  EXPECT_TRUE(d.cublaslt);
  EXPECT_DOUBLE_EQ(d.kernel_us, 10.0);
  EXPECT_NEAR(d.cublaslt_us, 8.0 + 15.0 / 128.0 * 4.0, 1e-12);
  // A time ratio below 1 (7 us predicted) keeps the kernel.
  d = ladder_dispatch(w, p, 0.7, algos);
  EXPECT_FALSE(d.cublaslt);
  EXPECT_DOUBLE_EQ(d.kernel_us, 7.0);
  // The winner's environment's medians come first: environment 3's slower cuBLASLt at 256 is not used.
  auto with_other_env = algos;
  with_other_env.push_back(lt_row(Problem::dense(256, 1280, 8192), 3, 30.0));
  EXPECT_NEAR(ladder_dispatch(w, p, 1.0, with_other_env).cublaslt_us, 8.0 + 15.0 / 128.0 * 4.0, 1e-12);
  // Not a ladder pick, no stored median below p.m, or no positive ratio: no check.
  StoredChoice nearest = w;
  nearest.source = "nearest";
  EXPECT_FALSE(ladder_dispatch(nearest, p, 1.0, algos).cublaslt);  // the kernel's 10 us would lose to 8.47 us
  for (const LadderDispatch& none : {ladder_dispatch(w, p, 1.0, {algos[1]}), ladder_dispatch(w, p, 0.0, algos)}) {
    EXPECT_FALSE(none.cublaslt);
    EXPECT_EQ(none.kernel_us, 0.0);
    EXPECT_EQ(none.cublaslt_us, 0.0);
  }
}

// The ladder check runs cuBLASLt only when the kernel is predicted more than 2% slower (kLadderCublasLtMargin): on ten
// replayed H100 coverage grids a margin of 0 sent rows to a heuristic that then ran slower than the kernel.
TEST(LoaderChoice, LadderDispatchNeedsTheMarginBeforeItRunsCublasLt) {
  const Problem p = Problem::dense(320, 1280, 8192);
  const StoredChoice w = stored_at("ladder", Problem::dense(384, 1280, 8192), 10.0);
  std::vector<StoredCublasLtAlgo> algos = {lt_row(Problem::dense(256, 1280, 8192), 2, 8.0),
                                           lt_row(Problem::dense(384, 1280, 8192), 2, 12.0)};
  // The heuristic's medians are equal on both sides, so its interpolation at 320 is exactly that median.
  for (auto& a : algos) a.heuristic_us = 10.0 / 1.01;  // the kernel predicted 1% slower: it still runs
  LadderDispatch d = ladder_dispatch(w, p, 1.0, algos);
  EXPECT_NEAR(d.cublaslt_us, 10.0 / 1.01, 1e-12);
  EXPECT_FALSE(d.cublaslt);
  for (auto& a : algos) a.heuristic_us = 10.0 / 1.03;  // 3% slower: the heuristic runs
  d = ladder_dispatch(w, p, 1.0, algos);
  EXPECT_TRUE(d.cublaslt);
  EXPECT_DOUBLE_EQ(kLadderCublasLtMargin, 1.02);
  // Through decide_backend too.
  EXPECT_EQ(decide_backend(w, w, p, 1.0, algos).kind, BackendDecision::Kind::kHeuristic);
  for (auto& a : algos) a.heuristic_us = 10.0 / 1.01;
  EXPECT_EQ(decide_backend(w, w, p, 1.0, algos).kind, BackendDecision::Kind::kKernel);
}

// Off a tuned M cuBLASLt runs through its heuristic, so the check interpolates the heuristic's medians where the sweep
// stored them (the tuned ones only where it did not). Found on an H100: against the tuned medians the check sent M to
// cuBLASLt where the heuristic then ran slower than the kernel would have.
TEST(LoaderChoice, LadderDispatchInterpolatesTheHeuristicsMedians) {
  const Problem p = Problem::dense(271, 1280, 8192);
  const StoredChoice w = stored_at("ladder", Problem::dense(384, 1280, 8192), 10.0);
  std::vector<StoredCublasLtAlgo> algos = {lt_row(Problem::dense(256, 1280, 8192), 2, 8.0),
                                           lt_row(Problem::dense(384, 1280, 8192), 2, 12.0)};
  algos[0].heuristic_us = 8.5;
  algos[1].heuristic_us = 16.0;
  // Tuned: 8 + (15/128) x 4 = 8.47 us, under the kernel's 10 us; the heuristic: 8.5 + (15/128) x 7.5 = 9.38 us, still
  // under by more than the margin (kLadderCublasLtMargin).
  LadderDispatch d = ladder_dispatch(w, p, 1.0, algos);
  EXPECT_NEAR(d.cublaslt_us, 8.5 + 15.0 / 128.0 * 7.5, 1e-12);
  EXPECT_TRUE(d.cublaslt);
  // A heuristic 2 us slower at 256: 11 + (15/128) x 5 = 11.59 us, over the kernel's 10 us: the kernel stays.
  algos[0].heuristic_us = 11.0;
  d = ladder_dispatch(w, p, 1.0, algos);
  EXPECT_NEAR(d.cublaslt_us, 11.0 + 15.0 / 128.0 * 5.0, 1e-12);
  EXPECT_FALSE(d.cublaslt);
  // No heuristic median stored at 256 (an older sweep): that side falls back to its tuned 8 us.
  algos[0].heuristic_us = 0;
  EXPECT_NEAR(ladder_dispatch(w, p, 1.0, algos).cublaslt_us, 8.0 + 15.0 / 128.0 * 8.0, 1e-12);
  // cuBLASLt cannot write e4m3 D: predicted, never chosen.
  Problem e4m3 = p;
  e4m3.d = DType::kE4M3;
  algos[0].heuristic_us = 9.0;
  d = ladder_dispatch(w, e4m3, 1.0, algos);
  EXPECT_GT(d.kernel_us, d.cublaslt_us);
  EXPECT_FALSE(d.cublaslt);
}

TEST(LoaderChoice, DecideBackendStoredAtItsMHeuristicOffItByThePrediction) {
  const Problem upper = Problem::dense(384, 1280, 8192), lower = Problem::dense(256, 1280, 8192);
  // The identity rule's winner at 384: 10 us, cuBLASLt-tuned stored there 9 us (heuristic 11 us).
  const StoredChoice winner = stored_at("db", upper, 10.0);
  std::vector<StoredCublasLtAlgo> algos = {lt_row(lower, 2, 8.0), lt_row(upper, 2, 9.0)};
  algos[0].heuristic_us = 8.5;
  algos[1].heuristic_us = 11.0;
  // At 384 itself the stored algorithm beat the winner in the same sweep: it is replayed.
  BackendDecision d = decide_backend(winner, winner, upper, 1.0, algos);
  EXPECT_EQ(d.kind, BackendDecision::Kind::kStoredAlgo);
  ASSERT_NE(d.rival, nullptr);
  EXPECT_DOUBLE_EQ(d.rival->median_us, 9.0);
  // At 271 (a ladder pick) the heuristic runs only if the kernel is predicted slower than the heuristic's
  // interpolation, 8.5 + (15/128) x 2.5 = 8.79 us: the kernel's 10 us is, so the heuristic runs ...
  StoredChoice w = winner;
  w.source = "ladder";
  const Problem p = Problem::dense(271, 1280, 8192);
  d = decide_backend(w, w, p, 1.0, algos);
  EXPECT_EQ(d.kind, BackendDecision::Kind::kHeuristic);
  EXPECT_EQ(d.won_at_m, 0);
  EXPECT_NEAR(d.check.cublaslt_us, 8.5 + 15.0 / 128.0 * 2.5, 1e-12);
  // ... and at a time ratio of 0.8 (8 us predicted) the kernel runs, although cuBLASLt-tuned won at 384: what would
  // run at 271 is the heuristic, not the algorithm that won there.
  d = decide_backend(w, w, p, 0.8, algos);
  EXPECT_EQ(d.kind, BackendDecision::Kind::kKernel);
  EXPECT_DOUBLE_EQ(d.check.kernel_us, 8.0);
  // Above the largest tuned M ("nearest": no prediction) the neighbour's own sweep decides, against the heuristic's
  // median there: 11 us > the winner's 10 us, so the kernel runs; with the heuristic at 9.5 us, cuBLASLt does.
  w.source = "nearest";
  const Problem far = Problem::dense(900, 1280, 8192);
  EXPECT_EQ(decide_backend(w, w, far, 1.0, algos).kind, BackendDecision::Kind::kKernel);
  algos[1].heuristic_us = 9.5;
  d = decide_backend(w, w, far, 1.0, algos);
  EXPECT_EQ(d.kind, BackendDecision::Kind::kHeuristic);
  EXPECT_EQ(d.won_at_m, 384);
  // e4m3 output: never cuBLASLt.
  Problem e4m3 = far;
  e4m3.d = DType::kE4M3;
  EXPECT_EQ(decide_backend(w, w, e4m3, 1.0, algos).kind, BackendDecision::Kind::kKernel);
  // A ladder pick whose lower neighbour stored no cuBLASLt median: no prediction, so the heuristic's median at the
  // winner's M decides (9.5 us < 10 us: the heuristic runs, and says where it won).
  w.source = "ladder";
  d = decide_backend(w, w, p, 1.0, {algos[1]});
  EXPECT_EQ(d.check.kernel_us, 0.0);
  EXPECT_EQ(d.kind, BackendDecision::Kind::kHeuristic);
  EXPECT_EQ(d.won_at_m, 384);
}

// The re-rank may pick another config timed at the lower neighbour: the check predicts from that pick (w), while the
// stored algorithm and the tuned M are the identity winner's (winner).
TEST(LoaderChoice, DecideBackendPredictsFromTheRerankedPickAndReplaysTheWinnersAlgorithm) {
  const Problem upper = Problem::dense(384, 1280, 8192), lower = Problem::dense(256, 1280, 8192);
  const StoredChoice winner = stored_at("ladder", upper, 10.0);
  const StoredChoice pick = stored_at("ladder", lower, 8.0);  // rerank_ladder's pick: another config, timed at 256
  std::vector<StoredCublasLtAlgo> algos = {lt_row(lower, 2, 8.0), lt_row(upper, 2, 9.0)};
  algos[0].heuristic_us = 8.5;
  algos[1].heuristic_us = 11.0;
  const Problem p = Problem::dense(271, 1280, 8192);
  // The pick's 8 us is under the heuristic's 8.79 us: the kernel runs (the winner's 10 us would have lost).
  BackendDecision d = decide_backend(pick, winner, p, 1.0, algos);
  EXPECT_DOUBLE_EQ(d.check.kernel_us, 8.0);
  EXPECT_EQ(d.kind, BackendDecision::Kind::kKernel);
  EXPECT_EQ(decide_backend(winner, winner, p, 1.0, algos).kind, BackendDecision::Kind::kHeuristic);
  // The rival is always the identity winner's (M = 384), also when the pick came from 256.
  ASSERT_NE(d.rival, nullptr);
  EXPECT_EQ(d.rival->problem.m, 384);
}

TEST(LoaderChoice, HeuristicStandsInForAStoredAlgorithmOnlyWhereItBeatTheKernel) {
  StoredCublasLtAlgo a = lt_row(Problem::dense(384, 1280, 8192), 2, 9.0);
  EXPECT_TRUE(heuristic_may_replace(a, 10.0));  // no heuristic median stored: as before
  a.heuristic_us = 9.5;
  EXPECT_TRUE(heuristic_may_replace(a, 10.0));
  a.heuristic_us = 10.5;
  EXPECT_FALSE(heuristic_may_replace(a, 10.0));
}

/// A "ladder" pick of config c, timed at `from` in us, environment 1, cold-l2-v1: what choose_stored_winner returns
/// between two tuned M.
StoredChoice ladder_pick(const KernelConfig& c, const Problem& from, double us) {
  StoredChoice w;
  w.source = "ladder";
  w.config = c;
  w.from = from;
  w.tuned_us = us;
  w.protocol_name = "cold-l2-v1";
  w.environment_id = 1;
  return w;
}

/// rerank_ladder over the rows of `trials` that ladder_trials keeps for `allowed`, as dgt::Gemm calls it.
StoredChoice rerank(const StoredChoice& w, const Problem& p, const std::vector<EnvironmentWinner>& trials,
                    const std::vector<std::string>& allowed, const EstimateFn& est, const LegalFn& legal) {
  return rerank_ladder(w, p, ladder_trials(trials, allowed), est, legal);
}

// The ladder rule's re-rank: between M = 512 and 768 of one family, every candidate measured at either neighbour is
// predicted at p.m from its own M by the estimate's ratio, and the smallest prediction runs.
TEST(LoaderChoice, LadderReRanksTheNeighboursCandidatesByTheEstimateAtM) {
  const Problem lo = Problem::dense(512, 5120, 6400), hi = Problem::dense(768, 5120, 6400), p = Problem::dense(554, 5120, 6400);
  const KernelConfig a = cfg(128), b = cfg(96), c = cfg(160), d = cfg(64);
  // The synthetic estimate: row tiles of 128, so 554 rows cost 5 tiles, 512 four and 768 six.
  const EstimateFn est = [](const KernelConfig&, const Problem& q) { return double((q.m + 127) / 128); };
  const StoredChoice w = ladder_pick(a, hi, 60.0);
  std::vector<EnvironmentWinner> trials = {
      row(hi, a, kCurrent, 1, 60.0),  // the upper winner: 60 x 5/6 = 50 at 554
      row(hi, c, kCurrent, 1, 63.0),  // 52.5
      row(lo, b, kCurrent, 1, 38.0),  // the lower neighbour's: 38 x 5/4 = 47.5, the smallest
      row(lo, a, kCurrent, 1, 41.0),  // a also at 512, which is nearer 554 (log distance): a is predicted 51.25
      row(lo, d, kCurrent, 2, 10.0),  // another environment: never a candidate
      row(lo, d, kCurrent, 1, 30.0, "hot-graph-v1"),  // another protocol: never
      row(Problem::dense(256, 5120, 6400), d, kCurrent, 1, 1.0),  // not a neighbour
  };
  const std::vector<std::string> all = {a.key(), b.key(), c.key(), d.key()};
  StoredChoice r = rerank(w, p, trials, all, est, always_legal);
  EXPECT_EQ(r.config, b);
  EXPECT_EQ(r.from, lo);
  EXPECT_DOUBLE_EQ(r.tuned_us, 38.0);
  EXPECT_EQ(r.source, "ladder");
  // The dispatch check then predicts exactly that time: 38 x est(554) / est(512).
  EXPECT_DOUBLE_EQ(r.tuned_us * est(r.config, p) / est(r.config, r.from), 47.5);
  // Config a, measured at both M, is predicted from the nearer (512: 41 x 5/4 = 51.25, not 50 from 768): with b gone
  // and a's 512 time at 39.0 (48.75), a still runs, now from M = 512.
  std::vector<EnvironmentWinner> no_b = {trials[0], trials[1], row(lo, a, kCurrent, 1, 39.0)};
  r = rerank(w, p, no_b, all, est, always_legal);
  EXPECT_EQ(r.config, a);
  EXPECT_EQ(r.from, lo);
  EXPECT_DOUBLE_EQ(r.tuned_us, 39.0);
  // An illegal config is skipped; so is everything when w is not a ladder pick.
  r = rerank(w, p, trials, all, est, [&](const KernelConfig& k, const Problem&) { return !(k == b); });
  EXPECT_EQ(r.config, a);
  EXPECT_EQ(r.from, lo);
  EXPECT_DOUBLE_EQ(r.tuned_us, 41.0);
  // A config the loader runs at no tuned M (a warm-up would not have loaded it) is never a candidate: without b in
  // `allowed`, c (52.5) loses to a (51.25) as well.
  r = rerank(w, p, trials, {a.key(), c.key(), d.key()}, est, always_legal);
  EXPECT_EQ(r.config, a);
  EXPECT_EQ(r.from, lo);
  StoredChoice nearest = w;
  nearest.source = "nearest";
  EXPECT_EQ(rerank(nearest, p, trials, all, est, always_legal).config, a);
  // A config with a split-K workspace in global memory (it grows with M) is never taken in place of w's; a cluster
  // split (reduced in shared memory) is.
  KernelConfig b_split = b;
  b_split.split_k = 2;
  r = rerank(w, p, {trials[0], row(lo, b_split, kCurrent, 1, 38.0)}, {a.key(), b_split.key()}, est, always_legal);
  EXPECT_EQ(r.config, a);
  b_split.split_cluster = true;
  r = rerank(w, p, {trials[0], row(lo, b_split, kCurrent, 1, 38.0)}, {a.key(), b_split.key()}, est, always_legal);
  EXPECT_EQ(r.config, b_split);
  // Of two problems at the lower M (other leading dimensions), p's own is the lower neighbour.
  Problem lo_padded = lo;
  lo_padded.ldd = lo.ldd + 64;
  r = rerank(w, p, {trials[0], row(lo_padded, b, kCurrent, 1, 20.0), row(lo, c, kCurrent, 1, 38.0)}, all, est,
                    always_legal);
  EXPECT_EQ(r.config, c);
  EXPECT_EQ(r.from, lo);
  // A tie (b at 512: 40 x 5/4 = 50, a at 768: 60 x 5/6 = 50) keeps w's own config and its M.
  r = rerank(w, p, {trials[0], row(lo, b, kCurrent, 1, 40.0)}, all, est, always_legal);
  EXPECT_EQ(r.config, a);
  EXPECT_EQ(r.from, hi);
}

// Between two M with the same number of row tiles the ladder rule predicts a config's stored time unchanged. The case
// from the H200 (Llama-3.1-70B TP 8, 8192x3584, results/h200/ladder-rerank-gpu-2026-12-05.md): at M = 159, between the
// tuned M 128 and 192, the estimate's ratio put rm1 (raster along M, group 1: A read once per column tile) 6% below
// its M = 192 time, 16.304 x 0.937 = 15.27 us, under cuBLASLt's interpolated 15.38 us, so the kernel ran; it ran at
// about its M = 192 time, 8-13% behind cuBLASLt. 159 and 192 rows make the same 2 x 64 tiles of 128 rows: rm4 (16.256
// us at 192) is the pick and the check dispatches cuBLASLt. Across tile counts the estimate's ratio stands.
TEST(LoaderChoice, LadderPredictsTheStoredTimeWithinTheSameRowTiles) {
  const Problem lo = Problem::dense(128, 8192, 3584), hi = Problem::dense(192, 8192, 3584),
                p = Problem::dense(159, 8192, 3584);
  const KernelConfig rm4 = KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x1_rm4_tma_sk1_sm0_2g_p1"),
                     rm1 = KernelConfig::parse_key("128x128x128_s6_wg2_sw128_c1x1_rm1_tma_sk1_sm0_2g_p1"),
                     lo_a = KernelConfig::parse_key("128x64x256_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"),
                     lo_b = KernelConfig::parse_key("128x64x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  const EstimateFn est = analytic_estimate(132);
  // The premise: the estimate itself moves between the two M (its DRAM term; 0.937 with the constants of 2026-12-01).
  ASSERT_LT(est(rm1, p) / est(rm1, hi), 0.98);
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, rm1, p, hi), 1.0);
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, rm1, Problem::dense(129, 8192, 3584), Problem::dense(256, 8192, 3584)), 1.0);
  // One more row tile (128 -> 159 rows with 128-row tiles): the estimate's ratio, here 2 waves of 64-wide tiles.
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, lo_a, p, lo), est(lo_a, p) / est(lo_a, lo));
  EXPECT_GT(ladder_time_ratio(est, lo_a, p, lo), 1.8);
  // Swap AB: the kernel runs D's M as its N, so D's M tiles are its column tiles. 512 -> 554 rows with BLOCK_N 144
  // (the kernel's tile along D's M) is 4 tiles both (the same time); 512 -> 600 is 5 (the estimate's ratio). Counting
  // the kernel's rows (D's N, 8192 / 128 = 64 at every M) called every M the same tiles (H100, tune-model coverage).
  const KernelConfig sw = KernelConfig::parse_key("128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1_swapab");
  const Problem at512 = Problem::dense(512, 8192, 3584);
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, sw, Problem::dense(554, 8192, 3584), at512), 1.0);
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, sw, Problem::dense(600, 8192, 3584), at512),
                   est(sw, Problem::dense(600, 8192, 3584)) / est(sw, at512));
  EXPECT_GT(ladder_time_ratio(est, sw, Problem::dense(600, 8192, 3584), at512), 1.0);
  // A non-positive estimate across tile counts: no ratio (within the same tiles the estimate is not used).
  const EstimateFn zero = [](const KernelConfig&, const Problem&) { return 0.0; };
  EXPECT_DOUBLE_EQ(ladder_time_ratio(zero, lo_a, p, lo), 0.0);
  EXPECT_DOUBLE_EQ(ladder_time_ratio(zero, rm1, p, hi), 1.0);
  // With a cluster of 2 along M, 3 and 4 row tiles are the same 2 cluster rows (the spare CTA runs too); 5 are 3.
  KernelConfig c2 = rm1;
  c2.cluster_m = 2;
  const Problem m300 = Problem::dense(300, 8192, 3584), m512 = Problem::dense(512, 8192, 3584),
                m513 = Problem::dense(513, 8192, 3584);
  ASSERT_NE(est(c2, m300), est(c2, m512));
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, c2, m300, m512), 1.0);
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, c2, m513, m512), est(c2, m513) / est(c2, m512));
  EXPECT_DOUBLE_EQ(ladder_time_ratio(est, rm1, m300, m512), est(rm1, m300) / est(rm1, m512));
  EXPECT_NE(ladder_time_ratio(est, rm1, m300, m512), 1.0);
  const StoredChoice w = ladder_pick(rm4, hi, 16.256);
  const std::vector<EnvironmentWinner> trials = {row(hi, rm4, kCurrent, 1, 16.256), row(hi, rm1, kCurrent, 1, 16.304),
                                                 row(lo, lo_a, kCurrent, 1, 13.68), row(lo, lo_b, kCurrent, 1, 13.696)};
  const StoredChoice r = rerank(w, p, trials, {rm4.key(), rm1.key(), lo_a.key(), lo_b.key()}, est, always_legal);
  EXPECT_EQ(r.config, rm4);
  EXPECT_EQ(r.from, hi);
  const std::vector<StoredCublasLtAlgo> algos = {lt_row(lo, 1, 14.496), lt_row(hi, 1, 16.32)};
  const LadderDispatch d = ladder_dispatch(r, p, ladder_time_ratio(est, r.config, p, r.from), algos);
  EXPECT_DOUBLE_EQ(d.kernel_us, 16.256);
  EXPECT_NEAR(d.cublaslt_us, 14.496 + 31.0 / 64.0 * (16.32 - 14.496), 1e-9);
  EXPECT_TRUE(d.cublaslt);
}

// What a warm-up must load besides the picks at the M it resolves: where the pick at a tuned M is itself a ladder pick
// (p's leading dimensions make that M's own winner illegal), the re-rank can replace it there and still return it at
// another M. Family p: N 1024, K 1040, ldd 1025; tuned with ldd 1024 at M = 128 (z), 256 (t, TMA store: illegal for
// ldd 1025) and 512 (x), and with ldd 1025 at 512 (y).
TEST(LoaderChoice, LadderConfigsHoldEveryPickTheReRankCanReturn) {
  auto dense = [](int64_t m, int64_t ldd) {
    Problem q = Problem::dense(m, 1024, 1040);
    q.ldd = ldd;
    return q;
  };
  KernelConfig t = cfg(160);
  t.epilogue = Epilogue::kTma;
  const KernelConfig z = cfg(96), x = cfg(128), y = cfg(64);
  const std::vector<EnvironmentWinner> rows = {row(dense(128, 1024), z, kCurrent, 1, 10.0),
                                               row(dense(256, 1024), t, kCurrent, 1, 12.0),
                                               row(dense(512, 1024), x, kCurrent, 1, 20.0),
                                               row(dense(512, 1025), y, kCurrent, 1, 30.0)};
  const LegalFn legal = [](const KernelConfig& c, const Problem& q) {
    return !(c.epilogue == Epilogue::kTma && q.ldd % 8 != 0);
  };
  // z's time is flat up to 256 rows and grows with M above (a wave step); x's and y's do not change.
  const EstimateFn est = [&](const KernelConfig& c, const Problem& q) {
    return c == z && q.m > 256 ? double(q.m) / 64.0 : 1.0;
  };
  const Problem p = dense(1, 1025);
  const std::vector<std::string> allowed = tuned_m_choices(rows, p, kCurrent, "none", "cold-l2", legal);
  const std::vector<EnvironmentWinner> trials = ladder_trials(rows, allowed);
  auto pick = [&](int64_t m) {
    Problem q = p;
    q.m = m;
    const std::optional<StoredChoice> w = choose_stored_winner(rows, q, kCurrent, "none", "cold-l2", legal);
    EXPECT_TRUE(w.has_value());
    return rerank_ladder(*w, q, trials, est, legal);
  };
  // At 256 the identity rule takes 512's winner of the smallest problem key (x, ldd 1024), which the re-rank replaces
  // with z (10 us against 20); at 512 y runs (p's own leading dimensions), at 128 z.
  EXPECT_EQ(pick(256).config, z);
  EXPECT_EQ(pick(512).config, y);
  EXPECT_EQ(pick(128).config, z);
  // At 500 the re-rank returns x (20 us against z's 10 x 500 / 64 = 78): the pick at no tuned M.
  const StoredChoice at500 = pick(500);
  EXPECT_EQ(at500.config, x);
  EXPECT_EQ(at500.from, dense(512, 1024));
  // ladder_configs holds it: every distinct config of the trials that is legal for p, in first-seen order.
  EXPECT_EQ(ladder_configs(trials, p, legal), (std::vector<KernelConfig>{z, x, y}));
  // An illegal config (t, had it been allowed) and a key that does not parse are left out; duplicates appear once.
  std::vector<EnvironmentWinner> more = trials;
  more.push_back(row(dense(256, 1024), t, kCurrent, 1, 12.0));
  more.push_back(row(dense(640, 1024), x, kCurrent, 1, 25.0));
  more.push_back(row(dense(640, 1024), z, kCurrent, 1, 25.0));
  more.back().config_key = "not a key";
  EXPECT_EQ(ladder_configs(more, p, legal), (std::vector<KernelConfig>{z, x, y}));
}

TEST(LoaderChoice, LadderTrialsKeepTheAllowedKeysInTodaysFormat) {
  const Problem q = Problem::dense(512, 5120, 6400);
  EnvironmentWinner older = row(q, cfg(96), kCurrent, 1);
  older.config_key = "128x96x128_s4_wg2_sw128_c1x1_rm8_direct_sk1";  // a key written before the sms/mainloop tokens
  EnvironmentWinner bad = row(q, cfg(64), kCurrent, 1);
  bad.config_key = "not a key";
  const auto got = ladder_trials({older, row(q, cfg(128), kCurrent, 1), bad, row(q, cfg(160), kCurrent, 1)},
                                 {cfg(96).key(), cfg(160).key()});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].config_key, cfg(96).key());  // rewritten in today's format
  EXPECT_EQ(got[1].config_key, cfg(160).key());
}

TEST(LoaderChoice, TunedMChoicesAreTheConfigsRunAtEachTunedM) {
  const Problem p = Problem::dense(1, 5120, 6400);
  // M = 512: two environments, the running hash's winner (cfg 96) runs; M = 768: cfg 128; M = 1024 has only an
  // illegal winner, so the identity rule takes the nearest legal one (768's) there.
  const std::vector<EnvironmentWinner> rows = {
      row(Problem::dense(512, 5120, 6400), cfg(96), kCurrent, 1), row(Problem::dense(512, 5120, 6400), cfg(64), kOld, 2),
      row(Problem::dense(768, 5120, 6400), cfg(128), kCurrent, 1),
      row(Problem::dense(1024, 5120, 6400), cfg(200), kCurrent, 1)};
  const auto legal = [](const KernelConfig& c, const Problem&) { return c.block_n != 200; };
  const auto got = tuned_m_choices(rows, p, kCurrent, "none", "cold-l2", legal);
  EXPECT_EQ(got, (std::vector<std::string>{cfg(96).key(), cfg(128).key()}));
}

TEST(LoaderChoice, SameHashPrefersTheRunningEnvironmentThenTheNewest) {
  const Problem p = Problem::dense(128, 4096, 7168);
  std::vector<EnvironmentWinner> rows = {row(p, cfg(96), kCurrent, 1), row(p, cfg(128), kCurrent, 2),
                                         row(p, cfg(160), kCurrent, 3)};
  EXPECT_EQ(choose(rows, p)->config, cfg(160));                                // newest environment
  EXPECT_EQ(choose(rows, p, always_legal, rows[0].env_key)->config, cfg(96));  // the running environment
}

TEST(LoaderChoice, UnreadableKeysAndEmptyInputFallBackToDefault) {
  const Problem p = Problem::dense(128, 4096, 7168);
  EnvironmentWinner future = row(p, cfg(128), kOld, 9);
  future.config_key = "a_key_format_of_a_later_dgtune";
  EXPECT_FALSE(choose({future}, p).has_value());
  EXPECT_EQ(choose({future, row(p, cfg(64), kOld, 1)}, p)->config, cfg(64));
  EXPECT_FALSE(choose({}, p).has_value());
}

TEST(LoaderChoice, RealLegalityRejectsATmaStoreWinnerForAnOddLdd) {
  // A stored winner that stores D with TMA needs ldd % 8 == 0 (P3): for ldd = 1025 it is skipped.
  Problem tuned = Problem::dense(400, 1024, 1040);
  Problem odd = Problem::dense(410, 1024, 1040);
  odd.ldd = 1025;
  KernelConfig tma = cfg(128);
  tma.epilogue = Epilogue::kTma;
  ASSERT_TRUE(legal_for_current_kernel(tma, tuned));
  EXPECT_FALSE(legal_for_current_kernel(tma, odd));
  EXPECT_FALSE(
      choose_stored_winner({row(tuned, tma, kOld, 1)}, odd, kCurrent, "", "cold-l2", legal_for_current_kernel));
  auto c = choose_stored_winner({row(tuned, tma, kOld, 1)}, tuned, kCurrent, "", "cold-l2", legal_for_current_kernel);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->older_kernel);
}

TEST(LoaderChoice, ProtocolKindNames) {
  EXPECT_EQ(protocol_kind_of("cold-l2-v1"), "cold-l2");
  EXPECT_EQ(protocol_kind_of("cold-l2-v2"), "cold-l2");
  EXPECT_EQ(protocol_kind_of("hot-graph-v1"), "hot-graph");
  EXPECT_EQ(protocol_kind_of("hot-graph-v12"), "hot-graph");
  EXPECT_EQ(protocol_kind_of("hot-graph"), "hot-graph");    // no version: its own kind
  EXPECT_EQ(protocol_kind_of("cold-l2-vx"), "cold-l2-vx");  // not a version
  EXPECT_EQ(protocol_kind_of("cold-l2-v"), "cold-l2-v");
  EXPECT_NO_THROW(check_protocol_kind("hot-graph", "p"));
  try {
    check_protocol_kind("warm", "dgt::GemmOptions::protocol");
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("'warm' is not a protocol; choose cold-l2 or hot-graph"), std::string::npos)
        << e.what();
  }
}

TEST(LoaderChoice, PrefersTheProtocolKindAskedForThenTheOtherOnesWinnerOfTheShape) {
  const Problem p = Problem::dense(128, 4096, 7168);
  // The same shape tuned under both protocols (different winners, as warm L2 favours other tiles).
  const std::vector<EnvironmentWinner> both = {row(p, cfg(128), kCurrent, 1, 10.0, "cold-l2-v1"),
                                               row(p, cfg(256), kCurrent, 1, 8.0, "hot-graph-v1")};
  auto c = choose(both, p, always_legal, "none", "hot-graph");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config, cfg(256));
  EXPECT_EQ(c->source, "db");
  EXPECT_EQ(c->protocol_name, "hot-graph-v1");
  c = choose(both, p, always_legal, "none", "cold-l2");
  EXPECT_EQ(c->config, cfg(128));
  EXPECT_EQ(c->source, "db");
  EXPECT_EQ(c->protocol_name, "cold-l2-v1");
  // Any version of the kind counts as the kind.
  c = choose({row(p, cfg(128), kCurrent, 1, 10.0, "cold-l2-v1"), row(p, cfg(192), kCurrent, 1, 8.0, "hot-graph-v7")}, p,
             always_legal, "none", "hot-graph");
  EXPECT_EQ(c->config, cfg(192));
  EXPECT_EQ(c->source, "db");
  // Only the other protocol's winner of the shape: taken and labelled, even over a nearer-kind nearest M
  // or a running-hash winner of the asked kind for another M.
  const Problem near = Problem::dense(256, 4096, 7168);
  c = choose({row(p, cfg(128), kOld, 1, 10.0, "cold-l2-v1"), row(near, cfg(96), kCurrent, 2, 9.0, "hot-graph-v1")}, p,
             always_legal, "none", "hot-graph");
  EXPECT_EQ(c->config, cfg(128));
  EXPECT_EQ(c->source, "db-other-protocol");
  EXPECT_EQ(c->protocol_name, "cold-l2-v1");
  EXPECT_TRUE(c->older_kernel);
  // The asked kind's winner of the shape beats the other kind's even when it is of an older kernel hash.
  c = choose({row(p, cfg(128), kCurrent, 2, 10.0, "cold-l2-v1"), row(p, cfg(160), kOld, 1, 9.0, "hot-graph-v1")}, p,
             always_legal, "none", "hot-graph");
  EXPECT_EQ(c->config, cfg(160));
  EXPECT_EQ(c->source, "db");
  // ... unless it is illegal now: then the other kind's.
  c = choose(
      {row(p, cfg(128), kCurrent, 2, 10.0, "cold-l2-v1"), row(p, cfg(160), kOld, 1, 9.0, "hot-graph-v1")}, p,
      [](const KernelConfig& k, const Problem&) { return k.block_n != 160; }, "none", "hot-graph");
  EXPECT_EQ(c->config, cfg(128));
  EXPECT_EQ(c->source, "db-other-protocol");
  // No winner of the shape: the nearest M of the asked kind, then of the other kind.
  const Problem far = Problem::dense(4096, 4096, 7168);
  c = choose({row(near, cfg(96), kCurrent, 1, 9.0, "cold-l2-v1"), row(far, cfg(64), kCurrent, 1, 9.0, "hot-graph-v1")},
             p, always_legal, "none", "hot-graph");
  EXPECT_EQ(c->config, cfg(64));
  EXPECT_EQ(c->source, "nearest");
  c = choose({row(near, cfg(96), kCurrent, 1, 9.0, "cold-l2-v1")}, p, always_legal, "none", "hot-graph");
  EXPECT_EQ(c->config, cfg(96));
  EXPECT_EQ(c->source, "nearest-other-protocol");
  EXPECT_EQ(c->from, near);
}

TEST(LoaderChoice, OtherKindsLadderBeatsTheAskedKindsNearestEnd) {
  // Hot-graph (asked) tuned at M = 64, 128, 256 only; cold-l2 along the whole ladder 64..8192. Each winner tells its M
  // and kind by its BLOCK_N (hot: M % 1000 + 8, cold: M % 1000 + 16).
  std::vector<EnvironmentWinner> rows;
  for (int64_t m : {64, 128, 256})
    rows.push_back(row(Problem::dense(m, 5120, 6400), cfg(int(m % 1000) + 8), kCurrent, 1, 5.0, "hot-graph-v1"));
  for (int64_t m : {64, 128, 256, 512, 1024, 2048, 4096, 8192})
    rows.push_back(row(Problem::dense(m, 5120, 6400), cfg(int(m % 1000) + 16), kCurrent, 1, 9.0, "cold-l2-v1"));
  auto pick = [&](const std::vector<EnvironmentWinner>& r, int64_t m) {
    auto c = choose(r, Problem::dense(m, 5120, 6400), always_legal, "none", "hot-graph");
    return std::make_tuple(c->from.m, c->source, c->protocol_name);
  };
  using T = std::tuple<int64_t, std::string, std::string>;
  // Inside the hot-graph M: the hot-graph ladder, as before.
  EXPECT_EQ(pick(rows, 200), T(256, "ladder", "hot-graph-v1"));
  EXPECT_EQ(pick(rows, 128), T(128, "db", "hot-graph-v1"));
  // Past the largest hot-graph M but between two cold-l2 M: the cold-l2 ladder's upper neighbour, not the hot-graph
  // M = 256 winner (measured 9-11% slower there on an H100 than a complete hot-graph ladder).
  EXPECT_EQ(pick(rows, 1000), T(1024, "ladder-other-protocol", "cold-l2-v1"));
  EXPECT_EQ(pick(rows, 3000), T(4096, "ladder-other-protocol", "cold-l2-v1"));
  EXPECT_EQ(pick(rows, 8192), T(8192, "db-other-protocol", "cold-l2-v1"));
  // Outside both ranges: the asked kind's nearest end, as before.
  EXPECT_EQ(pick(rows, 16384), T(256, "nearest", "hot-graph-v1"));
  EXPECT_EQ(pick(rows, 1), T(64, "nearest", "hot-graph-v1"));
  // The cold-l2 kind asked for with the same rows: its own ladder everywhere inside 64..8192.
  auto c = choose(rows, Problem::dense(200, 5120, 6400));
  EXPECT_EQ(c->from.m, 256);
  EXPECT_EQ(c->source, "ladder");
  EXPECT_EQ(c->protocol_name, "cold-l2-v1");
  // "ladder" needs a tuned M below p.m of the pick's own kind: hot-graph at 512 and 1024, cold-l2 at 64 only (neither
  // covers M = 100), so hot-graph's M = 512 runs as the nearest end (it was labelled "ladder" because of the cold M).
  std::vector<EnvironmentWinner> split;
  for (int64_t m : {512, 1024})
    split.push_back(row(Problem::dense(m, 5120, 6400), cfg(int(m % 1000) + 8), kCurrent, 1, 5.0, "hot-graph-v1"));
  split.push_back(row(Problem::dense(64, 5120, 6400), cfg(80), kCurrent, 1, 9.0, "cold-l2-v1"));
  EXPECT_EQ(pick(split, 100), T(512, "nearest", "hot-graph-v1"));
  // Below the asked kind's smallest tuned M its pick is already the upper neighbour: it stays, even where cold-l2
  // brackets M (cold-l2 at 64 and 128 here; a warm-up would not load cold-l2's 128 winner, which runs at no tuned M).
  split.push_back(row(Problem::dense(128, 5120, 6400), cfg(144), kCurrent, 1, 9.0, "cold-l2-v1"));
  EXPECT_EQ(pick(split, 100), T(512, "nearest", "hot-graph-v1"));
  std::vector<EnvironmentWinner> low = rows;
  for (int64_t m : {112}) low.push_back(row(Problem::dense(m, 5120, 6400), cfg(120), kCurrent, 1, 9.0, "cold-l2-v1"));
  std::vector<EnvironmentWinner> hot_from_128;
  for (const EnvironmentWinner& r : low)
    if (!(r.protocol_name == "hot-graph-v1" && r.problem.m == 64)) hot_from_128.push_back(r);
  EXPECT_EQ(pick(hot_from_128, 120), T(128, "nearest", "hot-graph-v1"));
}

// A warm-up resolves the pick at every M of warm_m_values (the default ladder joined with the tuned M): every config
// the identity rule picks at any M from 1 to 16384 must be one of those, or a call inside CUDA-graph capture would
// need a kernel nobody loaded. Hot-graph (asked) tuned on part of the ladder, cold-l2 on another part, with a distinct
// config per (kind, M).
TEST(LoaderChoice, EveryPickOfTheIdentityRuleIsAPickAtAWarmUpM) {
  const Problem family = Problem::dense(1, 5120, 6400);
  int next_n = 8;
  auto tuned = [&](std::vector<EnvironmentWinner>& rows, const std::vector<int64_t>& ms, const std::string& proto) {
    for (int64_t m : ms) {
      Problem q = family;
      q.m = m;
      rows.push_back(row(q, cfg(next_n), kCurrent, 1, 9.0, proto));
      next_n += 8;
    }
  };
  const std::vector<std::vector<int64_t>> hot_sets = {{128, 256, 512, 1024}, {1, 2, 4, 8, 16, 32}, {96, 200, 5000}};
  const std::vector<std::vector<int64_t>> cold_sets = {{1, 8, 64, 112, 128, 160, 1024, 1536, 4096, 16384},
                                                       {16, 300, 700, 2000, 9000}};
  for (const auto& hot_ms : hot_sets)
    for (const auto& cold_ms : cold_sets)
      for (const char* asked : {"hot-graph", "cold-l2"}) {
        std::vector<EnvironmentWinner> rows;
        next_n = 8;
        tuned(rows, hot_ms, "hot-graph-v1");
        tuned(rows, cold_ms, "cold-l2-v1");
        std::vector<int64_t> all_m;
        for (const EnvironmentWinner& r : rows) all_m.push_back(r.problem.m);
        std::set<std::string> warm;
        for (int64_t m : warm_m_values({}, all_m)) {
          Problem q = family;
          q.m = m;
          warm.insert(choose(rows, q, always_legal, "none", asked)->config.key());
        }
        for (int64_t m = 1; m <= 16384; ++m) {
          Problem q = family;
          q.m = m;
          const std::optional<StoredChoice> c = choose(rows, q, always_legal, "none", asked);
          ASSERT_TRUE(c.has_value());
          ASSERT_TRUE(warm.count(c->config.key())) << "M = " << m << " picks " << c->config.key() << " (" << c->source
                                                   << ", from M = " << c->from.m << ") asked " << asked;
        }
      }
}

// ---------------------------------------------------------------------------------------------
// The DB side: environment_winners() returns one winner per environment of one hardware identity.

class EnvironmentWinnersTest : public test::TempDirTest {};

DeviceFingerprint h200(const std::string& kernel_hash, int driver) {
  DeviceFingerprint d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.driver_version = driver;
  d.kernel_hash = kernel_hash;
  d.dgtune_version = "0.3.0";
  return d;
}

TrialRecord timed(const Problem& p, const KernelConfig& c, double us) {
  TrialRecord t;
  t.problem = p;
  t.config = c;
  t.set_timing(Timing{us, us, us, 10, 0.001, 1800, false});
  return t;
}

TEST_F(EnvironmentWinnersTest, OneWinnerPerEnvironmentOfTheHardwareAndFamily) {
  TuningDb db((dir_ / "t.db").string());
  const DeviceScope old_env = db.upsert_device(h200(kOld, 12080));
  const DeviceScope cur_env = db.upsert_device(h200(kCurrent, 12080));
  DeviceFingerprint h100 = h200(kCurrent, 12080);
  h100.name = "NVIDIA H100 80GB HBM3";
  const DeviceScope other_hw = db.upsert_device(h100);
  ASSERT_EQ(old_env.device_id, cur_env.device_id);
  ASSERT_NE(other_hw.device_id, cur_env.device_id);

  const Problem p = Problem::dense(128, 4096, 7168);
  const Problem near = Problem::dense(512, 4096, 7168);
  db.put_trial(old_env, timed(p, cfg(192), 8.0));
  db.put_trial(old_env, timed(p, cfg(96), 9.0));  // not the old environment's winner
  db.put_trial(cur_env, timed(near, cfg(128), 20.0));
  db.put_trial(other_hw, timed(p, cfg(64), 1.0));                               // other hardware: never returned
  db.put_trial(cur_env, timed(Problem::dense(128, 2048, 7168), cfg(64), 1.0));  // other family

  auto rows = db.environment_winners(cur_env.device_id, p);
  ASSERT_EQ(rows.size(), 2u);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.environment_id < b.environment_id; });
  EXPECT_EQ(rows[0].problem, p);
  EXPECT_EQ(rows[0].config_key, cfg(192).key());
  EXPECT_EQ(rows[0].env.kernel_hash, kOld);
  EXPECT_EQ(rows[0].environment_id, old_env.environment_id);
  EXPECT_EQ(rows[0].env_key, h200(kOld, 12080).software().key());
  EXPECT_DOUBLE_EQ(rows[0].median_us, 8.0);
  EXPECT_EQ(rows[1].problem, near);
  EXPECT_EQ(rows[1].env.kernel_hash, kCurrent);

  // The rule over these rows: the exact shape's winner of the older kernel (legal), flagged.
  auto c = choose_stored_winner(rows, p, kCurrent, rows[1].env_key, "cold-l2", always_legal);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config, cfg(192));
  EXPECT_TRUE(c->older_kernel);
  // Once the running kernel has its own winner for p, it is preferred.
  db.put_trial(cur_env, timed(p, cfg(128), 12.0));
  c = choose_stored_winner(db.environment_winners(cur_env.device_id, p), p, kCurrent, "", "cold-l2", always_legal);
  EXPECT_EQ(c->config, cfg(128));
  EXPECT_FALSE(c->older_kernel);
  // The other hardware sees only its own row; no family, no rows.
  EXPECT_EQ(db.environment_winners(other_hw.device_id, near).size(), 1u);
  EXPECT_TRUE(db.environment_winners(other_hw.device_id, Problem::dense(1, 1024, 1024)).empty());
}

TEST_F(EnvironmentWinnersTest, FamilyTrialsAreEveryOkTimedTrialOfTheFamilyOnThisHardware) {
  TuningDb db((dir_ / "t.db").string());
  const DeviceScope env = db.upsert_device(h200(kCurrent, 12080));
  DeviceFingerprint h100 = h200(kCurrent, 12080);
  h100.name = "NVIDIA H100 80GB HBM3";
  const DeviceScope other_hw = db.upsert_device(h100);
  const Problem p = Problem::dense(128, 4096, 7168), near = Problem::dense(512, 4096, 7168);
  db.put_trial(env, timed(p, cfg(192), 8.0));
  db.put_trial(env, timed(p, cfg(96), 9.0));  // not a winner: still a trial
  db.put_trial(env, timed(near, cfg(128), 20.0));
  TrialRecord failed = timed(near, cfg(64), 1.0);
  failed.status = TrialStatus::kVerifyFailed;
  db.put_trial(env, failed);                                                // not ok: never a candidate
  db.put_trial(other_hw, timed(p, cfg(64), 1.0));                           // other hardware
  db.put_trial(env, timed(Problem::dense(128, 2048, 7168), cfg(64), 1.0));  // other family
  auto rows = db.family_trials(env.device_id, Problem::dense(300, 4096, 7168));
  ASSERT_EQ(rows.size(), 3u);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.median_us < b.median_us; });
  EXPECT_EQ(rows[0].config_key, cfg(192).key());
  EXPECT_EQ(rows[0].problem, p);
  EXPECT_EQ(rows[1].config_key, cfg(96).key());
  EXPECT_DOUBLE_EQ(rows[1].median_us, 9.0);
  EXPECT_EQ(rows[2].problem, near);
  EXPECT_EQ(rows[2].environment_id, env.environment_id);
  EXPECT_EQ(rows[2].protocol_name, "cold-l2-v1");
  EXPECT_EQ(rows[2].env.kernel_hash, kCurrent);
}

TEST_F(EnvironmentWinnersTest, OneWinnerPerProtocolAndTheLoaderPrefersTheKindAskedFor) {
  TuningDb db((dir_ / "t.db").string());
  const DeviceScope env = db.upsert_device(h200(kCurrent, 12080));
  const Problem p = Problem::dense(128, 4096, 7168);
  db.put_trial(env, timed(p, cfg(128), 10.0));  // protocol "" -> the sweep Timer's cold-l2-v1
  TrialRecord hot = timed(p, cfg(256), 7.0);
  hot.protocol = R"({"kind":"hot-graph","name":"hot-graph-v1","version":1})";
  db.put_trial(env, hot);
  TrialRecord hot_slow = timed(p, cfg(128), 9.0);  // the same config as the cold winner, timed hot: a second trial
  hot_slow.protocol = hot.protocol;
  db.put_trial(env, hot_slow);

  auto rows = db.environment_winners(env.device_id, p);
  ASSERT_EQ(rows.size(), 2u);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.protocol_name < b.protocol_name; });
  EXPECT_EQ(rows[0].protocol_name, "cold-l2-v1");
  EXPECT_EQ(rows[0].config_key, cfg(128).key());
  EXPECT_EQ(rows[1].protocol_name, "hot-graph-v1");
  EXPECT_EQ(rows[1].config_key, cfg(256).key());
  EXPECT_DOUBLE_EQ(rows[1].median_us, 7.0);

  auto c = choose_stored_winner(rows, p, kCurrent, "", "hot-graph", always_legal);
  EXPECT_EQ(c->config, cfg(256));
  EXPECT_EQ(c->source, "db");
  c = choose_stored_winner(rows, p, kCurrent, "", "cold-l2", always_legal);
  EXPECT_EQ(c->config, cfg(128));
  EXPECT_EQ(c->source, "db");
  // Only cold-l2 trials for another shape: asked for hot-graph, the loader labels the fallback.
  const Problem q = Problem::dense(64, 4096, 7168);
  db.put_trial(env, timed(q, cfg(64), 5.0));
  c = choose_stored_winner(db.environment_winners(env.device_id, q), q, kCurrent, "", "hot-graph", always_legal);
  EXPECT_EQ(c->config, cfg(64));
  EXPECT_EQ(c->source, "db-other-protocol");
  EXPECT_EQ(c->protocol_name, "cold-l2-v1");
}

}  // namespace
}  // namespace dgt
