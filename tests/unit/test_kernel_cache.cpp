// KernelCache without a GPU: keys, refusal of illegal specs before NVRTC or CUDA, and the guard that
// it is the only host cache of loaded kernels under src/, tests/ and examples/.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/kernel_cache.hpp"
#include "source_scan.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("dgtune-kc-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

KernelSpec legal_spec() {
  KernelSpec s;
  s.config = KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0");
  return s;
}

bool empty_dir(const fs::path& p) { return fs::is_empty(p); }

TEST(KernelCache, RefusesIllegalSpecWithTheRuleBeforeCompilingOrLoading) {
  TempDir tmp;
  jit::CubinCache cubins(tmp.path.string());
  KernelCache cache(cubins, 132);
  struct Case {
    const char* key;
    const char* rule;
  };
  const Case cases[] = {
      {"96x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R1:"},
      {"128x128x128_s1_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R8:"},
      {"128x256x128_s8_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R9:"},
      {"128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk17_sm0", "R15:"},
  };
  for (const auto& c : cases) {
    KernelSpec spec = legal_spec();
    spec.config = KernelConfig::parse_key(c.key);
    for (int with_compiled = 0; with_compiled < 2; ++with_compiled) {
      try {
        // An empty "cubin": had the cache tried to load it, the driver (or the missing GPU) would
        // have answered with kDriver/kCuda; NVRTC would have left files in the cubin cache.
        if (with_compiled)
          cache.get(spec, jit::CompiledKernel{});
        else
          cache.get(spec);
        ADD_FAILURE() << c.key << " was not refused";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalid) << e.what();
        EXPECT_NE(e.message().find(c.rule), std::string::npos) << e.message();
        EXPECT_NE(e.message().find(spec.key()), std::string::npos) << e.message();
      }
    }
    EXPECT_THROW(KernelCache::require_legal(spec), Error);
  }
  EXPECT_TRUE(empty_dir(tmp.path)) << "an illegal spec reached the cubin cache";
  EXPECT_EQ(cache.module_count(), 0u);
  EXPECT_EQ(cache.kernel_count(), 0u);
  EXPECT_EQ(cache.find(legal_spec()), nullptr);
  EXPECT_TRUE(KernelCache::require_legal(legal_spec()).ok());
  EXPECT_EQ(KernelCache::require_legal(legal_spec()).smem.total, 132160);  // the size the module is loaded with
}

TEST(KernelCache, ModuleAndKernelKeys) {
  const KernelSpec base = legal_spec();
  auto with = [&](int split_k, int sms) {
    KernelSpec s = base;
    s.config.split_k = split_k;
    s.config.sms = sms;
    return s;
  };
  // split_k beyond "split or not" and sms are run-time arguments: one module ...
  EXPECT_EQ(KernelCache::module_key(with(2, 0)), KernelCache::module_key(with(8, 0)));
  EXPECT_EQ(KernelCache::module_key(with(3, 66)), KernelCache::module_key(with(16, 0)));
  EXPECT_EQ(KernelCache::module_key(with(1, 0)), KernelCache::module_key(with(1, 100)));
  EXPECT_NE(KernelCache::module_key(with(1, 0)),
            KernelCache::module_key(with(2, 0)));  // the split-K epilogue is compiled in
  // ... but a launchable kernel each.
  EXPECT_NE(KernelCache::kernel_key(with(2, 0)), KernelCache::kernel_key(with(8, 0)));
  EXPECT_NE(KernelCache::kernel_key(with(1, 0)), KernelCache::kernel_key(with(1, 100)));
  // The shared-memory size a module is loaded with is the same for every spec mapping to it.
  EXPECT_EQ(KernelCache::require_legal(with(2, 0)).smem.total, KernelCache::require_legal(with(16, 66)).smem.total);
  // Operand types and accumulation change the code.
  KernelSpec e5 = base;
  e5.a = DType::kE5M2;
  KernelSpec fast = base;
  fast.accum = Accum::kFast;
  EXPECT_NE(KernelCache::module_key(base), KernelCache::module_key(e5));
  EXPECT_NE(KernelCache::module_key(base), KernelCache::module_key(fast));
  EXPECT_EQ(KernelCache::module_key(base), base.compiled_key());
  EXPECT_EQ(KernelCache::kernel_key(base), base.key());
}

// ---- the guard: one host definition of the kernel cache ----

