// `dgtune sweep` on grouped (MoE) shapes-file lines, in process (TuningSession::sweep, the path `--in-process` takes;
// the worker path runs the same DeviceBench in a worker process): every candidate verified per group and timed, the
// per-group cuBLASLt loop stored as the baseline, the winner under the grouped key, a second sweep resumes, and
// dgt::GroupedGemm finds the winner through its run-time key.
// Small N and K: a few grouped kernels compile (NVRTC in the bench, through the cubin cache).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "dgtune/grouped_gemm.hpp"
#include "eval/bundle_export.hpp"
#include "harness.hpp"
#include "problem/shapes_file.hpp"
#include "tune/session.hpp"

namespace dgt::test {
namespace {

TEST(Grouped, SweepTunesGroupedLinesUnderTheirKeys) {
  char tmpl[] = "/tmp/dgtune-grouped-sweep-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const auto shapes = parse_shapes_with_grouped(
      "kind=masked groups=4 masked_m=200,0,256,17 m_max=256 expected_m=128 512 1024 scale=block name=masked\n"
      "kind=contiguous groups=4 m_per_group=300,0,128,1 512 1024 name=contiguous\n",
      "grouped.txt");
  for (const char* protocol : {"cold-l2", "hot-graph"}) {
    SessionOptions so;
    so.db_path = dir + "/tuning-" + protocol + ".db";
    so.protocol.max_seconds = 0.2;
    so.kind = parse_protocol_kind(protocol);
    SweepOptions opts;
    opts.strategy = Strategy::kModel;
    opts.top_k = 3;
    TuningSession session(so);
    const auto out = session.sweep(shapes, opts);
    ASSERT_EQ(out.size(), 2u);
    for (const ShapeOutcome& o : out) {
      // The model's top three, plus the default rule's configs the cut left out (space/grouped_defaults.hpp).
      EXPECT_GE(o.measured_now, 3) << o.entry.where();
      EXPECT_EQ(o.measured_now, o.candidates) << o.entry.where();
      EXPECT_TRUE(o.complete) << o.entry.where();
      ASSERT_TRUE(o.winner) << o.entry.where();
      EXPECT_EQ(o.winner->trial.problem, o.entry.grouped->keyed());
      EXPECT_EQ(o.winner->trial.status, TrialStatus::kOk) << o.winner->trial.error;
      ASSERT_TRUE(o.winner->trial.verification);
      EXPECT_TRUE(o.winner->trial.verification->ok);
      EXPECT_EQ(o.winner->trial.verification->pad_touched, 0);
      // TFLOPS over the real rows, not the padded view.
      EXPECT_NEAR(o.winner->trial.tflops,
                  o.entry.grouped->flops() / (o.winner->trial.timing->median_us * 1e-6) / 1e12, 1e-6);
      ASSERT_TRUE(o.winner->cublas_default) << "the per-group loop baseline";
      EXPECT_EQ(o.winner->cublas_default->status, TrialStatus::kOk) << o.winner->cublas_default->error;
      EXPECT_NE(o.winner->cublas_default->algo.find("per-group loop"), std::string::npos);
      ASSERT_TRUE(o.winner->cublas_tuned);
      EXPECT_EQ(o.winner->cublas_tuned->status, TrialStatus::kUnsupported);
      for (const auto& [status, n] : o.winner->status_counts) EXPECT_EQ(status, "ok") << o.entry.where();
    }
    const auto again = session.sweep(shapes, opts);
    for (const ShapeOutcome& o : again) {
      EXPECT_EQ(o.measured_now, 0);
      EXPECT_EQ(o.already_stored, o.candidates);
    }
    // The loader reads the winners back (dgt::GroupedGemm, run-time keys: the counts are not part of them).
    ASSERT_EQ(out[0].entry.grouped->kind, GroupKind::kMasked);
    const std::string masked_winner = out[0].winner->trial.config.key();
    GroupedGemmProblem key;
    key.layout = GroupedLayout::kMasked;
    key.groups = 4;
    key.m = 256;
    key.expected_m = 128;
    key.n = 512;
    key.k = 1024;
    GroupedGemmOptions go;
    go.db_path = so.db_path;
    go.protocol = protocol;
    const GroupedGemm tuned(key, go);
    EXPECT_EQ(tuned.choice().source, "db");
    EXPECT_EQ(tuned.choice().config_key, masked_winner);
    EXPECT_EQ(tuned.choice().tuned_key, out[0].entry.grouped->keyed().key());
    key.expected_m = 40;  // below the one tuned point: its winner, the nearest
    const GroupedGemm nearest(key, go);
    EXPECT_EQ(nearest.choice().source, "nearest");
    EXPECT_EQ(nearest.choice().config_key, masked_winner);
    go.protocol = std::string(protocol) == "cold-l2" ? "hot-graph" : "cold-l2";  // this DB holds one kind only
    EXPECT_EQ(GroupedGemm(key, go).choice().source, "nearest-other-protocol");
    go.db_path = dir + "/missing.db";  // one warning, the default rule
    EXPECT_EQ(GroupedGemm(key, go).choice().source, "default");
    if (std::string(protocol) != "cold-l2") continue;
    // The kernel bundle of this DB serves the tuned kernel without NVRTC or the cubin cache (an empty one).
    BundleExportOptions bo;
    bo.db_path = so.db_path;
    bo.out_dir = dir + "/bundle";
    bo.cache_dir = dir + "/export-cache";
    const BundleExportReport br = export_bundle(bo);
    EXPECT_EQ(br.grouped_families, 2u);
    EXPECT_GE(br.grouped_specs, 2u);
    go.db_path = so.db_path;
    go.protocol = protocol;
    go.bundle = bo.out_dir;
    go.cache_dir = dir + "/empty-cache";
    key.expected_m = 128;
    const GroupedGemm bundled(key, go);
    EXPECT_EQ(bundled.choice().config_key, masked_winner);
    EXPECT_EQ(bundled.kernel_origin(), "bundle");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dgt::test
