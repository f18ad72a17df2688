// The copy-limit kernel (kernels/util/copy_limit.cuh) run on the host, thread by thread, with shims for
// the CUDA built-ins, against the host mirror copy_limit_reference (launch/copy_limit.hpp): the two were
// written separately, so an index, mask or layout slip in either shows here without a GPU (tests/gpu
// CopyLimit checks the same on the device). The threads of the kernel never communicate, so running them
// one after another is exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "launch/copy_limit.hpp"

// ---- host shims for the device code, defined before including it ----
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
namespace {
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
Dim3 blockIdx, blockDim, gridDim, threadIdx;
}  // namespace
struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline uint4 __ldg(const uint4* p) { return *p; }
inline unsigned long long __cvta_generic_to_shared(const void* p) { return reinterpret_cast<unsigned long long>(p); }
#include "util/copy_limit.cuh"  // kernels/ is on this file's include path (tests/CMakeLists.txt)

namespace dgt {
namespace {

static_assert(sizeof(util::CopyLimitArgs) == sizeof(CopyLimitArgs), "host and device argument layouts differ");

/// Runs every thread of `plan`'s grid on the host.
void run_on_host(const CopyLimitPlan& plan, const void* a, const void* b, void* d, uint32_t* sink) {
  CopyLimitArgs host = plan.args;
  host.a.base = a, host.b.base = b, host.d = d, host.sink = sink;
  util::CopyLimitArgs dev;
  std::memcpy(&dev, &host, sizeof dev);  // what cuLaunchKernel copies into the parameter space
  gridDim.x = plan.grid;
  blockDim.x = plan.block;
  for (unsigned bx = 0; bx < plan.grid; ++bx)
    for (unsigned tx = 0; tx < plan.block; ++tx) {
      blockIdx.x = bx, threadIdx.x = tx;
      dgt_copy_limit(dev);
    }
}

Problem with_ld(Problem p, int64_t lda, int64_t ldb, int64_t ldd) {
  p.lda = lda, p.ldb = ldb, p.ldd = ldd;
  return p;
}

TEST(CopyLimitKernelOnHost, WritesWhatTheMirrorComputes) {
  std::mt19937_64 rng(7);
  // The GPU test's layouts: dense, decode-shaped, masked K tails, element-wise D, padded vector D;
  // plus a grid too small for the problem (sm_count 1: many words per thread, the 4-load batches and
  // the tail of up to three).
  struct Case {
    Problem p;
    int sms;
  };
  const std::vector<Case> cases = {{Problem::dense(256, 256, 256), 132},
                                   {Problem::dense(1, 576, 7168), 132},
                                   {with_ld(Problem::dense(37, 100, 100), 112, 128, 100), 132},
                                   {with_ld(Problem::dense(9, 24, 48), 48, 64, 27), 132},
                                   {with_ld(Problem::dense(70, 100, 64), 64, 64, 112), 132},
                                   {with_ld(Problem::dense(300, 200, 90), 96, 112, 200), 1},
                                   {Problem::dense(512, 384, 256), 1}};
  for (const Case& c : cases) {
    const Problem& p = c.p;
    SCOPED_TRACE(p.label() + " sms " + std::to_string(c.sms));
    const CopyLimitPlan plan = plan_copy_limit(p, c.sms);
    std::vector<uint8_t> a(size_t(p.m * p.lda)), b(size_t(p.n * p.ldb));
    for (auto& x : a) x = uint8_t(rng());
    for (auto& x : b) x = uint8_t(rng());
    const size_t d_bytes = size_t((p.m + 8) * p.ldd * 2);
    std::vector<uint8_t> d(d_bytes, 0xFF), expect(d_bytes, 0xFF);
    // 16-byte aligned copies, as cudaMalloc gives (the kernel loads and stores uint4).
    std::vector<uint4> a16((a.size() + 15) / 16), b16((b.size() + 15) / 16), d16((d_bytes + 15) / 16);
    std::memcpy(a16.data(), a.data(), a.size());
    std::memcpy(b16.data(), b.data(), b.size());
    std::memcpy(d16.data(), d.data(), d_bytes);
    uint32_t sink = 0;
    run_on_host(plan, a16.data(), b16.data(), d16.data(), &sink);
    std::memcpy(d.data(), d16.data(), d_bytes);
    copy_limit_reference(plan, a, b, expect);
    size_t differ = 0;
    for (size_t i = 0; i < d_bytes; ++i) differ += d[i] != expect[i];
    EXPECT_EQ(differ, 0u);
    EXPECT_EQ(sink, 0u);  // the magic accumulator never comes up with random data
  }
}

TEST(CopyLimitKernelOnHost, EveryValidByteChangesTheOutputAndPaddingNone) {
  // One thread's worth (grid 1, and the whole fold lands in D word 0 when block = 1): flipping a byte of
  // A or B inside the matrix changes D; flipping a padding byte does not.
  Problem p = with_ld(Problem::dense(3, 2, 20), 32, 48, 8);
  CopyLimitPlan plan = plan_copy_limit(p, 132);
  plan.grid = 1;
  plan.block = 1;
  auto run = [&](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    std::vector<uint4> a16(a.size() / 16), b16(b.size() / 16), d16(size_t(p.m * p.ldd * 2 / 16));
    std::memcpy(a16.data(), a.data(), a.size());
    std::memcpy(b16.data(), b.data(), b.size());
    uint32_t sink = 0;
    run_on_host(plan, a16.data(), b16.data(), d16.data(), &sink);
    std::vector<uint8_t> d(d16.size() * 16);
    std::memcpy(d.data(), d16.data(), d.size());
    return d;
  };
  std::vector<uint8_t> a(size_t(p.m * p.lda), 0x11), b(size_t(p.n * p.ldb), 0x22);
  const std::vector<uint8_t> base = run(a, b);
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t col = 0; col < p.lda; ++col) {
      std::vector<uint8_t> a2 = a;
      a2[size_t(r * p.lda + col)] ^= 0x40;
      EXPECT_EQ(run(a2, b) != base, col < p.k) << "A row " << r << " byte " << col;
    }
  for (int64_t r = 0; r < p.n; ++r)
    for (int64_t col = 0; col < p.ldb; ++col) {
      std::vector<uint8_t> b2 = b;
      b2[size_t(r * p.ldb + col)] ^= 0x40;
      EXPECT_EQ(run(a, b2) != base, col < p.k) << "B row " << r << " byte " << col;
    }
}

}  // namespace
}  // namespace dgt
