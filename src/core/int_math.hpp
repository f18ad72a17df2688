// The one host definition of integer ceil-division and round-up (a unit test, IntMathSource.*, checks that
// no other helper or `(a + b - 1) / b` idiom exists under src/). The device code in kernels/ keeps its
// own 32-bit copy (kernels/common.cuh); tests/unit/test_tile_grid.cpp checks that both agree.
#pragma once

#include <cstdint>

namespace dgt {

/// ceil(a / b) for a >= 0 and b > 0, in 64 bits.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The smallest multiple of m that is >= x (x >= 0, m > 0).
constexpr int64_t round_up(int64_t x, int64_t m) { return ceil_div(x, m) * m; }

}  // namespace dgt
