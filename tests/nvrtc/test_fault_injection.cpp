// The test-only faulty candidates of the worker-process tests (jit/fault_injection.hpp): DGTUNE_TEST_FAULT puts
// `#define DGT_TEST_FAULT n` into exactly the listed candidate's source, the trapping and spinning kernels compile
// for sm_90a (what tests/gpu/worker_faults.sh launches), and their code differs from the healthy kernel's (so the
// cubin cache never hands a faulty cubin to a healthy spec or the reverse). CPU only.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "jit/fault_injection.hpp"

namespace dgt {
namespace {

TEST(FaultInjection, OnlyTheListedCandidateTrapsOrSpinsAndItsCodeDiffers) {
#ifndef DGTUNE_FAULT_INJECTION
  GTEST_SKIP() << "built with -DDGTUNE_FAULT_INJECTION=OFF";
#endif
  const Problem p = Problem::dense(256, 512, 1024);
  const KernelSpec trap = KernelSpec::of(KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1"), p);
  const KernelSpec spin = KernelSpec::of(KernelConfig::parse_key("64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1"), p);
  const KernelSpec healthy = KernelSpec::of(KernelConfig::parse_key("128x64x128_s6_wg2_sw128_c1x1_rm8_direct_sk1"), p);
  const std::string healthy_source = jit::generate_gemm(trap).source;
  ASSERT_EQ(setenv("DGTUNE_TEST_FAULT", ("trap:" + trap.config.key() + ",spin:" + spin.config.key()).c_str(), 1), 0);
  EXPECT_EQ(jit::test_fault_of(trap), 1);
  EXPECT_EQ(jit::test_fault_of(spin), 2);
  EXPECT_EQ(jit::test_fault_of(healthy), 0);
  const jit::GeneratedKernel t = jit::generate_gemm(trap), s = jit::generate_gemm(spin), h = jit::generate_gemm(healthy);
  EXPECT_EQ(t.source.rfind("#define DGT_TEST_FAULT 1\n", 0), 0u) << t.source;
  EXPECT_EQ(s.source.rfind("#define DGT_TEST_FAULT 2\n", 0), 0u) << s.source;
  EXPECT_EQ(h.source.find("DGT_TEST_FAULT"), std::string::npos);
  EXPECT_NE(t.source, healthy_source);  // the cache key is the source's hash
  const jit::CompiledKernel tk = jit::compile(t.source, t.program_name, t.name_expression);
  const jit::CompiledKernel sk = jit::compile(s.source, s.program_name, s.name_expression);
  unsetenv("DGTUNE_TEST_FAULT");
  const jit::CompiledKernel hk = jit::compile(healthy_source, t.program_name, t.name_expression);
  EXPECT_EQ(tk.spill_bytes, 0);
  EXPECT_EQ(sk.spill_bytes, 0);
  EXPECT_NE(tk.cubin, hk.cubin);
  EXPECT_EQ(jit::test_fault_of(trap), 0);  // unset: nothing is faulty
}

}  // namespace
}  // namespace dgt
