// Persistent tile scheduler: CTA b handles tiles b, b + gridDim.x, ... in rasterized order.
#pragma once
#include "common.cuh"

namespace dgt::gemm {

/// Tile order ("rasterization"). kRasterAlongM: tiles come in bands of kGroup n-blocks; inside a band
/// the n-block moves fastest, then the m-block, so the ~132 tiles in flight touch kGroup B panels and
/// 132/kGroup A panels (L2 reuse). !kRasterAlongM: the same with M and N swapped.
template <u32 BLOCK_M, u32 BLOCK_N, bool kRasterAlongM, u32 kGroup>
struct TileScheduler {
  u32 num_m_blocks, num_n_blocks, num_tiles;

  __device__ __forceinline__ TileScheduler(u32 M, u32 N)
      : num_m_blocks(ceil_div(M, BLOCK_M)), num_n_blocks(ceil_div(N, BLOCK_N)), num_tiles(num_m_blocks * num_n_blocks) {}

  __device__ __forceinline__ void tile_coords(u32 tile, u32& m_block, u32& n_block) const {
    const u32 num_major = kRasterAlongM ? num_m_blocks : num_n_blocks;  // walked inside a band
    const u32 num_minor = kRasterAlongM ? num_n_blocks : num_m_blocks;  // split into bands
    const u32 band = tile / (kGroup * num_major);
    const u32 first = band * kGroup;
    const u32 width = min_of(kGroup, num_minor - first);
    const u32 in_band = tile - band * kGroup * num_major;
    const u32 minor = first + in_band % width;
    const u32 major = in_band / width;
    m_block = kRasterAlongM ? major : minor;
    n_block = kRasterAlongM ? minor : major;
  }
};

}  // namespace dgt::gemm
