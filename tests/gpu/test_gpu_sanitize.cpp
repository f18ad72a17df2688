// Small shapes for compute-sanitizer runs (memcheck, racecheck): tails in M, N and K, several
// configs. Also part of the normal GPU run.
#include "harness.hpp"

namespace dgt::test {
namespace {

TEST(Sanitize, SmallShapes) {
  Gpu& gpu = Gpu::get();
  const char* keys[] = {"128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1", "64x48x128_s2_wg1_sw128_c1x1_rm8_direct_sk1",
                        "256x64x128_s3_wg2_sw128_c1x1_rn2_direct_sk1",
                        // clusters with multicast, the TMA-store epilogue and split-K (issue 3)
                        "128x128x128_s4_wg2_sw128_c2x1_rm8_direct_sk1", "128x64x128_s4_wg2_sw128_c1x2_rm8_tma_sk1",
                        "128x128x128_s3_wg2_sw128_c2x2_rn4_tma_sk1", "64x64x128_s4_wg1_sw128_c1x1_rm8_direct_sk3",
                        "64x64x64_s4_wg1_sw64_c1x2_rm8_tma_sk2"};
  uint64_t seed = 77;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{129, 65, 1040}, {7, 200, 80}, {300, 136, 400}, {129, 264, 2048}}) {
    Problem p = Problem::dense(m, n, k);
    ProblemData data(p, *gpu.util, seed++, gpu.stream);
    for (const char* key : keys) {
      const KernelConfig c = KernelConfig::parse_key(key);
      if (c.epilogue == Epilogue::kTma && p.ldd % 8 != 0) continue;  // P3: TMA stores need 16-byte rows
      Verification v = gpu.run(data, c);
      EXPECT_TRUE(v.ok) << p.label() << " " << key << ": " << describe(v);
    }
  }
}

}  // namespace
}  // namespace dgt::test
