// Every candidate of the default search space, for every shape of the shipped smoke, DeepSeek-V3 and
// square sets (promote and fast accumulation) and the issue shapes 128x7168x2048 and 1021x1023x1040, compiles with
// NVRTC for sm_90a with zero spills and no stack, and ptxas' entry register count respects the launch bound. Runs on
// the CPU machine (no GPU needed); compiles each distinct kernel once, in parallel on all cores.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "problem/shapes_file.hpp"
#include "space/resource_model.hpp"
#include "space/search_space.hpp"

namespace dgt {
namespace {

/// Compiles every spec with NVRTC on all cores; returns "<key>: <problem>" for each that fails, spills,
/// uses stack, serializes its WGMMAs (compile() throws on C7514/C7515) or exceeds the launch bound's
/// registers. `max_regs_1wg` receives the largest entry register count with one consumer warpgroup.
std::vector<std::string> compile_checked(const std::map<std::string, KernelSpec>& specs, int* max_regs_1wg = nullptr) {
  std::mutex mu;
  std::vector<std::string> failures;
  ThreadPool pool(0);
  std::vector<std::future<void>> done;
  for (const auto& [key, spec] : specs)
    done.push_back(pool.submit([&, key = key, spec = spec] {
      std::string problem;
      try {
        jit::GeneratedKernel g = jit::generate_gemm(spec);
        jit::CompiledKernel k = jit::compile(g.source, g.program_name, g.name_expression);
        if (k.spill_bytes != 0 || k.stack_bytes != 0)
          problem = "spills " + std::to_string(k.spill_bytes) + " B, stack " + std::to_string(k.stack_bytes) + " B";
        const int entry_cap = spec.config.num_math_wg == 2 ? 168 : 240;  // 65536 / threads, and setmaxnreg's value
        if (k.registers > entry_cap)
          problem += " registers " + std::to_string(k.registers) + " > " + std::to_string(entry_cap);
        std::lock_guard<std::mutex> lock(mu);
        if (max_regs_1wg && spec.config.num_math_wg == 1) *max_regs_1wg = std::max(*max_regs_1wg, k.registers);
      } catch (const std::exception& e) {
        problem = e.what();
      }
      if (!problem.empty()) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back(key + ": " + problem);
      }
    }));
  for (auto& f : done) f.get();
  return failures;
}

TEST(SpaceCompiles, EveryDefaultSpaceCandidateCompilesWithoutSpills) {
  std::vector<Problem> problems = {Problem::dense(128, 7168, 2048), Problem::dense(1021, 1023, 1040)};
  for (const char* set : {"smoke", "deepseek-v3", "square"})
    for (const auto& s : load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/" + set + ".txt"))
      problems.push_back(s.problem);
  // Fast accumulation too: its promotion intervals (promote_every) are kernels of their own.
  for (size_t i = 0, n = problems.size(); i < n; ++i) {
    Problem f = problems[i];
    f.accum = Accum::kFast;
    problems.push_back(f);
  }
  std::map<std::string, KernelSpec> specs;  // by compiled key: split count and grid size are run-time
  for (const auto& p : problems)
    for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) {
      KernelSpec spec = KernelSpec::of(c.config, p);
      specs.emplace(spec.compiled_key(), spec);
    }
  ASSERT_GE(specs.size(), 700u);
  int max_regs_1wg = 0;
  for (const auto& f : compile_checked(specs, &max_regs_1wg)) ADD_FAILURE() << f;
  std::cout << specs.size() << " kernels compiled; max entry registers with one consumer warpgroup: " << max_regs_1wg
            << "\n";
}

// The epilogue-overlap schedule (2o) keeps a WGMMA group in flight across the epilogue (TMA store,
// direct store, split-K reduction, the skip of an edge cluster's spare tile): every variant must compile
// without spills and without ptxas serializing the WGMMAs (compile() fails on C7514 / C7515). A fast
// subset of the space test above, plus the kernels the GPU edge tests run.
// The host launches with the resource model's shared-memory size; codegen writes it into the source and the kernel
// static_asserts its own layout (Fp8GemmTraits::kSmemBytes) against it. Here the right size compiles and a size 16
// bytes off does not, for a pp band-ring kernel and a cluster split (the two layouts this check was added for).
TEST(SpaceCompiles, KernelRefusesAHostSharedMemorySizeThatDiffersFromItsLayout) {
  Problem p = Problem::dense(4096, 4096, 2048);
  p.accum = Accum::kFast;
  for (const char* key : {"128x160x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                          "64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk4c_sm0_2g_p1"}) {
    const KernelSpec spec = KernelSpec::of(KernelConfig::parse_key(key), p);
    const ResourceReport res = evaluate_resources(spec);
    ASSERT_TRUE(res.ok()) << key << ": " << res.rejection;
    const jit::GeneratedKernel g = jit::generate_gemm(spec);
    const std::string define = fmt::format("#define DGT_HOST_SMEM_BYTES {}u\n", res.smem.total);
    ASSERT_NE(g.source.find(define), std::string::npos) << g.source;
    EXPECT_FALSE(jit::compile(g.source, g.program_name, g.name_expression).cubin.empty()) << key;
    std::string wrong = g.source;
    wrong.replace(wrong.find(define), define.size(), fmt::format("#define DGT_HOST_SMEM_BYTES {}u\n", res.smem.total + 16));
    try {
      jit::compile(wrong, g.program_name, g.name_expression);
      ADD_FAILURE() << key << ": a wrong host shared-memory size compiled";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("shared-memory size differs"), std::string::npos) << e.message();
    }
  }
}

TEST(SpaceCompiles, OverlapMainloopCompilesWithoutSpillsOrSerialization) {
  const std::pair<const char*, Accum> keys[] = {
      {"128x96x128_s7_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},
      {"128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},  // 3 x 72 + 16 = 232: the limit
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kFast},
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2o_p1", Accum::kPromote},
      {"128x128x64_s8_wg2_sw64_c1x1_rm8_tma_sk2_sm0_2o_p1", Accum::kPromote},    // split-K
      {"128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},  // cluster, edge tiles
      {"64x144x128_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},   // one consumer WG at its limit
      {"256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kPromote},   // two m64 slices per WG
      // The rest of the GPU edge list's 2o kernels (tests/gpu/test_gpu_correctness.cpp, overlap_configs).
      {"128x88x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm7_2o_p1", Accum::kPromote},
      {"256x64x128_s4_wg2_sw128_c1x1_rm8_tma_sk3_sm0_2o_p1", Accum::kPromote},
      {"128x40x64_s8_wg2_sw64_c1x1_rm2_direct_sk2_sm0_2o_p1", Accum::kPromote},
      {"128x64x128_s6_wg2_sw128_c1x2_rn8_tma_sk1_sm0_2o_p1", Accum::kPromote},
      {"64x16x128_s2_wg1_sw128_c1x1_rm1_direct_sk1_sm0_2o_p1", Accum::kPromote},
      {"64x96x128_s8_wg1_sw128_c1x1_rn4_tma_sk1_sm0_2o_p1", Accum::kPromote},
      {"128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1", Accum::kFast},
  };
  std::map<std::string, KernelSpec> specs;
  for (const auto& [key, accum] : keys) {
    KernelSpec spec = KernelSpec::of(KernelConfig::parse_key(key), Problem::dense(4096, 4096, 4096));
    spec.accum = accum;
    specs.emplace(spec.compiled_key(), spec);
  }
  for (const auto& c : enumerate(SearchSpace::builtin_default(), Problem::dense(4096, 4096, 4096)).kept)
    if (c.config.mainloop == Mainloop::k2o) {
      KernelSpec spec = KernelSpec::of(c.config, Problem::dense(4096, 4096, 4096));
      specs.emplace(spec.compiled_key(), spec);
    }
  ASSERT_GE(specs.size(), 16u);
  for (const auto& f : compile_checked(specs)) ADD_FAILURE() << f;
  std::cout << specs.size() << " 2o kernels compiled\n";
}

// Scale modes: channel scales in the epilogue, block scales at every promotion. Every kept
// candidate of the default space for each mode compiles without spills or serialized WGMMAs on shapes
// that exercise it (K and N not multiples of 128 among them); block modes keep only promote, BLOCK_K = 128
// (1g/2g) or 256 (1g, two granule buffers), no 2o (R21, R22), and their scale registers must fit.
TEST(SpaceCompiles, ScaleModesCompileWithoutSpills) {
  const std::vector<Problem> shapes = {Problem::dense(4096, 4096, 4096), Problem::dense(128, 7168, 2048),
                                       Problem::dense(1021, 1023, 1040), Problem::dense(64, 2112, 7168),
                                       Problem::dense(4096, 576, 7168)};
  std::map<std::string, KernelSpec> specs;
  std::map<ScaleMode, int> per_mode;
  for (ScaleMode mode : {ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d})
    for (Problem p : shapes) {
      p.scale = mode;
      for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) {
        const KernelSpec spec = KernelSpec::of(c.config, p);
        if (is_block_scaled(mode)) {  // R21, R22
          EXPECT_TRUE(spec.config.block_k == 128 ||
                      (spec.config.block_k == 256 && spec.config.mainloop == Mainloop::k1g))
              << spec.key();
          EXPECT_NE(spec.config.mainloop, Mainloop::k2o) << spec.key();
        }
        per_mode[mode] += specs.emplace(spec.compiled_key(), spec).second ? 1 : 0;
      }
    }
  EXPECT_GE(per_mode[ScaleMode::kBlock], 50);
  EXPECT_GE(per_mode[ScaleMode::kBlock1d1d], 50);
  EXPECT_GE(per_mode[ScaleMode::kChannel], 200);
  for (const auto& f : compile_checked(specs)) ADD_FAILURE() << f;
  std::cout << specs.size() << " scale-mode kernels compiled (channel " << per_mode[ScaleMode::kChannel] << ", block "
            << per_mode[ScaleMode::kBlock] << ", block1d1d " << per_mode[ScaleMode::kBlock1d1d] << ")\n";
}

// Output types and fused epilogues: for every (output type, bias, activation) combination a
// sample of the default space compiles without spills, stack or serialized WGMMAs. The sample is the
// register-heaviest candidate (largest BLOCK_N) of every (mainloop, consumer warpgroups, epilogue, split
// or not, BLOCK_M) group on shapes with and without tails, for the two heaviest combinations (e4m3 and f32
// output with bias and GELU); for the other combinations the heaviest per (mainloop, epilogue, consumer
// warpgroups); and the heaviest combination with the channel, block and block1d1d scale modes. kEpiRegs
// (fp8_gemm_traits.cuh) is calibrated against this test.
TEST(EpilogueCompiles, SampleOfEveryOutputAndEpilogueCompilesWithoutSpills) {
  const std::vector<Problem> shapes = {Problem::dense(4096, 4096, 4096), Problem::dense(1021, 1023, 1040),
                                       Problem::dense(64, 2112, 7168)};
  std::map<std::string, KernelSpec> specs;
  std::map<std::string, int> per_combo;
  for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3})
    for (Bias bias : {Bias::kNone, Bias::kBF16})
      for (Act act : {Act::kNone, Act::kRelu, Act::kGeluTanh}) {
        if (d == DType::kBF16 && bias == Bias::kNone && act == Act::kNone) continue;  // the space test's
        const bool heavy = d != DType::kBF16 && bias == Bias::kBF16 && act == Act::kGeluTanh;
        std::map<std::string, KernelSpec> heaviest;  // group -> the largest BLOCK_N
        for (Problem p : shapes) {
          p.d = d, p.bias = bias, p.act = act;
          if (p.d == DType::kE4M3 && p.ldd % 16 != 0) continue;
          for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) {
            const KernelConfig& k = c.config;
            std::string group = fmt::format("{}_{}_{}", to_string(k.mainloop), to_string(k.epilogue), k.num_math_wg);
            if (heavy) group += fmt::format("_{}_{}", k.split_k > 1, k.block_m);
            auto it = heaviest.find(group);
            if (it == heaviest.end() || it->second.config.block_n < k.block_n)
              heaviest[group] = KernelSpec::of(k, p);
          }
        }
        const std::string combo = fmt::format("{}/{}/{}", to_string(d), to_string(bias), to_string(act));
        for (const auto& [g, spec] : heaviest) per_combo[combo] += specs.emplace(spec.compiled_key(), spec).second;
        EXPECT_GE(per_combo[combo], 8) << combo;
      }
  EXPECT_EQ(per_combo.size(), 17u);
  // The heaviest combination with the scale modes that keep scale registers live (kScaleRegs): block and
  // block1d1d, grouped like the heavy combinations above.
  for (ScaleMode mode : {ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d}) {
    std::map<std::string, KernelSpec> heaviest;
    for (Problem p : shapes) {
      p.d = DType::kE4M3, p.bias = Bias::kBF16, p.act = Act::kGeluTanh, p.scale = mode;
      if (p.ldd % 16 != 0) continue;
      for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) {
        const KernelConfig& k = c.config;
        const std::string group = fmt::format("{}_{}_{}_{}_{}", to_string(k.mainloop), to_string(k.epilogue),
                                              k.num_math_wg, k.split_k > 1, k.block_m);
        auto it = heaviest.find(group);
        if (it == heaviest.end() || it->second.config.block_n < k.block_n) heaviest[group] = KernelSpec::of(k, p);
      }
    }
    int added = 0;
    for (const auto& [g, spec] : heaviest) added += specs.emplace(spec.compiled_key(), spec).second;
    EXPECT_GE(added, 8) << to_string(mode);
  }
  for (const auto& f : compile_checked(specs)) ADD_FAILURE() << f;
  std::cout << specs.size() << " output/epilogue kernels compiled\n";
}

