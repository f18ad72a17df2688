// The copy limit on the GPU (ctest gpu_CopyLimit): the kernel writes exactly what the host mirror
// computes (so every byte of A and B was read and nothing outside D's rows was written), it streams at
// HBM speed on a ~1 GiB problem, and as compare's side it is faster than a compute-bound GEMM.
#include "harness.hpp"

#include <spdlog/spdlog.h>

#include <cstring>
#include <vector>

#include "bench/copy_limit_side.hpp"
#include "bench/device_sides.hpp"
#include "eval/shape_compare.hpp"

namespace dgt::test {
namespace {

std::vector<uint8_t> to_host(const void* p, size_t bytes) {
  std::vector<uint8_t> h(bytes);
  DGT_CHECK_CUDA(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost));
  return h;
}

Problem with_ld(Problem p, int64_t lda, int64_t ldb, int64_t ldd) {
  p.lda = lda, p.ldb = ldb, p.ldd = ldd;
  return p;
}

TEST(CopyLimit, OutputMatchesTheHostMirror) {
  Gpu& gpu = Gpu::get();
  // Dense (flat runs); decode-shaped (most threads own no D word); K not a multiple of 16 (masked row
  // tails, padded lda/ldb); D rows not 16-byte aligned (element stores); padded, aligned D rows.
  const std::vector<Problem> problems = {Problem::dense(256, 256, 256), Problem::dense(1, 576, 7168),
                                         with_ld(Problem::dense(37, 100, 100), 112, 128, 100),
                                         with_ld(Problem::dense(9, 24, 48), 48, 64, 27),
                                         with_ld(Problem::dense(70, 100, 64), 64, 64, 112)};
  for (const Problem& p : problems) {
    SCOPED_TRACE(p.label());
    ProblemData data(p, *gpu.util, 11, gpu.stream);
    const jit::GemmOperands ops = data.operands();
    CopyLimitSide copy(*gpu.util, p, gpu.device.sm_count, ops);
    const size_t d_bytes = size_t((p.m + ProblemData::kGuardRows) * p.ldd * 2);
    data.poison_output(gpu.stream);
    copy.side().launch(gpu.stream);
    DGT_CHECK_CUDA(cudaGetLastError());
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    const std::vector<uint8_t> a = to_host(ops.a, size_t(p.m * p.lda)), b = to_host(ops.b, size_t(p.n * p.ldb));
    const std::vector<uint8_t> d = to_host(ops.d, d_bytes);
    std::vector<uint8_t> expect(d_bytes, 0xFF);  // the BF16 poison, byte by byte
    copy_limit_reference(copy.plan(), a, b, expect);
    size_t differ = 0, first = d_bytes;
    for (size_t i = 0; i < d_bytes; ++i)
      if (d[i] != expect[i]) {
        ++differ;
        first = std::min(first, i);
      }
    EXPECT_EQ(differ, 0u) << "first differing byte " << first << " of " << d_bytes;
    // The fold saw real data: the written part of D is not still the poison.
    EXPECT_NE(std::memcmp(d.data(), std::vector<uint8_t>(16, 0xFF).data(), 16), 0);
  }
}

TEST(CopyLimit, StreamsAtHbmSpeedOnAGibibyteProblem) {
  Gpu& gpu = Gpu::get();
  // 16384 x 16384 x 16384: A and B 256 MiB each, D 512 MiB, 1 GiB in all (far beyond L2). The buffers
  // are made here, not by ProblemData (its CUDA-core reference GEMM would take minutes at this size).
  const Problem p = Problem::dense(16384, 16384, 16384);
  DeviceBuffer a(size_t(p.m * p.k)), b(size_t(p.n * p.k)), d(size_t(p.m * p.n * 2));
  gpu.util->fill_fp8(a.get(), p.m, p.k, p.k, 1, p.a, gpu.stream);
  gpu.util->fill_fp8(b.get(), p.n, p.k, p.k, 2, p.b, gpu.stream);
  const jit::GemmOperands ops{a.get(), b.get(), d.get(), nullptr, nullptr};
  CopyLimitSide copy(*gpu.util, p, gpu.device.sm_count, ops);
  EXPECT_EQ(double(copy.plan().bytes_read + copy.plan().bytes_written), p.min_bytes());
  for (MeasureProtocol protocol : {MeasureProtocol::of(ProtocolKind::kColdL2), MeasureProtocol::of(ProtocolKind::kHotGraph)}) {
    protocol.rounds = 5;
    const RoundsResult r = measure_sides(*gpu.util, gpu.device, protocol, gpu.stream, {copy.side()});
    ASSERT_EQ(r.sides.size(), 1u);
    const double us = r.sides[0].all.median;
    const double tbps = p.min_bytes() / (us * 1e-6) / 1e12;
    spdlog::info("copy limit {} {}: {:.1f} us, {:.2f} TB/s", protocol.name(), p.label(), us, tbps);
    EXPECT_GT(us, 0);
    // H200 HBM3e: 4.8 TB/s peak; a streaming kernel reaches ~4 TB/s. 1 TB/s would mean a broken kernel
    // (too few bytes in flight), and more than the peak would mean it skipped bytes.
    EXPECT_GT(tbps, 1.0) << protocol.name();
    EXPECT_LT(tbps, 5.0) << protocol.name();
  }
}

TEST(CopyLimit, CompareSideIsFasterThanAComputeBoundGemm) {
  // 4096^3: 64 MiB to move (~15 us at 4 TB/s) against 137 GFLOP (~100 us at 1.4 PFLOPS): the copy must
  // be well below the GEMM under both protocols; the GEMM sides still verify after the rounds.
  for (ProtocolKind kind : {ProtocolKind::kColdL2, ProtocolKind::kHotGraph}) {
    ShapeCompareOptions so;
    so.db_path = "/nonexistent/dgtune-copy-limit-test.db";  // default config
    so.protocol = MeasureProtocol::of(kind);
    so.protocol.rounds = 5;
    so.copy_limit = true;
    ShapeComparer cmp(so);
    ShapeEntry e;
    e.problem = Problem::dense(4096, 4096, 4096);
    e.name = "square";
    const ShapeMeasurement rec = cmp.measure(e);
    ASSERT_TRUE(rec.ok()) << rec.status << ": " << rec.error;
    ASSERT_TRUE(rec.rounds.has_value());
    const RoundsResult& r = *rec.rounds;
    const int ours = r.find("dgtune"), copy = r.find(kSideCopyLimit);
    ASSERT_GE(ours, 0);
    ASSERT_EQ(copy, int(r.sides.size()) - 1) << "the copy side comes last";
    EXPECT_EQ(r.sides[size_t(copy)].samples, so.protocol.rounds);
    EXPECT_FALSE(r.sides[size_t(copy)].check.has_value()) << "the copy's output is not a GEMM result";
    ASSERT_TRUE(r.sides[size_t(ours)].check.has_value());
    EXPECT_TRUE(r.sides[size_t(ours)].check->ok) << describe(*r.sides[size_t(ours)].check);
    const double copy_us = r.sides[size_t(copy)].all.median, gemm_us = r.sides[size_t(ours)].all.median;
    spdlog::info("{} 4096^3: copy {:.1f} us, dgtune {:.1f} us, copy_fraction {:.3f}", to_string(kind), copy_us,
                 gemm_us, copy_us / gemm_us);
    EXPECT_GT(copy_us, 0);
    EXPECT_LT(copy_us, 0.5 * gemm_us);
  }
}

}  // namespace
}  // namespace dgt::test
