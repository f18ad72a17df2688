// Kernel bundles on the GPU (docs/loader.md "Kernel bundles"): a bundle exported from a tuned DB warms a Gemm whose
// cubin cache is empty without one NVRTC compile, every output matches the reference (listed M, M between them, with
// cuBLASLt as a backend and without), the bundle is never written, and a bundle of another build is refused at
// construction naming the field.
#include "harness.hpp"
#include "tuned_family.hpp"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "dgtune/gemm.hpp"
#include "eval/bundle_export.hpp"
#include "jit/kernel_hash.hpp"
#include "tune/session.hpp"

namespace dgt::test {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kN = kFamilyN, kK = kFamilyK;

/// Every file under `dir` with its contents.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    out[e.path().string()] = ss.str();
  }
  return out;
}

size_t cubins_in(const std::string& dir) {
  size_t n = 0;
  if (fs::exists(dir))
    for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.path().extension() == ".cubin";
  return n;
}

void warm_from_bundle(bool cublaslt) {
  Gpu& gpu = Gpu::get();
  TempDir dir("dgtune-bundle");
  const std::string db = tuned_family_db(dir.path);
  BundleExportOptions eo;
  eo.db_path = db;
  eo.out_dir = dir.path + "/bundle";
  eo.cache_dir = dir.path + "/export-cache";
  const BundleExportReport er = export_bundle(eo);
  EXPECT_EQ(er.families, 1u);
  EXPECT_GE(er.cubins, 3u);  // the three winners' kernels at least
  const auto bundle_before = snapshot(eo.out_dir);

  GemmOptions o;
  o.db_path = db;
  o.cache_dir = dir.path + "/empty-cache";  // nothing in it: every kernel must come from the bundle
  o.bundle = eo.out_dir;
  o.cublaslt = cublaslt;
  Gemm gemm(o);
  const std::vector<int64_t> listed = {1, 8, 64, 200, 256, 700, 1024, 3000};
  WarmupProblem w;
  w.n = kN, w.k = kK, w.lda = kK, w.ldb = kK, w.ldd = kN;
  w.m = listed;
  const WarmupReport r = gemm.warmup({w});
  EXPECT_EQ(r.nvrtc_compiles, 0u);
  GemmStats s = gemm.stats();
  EXPECT_EQ(s.nvrtc_compiles, 0u);
  EXPECT_EQ(s.cache_loads, 0u);
  EXPECT_GT(s.bundle_loads, 0u);
  EXPECT_GE(s.bundle_loads, 3u) << "the three winners' kernels";

  // Listed M and M between them (resolved now from the warmed family), outputs against the reference.
  std::vector<int64_t> ms = listed;
  for (int64_t m : {2, 33, 130, 255, 257, 900, 2048, 5000}) ms.push_back(m);
  for (size_t i = 0; i < ms.size(); ++i) {
    const Problem p = Problem::dense(ms[i], kN, kK);
    ProblemData data(p, *gpu.util, 7100 + i, gpu.stream);
    data.poison_output(gpu.stream);
    const auto ops = data.operands();
    gemm.run(ops.a, ops.b, ops.d, p.m, p.n, p.k, p.lda, p.ldb, p.ldd, ops.scale_a, ops.scale_b, gpu.stream);
    DGT_CHECK_CUDA(cudaStreamSynchronize(gpu.stream));
    const Verification v = data.verify(gpu.stream);
    const GemmChoice c = gemm.choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd);
    EXPECT_TRUE(v.ok) << p.label() << " " << c.config_key << " " << c.source << "/" << c.backend << ": "
                      << v.max_rel_err;
  }
  s = gemm.stats();
  EXPECT_EQ(s.nvrtc_compiles, 0u) << "a kernel the loader chose was not in the bundle";
  EXPECT_EQ(s.cache_loads, 0u);
  EXPECT_EQ(cubins_in(o.cache_dir), 0u) << "nothing was compiled into the writable cache";
  EXPECT_EQ(snapshot(eo.out_dir), bundle_before) << "the bundle was written";
}

TEST(Bundle, WarmsAnEmptyCacheWithoutNvrtcAndOutputsMatch) { warm_from_bundle(true); }
TEST(Bundle, WarmsTheKernelOnlyPathWithoutNvrtc) { warm_from_bundle(false); }

// A bundle of another kernel hash (another dgtune build) is refused when the Gemm is constructed, naming the manifest,
// the field and both values; so is a truncated cubin.
TEST(Bundle, BundleOfAnotherBuildIsRefusedAtConstruction) {
  Gpu::get();
  TempDir dir("dgtune-bundle");
  const std::string bdir = dir.path + "/bundle";
  fs::create_directory(bdir);
  std::ofstream(bdir + "/manifest.json")
      << R"({"schema": "dgtune-bundle", "schema_version": 1, "kernel_hash": "feedfacefeedface", "arch": "sm_90a",
           "nvrtc_version": "0.0", "dgtune_version": "x", "device": {"name": "", "hw_key": ""}, "cubins": []})";
  GemmOptions o;
  o.db_path = dir.path + "/none.db";
  o.cache_dir = dir.path + "/cache";
  o.bundle = bdir;
  try {
    Gemm gemm(o);
    ADD_FAILURE() << "a bundle of another kernel hash was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(bdir + "/manifest.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kernel_hash is \"feedfacefeedface\""), std::string::npos) << msg;
    EXPECT_NE(msg.find(jit::kernel_source_hash()), std::string::npos) << msg;
  }
  // $DGTUNE_BUNDLE is the default.
  o.bundle.clear();
  ASSERT_EQ(setenv("DGTUNE_BUNDLE", bdir.c_str(), 1), 0);
  EXPECT_THROW(Gemm{o}, Error);
  unsetenv("DGTUNE_BUNDLE");
}

}  // namespace
}  // namespace dgt::test