// pp keeps its whole accumulator live through the epilogue (no partial buffer dies before it), so the fused
// epilogues' registers come on top of it: every pp candidate of the default space for a fast problem with
// K <= 2048, with every output type / bias / activation, plus the widest pp tiles the GPU tests run
// (128x176, 64x256; TMA and direct), compiles without spills. (The epilogue sample above uses promote
// shapes only, where pp never appears.) Per-tensor scales; pp with channel scales still spills at the widest
// tiles (review note, not covered here).
TEST(EpilogueCompiles, PingpongWithFusedEpiloguesCompilesWithoutSpills) {
  std::map<std::string, KernelSpec> specs;
  for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3})
    for (Bias bias : {Bias::kNone, Bias::kBF16})
      for (Act act : {Act::kNone, Act::kRelu, Act::kGeluTanh}) {
        Problem p = Problem::dense(4096, 4096, 1024);
        p.accum = Accum::kFast, p.d = d, p.bias = bias, p.act = act;
        std::map<int, KernelSpec> widest;  // BLOCK_M -> the largest BLOCK_N
        for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept)
          if (c.config.mainloop == Mainloop::kPp) {
            auto it = widest.find(c.config.block_m);
            if (it == widest.end() || it->second.config.block_n < c.config.block_n)
              widest[c.config.block_m] = KernelSpec::of(c.config, p);
          }
        for (const auto& [m, spec] : widest) specs.emplace(spec.compiled_key(), spec);
        for (const char* key : {"128x176x128_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                                "128x176x128_s3_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p16",
                                "64x256x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16",
                                "64x256x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p16"}) {
          const KernelSpec spec = KernelSpec::of(KernelConfig::parse_key(key), p);
          if (config_rule_violation(spec.config, p).empty()) specs.emplace(spec.compiled_key(), spec);
        }
      }
  EXPECT_GE(specs.size(), 40u);
  for (const auto& f : compile_checked(specs)) ADD_FAILURE() << f;
  std::cout << specs.size() << " pp output/epilogue kernels compiled\n";
}

