// Output types and fused epilogues: f32 / e4m3 output (scale_d, amax) and bf16 bias with ReLU /
// GELU-tanh, against the reference on every edge shape with a sample of the default space; exact values with
// chosen inputs (A = 0 makes every result exactly the bias, so the epilogue's input is known bit for bit);
// split-K applying the epilogue once; cuBLASLt's matching epilogues; the loader's options struct.
#include <cmath>
#include <cstring>

#include <dgtune/gemm.hpp>

#include "bench/cublaslt_baseline.hpp"
#include "harness.hpp"
#include "problem/shapes_file.hpp"
#include "space/resource_model.hpp"
#include "space/search_space.hpp"

namespace dgt::test {
namespace {

struct Combo {
  DType d;
  Bias bias;
  Act act;
};

/// Every (output type, bias, activation) combination, the bf16/none/none default first.
std::vector<Combo> all_combos() {
  std::vector<Combo> out;
  for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3})
    for (Bias b : {Bias::kNone, Bias::kBF16})
      for (Act a : {Act::kNone, Act::kRelu, Act::kGeluTanh}) out.push_back({d, b, a});
  return out;
}

Problem with(Problem p, const Combo& c) {
  p.d = c.d, p.bias = c.bias, p.act = c.act;
  return p;
}

std::string name(const Combo& c) {
  return std::string(to_string(c.d)) + "/" + to_string(c.bias) + "/" + to_string(c.act);
}

/// Configs that exercise the epilogue paths: both epilogues (TMA staging of 2, 4 and 1 byte elements,
/// swizzled and not: BLOCK_N 48 with e4m3 is a 48-byte unswizzled row), 1g/2g/2o, one and two consumer
/// WGs, two m64 slices per WG, split-K (bias, activation, scale_d and amax after the reduction), clusters
/// with spare edge tiles, a persistent grid smaller than the tile count.
std::vector<KernelConfig> epilogue_configs() {
  std::vector<KernelConfig> out;
  for (const char* k : {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
                        "128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
                        "128x96x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1",
                        "64x48x128_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1",
                        "64x40x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1",
                        "256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk3_sm0_1g_p1",
                        "128x64x128_s6_wg2_sw128_c1x1_rm8_direct_sk4_sm0_2g_p1",
                        "128x128x128_s5_wg2_sw128_c2x1_rm4_tma_sk1_sm0_2g_p1",
                        "128x96x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm7_2g_p1",
                        "64x16x128_s2_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2g_p1",
                        "128x112x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"})
    out.push_back(KernelConfig::parse_key(k));
  return out;
}

/// `count` candidates of the default space for `p` (4096^3 ranking), evenly spaced in the model's order.
std::vector<KernelConfig> space_sample(const Problem& p, int count) {
  Gpu& gpu = Gpu::get();
  const auto kept = enumerate(SearchSpace::builtin_default(), p, gpu.device.sm_count).kept;
  std::vector<KernelConfig> out;
  if (kept.empty()) return out;
  const size_t step = std::max<size_t>(1, kept.size() / size_t(count));
  for (size_t i = 0; i < kept.size() && out.size() < size_t(count); i += step) out.push_back(kept[i].config);
  return out;
}

/// The configs of `configs` that can run `p` (resource rules and P3).
std::vector<KernelConfig> legal_for(const Problem& p, const std::vector<KernelConfig>& configs) {
  std::vector<KernelConfig> out;
  for (const auto& c : configs)
    if (evaluate_resources(KernelSpec::of(c, p)).ok() && problem_fit(c, p).empty()) out.push_back(c);
  return out;
}

std::string verdict(const Verification& v) {
  return describe(v) + " ulp_over " + std::to_string(v.ulp_over) + " amax_rel_err " + std::to_string(v.amax_rel_err);
}

