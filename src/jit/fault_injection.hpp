// Deliberately faulty candidates, for testing that a sweep survives them (the worker process, README
// "Crashing and hanging candidates"). Compiled in only when CMake's DGTUNE_FAULT_INJECTION is ON (the
// default of builds with tests; packagers build with -DDGTUNE_BUILD_TESTS=OFF or -DDGTUNE_FAULT_INJECTION=OFF).
#pragma once

#include <string>

#include "problem/kernel_config.hpp"

namespace dgt::jit {

/// What DGTUNE_TEST_FAULT asks of `spec`: 0 nothing, 1 trap, 2 spin forever. The variable lists
/// "trap:CONFIG_KEY" and "spin:CONFIG_KEY" items separated by commas; a candidate whose KernelConfig::key()
/// is listed gets `#define DGT_TEST_FAULT n` in its source (kernels/gemm/fp8_gemm.cuh), which also makes its
/// cache key differ from the healthy kernel's. Always 0 in builds without DGTUNE_FAULT_INJECTION.
int test_fault_of(const KernelSpec& spec);

}  // namespace dgt::jit
