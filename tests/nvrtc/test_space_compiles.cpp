// Every candidate of the default search space for every shape of configs/shapes/smoke.txt compiles
// with NVRTC for sm_90a with zero spills, and ptxas' register count respects the model's budget.
// Runs on the CPU machine (no GPU needed); compiles in parallel on all cores.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "core/shapes_file.hpp"
#include "core/thread_pool.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "space/search_space.hpp"

namespace dgt {
namespace {

TEST(SpaceCompiles, EverySmokeCandidateCompilesWithoutSpills) {
  auto shapes = load_shapes_file(std::string(DGT_SOURCE_DIR) + "/configs/shapes/smoke.txt");
  std::map<std::string, KernelSpec> specs;
  for (const auto& s : shapes)
    for (const auto& c : enumerate(SearchSpace::builtin_default(), s.problem).kept) {
      KernelSpec spec = KernelSpec::of(c.config, s.problem);
      specs.emplace(spec.key(), spec);
    }
  ASSERT_GE(specs.size(), 200u);
  std::mutex mu;
  std::vector<std::string> failures;
  int max_regs_1wg = 0;
  {
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
          if (k.registers > entry_cap) problem += " registers " + std::to_string(k.registers) + " > " + std::to_string(entry_cap);
          std::lock_guard<std::mutex> lock(mu);
          if (spec.config.num_math_wg == 1) max_regs_1wg = std::max(max_regs_1wg, k.registers);
        } catch (const std::exception& e) {
          problem = e.what();
        }
        if (!problem.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(key + ": " + problem);
        }
      }));
    for (auto& f : done) f.get();
  }
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::cout << specs.size() << " kernels compiled; max entry registers with one consumer warpgroup: " << max_regs_1wg << "\n";
}

}  // namespace
}  // namespace dgt
