// Every candidate of the default space, on the three shapes of the first sweeps (4096^3, 128 x 7168 x 2048,
// 1021 x 1023 x 1040), is verified against the reference, and the resource model is checked against
// the compiled kernel: ptxas registers equal the driver's, no local memory, no static shared memory
// (all of it is the modelled dynamic size), and a launch with exactly the modelled size runs.
#include "harness.hpp"

#include "space/search_space.hpp"

namespace dgt::test {
namespace {

void check_space(const Problem& p, uint64_t seed, int& checked) {
  Gpu& gpu = Gpu::get();
  const auto kept = enumerate(SearchSpace::builtin_default(), p, gpu.device.sm_count).kept;
  {
    std::vector<KernelSpec> specs;
    for (const auto& c : kept) specs.push_back(KernelSpec::of(c.config, p));
    gpu.precompile(specs);  // all cores first; loading below is then cheap
  }
  ProblemData data(p, *gpu.util, seed, gpu.stream);
  for (const auto& c : kept) {
    const KernelSpec spec = KernelSpec::of(c.config, p);
    auto compiled = gpu.cache->get_or_compile(jit::generate_gemm(spec));
    auto k = gpu.kernel(spec);
    // Entry registers within the launch bound (65536 / threads, and setmaxnreg's consumer value).
    EXPECT_LE(k->kernel().registers, c.config.num_math_wg == 2 ? 168 : 240) << spec.key();
    EXPECT_GT(k->kernel().registers, 0) << spec.key();
    // ptxas' own count, when the NVRTC log carried it (on the H200 it often did not: see
    // results/h200/first-sweeps-2026-11-29.md), must agree with the driver's.
    if (compiled.registers > 0) EXPECT_EQ(k->kernel().registers, compiled.registers) << spec.key();
    EXPECT_EQ(k->kernel().local_bytes, 0) << spec.key();
    EXPECT_EQ(k->kernel().static_smem_bytes, 0) << spec.key();
    EXPECT_EQ(k->kernel().dynamic_smem_bytes, c.resources.smem.total) << spec.key();
    Verification v = gpu.run(data, c.config);
    EXPECT_TRUE(v.ok) << p.label() << " " << spec.key() << ": " << describe(v);
    ++checked;
  }
}

TEST(DefaultSpace, EveryCandidateOnTheIssueShapes) {
  int checked = 0;
  check_space(Problem::dense(4096, 4096, 4096), 11, checked);
  check_space(Problem::dense(128, 7168, 2048), 12, checked);
  check_space(Problem::dense(1021, 1023, 1040), 13, checked);
  std::printf("verified %d candidates\n", checked);
  // Guards against an accidentally emptied space. Kernel v2's default space (2g base, R20) holds 717
  // candidates on these three shapes on the H200 (v1's held 947).
  EXPECT_GE(checked, 700);
}

TEST(DefaultSpace, FastAccumulationCandidatesOn4096) {
  int checked = 0;
  Problem p = Problem::dense(4096, 4096, 4096);
  p.accum = Accum::kFast;
  check_space(p, 14, checked);
  std::printf("verified %d candidates\n", checked);
  // Kernel v2: 391 fast candidates on 4096^3 on the H200 (fast BLOCK_N > 184 with two consumer
  // warpgroups no longer fits next to the promotion buffer; v1 had 584).
  EXPECT_GE(checked, 380);
}

TEST(DefaultSpace, FastCandidatesSumAllOnesExactly) {
  // Fast accumulation contract (kernels/gemm/fp8_gemm.cuh): with all-ones e4m3 inputs, M = N = 128,
  // K = 65536 and unit scales every element is exactly 65536 (cuBLASLt FAST_ACCUM gives that; a
  // tensor-core accumulator that is never promoted stops at 2^14 = 16384). Every fast candidate of the
  // default space for this shape, plus the edge keys below.
  Gpu& gpu = Gpu::get();
  Problem p = Problem::dense(128, 128, 65536);
  p.accum = Accum::kFast;
  std::vector<KernelConfig> configs;
  for (const auto& c : enumerate(SearchSpace::builtin_default(), p, gpu.device.sm_count).kept)
    configs.push_back(c.config);
  for (const char* key :
       {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16", "64x128x64_s8_wg1_sw64_c1x1_rm8_direct_sk1_sm0_1g_p32",
        "128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p8", "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"})
    configs.push_back(KernelConfig::parse_key(key));
  {
    std::vector<KernelSpec> specs;
    for (const auto& c : configs) specs.push_back(KernelSpec::of(c, p));
    gpu.precompile(specs);
  }
  const size_t ab_bytes = size_t(p.m) * size_t(p.k);
  void *a = nullptr, *b = nullptr, *d = nullptr, *scales = nullptr;
  DGT_CHECK_CUDA(cudaMalloc(&a, ab_bytes));
  DGT_CHECK_CUDA(cudaMalloc(&b, ab_bytes));
  DGT_CHECK_CUDA(cudaMalloc(&d, size_t(p.m) * size_t(p.ldd) * 2));
  DGT_CHECK_CUDA(cudaMalloc(&scales, 512));
  DGT_CHECK_CUDA(cudaMemset(a, 0x38, ab_bytes));  // e4m3 1.0 = 0 0111 000
  DGT_CHECK_CUDA(cudaMemset(b, 0x38, ab_bytes));
  const float ones[2] = {1.f, 1.f};
  DGT_CHECK_CUDA(cudaMemcpy(scales, ones, sizeof(float), cudaMemcpyHostToDevice));
  DGT_CHECK_CUDA(cudaMemcpy(static_cast<char*>(scales) + 256, ones + 1, sizeof(float), cudaMemcpyHostToDevice));
  const jit::GemmOperands ops{a, b, d, static_cast<const float*>(scales),
                              reinterpret_cast<const float*>(static_cast<char*>(scales) + 256)};
  std::vector<uint16_t> out(size_t(p.m) * size_t(p.ldd));
  int checked = 0;
  for (const auto& c : configs) {
    auto k = gpu.kernel(KernelSpec::of(c, p));
    DGT_CHECK_CUDA(cudaMemset(d, 0xFF, out.size() * 2));
    const jit::GemmWorkspace ws = gpu.kernels->workspace(*k, p);
    k->launch(p, ops, gpu.stream, &ws);
    DGT_CHECK_CUDA(cudaGetLastError());
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    DGT_CHECK_CUDA(cudaMemcpy(out.data(), d, out.size() * 2, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    uint16_t first_bad = 0;
    for (uint16_t v : out)
      if (v != 0x4780) {  // BF16 65536 = 2^16
        if (!wrong) first_bad = v;
        ++wrong;
      }
    EXPECT_EQ(wrong, 0u) << c.key() << ": " << wrong << " elements are not 65536, e.g. BF16 bits 0x" << std::hex
                         << first_bad;
    ++checked;
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  cudaFree(scales);
  std::printf("all-ones K = 65536: checked %d fast candidates\n", checked);
  EXPECT_GE(checked, 50);
}

}  // namespace
}  // namespace dgt::test
