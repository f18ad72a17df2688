// Scale modes: channel, block (1D2D) and block1d1d against the reference on K and N tails, the
// whole default space of each mode, and exact values with constant inputs and chosen scales (power-of-two
// scales, so every output is exactly representable in FP32 and BF16), zero blocks, NaN and Inf scales.
#include <cmath>
#include <cstring>

#include "core/int_math.hpp"
#include "harness.hpp"
#include "problem/shapes_file.hpp"
#include "space/resource_model.hpp"
#include "space/search_space.hpp"

namespace dgt::test {
namespace {

constexpr ScaleMode kModes[] = {ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d};

Problem with_scale(Problem p, ScaleMode s) {
  p.scale = s;
  return p;
}

/// Compiles on all cores (cubin cache), then verifies each legal config on fresh seeded data; returns
/// how many ran.
int verify_configs(const Problem& p, const std::vector<KernelConfig>& configs, uint64_t seed) {
  Gpu& gpu = Gpu::get();
  std::vector<KernelConfig> legal;
  for (const KernelConfig& c : configs)
    if (evaluate_resources(KernelSpec::of(c, p)).ok() && problem_fit(c, p).empty()) legal.push_back(c);
  {
    std::vector<KernelSpec> specs;
    for (const auto& c : legal) specs.push_back(KernelSpec::of(c, p));
    gpu.precompile(specs);
  }
  ProblemData data(p, *gpu.util, seed, gpu.stream);
  for (const KernelConfig& c : legal) {
    const Verification v = gpu.run(data, c);
    EXPECT_TRUE(v.ok) << p.label() << " " << KernelSpec::of(c, p).key() << ": " << describe(v);
  }
  return static_cast<int>(legal.size());
}

std::vector<KernelConfig> parse_keys(std::initializer_list<const char*> keys) {
  std::vector<KernelConfig> out;
  for (const char* k : keys) out.push_back(KernelConfig::parse_key(k));
  return out;
}

// Configs that exercise the scale paths: both mainloops, one and two consumer WGs, two m64 slices, BLOCK_N
// straddling two and three 128-column scale blocks (144: two; 168 at n0 = 40j mod 128 up to 120: three),
// split-K (scaled partials summed), clusters, both epilogues, a persistent grid, a 2-stage ring, BLOCK_K 256
// (block modes: two granule buffers per k-block, the second past K when K % 256 <= 128).
std::vector<KernelConfig> scale_configs() {
  return parse_keys({"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
                     "128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
                     "128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",
                     "64x168x128_s4_wg1_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
                     "64x96x128_s8_wg1_sw128_c1x1_rn4_tma_sk1_sm0_2g_p1",
                     "256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk3_sm0_1g_p1",
                     "128x64x128_s6_wg2_sw128_c1x1_rm8_direct_sk3_sm0_2g_p1",
                     "128x128x128_s5_wg2_sw128_c2x1_rm4_tma_sk1_sm0_2g_p1",
                     "128x64x128_s6_wg2_sw128_c1x2_rn8_tma_sk1_sm0_2g_p1",
                     "128x96x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm7_2g_p1",
                     "128x192x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",  // block: 2 phases of n0 % 128 (0, 64)
                     "128x160x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",  // block: 4 phases (0, 32, 64, 96)
                     "64x16x128_s2_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2g_p1",
                     "128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",    // BLOCK_K 256, 1g: two granules a k-block
                     "128x96x256_s3_wg2_sw128_c1x1_rm8_direct_sk2_sm0_1g_p1",  // ... split-K 2 (splits on 256-wide k-blocks)
                     "64x96x256_s5_wg1_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",      // ... one consumer WG
                     "128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",    // BLOCK_K 256 with 2g: channel only (R21)
                     "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1"});  // 2o: channel only
}

TEST(ScaleModes, EdgeShapesEveryMode) {
  auto shapes = load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/edge.txt");
  ASSERT_GE(shapes.size(), 20u);
  // K and N that are not multiples of 128 (partial last granule and partial last 128-column block).
  shapes.push_back({Problem::dense(1021, 1000, 1040)});
  Problem odd = Problem::dense(260, 1000, 1100);
  odd.lda = odd.ldb = 1104;
  shapes.push_back({odd});
  for (ScaleMode mode : kModes) {
    int ran = 0;
    uint64_t seed = 500;
    for (const auto& s : shapes) ran += verify_configs(with_scale(s.problem, mode), scale_configs(), seed++);
    std::printf("%s: %d (shape, config) pairs verified on %zu shapes\n", to_string(mode), ran, shapes.size());
    // Legal configs of scale_configs() per shape on the H200: channel about 11, block about 10, block1d1d
    // about 5 (its column scales cost registers: R10 refuses the wide 2g tiles).
    EXPECT_GE(ran, int(shapes.size()) * (mode == ScaleMode::kBlock1d1d ? 5 : 9)) << to_string(mode);
  }
}

TEST(ScaleModes, WholeDefaultSpaceOnKAndNTails) {
  Gpu& gpu = Gpu::get();
  for (ScaleMode mode : kModes) {
    int ran = 0;
    for (const Problem& base : {Problem::dense(1021, 1023, 1040), Problem::dense(128, 7168, 2048)}) {
      const Problem p = with_scale(base, mode);
      std::vector<KernelConfig> configs;
      for (const auto& c : enumerate(SearchSpace::builtin_default(), p, gpu.device.sm_count).kept)
        configs.push_back(c.config);
      ran += verify_configs(p, configs, 900 + ran);
    }
    std::printf("%s: %d default-space candidates verified\n", to_string(mode), ran);
    EXPECT_GE(ran, 100) << to_string(mode);
  }
}

TEST(ScaleModes, ScaleSlotsAreReadBeforeTheProducerRefillsThem) {
  // A write-after-read race on the per-stage scale slots, seen once in three runs of EdgeShapesEveryMode on
  // the H200 (4096x4096x16 block, 128x64 2g with the direct epilogue: 352 wrong elements): a tile's last
  // k-block released its stage while its scale reads (LDS) could still be queued behind the epilogue's global
  // stores, and the producer's next bulk copy overwrote the slot first. One k-block per tile and a store-heavy
  // epilogue make that window as wide as it gets; each config runs 12 times on fresh inputs.
  const std::vector<KernelConfig> configs = parse_keys({"128x64x128_s6_wg2_sw128_c1x1_rm8_direct_sk3_sm0_2g_p1",
                                                        "128x64x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
                                                        "128x64x256_s3_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
                                                        "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"});
  for (ScaleMode mode : {ScaleMode::kBlock, ScaleMode::kBlock1d1d}) {
    int ran = 0;
    for (int rep = 0; rep < 12; ++rep) {
      for (int64_t k : {16, 208}) ran += verify_configs(with_scale(Problem::dense(4096, 4096, k), mode), configs, 7000 + rep * 10 + k);
    }
    EXPECT_GE(ran, 12 * 2 * 3) << to_string(mode);
  }
}

TEST(ScaleModes, SplitKIsDeterministic) {
  Gpu& gpu = Gpu::get();
  const Problem p = with_scale(Problem::dense(256, 1000, 4096), ScaleMode::kBlock);
  const KernelConfig c = KernelConfig::parse_key("128x64x128_s6_wg2_sw128_c1x1_rm8_direct_sk4_sm0_2g_p1");
  ProblemData data(p, *gpu.util, 77, gpu.stream);
  ASSERT_TRUE(gpu.run(data, c).ok);
  std::vector<uint16_t> first(size_t(p.m) * size_t(p.ldd)), again(first.size());
  DGT_CHECK_CUDA(cudaMemcpy(first.data(), data.operands().d, first.size() * 2, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(gpu.run(data, c).ok);
    DGT_CHECK_CUDA(cudaMemcpy(again.data(), data.operands().d, again.size() * 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * 2), 0) << "run " << i;
  }
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// All-ones e4m3 A and B, M = 200, N = 304 (3 scale blocks, the last partial), K = 1040 (9 granules, the
// last 16 wide). Scales are powers of two (and 0, NaN, Inf where stated), so the exact answer is known:
//   channel:   sa[m] = 2^(m%4), sb[n] = 2^-(n%3)                   -> D = 1040 * 2^(m%4 - n%3)
//   block:     sa[g][m] = 2^(m%4) for even g, 0 for odd g;
//              sb[n/128][g] = 2^-((n/128)%3)                       -> D = 528 * 2^(m%4 - (n/128)%3)
//   block1d1d: sa as block; sb[g][n] = 2^-(n%3)                    -> D = 528 * 2^(m%4 - n%3)
// (528 = the k in even granules: 4 x 128 + 16.) Rows m % 7 == 3 have every A scale 0: exact zeros, no NaN.
// Then row 5 gets a NaN scale and row 6 an Inf scale in granule 0 (channel: in sa[m]): those rows are all
// NaN / +Inf, every other row unchanged.
TEST(ScaleModes, ExactValuesZeroBlocksNanAndInf) {
  Gpu& gpu = Gpu::get();
  const int64_t M = 200, N = 304, K = 1040;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  DGT_CHECK_CUDA(cudaMalloc(&a, size_t(M * K)));
  DGT_CHECK_CUDA(cudaMalloc(&b, size_t(N * K)));
  DGT_CHECK_CUDA(cudaMalloc(&d, size_t(M * N * 2)));
  DGT_CHECK_CUDA(cudaMemset(a, 0x38, size_t(M * K)));  // e4m3 1.0
  DGT_CHECK_CUDA(cudaMemset(b, 0x38, size_t(N * K)));
  const int64_t G = ceil_div(K, kScaleBlock);
  for (ScaleMode mode : kModes) {
    Problem p = with_scale(Problem::dense(M, N, K), mode);
    const ScaleLayout sl = p.scales();
    std::vector<float> sa(size_t(sl.a_elems), 0.f), sb(size_t(sl.b_elems), 0.f);
    auto row_scale = [](int64_t m) { return m % 7 == 3 ? 0.f : std::ldexp(1.f, int(m % 4)); };
    if (mode == ScaleMode::kChannel) {
      for (int64_t m = 0; m < M; ++m) sa[size_t(m)] = row_scale(m);
      for (int64_t n = 0; n < N; ++n) sb[size_t(n)] = std::ldexp(1.f, -int(n % 3));
    } else {
      for (int64_t g = 0; g < G; ++g)
        for (int64_t m = 0; m < M; ++m) sa[size_t(g * sl.ld_a + m)] = g % 2 == 0 ? row_scale(m) : 0.f;
      if (mode == ScaleMode::kBlock) {
        for (int64_t nb = 0; nb < ceil_div(N, kScaleBlock); ++nb)
          for (int64_t g = 0; g < G; ++g) sb[size_t(nb * sl.ld_b + g)] = std::ldexp(1.f, -int(nb % 3));
      } else {
        for (int64_t g = 0; g < G; ++g)
          for (int64_t n = 0; n < N; ++n) sb[size_t(g * sl.ld_b + n)] = std::ldexp(1.f, -int(n % 3));
      }
    }
    auto expected = [&](int64_t m, int64_t n) -> float {
      if (m % 7 == 3) return 0.f;
      const int64_t e = m % 4 - (mode == ScaleMode::kBlock ? (n / 128) % 3 : n % 3);
      return std::ldexp(mode == ScaleMode::kChannel ? 1040.f : 528.f, int(e));
    };
    for (int variant = 0; variant < 2; ++variant) {
      std::vector<float> va = sa;
      if (variant == 1) {  // NaN in row 5, +Inf in row 6 (granule 0, or the channel scale)
        va[5] = std::nanf("");
        va[6] = INFINITY;
      }
      void* scales = nullptr;
      const size_t off = size_t(round_up(int64_t(va.size()) * 4, 256));
      DGT_CHECK_CUDA(cudaMalloc(&scales, off + sb.size() * 4));
      DGT_CHECK_CUDA(cudaMemcpy(scales, va.data(), va.size() * 4, cudaMemcpyHostToDevice));
      DGT_CHECK_CUDA(cudaMemcpy(static_cast<char*>(scales) + off, sb.data(), sb.size() * 4, cudaMemcpyHostToDevice));
      const jit::GemmOperands ops{a, b, d, static_cast<const float*>(scales),
                                  reinterpret_cast<const float*>(static_cast<char*>(scales) + off)};
      int ran = 0;
      for (const KernelConfig& c : scale_configs()) {
        const KernelSpec spec = KernelSpec::of(c, p);
        if (!evaluate_resources(spec).ok() || !problem_fit(c, p).empty()) continue;
        auto k = gpu.kernel(spec);
        DGT_CHECK_CUDA(cudaMemset(d, 0xFF, size_t(M * N * 2)));
        const jit::GemmWorkspace ws = gpu.kernels->workspace(*k, p);
        k->launch(p, ops, gpu.stream, &ws);
        DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
        std::vector<uint16_t> out(size_t(M * N));
        DGT_CHECK_CUDA(cudaMemcpy(out.data(), d, out.size() * 2, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int64_t m = 0; m < M && bad < 5; ++m)
          for (int64_t n = 0; n < N && bad < 5; ++n) {
            const float got = bf16_to_float(out[size_t(m * N + n)]);
            bool ok;
            if (variant == 1 && m == 5)
              ok = std::isnan(got);
            else if (variant == 1 && m == 6)
              ok = std::isinf(got) && got > 0;
            else
              ok = got == expected(m, n) && !std::signbit(got);
            if (!ok) {
              ++bad;
              ADD_FAILURE() << to_string(mode) << " " << spec.key() << (variant ? " (NaN/Inf)" : "") << ": D[" << m
                            << "][" << n << "] = " << got << ", expected "
                            << (variant == 1 && m == 5 ? "NaN" : variant == 1 && m == 6 ? "+Inf"
                                                                                         : std::to_string(expected(m, n)));
            }
          }
        ++ran;
      }
      EXPECT_GE(ran, 5) << to_string(mode);  // legal configs of scale_configs() at M = 200, N = 304
      cudaFree(scales);
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
}

}  // namespace
}  // namespace dgt::test
