// TMA descriptors for the GEMM operands.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace dgt {

/// Encodes the tensor map of a K-major 8-bit operand (A: M x K, B: N x K): `rows` x `cols` elements,
/// `cols` (= K) contiguous, `ld_bytes` between rows; box = {swizzle_bytes, box_rows} elements with
/// the matching CU_TENSOR_MAP_SWIZZLE_<n>B mode, zero fill out of bounds.
/// Rules checked (cuTensorMapEncodeTiled, CUDA driver API): global address 16-byte aligned, ld_bytes a
/// multiple of 16 and < 2^40, 1 <= box_rows <= 256, swizzle 32/64/128 and box inner bytes == swizzle.
/// Throws Error(kInvalid) naming `operand` and the rule, Error(kDriver) if the driver still refuses.
CUtensorMap make_kmajor_tma(const char* operand, const void* base, uint64_t rows, uint64_t cols, uint64_t ld_bytes,
                            uint32_t box_rows, uint32_t swizzle_bytes);

/// Encodes the tensor map of the BF16 output D (rows x cols, row-major, ld_bytes between rows) for TMA
/// stores of boxes {box_cols, box_rows} with a `swizzle_bytes` swizzle: 128, 64 or 32 with box_cols * 2
/// equal to it, or 0 for none with box_cols * 2 a multiple of 16 (the epilogue's staging layout,
/// kernels/gemm/epilogue_tma.cuh). Same rules and errors as make_kmajor_tma, naming `operand`.
CUtensorMap make_bf16_store_tma(const char* operand, const void* base, uint64_t rows, uint64_t cols, uint64_t ld_bytes,
                                uint32_t box_cols, uint32_t box_rows, uint32_t swizzle_bytes = 128);

/// The same for an output D of `elem_bytes` bytes per element (2: BF16, 4: FP32, 1: e4m3 stored as
/// UINT8, which TMA moves as raw bytes): box_cols * elem_bytes equals the swizzle span, or is a multiple
/// of 16 without swizzle. Same rules and errors.
CUtensorMap make_store_tma(const char* operand, const void* base, int elem_bytes, uint64_t rows, uint64_t cols,
                           uint64_t ld_bytes, uint32_t box_cols, uint32_t box_rows, uint32_t swizzle_bytes);

}  // namespace dgt
