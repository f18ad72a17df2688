// The sweep's finals on the GPU (tune/finals.hpp, DeviceBench::finals): a model sweep of one shape stores its best
// candidates and cuBLASLt's algorithms timed together under cold-l2-v2, every output checked after the rounds, and the
// loader then runs the finals' winner with the times of those rounds.
#include "harness.hpp"

#include <stdlib.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "db/tuning_db.hpp"
#include "dgtune/gemm.hpp"
#include "problem/shapes_file.hpp"
#include "tune/finals.hpp"
#include "tune/session.hpp"

namespace dgt::test {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dgtune-finals-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(Finals, ModelSweepStoresVerifiedRoundsAndTheLoaderRunsTheirWinner) {
  Gpu& gpu = Gpu::get();
  TempDir dir;
  const std::string db_path = dir.path + "/tuning.db";
  const auto shapes = parse_shapes("1024 4096 4096\n", "finals.txt");
  const Problem& p = shapes.at(0).problem;
  std::vector<ShapeOutcome> out;
  DeviceScope scope;
  {
    SessionOptions so;
    so.db_path = db_path;
    so.protocol.max_seconds = 0.2;
    TuningSession session(so);
    SweepOptions o;
    o.strategy = Strategy::kModel;
    o.top_k = 4;
    o.finals = 3;
    o.finals_rounds = 6;
    out = session.sweep(shapes, o);
    scope = session.scope();
  }
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].complete);
  ASSERT_GE(out[0].finalists, 1);
  EXPECT_EQ(out[0].protocol, "cold-l2-v2");

  TuningDbReader db(db_path);
  const auto finals = db.trials(scope, p, "cold-l2-v2");
  ASSERT_EQ(static_cast<int>(finals.size()), out[0].finalists);
  for (const TrialRecord& t : finals) {
    ASSERT_EQ(t.status, TrialStatus::kOk) << t.config.key() << ": " << t.error;
    ASSERT_TRUE(t.verification && t.verification->ok) << t.config.key();
    ASSERT_TRUE(t.timing);
    EXPECT_EQ(t.timing->samples, 6) << t.config.key();  // one sample per round
    EXPECT_EQ(nlohmann::json::parse(t.protocol).at("rounds").get<int>(), 6);
    EXPECT_GT(t.timing->sm_clock_mhz, 0);
  }
  // cuBLASLt-tuned raced with its stored algorithm: the same bytes under both protocols.
  const auto v1 = db.baseline(scope, p, kProviderCublasTuned, kSweepTimerProtocol);
  const auto v2 = db.baseline(scope, p, kProviderCublasTuned, "cold-l2-v2");
  ASSERT_TRUE(v1 && v2);
  ASSERT_EQ(v1->status, TrialStatus::kOk) << v1->error;
  ASSERT_EQ(v2->status, TrialStatus::kOk) << v2->error;
  EXPECT_EQ(v2->algo_data, v1->algo_data);
  EXPECT_TRUE(v2->verification && v2->verification->ok);
  EXPECT_EQ(v2->timing->samples, 6);

  // The loader runs the finals' winner at the time of its rounds, and its output is right.
  const auto w = db.winner(scope, p, "cold-l2-v2");
  ASSERT_TRUE(w);
  GemmOptions go;
  go.db_path = db_path;
  go.cublaslt = false;  // the kernel, whichever side won the rounds
  Gemm gemm(go);
  const GemmChoice c = gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd);
  EXPECT_EQ(c.source, "db");
  EXPECT_EQ(c.config_key, w->trial.config.key());
  EXPECT_DOUBLE_EQ(c.tuned_us, w->trial.timing->median_us);
  ProblemData data(p, *gpu.util, 77, gpu.stream);
  const auto ops = data.operands();
  data.poison_output(gpu.stream);
  gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream);
  EXPECT_TRUE(data.verify(gpu.stream).ok);
}

}  // namespace
}  // namespace dgt::test
