// Scale modes on the host side, no GPU: the problem key per mode, the tuning DB keeping the mode
// (put/get, the loader's family query), and the loader's choice never standing a winner of another scale mode
// in for a problem (choose_stored_winner over DB rows and over an exported table).
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "db/tuning_db.hpp"
#include "loader/choice.hpp"
#include "problem/problem.hpp"
#include "problem/shapes_file.hpp"
#include "records/records.hpp"
#include "space/cost_model.hpp"
#include "space/resource_model.hpp"

namespace dgt {
namespace {

constexpr ScaleMode kModes[] = {ScaleMode::kPerTensor, ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d};

Problem with_scale(Problem p, ScaleMode s) {
  p.scale = s;
  return p;
}

TEST(ScaleModeKey, EveryModeHasItsOwnProblemKeyAndJson) {
  const Problem base = Problem::dense(128, 7168, 2048);
  std::set<std::string> keys;
  for (ScaleMode s : kModes) {
    const Problem p = with_scale(base, s);
    EXPECT_TRUE(keys.insert(p.key()).second) << p.key();
    // JSON keeps the mode; the DB's text parses back.
    nlohmann::json j = p;
    EXPECT_EQ(j.at("scale"), to_string(s));
    EXPECT_EQ(j.get<Problem>(), p);
    EXPECT_EQ(parse_scale_mode(to_string(s)), s);
  }
  EXPECT_EQ(with_scale(base, ScaleMode::kBlock).key(),
            "128x7168x2048_lda2048_ldb2048_ldd7168_e4m3.e4m3.bf16_blk_promote");
  EXPECT_EQ(with_scale(base, ScaleMode::kBlock1d1d).key(),
            "128x7168x2048_lda2048_ldb2048_ldd7168_e4m3.e4m3.bf16_blk1d1d_promote");
  EXPECT_EQ(with_scale(base, ScaleMode::kChannel).key(),
            "128x7168x2048_lda2048_ldb2048_ldd7168_e4m3.e4m3.bf16_ch_promote");
  EXPECT_EQ(base.key(), "128x7168x2048_lda2048_ldb2048_ldd7168_e4m3.e4m3.bf16_pt_promote");
  EXPECT_EQ(with_scale(base, ScaleMode::kBlock).label(), "128x7168x2048 block");
  try {
    parse_scale_mode("blocks");
    ADD_FAILURE() << "parsed 'blocks'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(e.message().find("'blocks'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("tensor, channel, block or block1d1d"), std::string::npos) << e.message();
  }
}

// ---- the tuning DB ----------------------------------------------------------------------------------------

class ScaleModeDbTest : public test::TempDirTest {};

DeviceFingerprint h200() {
  DeviceFingerprint d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.driver_version = 12080;
  d.kernel_hash = "cccccccccccccccc";
  d.dgtune_version = "0.5.0";
  return d;
}

KernelConfig cfg(int block_n, int block_k = 128) {
  KernelConfig c;
  c.block_n = block_n;
  c.block_k = block_k;
  c.num_stages = block_k == 256 ? 2 : 4;  // what fits in shared memory
  return c;
}

TrialRecord timed(const Problem& p, const KernelConfig& c, double us) {
  TrialRecord t;
  t.problem = p;
  t.config = c;
  t.verification = Verification{true, 1e-3, 1e-6, 0, 0};
  t.set_timing(Timing{us, us, us, 10, 0.001, 1800, false});
  return t;
}

TEST_F(ScaleModeDbTest, BlockModeProblemRoundTripsAndIsItsOwnProblem) {
  const std::string path = (dir_ / "t.db").string();
  const Problem pt = Problem::dense(128, 7168, 2048);
  const Problem blk = with_scale(pt, ScaleMode::kBlock);
  const Problem b11 = with_scale(pt, ScaleMode::kBlock1d1d);
  {
    TuningDb db(path);
    const DeviceScope s = db.upsert_device(h200());
    db.put_trial(s, timed(pt, cfg(256, 256), 5.0));  // per-tensor: faster, BLOCK_K 256
    db.put_trial(s, timed(blk, cfg(128), 9.0));
    db.put_trial(s, timed(b11, cfg(64), 11.0));
    EXPECT_NE(db.find_problem(pt), db.find_problem(blk));
    EXPECT_NE(db.find_problem(blk), db.find_problem(b11));
  }
  // Reopened read-only: each mode reads back its own trial and winner, with the mode.
  TuningDbReader db(path);
  const DeviceScope s = *db.find_device(h200());
  const auto blk_trials = db.trials(s, blk);
  ASSERT_EQ(blk_trials.size(), 1u);
  EXPECT_EQ(blk_trials[0].problem, blk);
  EXPECT_EQ(blk_trials[0].problem.scale, ScaleMode::kBlock);
  EXPECT_EQ(blk_trials[0].config, cfg(128));
  const auto w = db.winner(s, blk);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->trial.problem.scale, ScaleMode::kBlock);
  EXPECT_EQ(w->trial.config, cfg(128));
  EXPECT_EQ(db.winner(s, b11)->trial.config, cfg(64));
  EXPECT_EQ(db.winner(s, pt)->trial.config, cfg(256, 256));
  EXPECT_TRUE(db.trials(s, with_scale(pt, ScaleMode::kChannel)).empty());
  // winners() lists all three, each with its mode.
  std::set<ScaleMode> modes;
  for (const WinnerRow& r : db.winners(s)) modes.insert(r.trial.problem.scale);
  EXPECT_EQ(modes, (std::set<ScaleMode>{ScaleMode::kPerTensor, ScaleMode::kBlock, ScaleMode::kBlock1d1d}));
  // The nearest-M query stays in the mode: a block problem of another M finds the block winner only.
  const auto near = db.nearest_winner(s, with_scale(Problem::dense(100, 7168, 2048), ScaleMode::kBlock));
  ASSERT_TRUE(near);
  EXPECT_EQ(near->trial.problem, blk);
  EXPECT_FALSE(db.nearest_winner(s, with_scale(Problem::dense(100, 7168, 2048), ScaleMode::kChannel)));
  // Export rows carry the mode.
  std::set<std::string> exported;
  for (const ExportRow& r : db.export_rows(s.device_id)) exported.insert(r.trial.problem.key());
  EXPECT_EQ(exported, (std::set<std::string>{pt.key(), blk.key(), b11.key()}));
}

