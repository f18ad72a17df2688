// Kernel bundles without a GPU or NVRTC: the manifest's round trip and every way a bundle can be refused (each error
// names the file, the field and the values), the lookup order bundle -> cubin cache -> NVRTC with a fake compiler
// (no compile when the bundle holds the kernel, one warning per lookup when it does not, nothing written into the
// bundle), the writer's rule for an existing directory, and the kernel specs a warm-up loads.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "db/tuning_db.hpp"
#include "db/tuning_db_reader.hpp"
#include "eval/bundle_export.hpp"
#include "eval/bundle_writer.hpp"
#include "jit/bundle.hpp"
#include "jit/code_lookup.hpp"
#include "db_fixture.hpp"
#include "jit/cubin_cache.hpp"
#include "jit/kernel_hash.hpp"
#include "loader/warm_specs.hpp"
#include "problem/grouped_problem.hpp"
#include "problem/model_gemms.hpp"
#include "space/cost_model.hpp"
#include "temp_dir_test.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;
using test::slurp;

/// A fake compiled kernel for key `key` (bytes that differ per key).
std::string fake_cubin(const std::string& key) { return "\x7f" "ELF fake cubin of " + key; }

jit::BundleCubin entry_for(const std::string& key, const std::string& data) {
  jit::BundleCubin c;
  c.key = key;
  c.compiled_key = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_e4m3.e4m3_promote";
  c.configs = {c.compiled_key};
  c.file = key + ".cubin";
  c.bytes = data.size();
  c.fnv = hex16(fnv1a64(data));
  c.lowered_name = "_Z6kernelv";
  c.registers = 168, c.spill_bytes = 0, c.stack_bytes = 16;
  return c;
}

/// A manifest of this build with the given keys' fake cubins, and the cubins by key.
std::pair<jit::BundleManifest, std::map<std::string, std::string>> fake_bundle(const std::vector<std::string>& keys) {
  jit::BundleManifest m = jit::expected_bundle_header();
  m.dgtune_version = "test";
  m.device_name = "Fake H200";
  m.hw_key = "0123456789abcdef";
  std::map<std::string, std::string> files;
  for (const std::string& k : keys) {
    files[k] = fake_cubin(k);
    m.cubins.push_back(entry_for(k, files[k]));
  }
  return {m, files};
}

/// The message of the dgt::Error `fn` throws (fails the test when it throws nothing), and its kind.
template <class Fn>
std::string error_of(Fn fn, ErrorKind* kind = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.message();
  }
  ADD_FAILURE() << "no dgt::Error thrown";
  return "";
}

/// Every file name under `dir` with its contents: to prove a directory was not written.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out[e.path().string()] = slurp(e.path().string());
  return out;
}

class BundleTest : public test::TempDirTest {
 protected:
  /// Writes a bundle of `keys` at path(name) through the writer and returns its directory.
  std::string make_bundle(const std::vector<std::string>& keys, const std::string& name = "bundle") {
    auto [m, files] = fake_bundle(keys);
    write_bundle(path(name), m, files, "--out");
    return path(name);
  }
  void rewrite_manifest(const std::string& dir, const std::string& from, const std::string& to) {
    const std::string mp = dir + "/manifest.json";
    std::string text = slurp(mp);
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(mp, std::ios::trunc) << text;
  }
};

TEST_F(BundleTest, ManifestRoundTripsEveryField) {
  auto [m, files] = fake_bundle({"00000000000000aa", "00000000000000bb"});
  m.cubins[1].configs = {"a_config", "b_config"};
  const jit::BundleManifest back = jit::BundleManifest::parse(m.to_text(), "manifest.json");
  EXPECT_EQ(back.format_version, jit::kBundleFormatVersion);
  EXPECT_EQ(back.kernel_hash, jit::kernel_source_hash());
  EXPECT_EQ(back.arch, "sm_90a");
  EXPECT_EQ(back.nvrtc_version, m.nvrtc_version);
  EXPECT_EQ(back.dgtune_version, "test");
  EXPECT_EQ(back.device_name, "Fake H200");
  EXPECT_EQ(back.hw_key, "0123456789abcdef");
  ASSERT_EQ(back.cubins.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const jit::BundleCubin &a = m.cubins[i], &b = back.cubins[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.compiled_key, b.compiled_key);
    EXPECT_EQ(a.configs, b.configs);
    EXPECT_EQ(a.file, b.file);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.fnv, b.fnv);
    EXPECT_EQ(a.lowered_name, b.lowered_name);
    EXPECT_EQ(a.registers, b.registers);
    EXPECT_EQ(a.spill_bytes, b.spill_bytes);
    EXPECT_EQ(a.stack_bytes, b.stack_bytes);
  }
  EXPECT_EQ(back.to_text(), m.to_text());
}