// Every combination on every edge shape with the fixed epilogue configs plus 12 candidates of the default
// space (chosen on 4096^3 per combination), each verified against the reference (ProblemData::verify:
// metrics, no write outside D, e4m3 within one ulp, amax).
TEST(Epilogues, EdgeShapesEveryOutputAndEpilogue) {
  Gpu& gpu = Gpu::get();
  const auto shapes = load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/edge.txt");
  ASSERT_GE(shapes.size(), 30u);
  for (const Combo& combo : all_combos()) {
    std::vector<KernelConfig> configs = epilogue_configs();
    for (const auto& c : space_sample(with(Problem::dense(4096, 4096, 4096), combo), 12)) configs.push_back(c);
    {
      std::vector<KernelSpec> specs;
      for (const auto& c : legal_for(with(Problem::dense(4096, 4096, 4096), combo), configs))
        specs.push_back(KernelSpec::of(c, with(Problem::dense(4096, 4096, 4096), combo)));
      gpu.precompile(specs);
    }
    int ran = 0;
    uint64_t seed = 1200;
    for (const auto& s : shapes) {
      const Problem p = with(s.problem, combo);
      ProblemData data(p, *gpu.util, seed++, gpu.stream);
      for (const auto& c : legal_for(p, configs)) {
        const Verification v = gpu.run(data, c);
        EXPECT_TRUE(v.ok) << name(combo) << " " << p.label() << " " << KernelSpec::of(c, p).key() << ": " << verdict(v);
        ++ran;
      }
    }
    std::printf("%s: %d (shape, config) pairs verified on %zu edge shapes\n", name(combo).c_str(), ran, shapes.size());
    EXPECT_GE(ran, int(shapes.size()) * 8) << name(combo);
  }
}

// The whole default space of the two heaviest combinations on a shape with M, N and K tails.
TEST(Epilogues, WholeDefaultSpaceOnTails) {
  Gpu& gpu = Gpu::get();
  for (const Combo& combo : {Combo{DType::kE4M3, Bias::kBF16, Act::kGeluTanh}, Combo{DType::kF32, Bias::kBF16, Act::kRelu}}) {
    const Problem p = with(Problem::dense(1021, 1024, 1040), combo);  // e4m3 TMA stores need ldd % 16 == 0
    std::vector<KernelConfig> configs;
    for (const auto& c : enumerate(SearchSpace::builtin_default(), p, gpu.device.sm_count).kept) configs.push_back(c.config);
    std::vector<KernelSpec> specs;
    for (const auto& c : configs) specs.push_back(KernelSpec::of(c, p));
    gpu.precompile(specs);
    ProblemData data(p, *gpu.util, 77, gpu.stream);
    for (const auto& c : configs) {
      const Verification v = gpu.run(data, c);
      EXPECT_TRUE(v.ok) << name(combo) << " " << KernelSpec::of(c, p).key() << ": " << verdict(v);
    }
    std::printf("%s: %zu default-space candidates verified\n", name(combo).c_str(), configs.size());
    EXPECT_GE(configs.size(), 100u);
  }
}

// ---- exact values ---------------------------------------------------------------------------------

float bf16_bits_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// Raw buffers for the exact tests: A (M x K), B (N x K), D (M x N of up to 4 bytes), the scales, bias,
/// scale_d and amax.
struct ExactBuffers {
  int64_t M, N, K;
  void *a = nullptr, *b = nullptr, *d = nullptr, *bias = nullptr;
  float *scales = nullptr, *scale_d = nullptr, *amax = nullptr;
  ExactBuffers(int64_t m, int64_t n, int64_t k, uint8_t a_byte, uint8_t b_byte, float sa, float sb) : M(m), N(n), K(k) {
    DGT_CHECK_CUDA(cudaMalloc(&a, size_t(M * K)));
    DGT_CHECK_CUDA(cudaMalloc(&b, size_t(N * K)));
    DGT_CHECK_CUDA(cudaMalloc(&d, size_t(M * N * 4)));
    DGT_CHECK_CUDA(cudaMalloc(&bias, size_t(N * 2)));
    DGT_CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&scales), 1024));
    DGT_CHECK_CUDA(cudaMemset(a, a_byte, size_t(M * K)));
    DGT_CHECK_CUDA(cudaMemset(b, b_byte, size_t(N * K)));
    const float s[2] = {sa, sb};
    DGT_CHECK_CUDA(cudaMemcpy(scales, &s[0], 4, cudaMemcpyHostToDevice));
    DGT_CHECK_CUDA(cudaMemcpy(scales + 64, &s[1], 4, cudaMemcpyHostToDevice));  // 256-byte apart, as ProblemData
    scale_d = scales + 128;
    amax = scales + 192;
  }
  ~ExactBuffers() {
    cudaFree(a), cudaFree(b), cudaFree(d), cudaFree(bias), cudaFree(scales);
  }
  void set_bias(const std::vector<uint16_t>& per_col) const {
    DGT_CHECK_CUDA(cudaMemcpy(bias, per_col.data(), per_col.size() * 2, cudaMemcpyHostToDevice));
  }
  void set_scale_d(float v) const { DGT_CHECK_CUDA(cudaMemcpy(scale_d, &v, 4, cudaMemcpyHostToDevice)); }
  void set_amax(float v) const { DGT_CHECK_CUDA(cudaMemcpy(amax, &v, 4, cudaMemcpyHostToDevice)); }
  float get_amax() const {
    float v;
    DGT_CHECK_CUDA(cudaMemcpy(&v, amax, 4, cudaMemcpyDeviceToHost));
    return v;
  }
  /// The operands of `p`: scale_d and amax only for e4m3 output (the launch refuses an amax pointer otherwise).
  jit::GemmOperands ops(const Problem& p) const {
    const bool e4m3 = p.d == DType::kE4M3;
    return {a, b, d, scales, scales + 64, bias, e4m3 ? scale_d : nullptr, e4m3 ? amax : nullptr};
  }
  /// Launches `c` for `p` (D poisoned with 0xFF first) and returns D's bytes.
  std::vector<uint8_t> run(const Problem& p, const KernelConfig& c) const {
    Gpu& gpu = Gpu::get();
    auto k = gpu.kernel(KernelSpec::of(c, p));
    DGT_CHECK_CUDA(cudaMemset(d, 0xFF, size_t(M * N * 4)));
    const jit::GemmWorkspace ws = gpu.kernels->workspace(*k, p);
    k->launch(p, ops(p), gpu.stream, &ws);
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    std::vector<uint8_t> out(size_t(M * N * dtype_bytes(p.d)));
    DGT_CHECK_CUDA(cudaMemcpy(out.data(), d, out.size(), cudaMemcpyDeviceToHost));
    return out;
  }
};

