// Grep-style guards of the layout's one-definition rules for measurement and the command line:
//  - src/cli/ is flags plus one library call per command: no CUDA/driver/cuBLASLt/NVRTC call, no statistics
//    helper, no device buffer;
//  - one median/quantile (src/stats/), one L2-flush size and flush (bench/measure_protocol.hpp l2_flush_bytes,
//    bench/l2_flush.hpp), one protocol description type (bench/measure_protocol.hpp MeasureProtocol);
//  - the watchdog's timeout is a dgt::Error.
// Each scanner is first shown to catch planted violations and to leave clean code alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/protocol.hpp"
#include "source_scan.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;

const fs::path kSrc = fs::path(DGT_SOURCE_DIR) / "src";

/// "file:line: text" of every match of `re` in the code (comments and strings blanked) of the files under src/
/// whose relative path starts with one of `under` (all when empty), except those starting with one of `except`.
std::vector<std::string> scan(const std::regex& re, const std::vector<std::string>& under,
                              const std::vector<std::string>& except = {}) {
  std::vector<std::string> out;
  auto starts = [](const std::string& s, const std::vector<std::string>& prefixes) {
    for (const auto& p : prefixes)
      if (s.rfind(p, 0) == 0) return true;
    return false;
  };
  for (const auto& rel : test::cxx_files(kSrc)) {
    const std::string r = rel.generic_string();
    if ((!under.empty() && !starts(r, under)) || starts(r, except)) continue;
    for (const auto& m : test::matches(test::strip_comments_and_strings(test::read_text(kSrc / rel)), re))
      out.push_back(r + ":" + m);
  }
  return out;
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

bool hits(const std::regex& re, const std::string& code) {
  return !test::matches(test::strip_comments_and_strings(code), re).empty();
}

// A call into the CUDA runtime, driver, cuBLASLt or NVRTC.
const std::regex kGpuCall(R"(\b(cuda[A-Z]\w*|cu[A-Z]\w*|cublas\w*|nvrtc\w*)\s*\()");
// A statistic computed here rather than in src/stats: stats::, or a median/quantile/percentile helper or call.
const std::regex kStatistic(R"(\bstats::|\b(median|quantile|percentile|sample_stats)\s*\()");
// Device memory owned here.
const std::regex kBuffer(R"(\bDeviceBuffer\b|\bcudaMalloc\w*\b)");
// A definition of a median/quantile/percentile helper.
const std::regex kQuantileDefinition(
    R"(\b(double|float|auto|SampleStats)\s+(\w*_)?(median|quantile|percentile)\w*\s*\([^;{]*\)\s*(const\s*)?\{|)"
    R"(\b(median|quantile|percentile)\w*\s*=\s*\[[^\]]*\]\s*\(\s*(const\s+)?std::(vector|span)<)");
// The flush size computed by hand, or a flush enqueued without L2Flush.
const std::regex kFlushByHand(R"(\bflush_factor\s*\*|\bl2_bytes\s*\*|\*\s*\w*\.?l2_bytes\b|\bflush_l2\s*\()");
// A protocol description type other than MeasureProtocol.
const std::regex kProtocolType(R"(\b(struct|class)\s+(?!MeasureProtocol\b|ProtocolKind\b)\w*Protocol\w*\s*[{:])");

TEST(SourceRules, ScannersCatchPlantedCode) {
  EXPECT_TRUE(hits(kGpuCall, "DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&s, 0));"));
  EXPECT_TRUE(hits(kGpuCall, "cuLaunchKernelEx(&cfg, f, p, nullptr);"));
  EXPECT_TRUE(hits(kGpuCall, "const size_t lt = cublasLtGetVersion();"));
  EXPECT_FALSE(hits(kGpuCall, "// cudaMalloc(&p, n) in a comment\nconst char* s = \"cudaFree(p)\";"));
  EXPECT_FALSE(hits(kGpuCall, "CUtensorMap map{}; cudaStream_t s = nullptr;"));
  EXPECT_TRUE(hits(kStatistic, "const double m = stats::median(v);"));
  EXPECT_TRUE(hits(kStatistic, "double median(std::vector<double> v) { return v[0]; }"));
  EXPECT_FALSE(hits(kStatistic, "{\"median_us\", \"us\"}; row.push_back(r.median_us);"));
  EXPECT_TRUE(hits(kBuffer, "DeviceBuffer flush{bytes};"));
  EXPECT_TRUE(hits(kQuantileDefinition, "double median(std::vector<double> v) {"));
  EXPECT_TRUE(hits(kQuantileDefinition, "double percentile(const std::vector<double>& sorted, double q) {"));
  EXPECT_TRUE(hits(kQuantileDefinition, "auto median = [](std::vector<double> v) { return v[0]; };"));
  EXPECT_FALSE(hits(kQuantileDefinition, "const double med = stats::median(d);"));
  // A lambda that reads a stored summary is no statistic of its own.
  EXPECT_FALSE(hits(kQuantileDefinition, "auto median_of = [&](int side) -> Cell { return r.sides[side].all.median; };"));
  EXPECT_TRUE(hits(kFlushByHand, "int64_t bytes = static_cast<int64_t>(protocol_.flush_factor * double(l2));"));
  EXPECT_TRUE(hits(kFlushByHand, "const int64_t b = std::max<int64_t>(2 * dev.l2_bytes, 64 << 20);"));
  EXPECT_TRUE(hits(kFlushByHand, "util.flush_l2(buf.get(), n, sink.get(), 7, stream);"));
  EXPECT_FALSE(hits(kFlushByHand, "L2Flush flush(util, dev.l2_bytes, p); flush.enqueue(s);"));
  EXPECT_TRUE(hits(kProtocolType, "struct ProtocolOptions {"));
  EXPECT_TRUE(hits(kProtocolType, "struct EngineProtocol : Base {"));
  EXPECT_FALSE(hits(kProtocolType, "struct MeasureProtocol {\nenum class ProtocolKind {\nMeasureProtocol protocol;"));
}

TEST(SourceRules, CliIsFlagsPlusOneCall) {
  const auto gpu = scan(kGpuCall, {"cli/"});
  EXPECT_TRUE(gpu.empty()) << "CUDA, driver, cuBLASLt or NVRTC calls belong in the library, not src/cli/:" << list(gpu);
  const auto st = scan(kStatistic, {"cli/"});
  EXPECT_TRUE(st.empty()) << "statistics belong in src/stats and src/eval, not src/cli/:" << list(st);
  const auto buf = scan(kBuffer, {"cli/"});
  EXPECT_TRUE(buf.empty()) << "device buffers belong in the library, not src/cli/:" << list(buf);
}

TEST(SourceRules, OneMedianAndQuantile) {
  ASSERT_FALSE(scan(kQuantileDefinition, {"stats/"}).empty()) << "the scanner must see src/stats' definitions";
  const auto found = scan(kQuantileDefinition, {}, {"stats/"});
  EXPECT_TRUE(found.empty()) << "median/quantile are defined once, in src/stats:" << list(found);
}

TEST(SourceRules, OneL2Flush) {
  const auto found = scan(kFlushByHand, {}, {"bench/measure_protocol.cpp", "bench/l2_flush.cpp", "launch/util_kernels."});
  EXPECT_TRUE(found.empty()) << "the flush size is l2_flush_bytes (bench/measure_protocol.hpp) and the flush "
                                "bench/l2_flush.hpp's L2Flush:"
                             << list(found);
}

TEST(SourceRules, OneProtocolType) {
  const auto found = scan(kProtocolType, {});
  EXPECT_TRUE(found.empty()) << "timing protocols are described by MeasureProtocol alone:" << list(found);
  const auto self = scan(std::regex(R"(\bstruct\s+MeasureProtocol\s*\{)"), {"bench/"});
  EXPECT_EQ(self.size(), 1u) << list(self);
}

TEST(SourceRules, WatchdogTimeoutIsAnError) {
  static_assert(std::is_base_of_v<Error, WatchdogTimeout>);
  const WatchdogTimeout t("kernel still running after 20 s (watchdog)");
  EXPECT_EQ(t.kind(), ErrorKind::kTimeout);
  EXPECT_STREQ(t.what(), "kernel still running after 20 s (watchdog)");  // the text stored with a timed-out trial
}

}  // namespace
}  // namespace dgt
