// Correctness of the kernel family on edge shapes, fresh seeded inputs each shape.
#include "harness.hpp"

#include "core/shapes_file.hpp"

namespace dgt::test {
namespace {

std::vector<KernelConfig> edge_configs() {
  const char* keys[] = {
      "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1",  // the default family member
      "64x48x128_s6_wg1_sw128_c1x1_rm8_direct_sk1",    // one consumer WG, small non-power-of-two N
      "256x64x128_s3_wg2_sw128_c1x1_rm8_direct_sk1",   // two m64 slices per consumer WG
      "128x176x128_s4_wg2_sw128_c1x1_rm8_direct_sk1",  // 11 n8 groups, near the register limit
      "128x96x128_s5_wg2_sw128_c1x1_rn3_direct_sk1",   // raster along N, odd group
      "64x16x128_s8_wg1_sw128_c1x1_rm1_direct_sk1",    // smallest tile, deep ring (wraps often)
  };
  std::vector<KernelConfig> out;
  for (const char* k : keys) out.push_back(KernelConfig::parse_key(k));
  return out;
}

int64_t pad16(int64_t k) { return (k + 15) / 16 * 16; }

void check_all(const Problem& p, const std::vector<KernelConfig>& configs, uint64_t seed) {
  Gpu& gpu = Gpu::get();
  ProblemData data(p, *gpu.util, seed, gpu.stream);
  for (const auto& c : configs) {
    Verification v = gpu.run(data, c);
    EXPECT_TRUE(v.ok) << p.label() << " with " << c.key() << ": " << describe(v);
  }
}

TEST(EdgeShapes, ShippedEdgeFile) {
  auto shapes = load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/edge.txt");
  ASSERT_GE(shapes.size(), 20u);
  uint64_t seed = 1;
  for (const auto& s : shapes) check_all(s.problem, edge_configs(), seed++);
}

TEST(EdgeShapes, GridOfOddSizesAndKTails) {
  const int64_t sizes[] = {1, 7, 63, 65, 127, 129, 1021, 1023, 4096};
  uint64_t seed = 100;
  int i = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes) {
      const int64_t k = sizes[i++ % 9];
      Problem p = Problem::dense(m, n, k);
      p.lda = p.ldb = pad16(k);  // K not a multiple of 16 needs padded rows (TMA stride rule)
      check_all(p, edge_configs(), seed++);
    }
}

TEST(EdgeShapes, FastAccumulationAndE5M2) {
  const char* key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1";
  uint64_t seed = 500;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 4096, 4096}, {129, 1023, 1040}, {1021, 65, 7168},
                         {4096, 4096, 4096}, {64, 256, 65536}}) {
    for (int variant = 0; variant < 3; ++variant) {
      Problem p = Problem::dense(m, n, k);
      if (variant == 0) p.accum = Accum::kFast;
      if (variant == 1) p.a = DType::kE5M2;
      if (variant == 2) p.b = DType::kE5M2, p.accum = Accum::kFast;
      check_all(p, {KernelConfig::parse_key(key)}, seed++);
    }
  }
}

TEST(EdgeShapes, PaddedLeadingDimensionsAreRespected) {
  // Row padding of A and B holds NaN and D's padding holds the poison: reading or writing it fails.
  Problem p = Problem::dense(129, 200, 1040);
  p.lda = 1088;
  p.ldb = 1056;
  p.ldd = 263;  // odd ldd: 4-byte pair stores are not aligned, the kernel must fall back to 2-byte stores
  check_all(p, edge_configs(), 900);
}

TEST(Refusals, UnalignedLeadingDimensionNamesOperandAndRule) {
  Gpu& gpu = Gpu::get();
  Problem p = Problem::dense(16, 16, 7);
  auto k = gpu.kernel(KernelSpec::of(KernelConfig::parse_key("64x16x128_s8_wg1_sw128_c1x1_rm1_direct_sk1"), p));
  try {
    k->launch(p, jit::GemmOperands{reinterpret_cast<void*>(256), reinterpret_cast<void*>(256), nullptr, nullptr, nullptr},
              gpu.stream);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    EXPECT_NE(e.message().find("operand A"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("multiple of 16"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace dgt::test