/// Host e4m3 encoder written from the OCP spec (bias 7, 3 mantissa bits, subnormals k x 2^-9, no Inf,
/// S.1111.111 NaN): round to nearest even, then saturate to +-448; NaN -> 0x7F. Independent of the
/// kernel's cvt instruction; checked against the hand-made table below.
uint8_t e4m3_encode(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  double a = std::fabs(double(x));
  if (std::isinf(a) || a >= 448) return sign | 0x7E;
  if (a < std::ldexp(1.0, -6)) return sign | uint8_t(std::nearbyint(a / std::ldexp(1.0, -9)));  // 8 -> 0x08 = 2^-6
  int e = int(std::floor(std::log2(a)));
  double q = std::nearbyint((a / std::ldexp(1.0, e) - 1) * 8);  // FE_TONEAREST: ties to even
  if (q == 8) q = 0, ++e;
  const int biased = e + 7;
  if (biased > 15 || (biased == 15 && q == 7)) return sign | 0x7E;
  return sign | uint8_t(biased << 3 | int(q));
}

/// One column of the e4m3 table: the bias (= the result, A being 0) and the expected e4m3 code with
/// scale_d = 1 (round to nearest even, saturation at +-448, NaN -> 0x7F).
struct E4m3Case {
  uint16_t bias_bits;
  uint8_t code;
  const char* what;
};
constexpr E4m3Case kE4m3Cases[] = {
    {0x0000, 0x00, "0"},
    {0x3F80, 0x38, "1"},
    {0xBF80, 0xB8, "-1"},
    {0x3F88, 0x38, "1.0625: tie, to even mantissa 000 (1.0)"},
    {0x3F98, 0x3A, "1.1875: tie, to even mantissa 010 (1.25)"},
    {0x3A80, 0x00, "2^-10: tie between 0 and the smallest subnormal 2^-9, to 0"},
    {0x3B40, 0x02, "1.5 x 2^-9: tie between subnormals 1 and 2, to 2"},
    {0x3C00, 0x04, "2^-7: subnormal 4 x 2^-9"},
    {0x4390, 0x79, "288 (exact)"},
    {0x4398, 0x7A, "304: tie between 288 and 320, to 320"},
    {0x43E0, 0x7E, "448: the largest finite"},
    {0x43E4, 0x7E, "456: saturates to 448"},
    {0x43E8, 0x7E, "464: saturates to 448"},
    {0x4600, 0x7E, "8192: saturates to 448"},
    {0xC600, 0xFE, "-8192: saturates to -448"},
    {0x7F80, 0x7E, "+Inf: saturates to 448 (satfinite)"},
    {0xFF80, 0xFE, "-Inf: saturates to -448"},
    {0x7FC0, 0x7F, "NaN stays NaN"},
};
constexpr int kCases = int(sizeof(kE4m3Cases) / sizeof(kE4m3Cases[0]));

