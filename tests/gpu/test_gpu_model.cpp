// The resource model against the compiled kernels (every candidate of the default space for two
// problems): ptxas registers equal the driver's, no local memory, no static shared memory (all of
// it is the modelled dynamic size), and a launch with the modelled size runs and verifies.
#include "harness.hpp"

#include "space/search_space.hpp"

namespace dgt::test {
namespace {

TEST(ResourceModelOnDevice, EveryDefaultCandidateMatchesTheModel) {
  Gpu& gpu = Gpu::get();
  int checked = 0;
  for (Accum accum : {Accum::kPromote, Accum::kFast}) {
    Problem p = Problem::dense(1021, 1023, 1040);
    p.accum = accum;
    ProblemData data(p, *gpu.util, 7 + int(accum), gpu.stream);
    for (const auto& c : enumerate(SearchSpace::builtin_default(), p).kept) {
      const KernelSpec spec = KernelSpec::of(c.config, p);
      auto compiled = gpu.cache->get_or_compile(jit::generate_gemm(spec));
      auto k = gpu.kernel(spec);
      EXPECT_EQ(k->kernel().registers, compiled.registers) << spec.key();
      EXPECT_EQ(k->kernel().local_bytes, 0) << spec.key();
      EXPECT_EQ(k->kernel().static_smem_bytes, 0) << spec.key();
      EXPECT_EQ(k->kernel().dynamic_smem_bytes, c.resources.smem.total) << spec.key();
      Verification v = gpu.run(data, c.config);
      EXPECT_TRUE(v.ok) << spec.key() << ": " << describe(v);
      ++checked;
    }
  }
  EXPECT_GE(checked, 300);
}

}  // namespace
}  // namespace dgt::test
