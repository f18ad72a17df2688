// The grouped (MoE) kernels on the CPU machine: every variant of a small grouped space (contiguous and masked, per-
// tensor and block scales, promote and fast, one and two consumer warpgroups, 1g and 2g, a cluster along N, a
// BLOCK_N that is not a multiple of 128) compiles with NVRTC for sm_90a with zero spills and no stack; the SASS of
// each has QGMMA, no local memory and no R2UR between a full-barrier wait and the last QGMMA of a k-block (the dense
// kernel's checks, tests/nvrtc/test_sass.cpp). The host rules refuse what the kernel's static_asserts refuse.
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "core/thread_pool.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "sass_check.hpp"
#include "space/grouped_rules.hpp"
#include "space/resource_model.hpp"

namespace dgt {
namespace {

struct Variant {
  KernelSpec spec;
  GroupKind kind;
  std::string name() const { return spec.key() + "_" + to_string(kind); }
};

/// The small grouped space: every config x kind x scale (x accumulation for per-tensor).
std::vector<Variant> grouped_space() {
  const char* keys[] = {
      "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",  // the DeepGEMM-like tile, one group in flight
      "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1",  // two groups in flight
      "64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1",   // 64-row blocks (two per 128-row segment)
      "128x144x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1",  // N tiles across 128-column scale blocks
      "128x128x128_s5_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1",  // cluster along N: A multicast in one group
      "128x256x128_s3_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",  // the widest tile
      "64x96x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1",    // the GPU tests' configs (tests/gpu/test_gpu_grouped.cpp)
      "128x64x128_s6_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1",
      "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",    // the TMA epilogue (whole real-row boxes)
      "128x64x128_s6_wg2_sw128_c1x2_rn4_tma_sk1_sm0_2g_p1",     // TMA epilogue, a cluster, raster along N
  };
  std::vector<Variant> out;
  for (const char* key : keys)
    for (GroupKind kind : {GroupKind::kContiguous, GroupKind::kMasked})
      for (ScaleMode scale : {ScaleMode::kPerTensor, ScaleMode::kBlock})
        for (Accum accum : {Accum::kPromote, Accum::kFast}) {
          if (scale == ScaleMode::kBlock && accum == Accum::kFast) continue;  // block scales promote (validate_problem)
          KernelSpec s;
          s.config = KernelConfig::parse_key(key);
          s.scale = scale;
          s.accum = accum;
          if (accum == Accum::kFast) s.config.promote_every = s.config.mainloop == Mainloop::k2g ? 1 : 8;
          if (!evaluate_resources(s).ok()) continue;
          out.push_back({s, kind});
        }
  return out;
}

TEST(GroupedCompiles, SmallSpaceHasNoSpillsAndCleanSass) {
  const std::vector<Variant> variants = grouped_space();
  ASSERT_GE(variants.size(), 24u);
  const std::string cuobjdump = test::find_cuobjdump();
  std::mutex mu;
  std::vector<std::string> failures;
  ThreadPool pool(0);
  std::vector<std::future<void>> done;
  for (const Variant& v : variants)
    done.push_back(pool.submit([&, v] {
      std::string problem;
      try {
        ASSERT_EQ(grouped_rule_violation(v.spec.config), "") << v.name();
        const jit::GeneratedKernel g = jit::generate_grouped_gemm(v.spec, v.kind);
        const jit::CompiledKernel k = jit::compile(g.source, g.program_name, g.name_expression);
        if (k.spill_bytes != 0 || k.stack_bytes != 0)
          problem = "spills " + std::to_string(k.spill_bytes) + " B, stack " + std::to_string(k.stack_bytes) + " B";
        const int entry_cap = v.spec.config.num_math_wg == 2 ? 168 : 240;
        if (k.registers > entry_cap) problem += " registers " + std::to_string(k.registers);
        if (!cuobjdump.empty()) {
          const test::SassReport r = test::analyze_sass(test::disassemble(cuobjdump, k.cubin));
          if (r.qgmma == 0) problem += " no QGMMA";
          if (r.slow_mma != 0) problem += " slow MMA";
          if (r.local_memory != 0) problem += " local memory";
          if (r.windows == 0) problem += " no mainloop window";
          if (r.r2ur_in_windows > test::allowed_window_r2ur(v.spec.config))
            problem += " R2UR in a mainloop window: " + r.first_offender;
        }
      } catch (const std::exception& e) {
        problem = e.what();
      }
      if (!problem.empty()) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back(v.name() + ": " + problem);
      }
    }));
  for (auto& f : done) f.get();
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::cout << variants.size() << " grouped kernels compiled"
            << (cuobjdump.empty() ? " (no cuobjdump: SASS not checked)" : ", SASS checked") << "\n";
}

TEST(GroupedCompiles, HostRulesMatchTheKernelsStaticAsserts) {
  // A config the host refuses (G2: cluster along M) must also fail the kernel's compile, naming the rule.
  KernelSpec s;
  s.config = KernelConfig::parse_key("128x128x128_s5_wg2_sw128_c2x1_rm8_direct_sk1_sm0_2g_p1");
  EXPECT_NE(grouped_rule_violation(s.config).find("G2"), std::string::npos);
  const jit::GeneratedKernel g = jit::generate_grouped_gemm(s, GroupKind::kMasked);
  try {
    jit::compile(g.source, g.program_name, g.name_expression);
    ADD_FAILURE() << "a grouped kernel with a cluster along M compiled";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("G2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dgt
