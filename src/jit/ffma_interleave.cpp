#include "jit/ffma_interleave.hpp"

#include <elf.h>

#include <cstring>
#include <unordered_set>

#include "core/error.hpp"

namespace dgt::jit {

namespace {

constexpr size_t kInstrBytes = 16;
constexpr uint64_t kOpcodeMask = 0xfff, kFfmaRrr = 0x223;
constexpr uint64_t kYieldBit = uint64_t{1} << 45, kReuseB = uint64_t{1} << 59;

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // the cubin is little-endian, as is every host dgtune builds for (x86-64, aarch64)
  return v;
}

void store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

bool is_ffma_rrr(const uint8_t* instr) { return (load64(instr) & kOpcodeMask) == kFfmaRrr; }
uint32_t dst_reg(const uint8_t* instr) { return static_cast<uint32_t>((load64(instr) >> 16) & 0xff); }  // Rd
uint32_t rb_reg(const uint8_t* instr) { return static_cast<uint32_t>((load64(instr) >> 32) & 0xff); }   // Rb
// Guard predicate bits [12, 16): 0x7 is PT, not negated (an unpredicated instruction).
bool unpredicated(const uint8_t* instr) { return ((load64(instr) >> 12) & 0xf) == 0x7; }

// One run of n consecutive FFMAs starting at `run`: DeepGEMM's rule on its first 9n/16 instructions. An FFMA that
// reuses Rb is edited when its destination is new in the run, or when it repeats the previous FFMA's destination and
// that one kept its reuse flag (a chain on one accumulator).
void edit_run(uint8_t* run, size_t n, FfmaInterleaveStats& stats) {
  const size_t count = n * 9 / 16;
  std::unordered_set<uint32_t> seen;
  bool last_reused = false;
  uint32_t last_dst = ~0u;
  for (size_t i = 0; i < count; ++i) {
    uint8_t* instr = run + i * kInstrBytes;
    const uint32_t dst = dst_reg(instr);
    uint64_t hi = load64(instr + 8);
    bool reused = (hi & kReuseB) != 0;
    if (reused && (!seen.count(dst) || (last_reused && dst == last_dst))) {
      hi = (hi & ~kReuseB) ^ kYieldBit;
      store64(instr + 8, hi);
      reused = false;
      ++stats.changed;
    }
    seen.insert(dst);
    last_reused = reused;
    last_dst = dst;
  }
}

// One run: set Rb's reuse flag on every FFMA whose successor in the run reads the same Rb.
void reuse_scale_run(uint8_t* run, size_t n, FfmaInterleaveStats& stats) {
  for (size_t i = 0; i + 1 < n; ++i) {
    uint8_t* instr = run + i * kInstrBytes;
    const uint8_t* next = instr + kInstrBytes;
    if (rb_reg(instr) != rb_reg(next) || rb_reg(instr) == 0xff) continue;  // 0xff: RZ
    if (dst_reg(instr) == rb_reg(instr) || !unpredicated(instr) || !unpredicated(next)) continue;
    const uint64_t hi = load64(instr + 8);
    if (hi & kReuseB) continue;
    // Bit 45 set with the reuse flag, as ptxas writes every reused operand here (cuobjdump shows ".reuse" only
    // then): the yield hint's "stay on this warp", which keeps the cached operand valid for the next instruction.
    store64(instr + 8, hi | kReuseB | kYieldBit);
    ++stats.changed;
  }
}

template <typename Edit>
void walk_ffma_runs(uint8_t* bytes, size_t size, FfmaInterleaveStats& stats, Edit edit) {
  if (size % kInstrBytes != 0)
    DGT_THROW(ErrorKind::kInternal, "FFMA edit: a text section of {} bytes is not a whole number of 16-byte "
              "sm_90 instructions", size);
  const size_t n = size / kInstrBytes;
  size_t i = 0;
  while (i < n) {
    if (!is_ffma_rrr(bytes + i * kInstrBytes)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && is_ffma_rrr(bytes + j * kInstrBytes)) ++j;
    if (j - i >= static_cast<size_t>(kFfmaMinRun)) {
      ++stats.segments;
      edit(bytes + i * kInstrBytes, j - i, stats);
    }
    i = j;
  }
}

template <typename Edit>
FfmaInterleaveStats edit_cubin(std::string& cubin, Edit edit) {
  FfmaInterleaveStats stats;
  auto* base = reinterpret_cast<uint8_t*>(cubin.data());
  const size_t size = cubin.size();
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(base, ELFMAG, SELFMAG) != 0)
    DGT_THROW(ErrorKind::kInternal, "FFMA interleave: the cubin ({} bytes) is not an ELF file", size);
  Elf64_Ehdr eh;
  std::memcpy(&eh, base, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    DGT_THROW(ErrorKind::kInternal, "FFMA interleave: the cubin is not a 64-bit little-endian ELF file");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
      eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
    DGT_THROW(ErrorKind::kInternal, "FFMA interleave: the cubin's section header table ({} entries at {}) lies "
              "outside its {} bytes", eh.e_shnum, eh.e_shoff, size);
  for (unsigned s = 0; s < eh.e_shnum; ++s) {
    Elf64_Shdr sh;
    std::memcpy(&sh, base + eh.e_shoff + s * sizeof(Elf64_Shdr), sizeof sh);
    if (sh.sh_type != SHT_PROGBITS || (sh.sh_flags & SHF_EXECINSTR) == 0) continue;
    if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
      DGT_THROW(ErrorKind::kInternal, "FFMA interleave: executable section {} ({} bytes at {}) lies outside the "
                "cubin's {} bytes", s, sh.sh_size, sh.sh_offset, size);
    ++stats.text_sections;
    walk_ffma_runs(base + sh.sh_offset, sh.sh_size, stats, edit);
  }
  return stats;
}

}  // namespace

void interleave_ffma_text(uint8_t* bytes, size_t size, FfmaInterleaveStats& stats) {
  walk_ffma_runs(bytes, size, stats, edit_run);
}

void reuse_ffma_scale_text(uint8_t* bytes, size_t size, FfmaInterleaveStats& stats) {
  walk_ffma_runs(bytes, size, stats, reuse_scale_run);
}

FfmaInterleaveStats interleave_ffma(std::string& cubin) { return edit_cubin(cubin, edit_run); }

FfmaInterleaveStats reuse_ffma_scale(std::string& cubin) { return edit_cubin(cubin, reuse_scale_run); }

}  // namespace dgt::jit
