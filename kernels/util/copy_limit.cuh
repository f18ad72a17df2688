// The copy limit: a streaming kernel that moves exactly the bytes any GEMM of the problem must move
// (read A and B once, write D once; Problem::min_bytes()), as fast as the memory system allows. Its
// time is a lower bound for the GEMM's (`dgtune compare`'s copy_fraction = copy us / GEMM us).
//
// Why a fold and not a memcpy: A + B and D differ in size (decode shapes read megabytes and write
// kilobytes), so D cannot be a copy of the inputs. Each thread XORs the 16-byte words it reads into one
// accumulator and writes the D words it owns as accumulator ^ word index; a thread without a D word
// tests its accumulator against a constant and writes a sink that is never written in practice, so no
// load is dead. The output depends on the launch configuration (src/launch/copy_limit.hpp mirrors it on
// the host, and tests/gpu checks the two agree).
#pragma once
#include "common.cuh"

namespace dgt::util {

/// One operand read as rows of 16-byte words (mirrors dgt::CopyLimitArgs::Segment on the host). A dense
/// operand (ld == row_words, full words) comes as one row of every word, so no division is needed.
struct CopySegment {
  const uint4* base;
  u64 rows;
  u64 row_words;   ///< 16-byte words read per row: ceil(K / 16)
  u64 ld_words;    ///< row stride in 16-byte words (lda, ldb bytes are multiples of 16: validate_problem)
  u32 tail_bytes;  ///< valid bytes of each row's last word (16: all); the rest is row padding, masked out
  u32 pad_;
};

/// Kernel parameter (by value; mirrors dgt::CopyLimitArgs, static_assert on the size there).
struct CopyLimitArgs {
  CopySegment a, b;
  void* d;
  u64 d_rows;
  u64 d_row_units;  ///< units written per row: 16-byte words (d_vector) or BF16 elements
  u64 d_ld_bytes;   ///< row stride of D in bytes
  u32 d_vector;     ///< 1: 16-byte stores (ldd * 2 a multiple of 16); 0: 2-byte stores
  u32 pad_;
  u32* sink;  ///< written only when an accumulator equals kCopySinkMagic (never, in practice)
};

constexpr u32 kCopySinkMagic = 0x9e3779b9u;

/// Address of word w of a segment (w < rows * row_words) and how many of its bytes are valid (16, or
/// tail_bytes for a row's last word: the rest is row padding holding NaN, which no GEMM reads). Integer
/// work only, so that the loads of a batch are all issued before any of them is waited for.
__device__ __forceinline__ const uint4* copy_word(const CopySegment& s, u64 w, u32& valid) {
  u64 row = 0, col = w;
  if (s.rows > 1) {
    // 32-bit division where it fits: a 64-bit one costs several times as many instructions.
    if (w < 0xFFFFFFFFull && s.row_words < 0xFFFFFFFFull) {
      row = u32(w) / u32(s.row_words);
    } else {
      row = w / s.row_words;
    }
    col = w - row * s.row_words;
  }
  valid = col == s.row_words - 1 ? s.tail_bytes : 16u;
  return s.base + row * s.ld_words + col;
}

/// Bytes [0, valid) of the little-endian word, the rest zeroed.
__device__ __forceinline__ uint4 keep_bytes(uint4 v, u32 valid) {
  if (valid >= 16) return v;
  auto keep = [valid](u32 x, u32 first) -> u32 {
    if (valid >= first + 4) return x;
    if (valid <= first) return 0u;
    return x & ((1u << (8 * (valid - first))) - 1u);
  };
  return make_uint4(keep(v.x, 0), keep(v.y, 4), keep(v.z, 8), keep(v.w, 12));
}

__device__ __forceinline__ void xor_into(uint4& acc, const uint4& v) {
  acc.x ^= v.x;
  acc.y ^= v.y;
  acc.z ^= v.z;
  acc.w ^= v.w;
}

}  // namespace dgt::util

