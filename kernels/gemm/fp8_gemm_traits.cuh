// Compile-time layout and legality of the FP8 GEMM kernel family.
// The static_asserts below are the kernel side of the legality rules; src/space/resource_model.cpp
// checks the same rules, in the same order and with the same numbers, on the host, so a reviewer can
// diff the two lists. Change one, change the other (tests/unit/test_resource_model.cpp pins both).
#pragma once
#include "common.cuh"

namespace dgt::gemm {

/// Shared-memory layout of one CTA (bytes, from the 1024-aligned base):
///   [A stages: kNumStages * BLOCK_M * BLOCK_K][B stages: kNumStages * BLOCK_N * BLOCK_K]
///   [full barriers: kNumStages * 8][empty barriers: kNumStages * 8]
/// plus kAlignPad bytes of slack because the dynamic shared-memory base is only guaranteed 16-byte
/// aligned and swizzled tiles must start at a multiple of the swizzle repeat (8 rows * span <= 1024).
/// Each stage of an operand is BLOCK_K / span sub-tiles of [rows][span bytes], one TMA box each.
template <u32 BLOCK_M_, u32 BLOCK_N_, u32 BLOCK_K_, u32 kNumStages_, u32 kNumMathWG_, u32 kSwizzle_, u32 kClusterM_,
          u32 kClusterN_, bool kRasterAlongM_, u32 kGroup_, bool kFastAccum_, u32 kTypeA_, u32 kTypeB_>
struct Fp8GemmTraits {
  static constexpr u32 BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_;
  static constexpr u32 kNumStages = kNumStages_, kNumMathWG = kNumMathWG_, kSwizzle = kSwizzle_;
  static constexpr u32 kClusterM = kClusterM_, kClusterN = kClusterN_, kGroup = kGroup_;
  static constexpr bool kRasterAlongM = kRasterAlongM_, kFastAccum = kFastAccum_;
  static constexpr u32 kTypes = 2 * kTypeA_ + kTypeB_;

  static constexpr u32 kThreads = 128 * (kNumMathWG + 1);
  static constexpr u32 kRowsPerWG = BLOCK_M / kNumMathWG;
  static constexpr u32 kMmaPerWG = kRowsPerWG / 64;     // m64 WGMMAs per warpgroup per k-step
  static constexpr u32 kAccPerMma = BLOCK_N / 2;        // FP32 accumulators per thread per m64nN
  static constexpr u32 kAtomsK = BLOCK_K / kSwizzle;    // swizzle spans (TMA boxes) per k-block
  static constexpr u32 kStepsK = BLOCK_K / 32;          // WGMMA k32 steps per k-block

  static constexpr u32 kSmemAStage = BLOCK_M * BLOCK_K;
  static constexpr u32 kSmemBStage = BLOCK_N * BLOCK_K;
  static constexpr u32 kSmemBarriers = 2 * kNumStages * 8;
  static constexpr u32 kAlignPad = 1024;
  static constexpr u32 kSmemBytes = kAlignPad + kNumStages * (kSmemAStage + kSmemBStage) + kSmemBarriers;
  static constexpr u32 kMaxSmemBytes = 232448;  // sm_90 opt-in maximum per block (227 KB)

  // Registers (per thread, after setmaxnreg). 2 consumer WGs: 128*40 + 256*232 = 64512 <= 65536.
  static constexpr u32 kProducerRegs = 40;
  static constexpr u32 kMathRegs = kNumMathWG == 1 ? 240 : 232;
  static constexpr u32 kAccRegs = kMmaPerWG * kAccPerMma * (kFastAccum ? 1 : 2);
  static constexpr u32 kRegOverhead = 48;  // addresses, loop state, epilogue temporaries (calibrated with ptxas)

  // ---- Legality rules, same order as src/space/resource_model.cpp ----
  static_assert(BLOCK_M == 64 || BLOCK_M == 128 || BLOCK_M == 256, "R1: BLOCK_M must be 64, 128 or 256");
  static_assert(BLOCK_N % 8 == 0 && BLOCK_N >= 8 && BLOCK_N <= 256, "R2: BLOCK_N must be a multiple of 8 in 8..256 (WGMMA N)");
  static_assert(kSwizzle == 32 || kSwizzle == 64 || kSwizzle == 128, "R3: swizzle must be 32, 64 or 128 bytes");
  static_assert(BLOCK_K == 64 || BLOCK_K == 128 || BLOCK_K == 256, "R4: BLOCK_K must be 64, 128 or 256");
  static_assert(BLOCK_K % kSwizzle == 0, "R5: BLOCK_K must be a multiple of the swizzle span (one TMA box per span)");
  static_assert(kNumMathWG == 1 || kNumMathWG == 2, "R6: 1 or 2 consumer warpgroups");
  static_assert(BLOCK_M % (64 * kNumMathWG) == 0, "R7: BLOCK_M must give each consumer warpgroup a multiple of 64 rows");
  static_assert(kNumStages >= 2 && kNumStages <= 32, "R8: kNumStages must be in 2..32");
  static_assert(kSmemBytes <= kMaxSmemBytes, "R9: shared memory exceeds 232448 bytes");
  static_assert(kAccRegs + kRegOverhead <= kMathRegs, "R10: accumulators do not fit the consumer register budget");
  static_assert(kClusterM * kClusterN == 1, "R11: clusters larger than 1x1 are not implemented yet");
  static_assert(kGroup >= 1 && kGroup <= 64, "R12: rasterization group must be in 1..64");
  // R13 (split-K == 1) is checked on the host only: the kernel has no split-K parameter yet.
};

}  // namespace dgt::gemm
