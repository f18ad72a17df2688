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
  const double splits = std::ceil(k_blocks / std::ceil(k_blocks / std::max(1, c.split_k)));
  const double units = cdiv(m_blocks, c.cluster_m) * cdiv(n_blocks, c.cluster_n) * splits;  // per cluster
  double ctas = sm_count;
  if (c.sms > 0) ctas = std::min<double>(ctas, c.sms);
  const double clusters = std::max(1.0, std::floor(ctas / cluster));
  const double waves = std::ceil(units / clusters);
  const double busy_sms = std::min(units, clusters) * cluster;

  // One unit on one SM.
  const double k_unit = std::ceil(k_blocks / splits) * c.block_k;
  const double sm_flops = k.fp8_tflops * 1e12 / sm_count;
  double eff = double(c.block_n) / (c.block_n + 20.0);   // small WGMMA N: issue overhead, B reuse
  eff *= c.num_math_wg == 2 ? 1.0 : 0.9;                 // one consumer WG hides less latency
  if (spec.accum == Accum::kPromote) eff *= 0.93;        // FP32 adds on CUDA cores every k-block
  const double mma_s = 2.0 * c.block_m * c.block_n * k_unit / (sm_flops * eff);
  const double l2_per_sm = k.l2_tbps * 1e12 / std::max(1.0, busy_sms);
  const double a_bytes = c.block_m * k_unit / c.cluster_n, b_bytes = c.block_n * k_unit / c.cluster_m;  // multicast
  const double load_s = (a_bytes + b_bytes) / l2_per_sm;
  double unit_s = std::max(mma_s, load_s) + k.unit_overhead_us * 1e-6;
  if (c.num_stages < 4) unit_s *= 1.0 + 0.12 * (4 - c.num_stages);
  if (c.epilogue == Epilogue::kTma) unit_s -= 0.15e-6;   // the store overlaps the next unit's mainloop
  const double compute_s = waves * unit_s;

  // DRAM: a band of `group` clusters along the minor dimension shares its operand panels in L2.
  const double band = std::max(1, c.group) * (c.raster == Raster::kAlongM ? c.cluster_n : c.cluster_m);
  const double a_reads = c.raster == Raster::kAlongM ? cdiv(n_blocks, band) : 1.0;
  const double b_reads = c.raster == Raster::kAlongM ? 1.0 : cdiv(m_blocks, band);
  const double bytes = double(p.m) * p.k * std::min(a_reads, n_blocks) + double(p.n) * p.k * std::min(b_reads, m_blocks) +
                       2.0 * p.m * p.n + (splits > 1 ? 2.0 * splits * m_blocks * c.block_m * n_blocks * c.block_n * 4 : 0.0);
  const double dram_s = bytes / (k.dram_tbps * 1e12);

  return (std::max(compute_s, dram_s)) * 1e6 + k.launch_us;
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