// A = 0, so every result is exactly bias[n]: the e4m3 conversion of each table value (ties, subnormals,
// saturation of finite values and Inf, NaN) for every config, act none and relu, scale_d 1 and 2; and the
// amax: NaN when a NaN result exists, else max |r| = 8192 (before scale_d), written over a stale 1e30.
TEST(Epilogues, E4m3SaturationRoundingNanAndAmaxExact) {
  for (const E4m3Case& e : kE4m3Cases)  // the host encoder and the hand-made table agree
    EXPECT_EQ(e4m3_encode(bf16_bits_to_float(e.bias_bits)) & (std::isnan(bf16_bits_to_float(e.bias_bits)) ? 0x7F : 0xFF),
              e.code)
        << e.what;
  const int64_t M = 200, N = 304, K = 64;
  ExactBuffers buf(M, N, K, 0x00, 0x38, 1.f, 1.f);
  for (bool with_special : {true, false}) {
    std::vector<uint16_t> bias(static_cast<size_t>(N));
    std::vector<int> case_of(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      int c = int(n % kCases);
      // Without specials: Inf and NaN columns become 1.0, so amax is the finite 8192.
      if (!with_special && (kE4m3Cases[c].bias_bits & 0x7F80) == 0x7F80) c = 1;
      case_of[size_t(n)] = c;
      bias[size_t(n)] = kE4m3Cases[c].bias_bits;
    }
    buf.set_bias(bias);
    for (Act act : {Act::kNone, Act::kRelu})
      for (float scale_d : {1.f, 2.f}) {
        buf.set_scale_d(scale_d);
        Problem p = Problem::dense(M, N, K);
        p.d = DType::kE4M3, p.bias = Bias::kBF16, p.act = act;
        int ran = 0;
        for (const auto& c : legal_for(p, epilogue_configs())) {
          buf.set_amax(1e30f);  // a stale value: every launch must overwrite it
          const std::vector<uint8_t> out = buf.run(p, c);
          int bad = 0;
          for (int64_t m = 0; m < M && bad < 5; ++m)
            for (int64_t n = 0; n < N && bad < 5; ++n) {
              const E4m3Case& e = kE4m3Cases[case_of[size_t(n)]];
              float x = bf16_bits_to_float(e.bias_bits);
              if (act == Act::kRelu && x < 0) x = 0;  // relu(-Inf) = 0; NaN is not < 0 and stays NaN
              uint8_t want = e.code;
              if (act == Act::kRelu && (e.code & 0x80) && !std::isnan(x)) want = 0x00;
              if (scale_d == 2.f) want = e4m3_encode(x * 2);
              const uint8_t got = out[size_t(m * N + n)];
              const bool ok = std::isnan(x) ? (got & 0x7F) == 0x7F : got == want;
              if (!ok) {
                ++bad;
                ADD_FAILURE() << KernelSpec::of(c, p).key() << " act " << to_string(act) << " scale_d " << scale_d
                              << ": D[" << m << "][" << n << "] = 0x" << std::hex << int(got) << ", expected 0x"
                              << int(want) << std::dec << " (" << e.what << ")";
              }
            }
          const float amax = buf.get_amax();
          if (with_special) {
            EXPECT_TRUE(std::isnan(amax)) << KernelSpec::of(c, p).key() << ": amax " << amax << " (a result is NaN)";
          } else {
            EXPECT_EQ(amax, 8192.f) << KernelSpec::of(c, p).key() << " act " << to_string(act)
                                    << ": amax must be max |r| before scale_d";
          }
          ++ran;
        }
        EXPECT_GE(ran, 8);
      }
  }
}