TEST_F(BundleTest, WrittenBundleOpensAndServesItsCubins) {
  const std::string dir = make_bundle({"00000000000000aa", "00000000000000bb"});
  EXPECT_TRUE(fs::is_regular_file(dir + "/manifest.json"));
  const auto b = jit::Bundle::open(dir);
  ASSERT_EQ(b->manifest().cubins.size(), 2u);
  const std::optional<jit::CompiledKernel> k = b->find("00000000000000bb");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->cubin, fake_cubin("00000000000000bb"));
  EXPECT_EQ(k->lowered_name, "_Z6kernelv");
  EXPECT_EQ(k->registers, 168);
  EXPECT_EQ(k->stack_bytes, 16);
  EXPECT_FALSE(b->find("00000000000000cc").has_value());
  // Nothing but the bundle's files, and no temporary directory left beside it.
  EXPECT_EQ(snapshot(dir).size(), 3u);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST_F(BundleTest, ManifestOfAnotherBuildIsRefusedNamingFieldExpectedAndFound) {
  struct Case {
    const char* field;
    std::string from, to;
  };
  const jit::BundleManifest cur = jit::expected_bundle_header();
  const Case cases[] = {
      {"schema_version", "\"schema_version\": 1", "\"schema_version\": 7"},
      {"kernel_hash", "\"kernel_hash\": \"" + cur.kernel_hash + "\"", "\"kernel_hash\": \"feedfacefeedface\""},
      {"arch", "\"arch\": \"sm_90a\"", "\"arch\": \"sm_100a\""},
      {"nvrtc_version", "\"nvrtc_version\": \"" + cur.nvrtc_version + "\"", "\"nvrtc_version\": \"11.8\""},
  };
  const std::map<std::string, std::pair<std::string, std::string>> want = {
      {"schema_version", {"\"7\"", "\"1\""}},
      {"kernel_hash", {"\"feedfacefeedface\"", "\"" + cur.kernel_hash + "\""}},
      {"arch", {"\"sm_100a\"", "\"sm_90a\""}},
      {"nvrtc_version", {"\"11.8\"", "\"" + cur.nvrtc_version + "\""}}};
  for (const Case& c : cases) {
    const std::string dir = make_bundle({"00000000000000aa"}, std::string("b_") + c.field);
    rewrite_manifest(dir, c.from, c.to);
    ErrorKind kind{};
    const std::string msg = error_of([&] { jit::Bundle::open(dir); }, &kind);
    EXPECT_EQ(kind, ErrorKind::kInvalid) << msg;
    EXPECT_NE(msg.find(dir + "/manifest.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(c.field) + " is " + want.at(c.field).first), std::string::npos) << msg;
    EXPECT_NE(msg.find("expects " + want.at(c.field).second), std::string::npos) << msg;
  }
}

TEST_F(BundleTest, DamagedManifestOrCubinIsRefusedNamingTheProblem) {
  struct Case {
    const char* what;
    std::string from, to;
    std::string expect;  // in the message
  };
  const Case cases[] = {
      {"not JSON", "{", "[[", "not valid JSON"},
      {"other format", "\"dgtune-bundle\"", "\"something-else\"", "field schema is \"something-else\""},
      {"missing field", "\"lowered_name\"", "\"lowered_nam\"", "field cubins[0].lowered_name is missing"},
      {"wrong type", "\"bytes\": ", "\"bytes\": \"x\", \"was\": ", "field cubins[0].bytes has the wrong type"},
      {"path outside", "\"file\": \"00000000000000aa.cubin\"", "\"file\": \"../00000000000000aa.cubin\"",
       "field cubins[0].file is \"../00000000000000aa.cubin\", expected \"00000000000000aa.cubin\""},
      {"bad key", "\"key\": \"00000000000000aa\"", "\"key\": \"../../etc/pwd\"", "field cubins[0].key"},
  };
  for (const Case& c : cases) {
    const std::string dir = make_bundle({"00000000000000aa"}, std::string("d_") + std::to_string(&c - cases));
    rewrite_manifest(dir, c.from, c.to);
    ErrorKind kind{};
    const std::string msg = error_of([&] { jit::Bundle::open(dir); }, &kind);
    EXPECT_EQ(kind, ErrorKind::kIo) << c.what << ": " << msg;
    EXPECT_NE(msg.find(dir + "/manifest.json"), std::string::npos) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
  }
  // No manifest, no directory.
  EXPECT_NE(error_of([&] { jit::Bundle::open(path("nowhere")); }).find("is not a directory"), std::string::npos);
  fs::create_directory(path("empty"));
  EXPECT_NE(error_of([&] { jit::Bundle::open(path("empty")); }).find("cannot read the bundle's manifest"),
            std::string::npos);
  // A listed cubin missing, or of another size: refused when the bundle is opened.
  {
    const std::string dir = make_bundle({"00000000000000aa"}, "missing");
    fs::remove(dir + "/00000000000000aa.cubin");
    const std::string msg = error_of([&] { jit::Bundle::open(dir); });
    EXPECT_NE(msg.find(dir + "/00000000000000aa.cubin: the cubin listed in"), std::string::npos) << msg;
  }
  {
    const std::string dir = make_bundle({"00000000000000aa"}, "truncated");
    const std::string data = fake_cubin("00000000000000aa");
    std::ofstream(dir + "/00000000000000aa.cubin", std::ios::trunc) << data.substr(0, 5);
    const std::string msg = error_of([&] { jit::Bundle::open(dir); });
    EXPECT_NE(msg.find(dir + "/00000000000000aa.cubin: bytes: the manifest says " + std::to_string(data.size()) +
                       ", the file has 5"),
              std::string::npos)
        << msg;
  }
  // Same size, other contents: opens (sizes only), and the read of that cubin fails its hash (an error, not a
  // silent compile).
  {
    const std::string dir = make_bundle({"00000000000000aa"}, "flipped");
    std::string data = fake_cubin("00000000000000aa");
    const std::string want_fnv = hex16(fnv1a64(data));
    data[3] ^= 1;
    std::ofstream(dir + "/00000000000000aa.cubin", std::ios::trunc | std::ios::binary) << data;
    const auto b = jit::Bundle::open(dir);
    ErrorKind kind{};
    const std::string msg = error_of([&] { b->find("00000000000000aa"); }, &kind);
    EXPECT_EQ(kind, ErrorKind::kIo);
    EXPECT_NE(msg.find(dir + "/00000000000000aa.cubin: fnv1a64: the manifest says " + want_fnv + ", the file has " +
                       hex16(fnv1a64(data))),
              std::string::npos)
        << msg;
  }
}

/// Captures spdlog's default logger output while alive.
struct LogCapture {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  LogCapture() {
    auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(saved); }
  size_t count(const std::string& needle) const {
    const std::string s = out.str();
    size_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  }
};

jit::GeneratedKernel fake_kernel(const std::string& name) {
  jit::GeneratedKernel g;
  g.source = "// fake source of " + name;
  g.program_name = name + ".cu";
  g.name_expression = "fake<" + name + ">";
  return g;
}

TEST_F(BundleTest, LookupTakesTheBundleFirstThenTheCacheThenNvrtcWithOneWarning) {
  int compiles = 0;
  jit::CubinCache cubins(path("cache"), [&](const std::string& src, const std::string&, const std::string&) {
    ++compiles;
    jit::CompiledKernel k;
    k.cubin = "compiled " + src;
    k.lowered_name = "lowered";
    return k;
  });
  const jit::GeneratedKernel in_bundle = fake_kernel("a"), missing1 = fake_kernel("b"), missing2 = fake_kernel("c");
  const std::string dir = make_bundle({cubins.key_of(in_bundle)});
  const auto before = snapshot(dir);
  ::chmod(dir.c_str(), 0555);  // a read-only bundle (as root the mode alone proves nothing: the snapshot does)
  jit::CodeLookup lookup(cubins, jit::Bundle::open(dir));
  LogCapture log;
  jit::CodeOrigin origin{};

  const jit::CompiledKernel k = lookup.get(in_bundle, "spec-a", origin);
  EXPECT_EQ(origin, jit::CodeOrigin::kBundle);
  EXPECT_EQ(k.cubin, fake_cubin(cubins.key_of(in_bundle)));
  EXPECT_EQ(compiles, 0);
  EXPECT_TRUE(fs::is_empty(path("cache"))) << "a bundle hit must not touch the cubin cache (no lock, no publish)";
  EXPECT_EQ(log.count("not in the kernel bundle"), 0u);
  EXPECT_FALSE(lookup.warned());

  lookup.get(missing1, "spec-b", origin);
  EXPECT_EQ(origin, jit::CodeOrigin::kNvrtc);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(log.count("not in the kernel bundle"), 1u);
  EXPECT_EQ(log.count("spec-b"), 1u) << log.out.str();
  EXPECT_EQ(log.count(dir), 1u) << log.out.str();
  lookup.get(missing2, "spec-c", origin);  // a second compile: counted by the caller, not warned again
  EXPECT_EQ(origin, jit::CodeOrigin::kNvrtc);
  EXPECT_EQ(compiles, 2);
  lookup.get(missing1, "spec-b", origin);  // now in the writable cache
  EXPECT_EQ(origin, jit::CodeOrigin::kCubinCache);
  EXPECT_EQ(compiles, 2);
  lookup.get(in_bundle, "spec-a", origin);
  EXPECT_EQ(origin, jit::CodeOrigin::kBundle);
  EXPECT_EQ(log.count("not in the kernel bundle"), 1u) << log.out.str();
  EXPECT_TRUE(lookup.warned());
  ::chmod(dir.c_str(), 0755);
  EXPECT_EQ(snapshot(dir), before) << "the bundle directory was written";

  // Without a bundle a compile is the normal path: no warning.
  jit::CubinCache other(path("cache2"), [&](const std::string&, const std::string&, const std::string&) {
    ++compiles;
    return jit::CompiledKernel{"x", "l", "", 0, 0, 0, 0};
  });
  jit::CodeLookup plain(other, nullptr);
  plain.get(missing1, "spec-b", origin);
  EXPECT_EQ(origin, jit::CodeOrigin::kNvrtc);
  EXPECT_EQ(log.count("not in the kernel bundle"), 1u);
}

TEST_F(BundleTest, LookupOfADamagedBundleCubinThrowsInsteadOfCompiling) {
  int compiles = 0;
  jit::CubinCache cubins(path("cache"), [&](const std::string&, const std::string&, const std::string&) {
    ++compiles;
    return jit::CompiledKernel{"x", "l", "", 0, 0, 0, 0};
  });
  const jit::GeneratedKernel g = fake_kernel("a");
  const std::string key = cubins.key_of(g);
  const std::string dir = make_bundle({key});
  jit::CodeLookup lookup(cubins, jit::Bundle::open(dir));
  std::string data = fake_cubin(key);
  data[0] = 'X';
  std::ofstream(dir + "/" + key + ".cubin", std::ios::trunc | std::ios::binary) << data;
  jit::CodeOrigin origin{};
  const std::string msg = error_of([&] { lookup.get(g, "spec-a", origin); });
  EXPECT_NE(msg.find(key + ".cubin: fnv1a64"), std::string::npos) << msg;
  EXPECT_EQ(compiles, 0);
}

TEST_F(BundleTest, WriterReplacesOnlyABundleOrAnEmptyDirectory) {
  // A new path, then the same path again: the second export replaces the first bundle (its old cubin is gone).
  const std::string dir = make_bundle({"00000000000000aa"});
  make_bundle({"00000000000000bb"});
  EXPECT_FALSE(fs::exists(dir + "/00000000000000aa.cubin"));
  EXPECT_TRUE(fs::exists(dir + "/00000000000000bb.cubin"));
  EXPECT_EQ(jit::Bundle::open(dir)->manifest().cubins.at(0).key, "00000000000000bb");
  // An empty directory is taken.
  fs::create_directory(path("empty"));
  make_bundle({"00000000000000aa"}, "empty");
  EXPECT_TRUE(fs::exists(path("empty") + "/manifest.json"));

  // Anything else is refused with kUsage before a byte is written, and the user's files stay.
  fs::create_directory(path("user"));
  std::ofstream(path("user") + "/notes.txt") << "mine";
  ErrorKind kind{};
  std::string msg = error_of([&] { make_bundle({"00000000000000aa"}, "user"); }, &kind);
  EXPECT_EQ(kind, ErrorKind::kUsage);
  EXPECT_NE(msg.find("--out " + path("user") + " exists and is not a dgtune kernel bundle (it holds notes.txt"),
            std::string::npos)
      << msg;
  EXPECT_EQ(slurp(path("user") + "/notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(path("user") + "/manifest.json"));

  fs::create_directory(path("other"));
  std::ofstream(path("other") + "/manifest.json") << R"({"schema": "someone-elses"})";
  msg = error_of([&] { make_bundle({"00000000000000aa"}, "other"); });
  EXPECT_NE(msg.find("its manifest.json is not a dgtune kernel bundle's"), std::string::npos) << msg;
  EXPECT_EQ(slurp(path("other") + "/manifest.json"), R"({"schema": "someone-elses"})");

  std::ofstream(path("file")) << "a file";
  msg = error_of([&] { make_bundle({"00000000000000aa"}, "file"); });
  EXPECT_NE(msg.find("exists and is not a directory"), std::string::npos) << msg;
  EXPECT_EQ(slurp(path("file")), "a file");

  msg = error_of([&] { check_bundle_output(path("no/such/dir"), "--out"); });
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;

  // A manifest entry without its bytes is an internal error, and nothing is published.
  auto [m, files] = fake_bundle({"00000000000000aa"});
  files.clear();
  msg = error_of([&] { write_bundle(path("half"), m, files, "--out"); }, &kind);
  EXPECT_EQ(kind, ErrorKind::kInternal);
  EXPECT_FALSE(fs::exists(path("half")));
}

// ---- the kernels a warm-up loads ----

constexpr int64_t kN = 4096, kK = 4096;

EnvironmentWinner winner(int64_t m, const KernelConfig& c, const std::string& protocol, int64_t env_id = 1) {
  EnvironmentWinner w;
  w.problem = Problem::dense(m, kN, kK);
  w.config_key = c.key();
  w.median_us = 10;
  w.protocol_name = protocol;
  w.environment_id = env_id;
  w.env.kernel_hash = "current";
  w.env_key = "env" + std::to_string(env_id);
  return w;
}

std::set<std::string> keys_of(const std::vector<KernelSpec>& specs) {
  std::set<std::string> out;
  for (const KernelSpec& s : specs) out.insert(s.config.key());
  return out;
}

TEST(WarmSpecs, AreTheWinnersLadderPicksAndOtherProtocolsWinnersAtEveryWarmedM) {
  const KernelConfig small = KernelConfig::parse_key("64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0");
  const KernelConfig large = KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0");
  const KernelConfig hot = KernelConfig::parse_key("64x32x128_s5_wg1_sw128_c1x1_rm8_tma_sk1_sm0");
  const std::vector<EnvironmentWinner> rows = {winner(64, small, "cold-l2-v1"), winner(1024, large, "cold-l2-v1"),
                                               winner(64, hot, "hot-graph-v1")};
  const Problem family = Problem::dense(1, kN, kK);
  const LoaderIdentity cold{"current", "env1", "cold-l2"};
  // M <= 64 runs the M = 64 winner, every larger M the M = 1024 one (ladder, then nearest): two kernels.
  EXPECT_EQ(loader_config(rows, Problem::dense(8, kN, kK), cold), small);
  EXPECT_EQ(loader_config(rows, Problem::dense(300, kN, kK), cold), large);
  EXPECT_EQ(keys_of(warm_kernel_specs(rows, family, {}, cold)), (std::set<std::string>{small.key(), large.key()}));
  // Only the listed M (plus the tuned ones, which are always warmed).
  EXPECT_EQ(keys_of(warm_kernel_specs(rows, family, {1, 2}, cold)), (std::set<std::string>{small.key(), large.key()}));
  // A process preferring hot-graph takes the hot winner at M <= 64: the bundle holds every identity's kernels.
  EXPECT_EQ(keys_of(warm_kernel_specs(rows, family, {}, {"current", "env1", "hot-graph"})),
            (std::set<std::string>{hot.key(), large.key()}));
  EXPECT_EQ(keys_of(any_loader_kernel_specs(rows, family, {}, "current")),
            (std::set<std::string>{small.key(), large.key(), hot.key()}));
  // No rows: the default configs of the ladder's M (more than one: BLOCK_M follows M).
  const std::vector<KernelSpec> defaults = warm_kernel_specs({}, family, {}, cold);
  std::set<std::string> want;
  for (int64_t m : default_m_ladder()) want.insert(default_config(Problem::dense(m, kN, kK)).key());
  EXPECT_EQ(keys_of(defaults), want);
  EXPECT_GE(want.size(), 2u);
  // Specs carry the family's types: an e5m2 family's kernels are e5m2 kernels.
  Problem e5 = family;
  e5.a = DType::kE5M2;
  for (const KernelSpec& s : warm_kernel_specs({}, e5, {16}, cold)) EXPECT_EQ(s.a, DType::kE5M2);
}

class BundleSpecsTest : public test::TempDirTest {};

TEST_F(BundleSpecsTest, DbFamiliesGiveTheirWarmUpKernels) {
  const std::string db_path = path("t.db");
  const std::string kh = jit::kernel_source_hash();
  {
    TuningDb db(db_path);
    DeviceFingerprint fp;
    fp.name = "Fake H200";
    fp.cc_major = 9;
    fp.sm_count = 132;
    fp.kernel_hash = kh;
    const DeviceScope s = db.upsert_device(fp);
    auto put = [&](int64_t m, int64_t n, const char* key) {
      test::put_ok_trial(db, s, Problem::dense(m, n, 1024), KernelConfig::parse_key(key));
    };
    put(16, 512, "64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0");
    put(256, 512, "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0");
    put(256, 768, "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0");
    // Grouped winners (N = 1536) are no dense family: they add grouped kernels, never a dense family or kernel.
    test::put_ok_trial(db, s,
                       parse_grouped_problem("kind=masked groups=4 masked_m=16 1536 1024", "t").keyed(),
                       KernelConfig::parse_key("64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0"));
    test::put_ok_trial(db, s,
                       parse_grouped_problem("kind=masked groups=4 masked_m=100 m_max=128 expected_m=100 1536 1024",
                                             "t").keyed(),
                       KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0"));
    // A contiguous family of the same N, K: its own family, the same layout-independent spec listed per layout.
    test::put_ok_trial(db, s, parse_grouped_problem("kind=contiguous groups=4 m_per_group=128 1536 1024", "t").keyed(),
                       KernelConfig::parse_key("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0"));
    // accum=fast: dgt::GroupedGemm cannot run it, so nothing of it goes into the bundle.
    test::put_ok_trial(db, s,
                       parse_grouped_problem("kind=masked groups=4 masked_m=16 2048 1024 accum=fast", "t").keyed(),
                       KernelConfig::parse_key("64x192x128_s4_wg1_sw128_c1x1_rm8_direct_sk1_sm0"));
  }
  TuningDbReader db(db_path);
  const BundleSpecs bs = bundle_specs(db, 1, kh);
  EXPECT_EQ(bs.families, 2u);
  std::set<std::string> specs;
  for (const KernelSpec& s : bs.specs) specs.insert(s.key());
  // Two configs for N = 512 (M <= 16 and above), and N = 768's only winner, which is one of them: a spec carries no
  // N, so it is the same kernel and listed once.
  EXPECT_EQ(specs.size(), 2u);
  for (const char* key : {"64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0", "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0"})
    EXPECT_TRUE(specs.count(KernelConfig::parse_key(key).key() + "_e4m3.e4m3_promote")) << key;

  // Grouped: two families (masked G4 and contiguous G4 of N 1536, K 1024; the accum=fast one is left out); each
  // winner and the default rule's three configs, per layout.
  EXPECT_EQ(bs.grouped_families, 2u);
  std::set<std::string> grouped;
  for (const auto& [spec, kind] : bs.grouped) grouped.insert(std::string(to_string(kind)) + " " + spec.config.key());
  EXPECT_EQ(grouped.size(), bs.grouped.size()) << "listed twice";
  const std::set<std::string> want = {
      "masked 64x128x128_s6_wg1_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
      "masked 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
      "masked 128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
      "masked 128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1",
      "masked 64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
      "contiguous 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1",
      "contiguous 128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
      "contiguous 128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1",
      "contiguous 64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
  };
  EXPECT_EQ(grouped, want);
}

}  // namespace
}  // namespace dgt
