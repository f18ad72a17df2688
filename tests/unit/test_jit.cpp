// NVRTC and the cubin cache, on the CPU machine (NVRTC compiles sm_90a code without a GPU).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_cache.hpp"
#include "jit/embedded_sources.hpp"
#include "jit/kernel_hash.hpp"
#include "space/resource_model.hpp"

namespace dgt::jit {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const char* tag) {
  std::string tmpl = (fs::temp_directory_path() / (std::string("dgtune-") + tag + "-XXXXXX")).string();
  return mkdtemp(tmpl.data());
}

TEST(Jit, EmbeddedSourcesAndHash) {
  bool has_kernel = false;
  for (const auto& s : embedded_sources()) has_kernel |= s.path == "gemm/fp8_gemm.cuh";
  EXPECT_TRUE(has_kernel);
  EXPECT_EQ(kernel_source_hash().size(), 16u);
}

TEST(Jit, PtxasReportParsing) {
  CompiledKernel k;
  parse_ptxas_report(
      "ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z3fooPf\n"
      "    8 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers\n",
      "_Z3fooPf", k);
  EXPECT_EQ(k.registers, 168);
  EXPECT_EQ(k.spill_bytes, 32);
  EXPECT_EQ(k.stack_bytes, 8);
}

TEST(Jit, SerializedWgmmaWarningIsAFailure) {
  // ptxas' wording (CUDA 12.x / 13.x): a mainloop whose WGMMAs ptxas had to serialize.
  const std::string log =
      "ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'\n"
      "ptxas warning : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the "
      "presence of Extern calls in the function '_Z3fooPf'.\n"
      "ptxas info    : Used 168 registers\n";
  EXPECT_NE(serialized_wgmma_warning(log).find("C7514"), std::string::npos);
  EXPECT_NE(
      serialized_wgmma_warning("ptxas warning : (C7515) Potential Performance Loss: wgmma.mma_async instructions are "
                               "serialized due to insufficient register resources for the wgmma pipeline\n")
          .find("C7515"),
      std::string::npos);
  EXPECT_EQ(serialized_wgmma_warning("ptxas info    : Used 168 registers, used 1 barriers\n"), "");
  EXPECT_EQ(serialized_wgmma_warning(""), "");
}

TEST(Jit, SerializedWgmmaKernelFailsToCompile) {
  // A real kernel that makes ptxas serialize: the accumulator of an in-flight WGMMA is read before
  // the wait. compile() must refuse it, naming the warning.
  const std::string src = R"(
#include "ptx/wgmma.cuh"
extern "C" __global__ void __launch_bounds__(128, 1) serialized(float* out, unsigned long long da, unsigned long long db) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  dgt::ptx::wgmma_fence();
  dgt::ptx::WgmmaFp8<8>::mma<0>(d, da, db, 1u);
  d[0] = out[threadIdx.x];  // a non-wgmma instruction defines an accumulator of the in-flight group
  dgt::ptx::WgmmaFp8<8>::mma<0>(d, da, db, 1u);
  dgt::ptx::wgmma_commit();
  dgt::ptx::wgmma_wait<0>();
  for (int i = 0; i < 4; ++i) out[threadIdx.x + 128 * i] = d[i];
}
)";
  try {
    compile(src, "serialized.cu", "");
    FAIL() << "expected ptxas to serialize and compile() to refuse";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNvrtc);
    EXPECT_NE(e.message().find("serialized"), std::string::npos) << e.message();
  }
}

TEST(Jit, CompilesDefaultKernelWithoutSpills) {
  KernelSpec spec;  // 128x128x128, 4 stages, 2 consumer warpgroups, promotion
  GeneratedKernel g = generate_gemm(spec);
  CompiledKernel k = compile(g.source, g.program_name, g.name_expression);
  EXPECT_GT(k.cubin.size(), 1000u);
  EXPECT_NE(k.lowered_name.find("fp8_gemm_kernel"), std::string::npos);
  EXPECT_EQ(k.spill_bytes, 0) << k.log;
  EXPECT_EQ(k.registers, 168) << "384 threads with __launch_bounds__(384, 1) cap entry registers at 168\n" << k.log;
}

/// Compiling `spec`'s kernel fails in NVRTC with the kernel's static_assert naming `rule`.
void expect_compile_error_naming(const KernelSpec& spec, const char* rule) {
  GeneratedKernel g = generate_gemm(spec);
  try {
    compile(g.source, g.program_name, g.name_expression);
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNvrtc);
    EXPECT_NE(std::string(e.what()).find(rule), std::string::npos);
  }
}

