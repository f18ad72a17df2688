#include "space/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "space/resource_model.hpp"

namespace dgt {

namespace {
double cdiv(double a, double b) { return std::ceil(a / b); }
}  // namespace

double estimate_us(const KernelSpec& spec, const Problem& p, int sm_count, const CostConstants& k) {
  const KernelConfig& c = spec.config;
  const int cluster = c.cluster_m * c.cluster_n;
  const double m_blocks = cdiv(double(p.m), c.block_m), n_blocks = cdiv(double(p.n), c.block_n);
  const double k_blocks = cdiv(double(p.k), c.block_k);
  const double splits = effective_splits(c, p.k);
  const double per_split = std::ceil(k_blocks / splits);
  const double units = cdiv(m_blocks, c.cluster_m) * cdiv(n_blocks, c.cluster_n) * splits;
  double ctas = sm_count;
  if (c.sms > 0) ctas = std::min<double>(ctas, c.sms);
  double resident = ctas;  // clusters (of `cluster` CTAs) that run at once
  if (cluster == 2) resident = std::min(std::floor(ctas / 2), double(k.resident_clusters_2));
  if (cluster == 4) resident = std::min(std::floor(ctas / 4), double(k.resident_clusters_4));
  resident = std::max(1.0, resident);
  const double waves = std::ceil(units / resident);
  const double busy_sms = std::min(units, resident) * cluster;

  const double k_unit = per_split * c.block_k;
  double eff = double(c.block_n) / (c.block_n + k.n_half);
  if (c.num_math_wg == 1 && c.block_m == 64) eff *= k.one_wg_m64;
  // Promotion every P k-blocks (promote: P = 1) costs (1 - factor) / P of the WGMMA rate.
  const double promo = c.mainloop == Mainloop::k2g ? k.promote_2g : k.promote;
  eff *= 1.0 - (1.0 - promo) / std::max(1, c.promote_every);
  if (cluster > 1) eff *= k.cluster;
  if (c.block_k == 256) eff *= k.bk256;
  if (c.swizzle == 64) eff *= k.swizzle64;
  if (c.swizzle == 32) eff *= k.swizzle32;
  const double mma_s = 2.0 * c.block_m * c.block_n * k_unit / (k.sm_flops * eff);
  const double l2_per_sm = k.l2_tbps * 1e12 / std::max(1.0, busy_sms);
  const double load_s = (c.block_m * k_unit / c.cluster_n + c.block_n * k_unit / c.cluster_m) / l2_per_sm;
  double unit_s = std::max(mma_s, load_s) + (per_split * k.k_block_us + k.unit_us) * 1e-6;
  if (c.epilogue == Epilogue::kTma) unit_s *= k.tma_store;
  if (splits > 1) unit_s += (splits + 1) * c.block_m * c.block_n * 4.0 / (k.reduce_tbps * 1e12 / std::max(1.0, busy_sms));
  const double compute_s = waves * unit_s;

  // DRAM: a band of `group` clusters along the minor dimension shares its operand panels in L2.
  const bool along_m = c.raster == Raster::kAlongM;
  const double band = std::max(1, c.group) * (along_m ? c.cluster_n : c.cluster_m);
  const double a_reads = along_m ? std::min(cdiv(n_blocks, band), n_blocks) : 1.0;
  const double b_reads = along_m ? 1.0 : std::min(cdiv(m_blocks, band), m_blocks);
  const double bytes = double(p.m) * p.k * a_reads + double(p.n) * p.k * b_reads + 2.0 * p.m * p.n +
                       (splits > 1 ? 2.0 * splits * m_blocks * c.block_m * n_blocks * c.block_n * 4 : 0.0);
  const double dram_s = bytes / (k.dram_tbps * 1e12);
  return std::max(compute_s, dram_s) * 1e6 + k.launch_us;
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
  c.mainloop = Mainloop::k2g;  // BLOCK_N <= 128: 3 x 64 + 16 registers fit; promotion every k-block (R20)
  c.num_stages = std::max(2, deepest_stages(KernelSpec::of(c, p), 8));
  return c;
}

}  // namespace dgt
