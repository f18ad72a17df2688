// setmaxnreg (PTX ISA, sm_90a): hand registers from the producer warpgroup to the consumers. Takes
// effect only when the kernel has a register cap at entry (__launch_bounds__(threads, 1)); values
// are multiples of 8 in 24..256, executed by all threads of a warpgroup.
#pragma once
#include "common.cuh"

namespace dgt::ptx {

template <u32 kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg count must be a multiple of 8 in 24..256");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

template <u32 kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg count must be a multiple of 8 in 24..256");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace dgt::ptx
