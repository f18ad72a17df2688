#include "space/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "space/resource_model.hpp"

namespace dgt {

double estimate_us(const KernelSpec& spec, const Problem& p, int sm_count) {
  const KernelConfig& c = spec.config;
  const double tiles = std::ceil(double(p.m) / c.block_m) * std::ceil(double(p.n) / c.block_n);
  const double waves = std::ceil(tiles / std::max(1, sm_count));
  const double k_padded = std::ceil(double(p.k) / c.block_k) * c.block_k;
  const double flops_per_sm = 1979e12 / 132.0;
  const double n_eff = double(c.block_n) / (c.block_n + 24.0);  // small WGMMA N issues relatively more overhead
  const double mma_s = 2.0 * c.block_m * c.block_n * k_padded / (flops_per_sm * n_eff);
  const double bytes_per_sm = 3.3e12 / std::min<double>(tiles, sm_count);
  const double load_s = (c.block_m + c.block_n) * k_padded / bytes_per_sm;
  const double exposed = c.num_stages < 4 ? 0.15 * (4 - c.num_stages) : 0.0;
  const double tile_s = std::max(mma_s, load_s) * (1.0 + exposed);
  return waves * tile_s * 1e6 + 3.0;
}

KernelConfig default_config(const Problem& p) {
  KernelConfig c;
  c.block_m = p.m <= 64 ? 64 : 128;
  c.num_math_wg = c.block_m == 64 ? 1 : 2;
  c.block_n = p.n < 128 ? static_cast<int>((p.n + 15) / 16 * 16) : 128;
  c.block_k = 128;
  c.swizzle = 128;
  c.raster = Raster::kAlongM;
  c.group = 8;
  for (int stages = 8; stages >= 2; --stages) {
    c.num_stages = stages;
    if (evaluate_resources(KernelSpec::of(c, p)).ok()) break;
  }
  return c;
}

}  // namespace dgt