// A = B = 1.0, K = 1040, sa = 2^-4, sb = 2^-6: every scaled accumulator is 1040 / 1024 = 1.015625, and the
// bias (n % 9 - 4) / 2 makes r = 1.015625 + bias exactly representable in FP32: f32 output must be exact,
// relu exact (negative r -> 0), bf16 output the RNE rounding of r. GELU (tanh form) with A = 0 against the
// formula in double over [-6, 6] in steps of 1/16: within 2^-11 |x| + 1e-6 (tanh.approx.f32's bound).
TEST(Epilogues, BiasReluGeluExact) {
  const int64_t M = 136, N = 208, K = 1040;
  {
    ExactBuffers buf(M, N, K, 0x38, 0x38, 1.f / 16, 1.f / 64);
    std::vector<uint16_t> bias(static_cast<size_t>(N));
    std::vector<float> bias_f(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      const float v = float(n % 9 - 4) / 2;
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bias[size_t(n)] = uint16_t(bits >> 16);  // exact: at most 3 significant bits
      bias_f[size_t(n)] = v;
    }
    buf.set_bias(bias);
    for (DType d : {DType::kF32, DType::kBF16})
      for (Act act : {Act::kNone, Act::kRelu}) {
        Problem p = Problem::dense(M, N, K);
        p.d = d, p.bias = Bias::kBF16, p.act = act;
        int ran = 0;
        for (const auto& c : legal_for(p, epilogue_configs())) {
          const std::vector<uint8_t> out = buf.run(p, c);
          int bad = 0;
          for (int64_t m = 0; m < M && bad < 5; ++m)
            for (int64_t n = 0; n < N && bad < 5; ++n) {
              float want = 1.015625f + bias_f[size_t(n)];
              if (act == Act::kRelu && want < 0) want = 0;
              float got;
              if (d == DType::kF32) {
                std::memcpy(&got, &out[size_t(m * N + n) * 4], 4);
              } else {
                uint16_t h;
                std::memcpy(&h, &out[size_t(m * N + n) * 2], 2);
                got = bf16_bits_to_float(h);
                // RNE of want to 8 significant bits.
                uint32_t bits;
                std::memcpy(&bits, &want, 4);
                bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;
                want = bits_to_float(bits);
              }
              if (got != want) {
                ++bad;
                ADD_FAILURE() << KernelSpec::of(c, p).key() << " " << to_string(d) << " " << to_string(act) << ": D["
                              << m << "][" << n << "] = " << got << ", expected " << want;
              }
            }
          ++ran;
        }
        EXPECT_GE(ran, 8);
      }
  }
  {
    ExactBuffers buf(M, N, 64, 0x00, 0x38, 1.f, 1.f);
    std::vector<uint16_t> bias(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      const float v = float(n - N / 2) / 16;  // [-6.5, 6.44]: bf16-exact (at most 8 significant bits)
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bias[size_t(n)] = uint16_t(bits >> 16);
    }
    buf.set_bias(bias);
    Problem p = Problem::dense(M, N, 64);
    p.d = DType::kF32, p.bias = Bias::kBF16, p.act = Act::kGeluTanh;
    for (const auto& c : legal_for(p, epilogue_configs())) {
      const std::vector<uint8_t> out = buf.run(p, c);
      int bad = 0;
      for (int64_t n = 0; n < N && bad < 5; ++n) {
        const double x = bf16_bits_to_float(bias[size_t(n)]);
        const double want = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        for (int64_t m = 0; m < M; m += 37) {
          float got;
          std::memcpy(&got, &out[size_t(m * N + n) * 4], 4);
          if (!(std::fabs(got - want) <= std::ldexp(std::fabs(x), -11) + 1e-6)) {
            ++bad;
            ADD_FAILURE() << KernelSpec::of(c, p).key() << ": gelu(" << x << ") = " << got << ", expected " << want;
            break;
          }
        }
      }
    }
  }
}

// Split-K: bias, activation, scale_d and amax must be applied once, after the reduction (a bias added per
// split would be S times too large; the verification sees it), and the output and amax bits must not
// depend on which split arrives last.
TEST(Epilogues, SplitKAppliesTheEpilogueOnceDeterministically) {
  Gpu& gpu = Gpu::get();
  Problem p = Problem::dense(256, 1024, 4096);
  p.d = DType::kE4M3, p.bias = Bias::kBF16, p.act = Act::kGeluTanh;
  for (const char* key : {"128x64x128_s6_wg2_sw128_c1x1_rm8_direct_sk4_sm0_2g_p1",
                          "128x64x128_s6_wg2_sw128_c1x1_rm8_tma_sk4_sm0_1g_p1"}) {
    const KernelConfig c = KernelConfig::parse_key(key);
    ProblemData data(p, *gpu.util, 91, gpu.stream);
    Verification v = gpu.run(data, c);
    ASSERT_TRUE(v.ok) << key << ": " << verdict(v);
    std::vector<uint8_t> first(data.output_bytes()), again(first.size());
    DGT_CHECK_CUDA(cudaMemcpy(first.data(), data.output(), first.size(), cudaMemcpyDeviceToHost));
    const float amax0 = data.read_amax(gpu.stream);
    EXPECT_NEAR(amax0, data.reference_amax(), 1e-3 * data.reference_amax()) << key;
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(gpu.run(data, c).ok) << key;
      DGT_CHECK_CUDA(cudaMemcpy(again.data(), data.output(), again.size(), cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size()), 0) << key << " run " << i;
      EXPECT_EQ(data.read_amax(gpu.stream), amax0) << key << " run " << i;
    }
  }
}