// ---- the loader's choice ----------------------------------------------------------------------------------

const std::string kHash = "cccccccccccccccc";

EnvironmentWinner row(const Problem& p, const KernelConfig& c, int64_t env_id = 1) {
  EnvironmentWinner w;
  w.problem = p;
  w.protocol_name = "cold-l2-v1";
  w.config_key = c.key();
  w.median_us = 10;
  w.environment_id = env_id;
  w.env.kernel_hash = kHash;
  w.env_key = w.env.key();
  return w;
}

bool always_legal(const KernelConfig&, const Problem&) { return true; }

std::optional<StoredChoice> choose(const std::vector<EnvironmentWinner>& rows, const Problem& p,
                                   const LegalFn& legal = always_legal) {
  return choose_stored_winner(rows, p, kHash, "", "cold-l2", legal);
}

TEST(ScaleModeChoice, NeverAPerTensorWinnerForABlockProblem) {
  const Problem pt = Problem::dense(128, 7168, 2048);
  const Problem blk = with_scale(pt, ScaleMode::kBlock);
  // Only per-tensor rows (the exact dimensions, another M): even with a rule that calls everything legal,
  // the block problem gets none of them (the default config instead).
  const std::vector<EnvironmentWinner> pt_rows = {row(pt, cfg(256, 256)), row(Problem::dense(64, 7168, 2048), cfg(96))};
  EXPECT_FALSE(choose(pt_rows, blk).has_value());
  EXPECT_FALSE(choose(pt_rows, with_scale(pt, ScaleMode::kBlock1d1d)).has_value());
  EXPECT_FALSE(choose(pt_rows, with_scale(pt, ScaleMode::kChannel)).has_value());
  EXPECT_EQ(choose(pt_rows, pt)->config, cfg(256, 256));  // the per-tensor problem still gets its own
  // A block row of another M is the nearest; the per-tensor row of the exact M does not win over it.
  auto rows = pt_rows;
  rows.push_back(row(with_scale(Problem::dense(4096, 7168, 2048), ScaleMode::kBlock), cfg(144), 2));
  auto c = choose(rows, blk);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->source, "nearest");
  EXPECT_EQ(c->from.scale, ScaleMode::kBlock);
  EXPECT_EQ(c->config, cfg(144));
  // The block problem's own winner: "db".
  rows.push_back(row(blk, cfg(112), 3));
  c = choose(rows, blk);
  EXPECT_EQ(c->source, "db");
  EXPECT_EQ(c->config, cfg(112));
  EXPECT_EQ(c->from, blk);
  // block and block1d1d are different problems too.
  EXPECT_FALSE(choose({row(blk, cfg(112))}, with_scale(pt, ScaleMode::kBlock1d1d)).has_value());
}

TEST(ScaleModeChoice, TheRealRulesRefuseABlockK256TwoGroupWinnerForABlockProblem) {
  // legal_for_current_kernel applies R21: a BLOCK_K 256 config with two WGMMA groups (2g) stored for a block
  // problem (an older kernel's rules, a hand-edited DB) is skipped; BLOCK_K 256 with 1g is legal (two granule
  // buffers per k-block).
  const Problem blk = with_scale(Problem::dense(128, 7168, 2048), ScaleMode::kBlock);
  KernelConfig two = cfg(128, 256);
  two.mainloop = Mainloop::k2g;
  EXPECT_FALSE(legal_for_current_kernel(two, blk));
  EXPECT_TRUE(legal_for_current_kernel(two, Problem::dense(128, 7168, 2048)));
  EXPECT_TRUE(legal_for_current_kernel(cfg(128, 256), blk)) << cfg(128, 256).key();
  EXPECT_FALSE(choose({row(blk, two)}, blk, legal_for_current_kernel).has_value());
  EXPECT_EQ(choose({row(blk, two), row(blk, cfg(128), 2)}, blk, legal_for_current_kernel)->config, cfg(128));
}

