// The ladder probe (docs/loader.md "The ladder probe"): at the first call of an M no sweep tuned, dgt::Gemm times the
// ladder rule's kernel and cuBLASLt's heuristic and runs the faster; at a tuned M, with the option off, and from
// memory afterwards nothing is timed; the output of whichever side runs matches the reference.
#include <cstdio>
#include <string>

#include "dgtune/gemm.hpp"
#include "harness.hpp"
#include "loader/ladder_probe.hpp"
#include "tuned_family.hpp"

namespace dgt::test {
namespace {

struct ParsedProbe {
  int cublaslt_rounds = -1, rounds = 0, copies = 0, algo = 0, algos = 0;
  double kernel_us = 0, cublaslt_us = 0, ms = 0;
  std::string protocol;
};

/// GemmChoice::probe's text ("cuBLASLt more than 1% faster in C of R rounds (best: kernel K us, cuBLASLt L us,
/// heuristic result J of A; PROTOCOL, N operand copies; probe T ms)") read back.
ParsedProbe parse_probe(const std::string& text) {
  ParsedProbe p;
  char proto[32] = {0};
  const int got = std::sscanf(text.c_str(),
                              "cuBLASLt more than 1%% faster in %d of %d rounds (best: kernel %lf us, cuBLASLt %lf us, "
                              "heuristic result %d of %d; %31[^,], %d operand cop%*[a-z]; probe %lf ms)",
                              &p.cublaslt_rounds, &p.rounds, &p.kernel_us, &p.cublaslt_us, &p.algo, &p.algos, proto,
                              &p.copies, &p.ms);
  EXPECT_EQ(got, 9) << text;
  p.protocol = proto;
  return p;
}

GemmChoice choose_m(Gemm& g, int64_t m) { return g.choose(m, kFamilyN, kFamilyK, kFamilyK, kFamilyK, kFamilyN); }

TEST(LadderProbe, OffATunedMTheFasterMeasuredSideRunsAndIsRight) {
  Gpu& gpu = Gpu::get();
  TempDir dir("dgtune-probe");
  GemmOptions o;
  o.db_path = tuned_family_db(dir.path);  // winners at M = 1, 256, 1024
  o.cache_dir = dir.path + "/cache";
  Gemm gemm(o);

  const GemmChoice at = choose_m(gemm, 256);
  EXPECT_EQ(at.source, "db");
  EXPECT_TRUE(at.probe.empty()) << at.probe;
  EXPECT_EQ(gemm.stats().ladder_probes, 0u) << "a tuned M is never probed";

  const int64_t ms[] = {100, 300, 700, 2000};  // three ladder picks and one past the largest tuned M ("nearest")
  std::string probe300;
  for (int64_t m : ms) {
    const GemmChoice c = choose_m(gemm, m);
    if (m == 300) probe300 = c.probe;
    EXPECT_EQ(c.source, m > 1024 ? "nearest" : "ladder") << m;
    ASSERT_FALSE(c.probe.empty()) << "M = " << m << " was not probed";
    const ParsedProbe t = parse_probe(c.probe);
    EXPECT_GT(t.kernel_us, 0);
    EXPECT_GT(t.cublaslt_us, 0);
    EXPECT_EQ(t.rounds, kProbeRounds);
    EXPECT_GE(t.algos, 1);
    EXPECT_LE(t.algos, kProbeCublasLtAlgos);
    EXPECT_GE(t.algo, 1);
    EXPECT_LE(t.algo, t.algos);
    // Its wall time holds the timed launches at least.
    EXPECT_GT(t.ms * 1e3, kProbeRounds * (t.kernel_us + t.cublaslt_us)) << c.probe;
    if (c.backend == "cublaslt")
      EXPECT_NE(c.cublaslt_algo.find("(probe: heuristic result " + std::to_string(t.algo) + ")"), std::string::npos)
          << c.cublaslt_algo;
    EXPECT_EQ(t.protocol, "cold-l2");
    const size_t operand_bytes = size_t(m + kFamilyN) * size_t(kFamilyK);
    EXPECT_EQ(t.copies, probe_operand_sets(operand_bytes, gpu.device.l2_bytes, true)) << c.probe;
    EXPECT_GE(t.cublaslt_rounds, 0);
    EXPECT_LE(t.cublaslt_rounds, t.rounds);
    EXPECT_EQ(c.backend, 2 * t.cublaslt_rounds > t.rounds ? "cublaslt" : "dgtune") << c.probe;
    EXPECT_EQ(c.backend == "cublaslt", !c.cublaslt_algo.empty()) << c.cublaslt_algo;

    const Problem p = Problem::dense(m, kFamilyN, kFamilyK);
    ProblemData data(p, *gpu.util, 5100 + uint64_t(m), gpu.stream);
    data.poison_output(gpu.stream);
    const auto ops = data.operands();
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream);
    const Verification v = data.verify(gpu.stream);
    EXPECT_TRUE(v.ok) << p.label() << " " << c.backend << " " << c.config_key << ": " << describe(v);
    std::printf("  M = %lld: %s %s, probe: %s\n", static_cast<long long>(m), c.source.c_str(), c.backend.c_str(),
                c.probe.c_str());
  }
  EXPECT_EQ(gemm.stats().ladder_probes, 4u);
  EXPECT_EQ(choose_m(gemm, 300).probe, probe300);
  EXPECT_EQ(gemm.stats().ladder_probes, 4u) << "a resolved M is served from memory, never probed again";

  // Off: the prediction decides, the same kernel config, nothing timed.
  GemmOptions off = o;
  off.probe_ladder = false;
  Gemm plain(off);
  const GemmChoice c_off = choose_m(plain, 300);
  EXPECT_TRUE(c_off.probe.empty()) << c_off.probe;
  EXPECT_EQ(c_off.config_key, choose_m(gemm, 300).config_key);
  EXPECT_EQ(plain.stats().ladder_probes, 0u);

  // Hot-graph: back-to-back launches on one copy of the operands.
  GemmOptions hot = o;
  hot.protocol = "hot-graph";
  Gemm hot_gemm(hot);
  const ParsedProbe h = parse_probe(choose_m(hot_gemm, 300).probe);
  EXPECT_EQ(h.protocol, "hot-graph");
  EXPECT_EQ(h.copies, 1);

  // cuBLASLt off: the probe has nothing to compare.
  GemmOptions no_lt = o;
  no_lt.cublaslt = false;
  Gemm kernel_only(no_lt);
  EXPECT_TRUE(choose_m(kernel_only, 300).probe.empty());
  EXPECT_EQ(kernel_only.stats().ladder_probes, 0u);
}

}  // namespace
}  // namespace dgt::test
