// `dgtune sweep --protocol` on the GPU: one tiny shape swept on two candidates under cold-l2 and
// under hot-graph into one DB. Both protocols' trials, baselines and winners are stored side by side and
// verified (hot-graph: again after a graph replay), a second hot-graph sweep measures nothing, and the loader
// runs each protocol's winner when asked for that protocol.
#include "harness.hpp"

#include <stdlib.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "db/tuning_db.hpp"
#include "dgtune/gemm.hpp"
#include "tune/session.hpp"

namespace dgt::test {
namespace {

TEST(Protocol, HotGraphSweepStoresItsOwnWinnersBesideColdL2) {
  char tmpl[] = "/tmp/dgtune-protocol-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db_path = dir + "/tuning.db";
  ShapeEntry shape;
  shape.problem = Problem::dense(256, 512, 1040);  // K tail; cuBLASLt supports it
  shape.name = "k-tail";
  SweepOptions sweep;
  sweep.max_candidates = 2;  // the model's best two: a 2-candidate space

  DeviceScope scope;
  for (const ProtocolKind kind : {ProtocolKind::kColdL2, ProtocolKind::kHotGraph}) {
    SessionOptions so;
    so.db_path = db_path;
    so.protocol.max_seconds = 0.2;
    so.kind = kind;
    so.hot_graph_rounds = 5;
    TuningSession session(so);
    scope = session.scope();
    const auto out = session.sweep({shape}, sweep);
    ASSERT_EQ(out.size(), 1u);
    const std::string name = kind == ProtocolKind::kColdL2 ? "cold-l2-v1" : "hot-graph-v1";
    EXPECT_EQ(out[0].protocol, name);
    EXPECT_EQ(out[0].candidates, 2);
    EXPECT_EQ(out[0].measured_now, 2) << name << ": the other protocol's trials must not be skipped";
    EXPECT_EQ(out[0].already_stored, 0);
    EXPECT_TRUE(out[0].complete);
    ASSERT_TRUE(out[0].winner.has_value()) << name;
    const TrialRecord& w = out[0].winner->trial;
    ASSERT_TRUE(w.verification && w.verification->ok) << name;
    ASSERT_TRUE(w.timing.has_value());
    EXPECT_GT(w.timing->median_us, 0);
    EXPECT_EQ(nlohmann::json::parse(w.protocol)["name"], name);
    ASSERT_TRUE(out[0].winner->cublas_tuned.has_value());
    EXPECT_EQ(out[0].winner->cublas_tuned->status, TrialStatus::kOk) << out[0].winner->cublas_tuned->error;
    EXPECT_EQ(nlohmann::json::parse(out[0].winner->cublas_tuned->protocol)["name"], name);
    if (kind == ProtocolKind::kHotGraph) {
      EXPECT_EQ(w.timing->samples, 5);
      EXPECT_EQ(nlohmann::json::parse(w.protocol)["rounds"], 5);
      // Resume is per protocol: the same hot-graph sweep again measures nothing.
      const auto again = session.sweep({shape}, sweep);
      EXPECT_EQ(again[0].measured_now, 0);
      EXPECT_EQ(again[0].already_stored, 2);
    }
  }

  TuningDbReader db(db_path);
  const Problem& p = shape.problem;
  for (const char* name : {"cold-l2-v1", "hot-graph-v1"}) {
    const auto trials = db.trials(scope, p, name);
    ASSERT_EQ(trials.size(), 2u) << name;
    for (const TrialRecord& t : trials) {
      EXPECT_EQ(t.status, TrialStatus::kOk) << name << " " << t.config.key() << ": " << t.error;
      EXPECT_TRUE(t.verification && t.verification->ok) << name << " " << t.config.key();
    }
    EXPECT_TRUE(db.winner(scope, p, name).has_value()) << name;
    EXPECT_TRUE(db.sweep_state(scope, p, sweep.space.name, sweep.strategy_label(), name)->complete) << name;
  }
  EXPECT_EQ(db.stored_config_keys(scope, p, "cold-l2-v1"), db.stored_config_keys(scope, p, "hot-graph-v1"));

  // The loader takes each protocol's winner when asked for it.
  for (const char* kind : {"cold-l2", "hot-graph"}) {
    GemmOptions o;
    o.db_path = db_path;
    o.protocol = kind;
    Gemm gemm(o);
    const GemmChoice c = gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd);
    const std::string name = std::string(kind) + "-v1";
    EXPECT_EQ(c.source, "db") << kind;
    EXPECT_EQ(c.protocol, name);
    EXPECT_EQ(c.config_key, db.winner(scope, p, name)->trial.config.key()) << kind;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dgt::test