// dgtune trace (kernels/gemm/trace.cuh): the traced build of a kernel (DGT_TRACE) compiles without spills for
// every mainloop, with split-K and in the block scale modes (whose producer runs at the 40-register limit), carries
// the device array "dgt_trace" the host reads, and the plain build does not (the marks are `if constexpr (kTrace)`).
TEST(TraceCompiles, TracedKernelsCompileWithoutSpillsAndExportTheirBuffer) {
  struct Case {
    const char* key;
    Accum accum;
    ScaleMode scale;
  };
  const Case keys[] = {
      {"64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1", Accum::kPromote, ScaleMode::kPerTensor},
      {"128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk2_sm0_2o_p1", Accum::kPromote, ScaleMode::kPerTensor},
      {"128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote, ScaleMode::kPerTensor},
      {"128x128x256_s3_wg2_sw128_c1x1_rm8_direct_sk3_sm0_1g_p8", Accum::kFast, ScaleMode::kPerTensor},
      {"128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16", Accum::kFast, ScaleMode::kPerTensor},
      {"128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote, ScaleMode::kPerTensor},
      {"128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote, ScaleMode::kBlock},  // 2 producers
      {"128x128x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1", Accum::kPromote, ScaleMode::kBlock},  // issue_granules
      {"128x64x128_s5_wg2_sw128_c1x2_rm8_tma_sk2_sm0_2g_p1", Accum::kPromote, ScaleMode::kBlock1d1d},
  };
  for (const auto& [key, accum, scale] : keys) {
    Problem p = Problem::dense(1024, 1024, 2048);
    p.accum = accum;
    p.scale = scale;
    const KernelSpec spec = KernelSpec::of(KernelConfig::parse_key(key), p);
    const jit::GeneratedKernel traced = jit::generate_gemm(spec, true);
    const jit::GeneratedKernel plain = jit::generate_gemm(spec);
    EXPECT_NE(traced.source, plain.source) << key;
    EXPECT_NE(traced.program_name, plain.program_name) << key;
    const jit::CompiledKernel t = jit::compile(traced.source, traced.program_name, traced.name_expression);
    EXPECT_EQ(t.spill_bytes, 0) << key;
    EXPECT_EQ(t.stack_bytes, 0) << key;
    EXPECT_NE(t.cubin.find("dgt_trace"), std::string::npos) << key << ": the traced cubin has no dgt_trace symbol";
    const jit::CompiledKernel k = jit::compile(plain.source, plain.program_name, plain.name_expression);
    EXPECT_EQ(k.cubin.find("dgt_trace"), std::string::npos) << key << ": the plain cubin carries the trace buffer";
  }
}

}  // namespace
}  // namespace dgt
