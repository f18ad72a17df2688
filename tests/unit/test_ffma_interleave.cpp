// The FFMA interleaving edit (jit/ffma_interleave.hpp) on hand-built sm_90 instruction words: which FFMAs of a run it
// edits, which bits it flips, and what it leaves alone. Its agreement with cuobjdump on real cubins is
// tests/nvrtc/test_ffma_interleave.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "jit/ffma_interleave.hpp"

namespace dgt::jit {
namespace {

constexpr uint64_t kYield = uint64_t{1} << 45, kReuseB = uint64_t{1} << 59;

struct Instr {
  uint64_t lo, hi;
};

// FFMA Rd, Ra, Rb, Rc (register form 0x223) with Rb's reuse flag as given; the yield bit set as ptxas sets it on
// reused FFMAs (read in our cubins' listings).
Instr ffma(uint32_t rd, bool reuse_b) {
  return {0x223u | (uint64_t{rd} << 16) | (uint64_t{0xc6} << 32), 0x000fc20000000000ull | (reuse_b ? kReuseB | kYield : 0)};
}
Instr other(uint64_t opcode) { return {opcode | (uint64_t{5} << 16), 0x000fc20000000000ull | kReuseB | kYield}; }

std::vector<uint8_t> bytes_of(const std::vector<Instr>& v) {
  std::vector<uint8_t> b(v.size() * 16);
  for (size_t i = 0; i < v.size(); ++i) {
    std::memcpy(b.data() + 16 * i, &v[i].lo, 8);
    std::memcpy(b.data() + 16 * i + 8, &v[i].hi, 8);
  }
  return b;
}
Instr at(const std::vector<uint8_t>& b, size_t i) {
  Instr r;
  std::memcpy(&r.lo, b.data() + 16 * i, 8);
  std::memcpy(&r.hi, b.data() + 16 * i + 8, 8);
  return r;
}

TEST(FfmaInterleave, EditsReusedFfmasInTheFirstNineSixteenthsOfARun) {
  // 16 FFMAs on distinct accumulators, Rb reused by every even one (ptxas's pattern in the block-scaled promotion):
  // the first 16 * 9 / 16 = 9 are looked at, so the even ones among 0..8 (five) are edited.
  std::vector<Instr> v;
  for (uint32_t i = 0; i < 16; ++i) v.push_back(ffma(100 + i, i % 2 == 0));
  std::vector<uint8_t> b = bytes_of(v);
  FfmaInterleaveStats st;
  interleave_ffma_text(b.data(), b.size(), st);
  EXPECT_EQ(st.segments, 1);
  EXPECT_EQ(st.changed, 5);
  for (size_t i = 0; i < 16; ++i) {
    const Instr r = at(b, i);
    EXPECT_EQ(r.lo, v[i].lo) << i;  // operands and opcode never change
    if (i % 2 == 0 && i <= 8) {
      EXPECT_EQ(r.hi & kReuseB, 0u) << i;       // the reuse flag is gone
      EXPECT_EQ(r.hi & kYield, 0u) << i;        // the yield bit flipped (it was set)
      EXPECT_EQ(r.hi ^ v[i].hi, kReuseB | kYield) << i;  // and nothing else moved
    } else {
      EXPECT_EQ(r.hi, v[i].hi) << i;
    }
  }
}

TEST(FfmaInterleave, ARepeatedDestinationIsEditedOnlyAfterOneThatKeptItsFlag) {
  // A run of 8 (the shortest edited; 8 * 9 / 16 = 4 instructions looked at), all reusing Rb: R10 three times, then
  // R11 without reuse. 0: R10 is new -> edited. 1: R10 again after an edited one -> kept. 2: R10 again right after
  // 1, which kept its flag (a chain on one accumulator) -> edited. 3: no reuse flag -> nothing to edit.
  std::vector<Instr> v = {ffma(10, true), ffma(10, true), ffma(10, true), ffma(11, false),
                          ffma(12, true), ffma(13, true), ffma(14, true), ffma(15, true)};
  std::vector<uint8_t> b = bytes_of(v);
  FfmaInterleaveStats st;
  interleave_ffma_text(b.data(), b.size(), st);
  EXPECT_EQ(st.changed, 2);
  EXPECT_EQ(at(b, 0).hi ^ v[0].hi, kReuseB | kYield);
  EXPECT_EQ(at(b, 1).hi, v[1].hi);
  EXPECT_EQ(at(b, 2).hi ^ v[2].hi, kReuseB | kYield);
  for (size_t i = 3; i < 8; ++i) EXPECT_EQ(at(b, i).hi, v[i].hi) << i;  // 4..7: past the first 9/16
}

TEST(FfmaInterleave, LeavesShortRunsAndOtherInstructionsAlone) {
  // Seven FFMAs, a FMUL (0x220), seven more: no run reaches 8. Other opcodes with the reuse flag are never touched.
  std::vector<Instr> v;
  for (uint32_t i = 0; i < 7; ++i) v.push_back(ffma(20 + i, true));
  v.push_back(other(0x220));
  for (uint32_t i = 0; i < 7; ++i) v.push_back(ffma(40 + i, true));
  v.push_back(other(0x7a23));  // low 12 bits 0xa23: another FFMA form (constant operand), not the register form
  std::vector<uint8_t> b = bytes_of(v);
  const std::vector<uint8_t> before = b;
  FfmaInterleaveStats st;
  interleave_ffma_text(b.data(), b.size(), st);
  EXPECT_EQ(st.segments, 0);
  EXPECT_EQ(st.changed, 0);
  EXPECT_EQ(b, before);
}

TEST(FfmaInterleave, RefusesWhatIsNotSass) {
  std::vector<uint8_t> b(24);
  FfmaInterleaveStats st;
  EXPECT_THROW(interleave_ffma_text(b.data(), b.size(), st), Error);
  std::string not_elf = "this is not an ELF cubin, just text long enough for a header............";
  try {
    interleave_ffma(not_elf);
    FAIL() << "a non-ELF cubin was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("not an ELF file"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace dgt::jit
