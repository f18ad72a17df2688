// A D whose leading dimension is larger than N (a column slice of a wider buffer, as serving stacks write
// outputs side by side): no epilogue may write D's padding columns [N, ldd) or the guard rows after M. A TMA
// store writes whole 16-byte units of a row, so a D tensor map as wide as N wrote columns up to the next
// 16-byte boundary whenever N x bytes(D) is not a multiple of 16 (found on the H200 with e4m3 D: every
// TMA-store candidate of 72x72x128 ldd=80 failed with "writes outside D 576"). The check is the
// verification's: D, its padding and 8 guard rows are poisoned with 0xFF before the launch and every byte
// outside the M x N window must still hold it. A and B carry NaN in their row padding (lda, ldb > K) and every
// scale float that is not a real scale is NaN, so a kernel that reads past K or past a scale array fails too.
#include <dgtune/gemm.hpp>

#include <cstdio>
#include <map>
#include <tuple>

#include "core/int_math.hpp"
#include "harness.hpp"
#include "space/resource_model.hpp"

namespace dgt::test {
namespace {

/// Configs with both epilogues, BLOCK_N from 16 to 256 (N is rarely a multiple), one and two consumer
/// warpgroups, 1g/2g/2o, split-K through the workspace and inside a cluster, multicast clusters; promote mode.
const char* kPromoteKeys[] = {
    "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",   "64x16x128_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",
    "128x256x128_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",   "64x48x128_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",
    "128x112x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",   "128x96x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1",
    "64x64x128_s6_wg1_sw128_c1x1_rm8_tma_sk2_sm0_1g_p1",     "64x32x128_s4_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1",
    "128x128x128_s5_wg2_sw128_c2x1_rm4_tma_sk1_sm0_2g_p1",   "128x64x128_s5_wg2_sw128_c1x2_rm4_tma_sk1_sm0_2g_p1",
    "128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1", "64x40x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1",
    "64x64x128_s6_wg1_sw128_c1x1_rm8_direct_sk3_sm0_2g_p1"};
/// Channel and block scales (their scale arrays' padding and slack are NaN): a TMA-store and a direct config, a
/// split and a cluster.
const char* kScaledKeys[] = {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
                             "64x48x128_s6_wg1_sw128_c1x1_rm8_tma_sk2_sm0_1g_p1",
                             "128x64x128_s5_wg2_sw128_c2x1_rm4_tma_sk1_sm0_1g_p1",
                             "64x40x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1"};
/// Fast accumulation: ping-pong with whole-tile staging, with the ring of two column bands (BLOCK_N 176 and 96),
/// in a multicast cluster; and 1g promoting every 16 k-blocks.
const char* kFastKeys[] = {"128x64x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                           "128x176x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                           "128x96x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                           "128x64x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_pp_p16",
                           "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"};

/// The leading dimensions of D tried for N: N itself where D's rows are then 16-byte multiples (the TMA rule
/// for any stored row; the direct epilogue takes any ldd), the smallest ldd > N whose rows are, and
/// round_up(N, 128).
std::vector<int64_t> ldds_for(int64_t n, int bytes) {
  std::vector<int64_t> out;
  if (n * bytes % 16 == 0) out.push_back(n);
  int64_t next = n + 1;
  while (next * bytes % 16 != 0) ++next;
  out.push_back(next);
  const int64_t r = round_up(n, int64_t(128));
  if (r != next && r != n) out.push_back(r);
  return out;
}

struct Counts {
  int runs = 0, tma_runs = 0, tma_unaligned_n = 0;  // tma_unaligned_n: TMA-store runs with N x bytes % 16 != 0
};

/// One problem and the configs to run on it.
struct Case {
  Problem p;
  std::vector<KernelConfig> configs;
};

/// The configs of `keys` that can run p (resource rules, P3, P8, P9).
Case make_case(const Problem& p, const char* const* keys, size_t count) {
  Case c{p, {}};
  for (size_t i = 0; i < count; ++i) {
    const KernelConfig k = KernelConfig::parse_key(keys[i]);
    if (evaluate_resources(KernelSpec::of(k, p)).ok() && problem_fit(k, p).empty()) c.configs.push_back(k);
  }
  return c;
}

/// Compiles every kernel of `cases` on all cores, then runs each config on its problem (scale padding poisoned).
void run_cases(const std::vector<Case>& cases, std::map<DType, Counts>& counts, uint64_t seed) {
  Gpu& gpu = Gpu::get();
  std::vector<KernelSpec> specs;
  for (const Case& c : cases)
    for (const KernelConfig& k : c.configs) specs.push_back(KernelSpec::of(k, c.p));
  gpu.precompile(specs);
  for (const Case& c : cases) {
    ProblemData data(c.p, *gpu.util, seed++, gpu.stream);
    data.poison_scale_padding(gpu.stream);
    for (const KernelConfig& k : c.configs) {
      const Verification v = gpu.run(data, k);
      EXPECT_TRUE(v.ok) << c.p.label() << " " << KernelSpec::of(k, c.p).key() << ": " << describe(v);
      Counts& n = counts[c.p.d];
      ++n.runs;
      if (k.epilogue == Epilogue::kTma) {
        ++n.tma_runs;
        if (c.p.n * dtype_bytes(c.p.d) % 16 != 0) ++n.tma_unaligned_n;
      }
    }
  }
}

Problem padded(int64_t m, int64_t n, int64_t k, DType d, int64_t ldd, ScaleMode scale, Accum accum) {
  Problem p = Problem::dense(m, n, k);
  p.d = d, p.ldd = ldd, p.scale = scale, p.accum = accum;
  p.lda = p.ldb = round_up(k, int64_t(16)) + 16;  // A's and B's rows padded (NaN) past K
  return p;
}

// Every output type x N in {17, 72, 73, 127, 200, 1000} x the ldd of ldds_for x the configs above. M = 129 and
// K = 200 have tails (A's and B's rows padded with NaN to 224). Promote mode per-tensor runs every promote config;
// channel and block scales alternate over the cases with kScaledKeys; fast accumulation runs kFastKeys.
TEST(PaddedD, NoEpilogueWritesPastNOrReadsPadding) {
  std::vector<Case> cases;
  int alt = 0;
  for (DType d : {DType::kE4M3, DType::kBF16, DType::kF32})
    for (int64_t n : {17, 72, 73, 127, 200, 1000})
      for (int64_t ldd : ldds_for(n, dtype_bytes(d))) {
        cases.push_back(make_case(padded(129, n, 200, d, ldd, ScaleMode::kPerTensor, Accum::kPromote), kPromoteKeys,
                                  std::size(kPromoteKeys)));
        const ScaleMode scaled = alt++ % 2 ? ScaleMode::kBlock : ScaleMode::kChannel;
        cases.push_back(make_case(padded(129, n, 200, d, ldd, scaled, Accum::kPromote), kScaledKeys, std::size(kScaledKeys)));
        cases.push_back(make_case(padded(129, n, 200, d, ldd, ScaleMode::kPerTensor, Accum::kFast), kFastKeys,
                                  std::size(kFastKeys)));
      }
  std::map<DType, Counts> counts;
  run_cases(cases, counts, 2600);
  for (DType d : {DType::kE4M3, DType::kBF16, DType::kF32}) {
    const Counts& c = counts[d];
    std::printf("%s: %d runs, %d with the TMA-store epilogue, %d of them with N x bytes not a multiple of 16\n",
                to_string(d), c.runs, c.tma_runs, c.tma_unaligned_n);
    // The test is only worth something if the TMA store meets N that are not 16-byte multiples.
    EXPECT_GE(c.tma_unaligned_n, 40) << to_string(d);
    EXPECT_GE(c.runs, 150) << to_string(d);
  }
}

// The same through the public loader: a table whose entry for the problem is a TMA-store config (the path
// `dgt::Gemm` takes for a tuned shape), e4m3 output with scale_d and amax, D a slice of a wider buffer.
TEST(PaddedD, LoaderRunsTmaStoreWinnerOnASlice) {
  Gpu& gpu = Gpu::get();
  const std::string hw = gpu.device.hardware().key();
  for (const auto& [n, ldd, key] : {std::tuple<int64_t, int64_t, const char*>{72, 80, "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"},
                                    {200, 208, "128x64x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"},
                                    {1000, 1024, "128x96x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"}}) {
    const Problem p = padded(100, n, 256, DType::kE4M3, ldd, ScaleMode::kPerTensor, Accum::kPromote);
    const TunedEntry entry{p.m,   p.n,     p.k,    p.lda, p.ldb,          p.ldd, "e4m3", "e4m3", "promote",
                           key,   1.0,     "any",  "cold-l2-v1", "per-tensor", "e4m3", "none", "none"};
    const TunedTable table{hw.c_str(), gpu.device.name.c_str(), "any", "test", &entry, 1};
    GemmOptions o;
    o.table = &table;
    Gemm gemm(o);
    GemmRunOptions ro;
    ro.output = OutputType::kE4M3;
    const GemmChoice choice = gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ro);
    ASSERT_EQ(choice.config_key, KernelConfig::parse_key(key).key()) << choice.source;
    ProblemData data(p, *gpu.util, 2690 + uint64_t(n), gpu.stream);
    data.poison_scale_padding(gpu.stream);
    data.poison_output(gpu.stream);
    const auto ops = data.operands();
    ro.scale_d = ops.scale_d;
    ro.amax = ops.amax;
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream, ro);
    const Verification v = data.verify(gpu.stream);
    EXPECT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
    EXPECT_EQ(v.pad_touched, 0) << p.label();
  }
}

}  // namespace
}  // namespace dgt::test
