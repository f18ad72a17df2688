// FFMA interleaving: a post-compile edit of the sm_90a machine code that lets the warp scheduler interleave a
// long run of FFMAs (the block-scaled promotion, acc = partial x scale + acc) with the other warpgroup's WGMMA
// issue. The idea is DeepGEMM's (deep_gemm/jit/interleave_ffma.py, "FFMA SASS interleaving" in its README): in the
// first 9/16 of every run of at least 8 consecutive FFMAs, an FFMA that holds its second source in the operand
// reuse cache loses that reuse flag and has its yield control bit flipped. Both are scheduling hints in the
// instruction's control bits: the arithmetic (and so every output bit) is unchanged, which tools/kernel_ab checks when
// it measures the edit (--ffma-interleave-new: outputs of both sides compared bitwise).
// Off by default (jit::CompileOptions): on the H200 it made our block-scaled grouped kernels 1.6% slower and did not
// pay on the large dense ones (results/h200/ffma-interleave-2026-12-04.md; not profiled: the reuse flags it clears
// avoid register-bank conflicts, which is one candidate reason).
//
// Encoding facts used (sm_90 SASS, 128-bit instructions, little-endian; read from cuobjdump listings of our own
// cubins and checked by tests/nvrtc/test_ffma_interleave.cpp against cuobjdump on every compile of its kernels):
//   - bits [0, 12) of the low word: opcode; 0x223 = FFMA with three register sources (FFMA Rd, Ra, Rb, Rc);
//   - bits [16, 24) of the low word: the destination register Rd;
//   - bit 45 of the high word: the yield control bit; bit 59 of the high word: the reuse flag of Rb.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dgt::jit {

/// What one pass changed.
struct FfmaInterleaveStats {
  int text_sections = 0;  ///< executable sections (".text.<kernel>") walked
  int segments = 0;       ///< runs of >= kFfmaMinRun consecutive register-form FFMAs
  int changed = 0;        ///< FFMAs whose reuse flag was cleared and yield bit flipped
};

/// Runs shorter than this are left alone (DeepGEMM: 8 instructions).
inline constexpr int kFfmaMinRun = 8;

/// The edit on raw SASS: `bytes` holds `size` bytes of consecutive 16-byte instructions (size % 16 == 0). Adds what
/// it changed to `stats`. Throws Error(kInternal) when size is not a multiple of 16.
void interleave_ffma_text(uint8_t* bytes, size_t size, FfmaInterleaveStats& stats);

/// The edit on every executable section of an ELF cubin (sections of type SHT_PROGBITS with SHF_EXECINSTR), in
/// place; the ELF layout is unchanged. Throws Error(kInternal) naming what is wrong when `cubin` is not a 64-bit
/// little-endian ELF or a section lies outside it.
FfmaInterleaveStats interleave_ffma(std::string& cubin);

// FFMA scale reuse: the opposite experiment. ncu on the H200 (results/h200/block-profile-2026-12-04.md) put the
// block-scaled kernel's extra time in dispatch stalls of the promotion FFMAs (acc = partial x scale + acc), which
// the per-tensor kernel's FADDs have four times less of. ptxas sets the reuse flag of the scale (Rb) on every other
// FFMA of a run that shares it, so every other FFMA reads the scale from the register file beside the partial and
// the accumulator: a register-bank conflict whenever two of the three share a bank. The edit sets the Rb reuse flag
// on every FFMA of a run of >= kFfmaMinRun whose next instruction is an FFMA with the same Rb, so the scale is read
// from the register file once per run, and sets bit 45 with it as ptxas does on every reused operand (the warp stays
// on the scheduler for the next instruction; the reverse of DeepGEMM's flip). Scheduling hints: the arithmetic is
// unchanged. Off (jit::CompileOptions::ffma_scale_reuse): on the H200 it made the block-scaled kernels 3-5% slower
// (results/h200/block-profile-2026-12-04.md).
// Encoding facts used besides the above: bits [32, 40) of the low word hold Rb.

/// The scale-reuse edit on raw SASS (`size` % 16 == 0); adds to `stats` (changed = FFMAs that gained the flag).
/// Throws Error(kInternal) when size is not a multiple of 16.
void reuse_ffma_scale_text(uint8_t* bytes, size_t size, FfmaInterleaveStats& stats);

/// The scale-reuse edit on every executable section of an ELF cubin, in place; errors as interleave_ffma().
FfmaInterleaveStats reuse_ffma_scale(std::string& cubin);

}  // namespace dgt::jit