// cuBLASLt with the matching epilogue for every combination: each algorithm is either verified against the
// same reference (status ok) or refused (unsupported), never wrong. Prints what cuBLASLt accepts.
TEST(Epilogues, CublasLtMatchingEpilogueVerifiesOrIsUnsupported) {
  Gpu& gpu = Gpu::get();
  CublasLtBaseline lt(4);
  for (const Combo& combo : all_combos()) {
    const Problem p = with(Problem::dense(256, 512, 1024), combo);
    ProblemData data(p, *gpu.util, 5, gpu.stream);
    CublasLtPlan plan(lt, data);
    const CublasLtChoice c = select_algorithms(
        plan, [](const std::function<void(cudaStream_t)>&) { return Timing{1.0, 1.0, 1.0, 1, 0, 0, false}; },
        "test", gpu.stream);
    int ok = 0, unsupported = 0;
    for (const auto& r : c.screened) {
      if (r.status == TrialStatus::kOk) ++ok;
      else if (r.status == TrialStatus::kUnsupported) ++unsupported;
      else ADD_FAILURE() << name(combo) << " " << r.algo << ": " << to_string(r.status) << " " << r.error;
    }
    std::printf("cuBLASLt %s: heuristic status %d, %d algorithms verified, %d unsupported\n", name(combo).c_str(),
                plan.heuristic_status(), ok, unsupported);
    // The combinations the issue measures against must be supported: bf16 + bias + GELU and e4m3 output.
    if ((combo.d == DType::kBF16 && combo.bias == Bias::kBF16) || (combo.d == DType::kE4M3 && combo.bias == Bias::kNone))
      EXPECT_GE(ok, 1) << name(combo);
  }
}

// The loader with GemmRunOptions: every combination runs (default config, this Gemm's workspace) and
// verifies; bad combinations are refused naming the field before any kernel is loaded.
TEST(Loader, EveryOutputAndEpilogueThroughTheOptionsStruct) {
  Gpu& gpu = Gpu::get();
  GemmOptions o;
  o.db_path = "/nonexistent/dgtune-epilogue-test.db";
  o.cublaslt = false;  // dgtune's epilogues (cuBLASLt's run in CublasLtBackend.*)
  Gemm gemm(o);
  for (const Combo& combo : all_combos()) {
    const Problem p = with(Problem::dense(200, 304, 1040), combo);
    ProblemData data(p, *gpu.util, 31, gpu.stream);
    const jit::GemmOperands ops = data.operands();
    GemmRunOptions ro;
    ro.output = combo.d == DType::kF32 ? OutputType::kF32 : combo.d == DType::kE4M3 ? OutputType::kE4M3 : OutputType::kBF16;
    ro.bias = ops.bias;
    ro.act = combo.act == Act::kRelu ? Activation::kRelu : combo.act == Act::kGeluTanh ? Activation::kGeluTanh : Activation::kNone;
    ro.scale_d = ops.scale_d;
    ro.amax = ops.amax;
    data.poison_output(gpu.stream);
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream, ro);
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    const Verification v = data.verify(gpu.stream);
    EXPECT_TRUE(v.ok) << name(combo) << ": " << verdict(v);
    EXPECT_EQ(gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ro).source, "default");
  }
  const Problem p = Problem::dense(200, 304, 1040);
  ProblemData data(p, *gpu.util, 32, gpu.stream);
  const jit::GemmOperands ops = data.operands();
  auto expect_invalid = [&](const GemmRunOptions& ro, const char* needle) {
    try {
      gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream, ro);
      ADD_FAILURE() << "expected an error naming " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
      EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
    }
  };
  GemmRunOptions e4m3_no_scale;
  e4m3_no_scale.output = OutputType::kE4M3;
  expect_invalid(e4m3_no_scale, "scale_d is null");
  GemmRunOptions amax_bf16;
  amax_bf16.amax = data.amax_ptr();
  expect_invalid(amax_bf16, "an amax pointer needs e4m3 output");
  GemmRunOptions odd_bias;
  odd_bias.bias = reinterpret_cast<const char*>(data.scale_d_ptr()) + 1;
  expect_invalid(odd_bias, "operand bias");
}

}  // namespace
}  // namespace dgt::test