TEST(ScaleModeChoice, DefaultConfigRunsEveryShippedBlockShape) {
  // With no tuning data the loader runs default_config; it must be legal for every mode (resolve() throws
  // kInternal otherwise).
  for (const char* file : {"deepseek-v3-block.txt", "deepseek-v3-channel.txt"})
    for (const ShapeEntry& e : load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/" + file))
      for (ScaleMode s : kModes) {
        const Problem p = with_scale(e.problem, s);
        const KernelConfig c = default_config(p);
        EXPECT_TRUE(legal_for_current_kernel(c, p)) << p.key() << " " << c.key() << ": " << config_rule_violation(c, p);
      }
}

TEST_F(ScaleModeDbTest, LoaderQueryReturnsOnlyTheProblemsMode) {
  TuningDb db((dir_ / "t.db").string());
  const DeviceScope s = db.upsert_device(h200());
  const Problem pt = Problem::dense(128, 7168, 2048);
  const Problem blk = with_scale(pt, ScaleMode::kBlock);
  db.put_trial(s, timed(pt, cfg(256, 256), 5.0));
  db.put_trial(s, timed(Problem::dense(4096, 7168, 2048), cfg(208), 50.0));
  const auto none = db.environment_winners(s.device_id, blk);
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(choose_stored_winner(none, blk, kHash, "", "cold-l2", legal_for_current_kernel).has_value());
  db.put_trial(s, timed(with_scale(Problem::dense(64, 7168, 2048), ScaleMode::kBlock), cfg(96), 7.0));
  const auto rows = db.environment_winners(s.device_id, blk);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].problem.scale, ScaleMode::kBlock);
  const auto c = choose_stored_winner(rows, blk, kHash, "", "cold-l2", legal_for_current_kernel);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->config, cfg(96));
  EXPECT_EQ(c->source, "nearest");
  // The per-tensor problem sees only its two per-tensor rows.
  for (const EnvironmentWinner& w : db.environment_winners(s.device_id, pt))
    EXPECT_EQ(w.problem.scale, ScaleMode::kPerTensor) << w.problem.key();
  EXPECT_EQ(db.environment_winners(s.device_id, pt).size(), 2u);
}

TEST(ScaleModeChoice, ExportedTableEntriesAreTakenPerMode) {
  const std::string k256 = cfg(256, 256).key(), k128 = cfg(128).key(), k64 = cfg(64).key();
  // Entry 0: a header exported before scale modes (scale nullptr: per-tensor); 1: per-tensor spelled out;
  // 2: block; 3: a mode this dgtune does not know (skipped).
  const TunedEntry entries[] = {
      {128, 7168, 2048, 2048, 2048, 7168, "e4m3", "e4m3", "promote", k256.c_str(), 5.0, "h", nullptr, nullptr},
      {64, 7168, 2048, 2048, 2048, 7168, "e4m3", "e4m3", "promote", k64.c_str(), 4.0, "h", "cold-l2-v1", "per-tensor"},
      {128, 7168, 2048, 2048, 2048, 7168, "e4m3", "e4m3", "promote", k128.c_str(), 9.0, "h", "cold-l2-v1", "block"},
      {128, 7168, 2048, 2048, 2048, 7168, "e4m3", "e4m3", "promote", k64.c_str(), 1.0, "h", "cold-l2-v1", "block2d"},
  };
  const TunedTable table{"hw", "NVIDIA H200", "h", "0.5.0", entries, 4};
  const Problem pt = Problem::dense(128, 7168, 2048);
  const auto pt_rows = table_winners(table, pt);
  ASSERT_EQ(pt_rows.size(), 2u);
  EXPECT_EQ(pt_rows[0].problem, pt);
  EXPECT_EQ(pt_rows[0].config_key, k256);
  EXPECT_EQ(pt_rows[1].problem.m, 64);
  const Problem blk = with_scale(pt, ScaleMode::kBlock);
  const auto blk_rows = table_winners(table, blk);
  ASSERT_EQ(blk_rows.size(), 1u);
  EXPECT_EQ(blk_rows[0].problem, blk);
  EXPECT_EQ(blk_rows[0].config_key, k128);
  EXPECT_EQ(choose_stored_winner(blk_rows, blk, "h", "", "cold-l2", legal_for_current_kernel)->config, cfg(128));
  EXPECT_TRUE(table_winners(table, with_scale(pt, ScaleMode::kBlock1d1d)).empty());
  EXPECT_TRUE(table_winners(table, with_scale(pt, ScaleMode::kChannel)).empty());
}

}  // namespace
}  // namespace dgt
