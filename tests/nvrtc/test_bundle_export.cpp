// `dgtune export --format bundle` with real NVRTC (CPU only): a small tuned DB (one family, winners at M = 16 and 256)
// gives a bundle whose manifest lists exactly the kernels a warm-up of the family loads, every cubin verifies against
// the manifest, every such kernel is found by the loader's lookup without compiling, and exporting again through the
// CLI replaces the bundle.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "db/tuning_db.hpp"
#include "db/tuning_db_reader.hpp"
#include "eval/bundle_export.hpp"
#include "jit/bundle.hpp"
#include "jit/code_lookup.hpp"
#include "jit/codegen.hpp"
#include "jit/kernel_hash.hpp"
#include "space/resource_model.hpp"
#include "../unit/db_fixture.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSmall = "64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0";
constexpr const char* kLarge = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0";

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dgtune-bundle-export-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

/// A DB with one fake H200 of this kernel hash and winners of 512 x 1024 at M = 16 and M = 256.
std::string small_db(const std::string& dir) {
  const std::string path = dir + "/tuning.db";
  TuningDb db(path);
  DeviceFingerprint fp;
  fp.name = "Fake H200";
  fp.cc_major = 9;
  fp.sm_count = 132;
  fp.kernel_hash = jit::kernel_source_hash();
  const DeviceScope s = db.upsert_device(fp);
  for (const auto& [m, key] : {std::pair<int64_t, const char*>{16, kSmall}, {256, kLarge}})
    test::put_ok_trial(db, s, Problem::dense(m, 512, 1024), KernelConfig::parse_key(key));
  return path;
}

TEST(BundleExport, ManifestListsTheWarmUpKernelsAndEveryCubinVerifies) {
  TempDir dir;
  BundleExportOptions o;
  o.db_path = small_db(dir.path);
  o.out_dir = dir.path + "/bundle";
  o.cache_dir = dir.path + "/cache";
  o.jobs = 2;
  const BundleExportReport r = export_bundle(o);
  EXPECT_EQ(r.families, 1u);
  EXPECT_EQ(r.specs, 2u);   // M <= 16 runs kSmall, every larger M kLarge (ladder, then nearest)
  EXPECT_EQ(r.cubins, 2u);
  EXPECT_EQ(r.device_name, "Fake H200");

  const auto bundle = jit::Bundle::open(o.out_dir);
  const jit::BundleManifest& m = bundle->manifest();
  EXPECT_EQ(m.kernel_hash, jit::kernel_source_hash());
  EXPECT_EQ(m.arch, "sm_90a");
  EXPECT_EQ(m.device_name, "Fake H200");
  std::set<std::string> configs;
  for (const jit::BundleCubin& c : m.cubins) {
    configs.insert(c.configs.begin(), c.configs.end());
    const std::optional<jit::CompiledKernel> k = bundle->find(c.key);  // size and FNV-1a against the manifest
    ASSERT_TRUE(k.has_value());
    EXPECT_EQ(k->cubin.substr(0, 4), "\x7f" "ELF") << c.file;
    EXPECT_FALSE(c.lowered_name.empty());
    EXPECT_GT(c.registers, 0);
  }
  const Problem p = Problem::dense(1, 512, 1024);
  std::vector<KernelSpec> want;
  for (const char* key : {kSmall, kLarge}) want.push_back(KernelSpec::of(KernelConfig::parse_key(key), p));
  EXPECT_EQ(configs, (std::set<std::string>{want[0].key(), want[1].key()}));

  // The loader's own lookup (KernelCache generates with the evaluated resources) finds both without compiling.
  jit::CubinCache empty(dir.path + "/empty-cache", [](const std::string&, const std::string& name, const std::string&)
                            -> jit::CompiledKernel { DGT_THROW(ErrorKind::kNvrtc, "unexpected compile of {}", name); });
  jit::CodeLookup lookup(empty, bundle);
  for (const KernelSpec& s : want) {
    jit::CodeOrigin origin{};
    const EvaluatedSpec es = EvaluatedSpec::evaluate(s);
    lookup.get(jit::generate_gemm(s, es.resources), s.key(), origin);
    EXPECT_EQ(origin, jit::CodeOrigin::kBundle) << s.key();
  }

  // The CLI, into the same directory: the bundle is replaced (cubins from the cache now), exit 0.
  const std::string cmd = std::string(DGT_DGTUNE_BIN) + " export --db " + o.db_path + " --format bundle --out " +
                          o.out_dir + " --cache-dir " + o.cache_dir + " --jobs 1 > " + dir.path + "/cli.txt 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(jit::Bundle::open(o.out_dir)->manifest().cubins.size(), 2u);
}

}  // namespace
}  // namespace dgt
