// The loader's lookup key of a call: plain integers, so dgt::Gemm::run hashes without allocating (internal header).
#pragma once

#include <cstdint>
#include <string_view>

#include "dgtune/gemm.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// M, N, K, the leading dimensions and every typed field of a call (make_flags). With m = 0 it names the call's
/// problem family: what the tuning DB's ladder rule and dgt::Gemm::warmup work on.
struct ShapeKey {
  int64_t m, n, k, lda, ldb, ldd;
  int flags;  // a_format | b_format << 1 | fast << 2 | scale << 3 | output << 5 | bias << 7 | act << 8 (make_flags)
  bool operator==(const ShapeKey&) const = default;
  ShapeKey family() const { return {0, n, k, lda, ldb, ldd, flags}; }
};

struct ShapeKeyHash {
  size_t operator()(const ShapeKey& s) const noexcept;  ///< FNV-1a of the words, no allocation
};

/// The type, accumulation and scale fields of a call as ShapeKey::flags. Throws Error(kUsage) for a scale value
/// outside Fp8Scaling (a cast), before it could name another problem.
int make_flags(Fp8Format a_format, Fp8Format b_format, bool fast_accum, Fp8Scaling scale);
/// make_flags plus the output type, bias presence and activation of GemmRunOptions. Enum values outside their range
/// (casts) throw Error(kUsage) naming the field.
int make_flags(const GemmRunOptions& o);

/// The Problem a key names.
Problem make_problem(const ShapeKey& s);
/// The options of a call of p: formats, accumulation, scaling, output type, activation, and a bias pointer that is
/// non-null (a marker, never read) when p has a bias. Pointers other than the bias marker are null.
GemmRunOptions run_options_of(const Problem& p);
/// The key of a problem (the inverse of make_problem).
ShapeKey shape_key_of(const Problem& p);

}  // namespace dgt