/// Lines that hold a cache of loaded kernels, or load or build GEMM kernels, outside launch/kernel_cache.*.
std::vector<std::string> kernel_cache_violations(const std::string& text) {
  const std::string code = test::strip_comments_and_strings(text);
  std::vector<std::string> out;
  // Associative containers whose template arguments (balanced <...>) name a loaded kernel.
  const std::regex container(R"(\b(?:unordered_)?(?:multi)?(?:map|flat_map)\s*<)");
  const std::regex loaded(R"(\b(?:LoadedKernel|GemmKernel|CUfunction|CUmodule|Module)\b)");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), container); it != std::sregex_iterator(); ++it) {
    size_t i = static_cast<size_t>(it->position() + it->length());
    int depth = 1;
    const size_t start = i;
    while (i < code.size() && depth > 0 && code[i] != ';' && code[i] != '{') {
      if (code[i] == '<') ++depth;
      if (code[i] == '>') --depth;
      ++i;
    }
    const std::string args = code.substr(start, i - start);
    if (std::regex_search(args, loaded))
      out.push_back(std::to_string(test::line_of(code, static_cast<size_t>(it->position()))) + ": " + it->str() + args);
  }
  // Loading a GEMM module or building a launchable kernel by hand.
  for (const char* re :
       {R"(\bload_kernel\s*\()", R"(\bmake_(?:shared|unique)\s*<\s*(?:dgt::)?(?:jit::)?GemmKernel\s*>)",
        R"(\bnew\s+(?:dgt::)?(?:jit::)?GemmKernel\b)", R"(\b(?:class|struct)\s+KernelCache\s*[:{])",
        R"(\bWorkspaceArena\b)"})
    for (auto& m : test::matches(code, std::regex(re))) out.push_back(std::move(m));
  return out;
}

TEST(KernelCacheSource, ScannerCatchesPlantedCaches) {
  const char* planted[] = {
      "std::map<std::string, jit::LoadedKernel> modules_;",
      "std::unordered_map<std::string, std::shared_ptr<jit::GemmKernel>> kernels;  // by spec key",
      "using Kernels = std::map<std::pair<int, std::string>, std::shared_ptr<const dgt::jit::GemmKernel>>;",
      "std::unordered_map<std::string, CUfunction> fns;",
      "mit = modules.emplace(spec.compiled_key(), jit::load_kernel(compiled, res.smem.total)).first;",
      "auto k = std::make_shared<jit::GemmKernel>(spec, mit->second, device.sm_count);",
      "class KernelCache { };",
      "WorkspaceArena arena;",
  };
  for (const char* p : planted) EXPECT_FALSE(kernel_cache_violations(p).empty()) << "not caught: " << p;
  const char* clean[] = {
      "std::map<std::string, int> counts;",
      "std::map<std::string, std::shared_future<CompileResult>> compiles_;",
      "std::unordered_map<ShapeKey, Entry, ShapeKeyHash> shapes;",
      "std::shared_ptr<jit::GemmKernel> kernel = kernels_->get(spec, *compiled.kernel);",
      "// std::map<std::string, jit::LoadedKernel> in a comment",
  };
  for (const char* c : clean) EXPECT_TRUE(kernel_cache_violations(c).empty()) << "false alarm: " << c;
}

TEST(KernelCacheSource, OneHostDefinitionOfTheKernelCache) {
  const fs::path root(DGT_SOURCE_DIR);
  // Where loading is legitimate: the cache itself, and the module loader it calls (jit/module.*).
  const std::vector<fs::path> allowed = {"src/launch/kernel_cache.hpp", "src/launch/kernel_cache.cpp",
                                         "src/jit/module.hpp", "src/jit/module.cpp",
                                         "tests/unit/test_kernel_cache.cpp"};
  ASSERT_FALSE(kernel_cache_violations(test::read_text(root / "src/launch/kernel_cache.hpp")).empty())
      << "the scanner must see the cache's own maps";
  std::vector<std::string> found;
  for (const char* dir : {"src", "tests", "examples"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& rel : test::cxx_files(root / dir)) {
      const fs::path path = fs::path(dir) / rel;
      if (std::find(allowed.begin(), allowed.end(), path) != allowed.end()) continue;
      for (const auto& v : kernel_cache_violations(test::read_text(root / path)))
        found.push_back(path.string() + ":" + v);
    }
  }
  std::string list;
  for (const auto& f : found) list += "\n  " + f;
  EXPECT_TRUE(found.empty())
      << "loaded kernels are cached in one place, dgt::KernelCache (src/launch/kernel_cache.hpp); "
         "use it instead of:"
      << list;
}

}  // namespace
}  // namespace dgt