TEST(Jit, IllegalConfigFailsWithTheStaticAssertRule) {
  KernelSpec spec;
  spec.config.block_n = 256;  // promote: 256 accumulators + 48 > 232 -> R10
  expect_compile_error_naming(spec, "R10");
  EXPECT_EQ(evaluate_resources(spec).rejection.substr(0, 4), "R10:");
}

TEST(Jit, SwapAbNameExpressionAndRuleR26) {
  // Swap AB: the kernel's A is the problem's B, so the operand types swap, and kSwapAB follows kGroupKind 0.
  KernelSpec spec;
  spec.config.epilogue = Epilogue::kTma;
  spec.config.swap_ab = true;
  spec.a = DType::kE5M2;
  GeneratedKernel g = generate_gemm(spec);
  const std::string& e = g.name_expression;
  const std::string tail = ", 0u, true>";
  ASSERT_GE(e.size(), tail.size());
  EXPECT_EQ(e.substr(e.size() - tail.size()), tail) << e;
  KernelSpec plain = spec;
  plain.config.swap_ab = false;
  const std::string p = generate_gemm(plain).name_expression;
  EXPECT_EQ(p.find(tail), std::string::npos) << p;
  // Types (kTypeA, kTypeB) follow kFastAccum (false): 1u, 0u plain (e5m2, e4m3), 0u, 1u swapped.
  EXPECT_NE(p.find("false, 1u, 0u, true"), std::string::npos) << p;
  EXPECT_NE(e.find("false, 0u, 1u, true"), std::string::npos) << e;
  // A grouped kernel never swaps (G6): codegen refuses rather than write a name expression with both arguments.
  try {
    generate_grouped_gemm(spec, GroupKind::kMasked);
    FAIL() << "expected a refusal";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kInvalid);
    EXPECT_NE(err.message().find("G6"), std::string::npos) << err.message();
  }
  // The kernel's own R26: a bias with swap AB is a compile error naming the rule, as the host model says.
  spec.a = DType::kE4M3;
  spec.bias = Bias::kBF16;
  expect_compile_error_naming(spec, "R26");
  EXPECT_EQ(evaluate_resources(spec).rejection.substr(0, 4), "R26:");
}

TEST(CubinCache, HitMissAndCorruptionRebuild) {
  CubinCache cache(temp_dir("cache"));
  GeneratedKernel g = generate_util_module();
  bool hit = true;
  CompiledKernel a = cache.get_or_compile(g, &hit);
  EXPECT_FALSE(hit);
  CompiledKernel b = cache.get_or_compile(g, &hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(a.cubin, b.cubin);
  // Truncate the cubin: the size/hash check must notice and rebuild.
  const std::string path = cache.dir() + "/" + cache.key_of(g) + ".cubin";
  fs::resize_file(path, 100);
  CompiledKernel c = cache.get_or_compile(g, &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(c.cubin, a.cubin);
  // Corrupt the metadata: rebuilt too.
  std::ofstream(cache.dir() + "/" + cache.key_of(g) + ".json") << "{not json";
  cache.get_or_compile(g, &hit);
  EXPECT_FALSE(hit);
  cache.get_or_compile(g, &hit);
  EXPECT_TRUE(hit);
}

TEST(CubinCache, ConcurrentProcessesCompileOnce) {
  const std::string dir = temp_dir("race");
  GeneratedKernel g = generate_util_module();
  constexpr int kProcs = 4;
  pid_t pids[kProcs];
  for (int i = 0; i < kProcs; ++i) {
    pids[i] = fork();
    ASSERT_GE(pids[i], 0);
    if (pids[i] == 0) {
      bool hit = false;
      try {
        CubinCache(dir).get_or_compile(g, &hit);
      } catch (...) {
        _exit(2);
      }
      _exit(hit ? 0 : 1);  // 1 = this process compiled
    }
  }
  int compiled = 0, failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    compiled += WEXITSTATUS(status) == 1;
    failed += WEXITSTATUS(status) == 2;
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(compiled, 1) << "the per-key lock must make exactly one process compile";
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().extension() == ".cubin";
  EXPECT_EQ(entries, 1);
}

}  // namespace
}  // namespace dgt::jit