/// Grid-stride over the words of A then B (thread t of T reads words t, t + T, ..., four loads in flight
/// per thread, the last up to three together too), then over D's units (thread t writes units t, t + T, ...):
///   vector D: word u = acc ^ (u32(u), u32(u >> 32), kCopySinkMagic, 0)
///   scalar D: element u = u16(x ^ y ^ z ^ w of acc ^ u)
extern "C" __global__ void __launch_bounds__(512, 2) dgt_copy_limit(const dgt::util::CopyLimitArgs args) {
  using namespace dgt;
  using namespace dgt::util;
  const u64 tid = blockIdx.x * u64(blockDim.x) + threadIdx.x;
  const u64 stride = u64(gridDim.x) * blockDim.x;
  const u64 na = args.a.rows * args.a.row_words;
  const u64 total = na + args.b.rows * args.b.row_words;
  auto word = [&](u64 w, u32& valid) {
    return w < na ? copy_word(args.a, w, valid) : copy_word(args.b, w - na, valid);
  };
  uint4 acc = make_uint4(0, 0, 0, 0);
  u64 w = tid;
  // Four independent loads before any use: 64 bytes in flight per thread, 64 KiB per SM at 1024
  // threads (2 blocks of 512, the host's launch), ~8 MiB over 132 SMs: about twice what covers HBM
  // latency at full bandwidth (Little's law: ~4.8 TB/s x ~0.8 us).
  for (; w + 3 * stride < total; w += 4 * stride) {
    u32 t0, t1, t2, t3;
    const uint4* p0 = word(w, t0);
    const uint4* p1 = word(w + stride, t1);
    const uint4* p2 = word(w + 2 * stride, t2);
    const uint4* p3 = word(w + 3 * stride, t3);
    const uint4 v0 = __ldg(p0), v1 = __ldg(p1), v2 = __ldg(p2), v3 = __ldg(p3);
    xor_into(acc, keep_bytes(v0, t0));
    xor_into(acc, keep_bytes(v1, t1));
    xor_into(acc, keep_bytes(v2, t2));
    xor_into(acc, keep_bytes(v3, t3));
  }
  // At most three words left: their loads are issued together too (one after another, each would wait
  // a full memory latency, ~15% of a 4096^3 copy's time).
  if (w < total) {
    const bool has1 = w + stride < total, has2 = w + 2 * stride < total;
    u32 t0 = 16, t1 = 16, t2 = 16;
    const uint4* p0 = word(w, t0);
    const uint4* p1 = has1 ? word(w + stride, t1) : p0;
    const uint4* p2 = has2 ? word(w + 2 * stride, t2) : p0;
    const uint4 v0 = __ldg(p0);
    const uint4 v1 = has1 ? __ldg(p1) : make_uint4(0, 0, 0, 0);
    const uint4 v2 = has2 ? __ldg(p2) : make_uint4(0, 0, 0, 0);
    xor_into(acc, keep_bytes(v0, t0));
    xor_into(acc, keep_bytes(v1, t1));
    xor_into(acc, keep_bytes(v2, t2));
  }

  const u64 nd = args.d_rows * args.d_row_units;
  char* d = static_cast<char*>(args.d);
  for (u64 u = tid; u < nd; u += stride) {
    u64 row = 0, col = u;
    if (args.d_rows > 1) {
      row = u / args.d_row_units;
      col = u - row * args.d_row_units;
    }
    if (args.d_vector) {
      const uint4 v = make_uint4(acc.x ^ u32(u), acc.y ^ u32(u >> 32), acc.z ^ kCopySinkMagic, acc.w);
      *reinterpret_cast<uint4*>(d + row * args.d_ld_bytes + col * 16) = v;
    } else {
      const u32 f = acc.x ^ acc.y ^ acc.z ^ acc.w ^ u32(u);
      *reinterpret_cast<u16*>(d + row * args.d_ld_bytes + col * 2) = u16(f ^ (f >> 16));
    }
  }
  if (tid >= nd && acc.x == kCopySinkMagic && acc.y == kCopySinkMagic) *args.sink = acc.z;
}
