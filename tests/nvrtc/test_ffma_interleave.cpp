// The FFMA interleaving edit (jit/ffma_interleave.hpp) on real NVRTC cubins, read back with cuobjdump (CPU only): the
// same kernel compiled with and without the edit disassembles to the same instructions, except that the edited ones
// are exactly FFMAs that lost the ".reuse" of their second source, with only the reuse and yield control bits
// changed; their number is what the compile reports, and the block-scaled promotion has many. compile() itself leaves
// the machine code alone (the edit is off by default).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "jit/embedded_sources.hpp"
#include "sass_check.hpp"

namespace dgt::test {
namespace {

struct Line {
  std::string text;  // the instruction as cuobjdump prints it, without the address
  uint64_t lo = 0, hi = 0;
};

// cuobjdump -sass prints "/*0360*/  FFMA R1, R2, R3.reuse, R4 ;  /* 0x... */" and the high word alone on the next line.
std::vector<Line> instructions(const std::string& sass) {
  static const std::regex kFirst(R"(^\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/\s*$)");
  static const std::regex kSecond(R"(^\s+/\* (0x[0-9a-f]{16}) \*/\s*$)");
  std::vector<Line> out;
  std::istringstream in(sass);
  std::string l;
  std::smatch m;
  while (std::getline(in, l)) {
    if (std::regex_match(l, m, kFirst)) {
      out.push_back({m[1], std::stoull(m[2], nullptr, 16), 0});
    } else if (!out.empty() && out.back().hi == 0 && std::regex_match(l, m, kSecond)) {
      out.back().hi = std::stoull(m[1], nullptr, 16);
    }
  }
  return out;
}

std::string without_reuse(std::string s) {
  for (size_t p; (p = s.find(".reuse")) != std::string::npos;) s.erase(p, 6);
  return s;
}

struct Compared {
  int reported = 0, edited = 0, instructions = 0;
};

Compared compile_both(const char* key, Accum accum, ScaleMode scale) {
  const std::string cuobjdump = find_cuobjdump();
  KernelSpec spec;
  spec.config = KernelConfig::parse_key(key);
  spec.accum = accum;
  spec.scale = scale;
  const jit::GeneratedKernel g = jit::generate_gemm(spec);
  jit::CompileOptions on;
  on.ffma_interleave = true;
  const jit::CompiledKernel plain = jit::compile(g.source, g.program_name, g.name_expression);  // off by default
  const jit::CompiledKernel edited =
      jit::compile_with_sources(g.source, g.program_name, g.name_expression, jit::embedded_sources(), on);
  EXPECT_EQ(plain.ffma_interleaved, 0) << key;
  EXPECT_EQ(plain.cubin.size(), edited.cubin.size()) << key;  // edited in place: the ELF layout is the same
  const std::vector<Line> a = instructions(disassemble(cuobjdump, plain.cubin));
  const std::vector<Line> b = instructions(disassemble(cuobjdump, edited.cubin));
  Compared c;
  c.reported = edited.ffma_interleaved;
  c.instructions = static_cast<int>(a.size());
  EXPECT_GT(a.size(), 500u) << key << ": the listing was not parsed";
  EXPECT_EQ(a.size(), b.size()) << key;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    EXPECT_EQ(a[i].lo, b[i].lo) << key << " #" << i << ": " << a[i].text;  // opcode and operands never change
    if (a[i].hi == b[i].hi) {
      EXPECT_EQ(a[i].text, b[i].text) << key << " #" << i;
      continue;
    }
    ++c.edited;
    EXPECT_EQ(a[i].hi ^ b[i].hi, (uint64_t{1} << 59) | (uint64_t{1} << 45)) << key << " #" << i << ": " << a[i].text;
    EXPECT_EQ(a[i].text.rfind("FFMA ", 0), 0u) << key << " #" << i << ": " << a[i].text;
    EXPECT_NE(a[i].text.find(".reuse"), std::string::npos) << key << " #" << i << ": " << a[i].text;
    EXPECT_EQ(b[i].text.find(".reuse"), std::string::npos) << key << " #" << i << ": " << b[i].text;
    EXPECT_EQ(without_reuse(a[i].text), b[i].text) << key << " #" << i;
  }
  return c;
}

#define REQUIRE_CUOBJDUMP()                                                                                          \
  if (find_cuobjdump().empty())                                                                                      \
  GTEST_SKIP() << "no cuobjdump (set DGT_CUOBJDUMP or run tests/nvrtc/sass_check.sh, which installs the PyPI wheel " \
                  "nvidia-cuda-cuobjdump)"

TEST(Sass, FfmaInterleaveChangesOnlyTheReuseAndYieldBitsOfFfmas) {
  REQUIRE_CUOBJDUMP();
  // Block scales: the promotion is one FFMA per accumulator and k-block (acc = partial x scale + acc), 64 per
  // k-block and thread at 128x128 2g; ptxas reuses the scale register on every other one.
  const Compared blk = compile_both("128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote,
                                    ScaleMode::kBlock);
  EXPECT_EQ(blk.edited, blk.reported);
  EXPECT_GE(blk.edited, 64) << "the block-scaled promotion's runs were not edited";
  // Per-tensor scales promote with FADD: whatever FFMA runs there are (the epilogue), the same invariants hold.
  const Compared pt = compile_both("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1", Accum::kPromote,
                                   ScaleMode::kPerTensor);
  EXPECT_EQ(pt.edited, pt.reported);
  EXPECT_EQ(pt.edited, 0) << "a per-tensor kernel has no run of 8 reused FFMAs (read in its listing, CUDA 13.0)";
}

// The scale-reuse edit: only FFMAs change, each gains the reuse flag of Rb (bit 59 of the high word, ".reuse" on its
// third operand in the listing) and bit 45 where it was clear, and afterwards every FFMA of a run of >= 8 whose next FFMA reads the same Rb
// (and writes another register) carries it: the scale is read from the register file once per run.
TEST(Sass, FfmaScaleReuseSetsOnlyTheRbReuseFlagAlongEachRun) {
  REQUIRE_CUOBJDUMP();
  const std::string cuobjdump = find_cuobjdump();
  KernelSpec spec;
  spec.config = KernelConfig::parse_key("128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1");
  spec.scale = ScaleMode::kBlock;
  const jit::GeneratedKernel g = jit::generate_gemm(spec);
  jit::CompileOptions on;
  on.ffma_scale_reuse = true;
  const jit::CompiledKernel plain = jit::compile(g.source, g.program_name, g.name_expression);
  const jit::CompiledKernel edited =
      jit::compile_with_sources(g.source, g.program_name, g.name_expression, jit::embedded_sources(), on);
  const std::vector<Line> a = instructions(disassemble(cuobjdump, plain.cubin));
  const std::vector<Line> b = instructions(disassemble(cuobjdump, edited.cubin));
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 500u) << "the listing was not parsed";
  int changed = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].lo, b[i].lo) << "#" << i << ": " << a[i].text;
    if (a[i].hi == b[i].hi) continue;
    ++changed;
    const uint64_t flipped = a[i].hi ^ b[i].hi, reuse_b = uint64_t{1} << 59, stay = uint64_t{1} << 45;
    EXPECT_TRUE(flipped == reuse_b || flipped == (reuse_b | stay)) << "#" << i << ": " << a[i].text;
    EXPECT_EQ(b[i].hi & (reuse_b | stay), reuse_b | stay) << "#" << i << ": " << b[i].text;
    EXPECT_EQ(b[i].text.rfind("FFMA ", 0), 0u) << "#" << i << ": " << b[i].text;
    EXPECT_EQ(without_reuse(a[i].text), without_reuse(b[i].text)) << "#" << i;
  }
  EXPECT_EQ(changed, edited.ffma_interleaved);
  EXPECT_GE(changed, 64) << "the block-scaled promotion's runs were not edited";
  // "FFMA Rd, Ra, Rb[.reuse], Rc": operands by position.
  static const std::regex kFfma(R"(^FFMA (R\d+), ([^,]+), (R\d+)(\.reuse)?, (.+)$)");
  std::smatch m, next;
  size_t run = 0;
  for (size_t i = 0; i + 1 < b.size(); ++i) {
    const bool is = std::regex_match(b[i].text, m, kFfma);
    run = is ? run + 1 : 0;
    if (!is) continue;
    size_t len = run;  // the run's length: count on to its end
    for (size_t j = i + 1; j < b.size() && b[j].text.rfind("FFMA ", 0) == 0; ++j) ++len;
    const std::string text_next = b[i + 1].text;
    if (len < 8 || !std::regex_match(text_next, next, kFfma)) continue;
    if (m[3] == next[3] && m[1] != m[3])
      EXPECT_TRUE(m[4].matched) << "#" << i << ": " << b[i].text << " then " << text_next;
  }
}

}  // namespace
}  // namespace dgt::test
