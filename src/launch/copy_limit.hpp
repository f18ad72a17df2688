// The copy limit of a problem (kernels/util/copy_limit.cuh): the launch plan of the streaming kernel that
// reads A and B once and writes D once, and a host mirror of what it writes (for tests). Host only; the
// launch itself is UtilKernels::copy_limit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "problem/problem.hpp"

namespace dgt {

/// Mirrors dgt::util::CopyLimitArgs in kernels/util/copy_limit.cuh (passed by value; size checked).
struct CopyLimitArgs {
  struct Segment {
    const void* base = nullptr;
    uint64_t rows = 0;
    uint64_t row_words = 0;  ///< 16-byte words read per row
    uint64_t ld_words = 0;   ///< row stride in 16-byte words
    uint32_t tail_bytes = 16;
    uint32_t pad = 0;
  };
  Segment a, b;
  void* d = nullptr;
  uint64_t d_rows = 0;
  uint64_t d_row_units = 0;  ///< 16-byte words (d_vector) or BF16 elements per row
  uint64_t d_ld_bytes = 0;
  uint32_t d_vector = 1;
  uint32_t pad = 0;
  uint32_t* sink = nullptr;
};

/// How the copy-limit kernel runs one problem.
struct CopyLimitPlan {
  CopyLimitArgs args;    ///< pointers null; UtilKernels::copy_limit fills them in
  unsigned grid = 1;     ///< blocks of `block` threads
  unsigned block = 512;  ///< matches __launch_bounds__(512, 2) of dgt_copy_limit
  /// Bytes the kernel loads (16-byte words; equals M*K + N*K when K is a multiple of 16, else each row's
  /// last word is loaded whole and its padding masked) and stores (equals 2*M*N when 2*N and 2*ldd are
  /// multiples of 16; else the last word of each row reaches into D's row padding, or D is written
  /// element by element when its rows are not 16-byte aligned).
  int64_t bytes_read = 0, bytes_written = 0;
  /// Threads in the grid.
  uint64_t threads() const { return uint64_t(grid) * block; }
};

/// The plan for problem `p` on a device with `sm_count` SMs: dense operands as one flat run of words (no
/// per-word division), at most 2 blocks of 512 per SM (64 bytes in flight per thread), fewer when the
/// problem has fewer than 4 words per thread. Requires validate_problem(p) to hold (row strides of A and
/// B multiples of 16 bytes); throws Error(kInvalid) otherwise or when sm_count < 1.
CopyLimitPlan plan_copy_limit(const Problem& p, int sm_count);

/// Host mirror of the kernel: the D allocation (`d`, at least M rows of ldd BF16, updated in place) after
/// one launch of `plan` on A (M x lda bytes) and B (N x ldb bytes) as they are in device memory. Sink
/// writes are not mirrored. Throws Error(kInvalid) when a buffer is smaller than the plan reads or writes.
void copy_limit_reference(const CopyLimitPlan& plan, std::span<const uint8_t> a, std::span<const uint8_t> b,
                          std::span<uint8_t> d);

}  // namespace dgt
