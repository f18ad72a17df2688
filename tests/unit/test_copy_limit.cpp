// The copy limit without a GPU: the launch plan (bytes moved = Problem::min_bytes() where the layout
// allows, grid sizing), the host mirror of the kernel, and the kernel in the NVRTC-compiled utility module.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "launch/copy_limit.hpp"
#include "problem/problem.hpp"

namespace dgt {
namespace {

TEST(CopyLimitPlan, DenseOperandsMoveExactlyMinBytesAsFlatRuns) {
  for (const Problem& p : {Problem::dense(4096, 4096, 4096), Problem::dense(1, 7168, 2048),
                           Problem::dense(64, 576, 7168), Problem::dense(8192, 576, 7168)}) {
    const CopyLimitPlan plan = plan_copy_limit(p, 132);
    EXPECT_EQ(double(plan.bytes_read + plan.bytes_written), p.min_bytes()) << p.label();
    EXPECT_EQ(plan.bytes_read, p.m * p.k + p.n * p.k) << p.label();
    EXPECT_EQ(plan.bytes_written, 2 * p.m * p.n) << p.label();
    // Dense: one run per operand, so the kernel never divides per word.
    EXPECT_EQ(plan.args.a.rows, 1u) << p.label();
    EXPECT_EQ(plan.args.b.rows, 1u) << p.label();
    EXPECT_EQ(plan.args.a.row_words, uint64_t(p.m * p.k / 16)) << p.label();
    EXPECT_EQ(plan.args.d_vector, 1u) << p.label();
    EXPECT_EQ(plan.args.d_rows, 1u) << p.label();
    EXPECT_EQ(plan.args.d_row_units, uint64_t(p.m * p.n * 2 / 16)) << p.label();
  }
}

TEST(CopyLimitPlan, GridIsTwoBlocksPerSmAtMostAndFourWordsPerThreadAtLeast) {
  const CopyLimitPlan big = plan_copy_limit(Problem::dense(4096, 4096, 4096), 132);
  EXPECT_EQ(big.block, 512u);
  EXPECT_EQ(big.grid, 264u);  // 2 x 132: the cap
  // 1 x 576 x 7168: A 448 words + B 258048 words = 258496 -> ceil(258496 / (512 x 4)) = 127 blocks.
  const CopyLimitPlan small = plan_copy_limit(Problem::dense(1, 576, 7168), 132);
  EXPECT_EQ(small.grid, 127u);
  // A tiny problem still gets one block.
  EXPECT_EQ(plan_copy_limit(Problem::dense(1, 16, 16), 132).grid, 1u);
  EXPECT_EQ(plan_copy_limit(Problem::dense(4096, 4096, 4096), 1).grid, 2u);
  EXPECT_THROW(plan_copy_limit(Problem::dense(16, 16, 16), 0), Error);
}

TEST(CopyLimitPlan, PaddedAndUnalignedLayoutsKeepRowsAndMaskTails) {
  Problem p = Problem::dense(3, 5, 20);  // K = 20: two words per row, 4 valid bytes in the second
  p.lda = 32;
  p.ldb = 48;
  p.ldd = 5;  // 10-byte D rows: not 16-byte aligned -> element stores, one run (ldd == N)
  const CopyLimitPlan plan = plan_copy_limit(p, 132);
  EXPECT_EQ(plan.args.a.rows, 3u);
  EXPECT_EQ(plan.args.a.row_words, 2u);
  EXPECT_EQ(plan.args.a.ld_words, 2u);
  EXPECT_EQ(plan.args.a.tail_bytes, 4u);
  EXPECT_EQ(plan.args.b.rows, 5u);
  EXPECT_EQ(plan.args.b.ld_words, 3u);
  EXPECT_EQ(plan.args.d_vector, 0u);
  EXPECT_EQ(plan.args.d_rows, 1u);
  EXPECT_EQ(plan.args.d_row_units, 15u);
  EXPECT_EQ(plan.bytes_read, (3 + 5) * 32);  // whole words: 12 padding bytes per row are loaded and masked
  EXPECT_EQ(plan.bytes_written, 30);
  // ldd = 16: 32-byte aligned rows, one 16-byte word per row (6 bytes of it padding), rows kept.
  p.ldd = 16;
  const CopyLimitPlan v = plan_copy_limit(p, 132);
  EXPECT_EQ(v.args.d_vector, 1u);
  EXPECT_EQ(v.args.d_rows, 3u);
  EXPECT_EQ(v.args.d_row_units, 1u);
  EXPECT_EQ(v.args.d_ld_bytes, 32u);
}

TEST(CopyLimitReference, FoldsEveryValidByteOnceAndIgnoresPadding) {
  // One thread (tiny problem, grid 1 x 512: 512 threads, words 0..N-1 go to threads 0..N-1).
  Problem p = Problem::dense(1, 1, 20);
  p.lda = 32;
  p.ldb = 32;
  p.ldd = 8;  // 16-byte D row: one vector word
  const CopyLimitPlan plan = plan_copy_limit(p, 132);
  ASSERT_EQ(plan.threads(), 512u);
  std::vector<uint8_t> a(32, 0), b(32, 0), d(16, 0xFF);
  for (int i = 0; i < 20; ++i) a[size_t(i)] = uint8_t(i + 1), b[size_t(i)] = uint8_t(0x10 * (i % 3));
  for (int i = 20; i < 32; ++i) a[size_t(i)] = b[size_t(i)] = 0x7F;  // padding NaN: must not count
  copy_limit_reference(plan, a, b, d);
  // Words: A0 (thread 0), A1 (thread 1), B0 (thread 2), B1 (thread 3); D word 0 = thread 0's acc ^ (0, 0, magic, 0).
  uint32_t got[4];
  std::memcpy(got, d.data(), 16);
  uint32_t a0[4];
  std::memcpy(a0, a.data(), 16);
  EXPECT_EQ(got[0], a0[0]);
  EXPECT_EQ(got[1], a0[1]);
  EXPECT_EQ(got[2], a0[2] ^ 0x9e3779b9u);
  EXPECT_EQ(got[3], a0[3]);

  // With a single thread (sm_count 1 would still give 512 threads, so fold a grid by hand): all four
  // words meet in thread 0 when the plan has one thread.
  CopyLimitPlan one = plan;
  one.block = 1;
  one.grid = 1;
  std::vector<uint8_t> d1(16, 0);
  copy_limit_reference(one, a, b, d1);
  uint8_t expect[16] = {};
  for (int i = 0; i < 20; ++i) expect[i % 16] ^= a[size_t(i)] ^ b[size_t(i)];
  uint32_t e[4];
  std::memcpy(e, expect, 16);
  std::memcpy(got, d1.data(), 16);
  EXPECT_EQ(got[0], e[0]);
  EXPECT_EQ(got[1], e[1]);
  EXPECT_EQ(got[2], e[2] ^ 0x9e3779b9u);
  EXPECT_EQ(got[3], e[3]);
  std::vector<uint8_t> small(8);
  EXPECT_THROW(copy_limit_reference(plan, a, b, small), Error);
}

TEST(CopyLimitModule, UtilityModuleCompilesWithTheCopyKernel) {
  const jit::GeneratedKernel g = jit::generate_util_module();
  const jit::CompiledKernel k = jit::compile(g.source, g.program_name, g.name_expression);
  // The cubin's symbol table names the extern "C" kernel UtilKernels loads.
  const std::string cubin(k.cubin.begin(), k.cubin.end());
  EXPECT_NE(cubin.find("dgt_copy_limit"), std::string::npos);
  EXPECT_NE(cubin.find("dgt_flush_read"), std::string::npos);
}

}  // namespace
}  // namespace dgt
