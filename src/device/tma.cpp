#include "device/tma.hpp"

#include "core/driver_api.hpp"
#include "core/error.hpp"

namespace dgt {

namespace {

CUtensorMap encode_2d(const char* operand, const void* base, CUtensorMapDataType type, uint32_t elem_bytes,
                      uint64_t rows, uint64_t cols, uint64_t ld_bytes, uint32_t box_cols, uint32_t box_rows,
                      uint32_t swizzle_bytes) {
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0)
    DGT_THROW(ErrorKind::kInvalid,
              "operand {}: address {} is not 16-byte aligned (TMA rule: global address must be 16-byte aligned)",
              operand, base);
  if (ld_bytes % 16 != 0)
    DGT_THROW(ErrorKind::kInvalid,
              "operand {}: leading dimension {} bytes is not a multiple of 16 (TMA rule: global strides must be "
              "multiples of 16 bytes)",
              operand, ld_bytes);
  if (ld_bytes >= (uint64_t(1) << 40))
    DGT_THROW(ErrorKind::kInvalid, "operand {}: leading dimension {} bytes is not < 2^40 (TMA rule)", operand,
              ld_bytes);
  if (box_rows < 1 || box_rows > 256 || box_cols < 1 || box_cols > 256)
    DGT_THROW(ErrorKind::kInvalid, "operand {}: box {}x{} (TMA rule: box dimensions must be in 1..256)", operand,
              box_cols, box_rows);
  CUtensorMapSwizzle swizzle;
  switch (swizzle_bytes) {
    case 128: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
    case 64: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
    case 32: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
    case 0: swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
    default:
      DGT_THROW(ErrorKind::kInvalid, "operand {}: swizzle {} bytes (must be 32, 64 or 128)", operand, swizzle_bytes);
  }
  if (swizzle_bytes == 0 && (box_cols * elem_bytes) % 16 != 0)
    DGT_THROW(ErrorKind::kInternal, "operand {}: box inner size {} bytes must be a multiple of 16", operand,
              box_cols * elem_bytes);
  if (swizzle_bytes != 0 && box_cols * elem_bytes != swizzle_bytes)
    DGT_THROW(ErrorKind::kInternal, "operand {}: box inner size {} bytes must equal the swizzle span {} bytes", operand,
              box_cols * elem_bytes, swizzle_bytes);
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {ld_bytes};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult rc = driver().tensor_map_encode_tiled(&map, type, 2, const_cast<void*>(base), dims, strides, box,
                                                 elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver,
              "operand {}: cuTensorMapEncodeTiled refused rows={} cols={} ld={} B box={}x{} swizzle={} B: {}", operand,
              rows, cols, ld_bytes, box_cols, box_rows, swizzle_bytes, driver_error_name(rc));
  return map;
}

}  // namespace

CUtensorMap make_kmajor_tma(const char* operand, const void* base, uint64_t rows, uint64_t cols, uint64_t ld_bytes,
                            uint32_t box_rows, uint32_t swizzle_bytes) {
  return encode_2d(operand, base, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, rows, cols, ld_bytes, swizzle_bytes, box_rows,
                   swizzle_bytes);
}

CUtensorMap make_bf16_store_tma(const char* operand, const void* base, uint64_t rows, uint64_t cols, uint64_t ld_bytes,
                                uint32_t box_cols, uint32_t box_rows, uint32_t swizzle_bytes) {
  return encode_2d(operand, base, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, rows, cols, ld_bytes, box_cols, box_rows,
                   swizzle_bytes);
}

CUtensorMap make_store_tma(const char* operand, const void* base, int elem_bytes, uint64_t rows, uint64_t cols,
                           uint64_t ld_bytes, uint32_t box_cols, uint32_t box_rows, uint32_t swizzle_bytes) {
  const CUtensorMapDataType type = elem_bytes == 4   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                     : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  return encode_2d(operand, base, type, elem_bytes, rows, cols, ld_bytes, box_cols, box_rows, swizzle_bytes);
}

}  // namespace dgt
