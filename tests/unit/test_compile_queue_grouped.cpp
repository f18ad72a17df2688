// Grouped kernels compiled ahead on the sweep's compile queue (tune/compile_queue.hpp prepare_grouped / get_grouped):
// a grouped spec is queued once per layout, apart from the dense kernel of the same config; the cubin it publishes
// is the one KernelCache::get_grouped asks the cubin cache for (so the worker loads it without NVRTC), also for the
// sweep's ranked candidates; a config that
// breaks a grouped rule is not queued and is an invalid trial; a failed compile is a compile_error trial; a measured
// trial gets the compile's NVRTC time. NVRTC is replaced by a counting stand-in: no GPU, no compiler.
#include <gtest/gtest.h>

#include "temp_dir_test.hpp"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/codegen.hpp"
#include "jit/cubin_cache.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/kernel_config.hpp"
#include "space/cost_model.hpp"
#include "space/grouped_rules.hpp"
#include "space/search_space.hpp"
#include "tune/compile_queue.hpp"

namespace dgt {
namespace {

constexpr const char* kConfig = "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1";

class CompileQueueGrouped : public test::TempDirTest {
 protected:
  /// A cubin cache whose "compiler" records the program names it was given (or throws `fail` when set).
  jit::CubinCache cache(const std::string& fail = "") {
    return jit::CubinCache(path("cubins"), [this, fail](const std::string&, const std::string& program, const std::string&) {
      std::lock_guard lock(mu_);
      programs_.push_back(program);
      if (!fail.empty()) throw std::runtime_error(fail);
      return jit::CompiledKernel{"cubin", "kernel", "", 168, 0, 0, 1234.0};
    });
  }
  std::vector<std::string> programs() {
    std::lock_guard lock(mu_);
    return programs_;
  }

  const GroupedProblem g_ = parse_grouped_problem("kind=masked groups=4 masked_m=1,2,3,4 4096 7168 scale=block", "t");

 private:
  std::mutex mu_;
  std::vector<std::string> programs_;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST_F(CompileQueueGrouped, GroupedSpecIsQueuedOncePerLayoutAsTheKernelTheWorkerLoads) {
  const jit::CubinCache cubins = cache();
  // The sweep's candidate: the spec of the keyed problem with the enumeration's resource report.
  const EvaluatedSpec es = EvaluatedSpec::evaluate(KernelSpec::of(KernelConfig::parse_key(kConfig), g_.keyed()));
  {
    CompileQueue q(cubins, 2);
    EXPECT_TRUE(q.prepare_grouped(es, GroupKind::kMasked));
    EXPECT_FALSE(q.prepare_grouped(es, GroupKind::kMasked));     // once per compiled key and layout
    EXPECT_TRUE(q.prepare_grouped(es, GroupKind::kContiguous));  // the other layout is another kernel
    EXPECT_TRUE(q.prepare(es));                                  // and so is the dense kernel of the config
    const CompileResult r = q.get_grouped(es, GroupKind::kMasked);
    ASSERT_TRUE(r.kernel) << r.error;
    EXPECT_DOUBLE_EQ(r.kernel->compile_ms, 1234.0);
  }
  std::vector<std::string> seen = programs();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const std::string& p) { return ends_with(p, "_masked.cu"); }), 1);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](const std::string& p) { return ends_with(p, "_contiguous.cu"); }),
            1);
  // What KernelCache::get_grouped compiles for the worker's measure (the dense view's spec, evaluated there) is a
  // cubin-cache hit: the same source, so no second NVRTC compile.
  bool hit = false;
  cubins.get_or_compile(
      jit::generate_grouped_gemm(KernelSpec::of(KernelConfig::parse_key(kConfig), g_.dense_view()), GroupKind::kMasked),
      &hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(programs().size(), 3u);
}

// The sweep queues a candidate with the report the enumeration computed (rank_candidates on the keyed problem); the
// worker evaluates the dense view's spec itself. Both must give the same source, or every grouped kernel would be
// compiled twice (ahead, then by the worker).
TEST_F(CompileQueueGrouped, SweepCandidatesGenerateTheSourceTheWorkerGenerates) {
  const SearchSpace space = SearchSpace::builtin_default();
  for (const GroupedProblem& g :
       {g_, parse_grouped_problem("kind=contiguous groups=32 m_per_group=route:1:1792:8 7168 2048 scale=block", "t")}) {
    int checked = 0;
    for (const Candidate& c : rank_candidates(space, g.keyed(), 132)) {
      if (!grouped_rule_violation(c.config).empty()) continue;
      const EvaluatedSpec queued{KernelSpec::of(c.config, g.keyed()), c.resources};
      EXPECT_EQ(jit::generate_grouped_gemm(queued.spec, g.kind, queued.resources).source,
                jit::generate_grouped_gemm(KernelSpec::of(c.config, g.dense_view()), g.kind).source)
          << c.config.key();
      if (++checked == 16) break;
    }
    EXPECT_EQ(checked, 16);
  }
}

TEST_F(CompileQueueGrouped, GroupedRuleBreakerIsNotQueuedAndIsInvalid) {
  const jit::CubinCache cubins = cache();
  // split_k 2 breaks G3 (the dense rules allow it).
  const EvaluatedSpec es = EvaluatedSpec::evaluate(
      KernelSpec::of(KernelConfig::parse_key("128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1"), g_.keyed()));
  ASSERT_TRUE(es.resources.ok()) << es.resources.rejection;
  CompileQueue q(cubins, 1);
  EXPECT_FALSE(q.prepare_grouped(es, GroupKind::kMasked));
  const CompileResult r = q.get_grouped(es, GroupKind::kMasked);
  EXPECT_FALSE(r.kernel);
  EXPECT_NE(r.error.find("G3"), std::string::npos) << r.error;
  const auto t = grouped_pre_device_trial(es, g_.keyed(), r, "{}");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, TrialStatus::kInvalid);
  EXPECT_EQ(t->problem, g_.keyed());
  EXPECT_NE(t->error.find("G3"), std::string::npos) << t->error;
  EXPECT_TRUE(programs().empty());
}

TEST_F(CompileQueueGrouped, FailedCompileIsACompileErrorAndACompiledOneNotesItsTime) {
  const EvaluatedSpec es = EvaluatedSpec::evaluate(KernelSpec::of(KernelConfig::parse_key(kConfig), g_.keyed()));
  {
    const jit::CubinCache cubins = cache("error: ptxas died");
    CompileQueue q(cubins, 1);
    ASSERT_TRUE(q.prepare_grouped(es, GroupKind::kMasked));
    const CompileResult r = q.get_grouped(es, GroupKind::kMasked);
    const auto t = grouped_pre_device_trial(es, g_.keyed(), r, "{}");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->status, TrialStatus::kCompileError);
    EXPECT_NE(t->error.find("ptxas died"), std::string::npos) << t->error;
    EXPECT_EQ(t->config.key(), kConfig);
  }
  const jit::CubinCache cubins = cache();
  CompileQueue q(cubins, 1);
  const CompileResult r = q.get_grouped(es, GroupKind::kMasked);  // never prepared: queued now
  ASSERT_TRUE(r.kernel);
  EXPECT_FALSE(grouped_pre_device_trial(es, g_.keyed(), r, "{}"));
  TrialRecord measured;
  measured.compile_ms = 3.0;  // the bench's cubin-cache load
  note_grouped_compile(measured, r);
  EXPECT_DOUBLE_EQ(measured.compile_ms, 1234.0);
  EXPECT_EQ(measured.registers, 168);
}

}  // namespace
}  // namespace dgt
