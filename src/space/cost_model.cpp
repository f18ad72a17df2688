#include "space/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "core/int_math.hpp"
#include "space/resource_model.hpp"
#include "space/tile_grid.hpp"

namespace dgt {

namespace {

/// The estimate and, for rank_candidates' tie-break, the WGMMA part of it: the tensor-core (and promotion) time of
/// the launch's units, waves x per-unit WGMMA time, in microseconds. Only the latter depends on promote_every when
/// the unit is bound by its L2 or pipeline-depth term or the launch by DRAM.
struct Estimate {
  double us = 0;
  double wgmma_us = 0;
};

Estimate estimate(const KernelSpec& spec, const Problem& problem, int sm_count, const CostConstants& k) {
  const KernelConfig& c = spec.config;
  // Swap AB: the kernel computes the transposed problem; every term below is the kernel's (its tiles, waves, operand
  // panels), and D's bytes are the same either way.
  const Problem p = kernel_problem(c, problem);
  const int cluster = c.cluster_m * c.cluster_n;
  const TileGrid g = TileGrid::of(c, p.m, p.n, p.k);  // p is already the kernel's problem
  const double m_blocks = double(g.m_blocks), n_blocks = double(g.n_blocks);
  const double splits = g.splits;
  const double per_split = double(g.k_blocks_per_split);
  int64_t ctas = sm_count;
  if (c.sms > 0) ctas = std::min<int64_t>(ctas, c.sms);
  // Clusters of `size` CTAs that run at once: the hardware's count where known, else the SMs' share.
  auto resident_clusters = [&](int size) -> int64_t {
    const int known = size == 2 ? k.resident_clusters_2 : size == 3 ? k.resident_clusters_3 : size == 4 ? k.resident_clusters_4
                      : size == 6 ? k.resident_clusters_6 : size == 8 ? k.resident_clusters_8 : 0;
    return known > 0 ? std::min<int64_t>(ctas / size, known) : ctas / size;
  };
  int64_t resident = ctas;  // clusters (of `cluster` CTAs) that run at once
  if (cluster == 2 || cluster == 4) resident = resident_clusters(cluster);
  const bool split_cluster = g.split_cluster > 1;
  if (split_cluster) resident = resident_clusters(g.split_cluster);  // a cluster split: S CTAs per launched cluster
  resident = std::max<int64_t>(1, resident);
  const double waves = double(g.waves(resident));
  const double busy_sms = double(g.grid_clusters(resident) * g.cluster_size());

  const double k_unit = per_split * c.block_k;
  double eff = double(c.block_n) / (c.block_n + k.n_half);
  if (c.num_math_wg == 1 && c.block_m == 64) eff *= k.one_wg_m64;
  // Promotion every P k-blocks (promote: P = 1) costs (1 - factor) / P of the WGMMA rate.
  double promo = c.mainloop != Mainloop::k1g ? k.promote_2g : k.promote;  // 2o: as 2g (no epilogue term yet)
  // Block scale modes: the promotion also multiplies by the k-block's A and B scales.
  const bool block = is_block_scaled(p.scale);
  if (block) promo *= c.mainloop != Mainloop::k1g ? k.block_promote_2g : k.block_promote;
  // pp never promotes (one tensor-core sum per tile, P8).
  if (c.mainloop != Mainloop::kPp) eff *= 1.0 - (1.0 - promo) / std::max(1, c.promote_every);
  if (cluster > 1) eff *= c.mainloop == Mainloop::k1g ? k.cluster_1g : k.cluster;
  if (c.block_k == 256) eff *= k.bk256;
  if (c.swizzle == 64) eff *= k.swizzle64;
  if (c.swizzle == 32) eff *= k.swizzle32;
  const double mma_s = 2.0 * c.block_m * c.block_n * k_unit / (k.sm_flops * eff);
  const double l2_per_sm = k.l2_tbps * 1e12 / std::max(1.0, busy_sms);
  const double load_s = (c.block_m * k_unit / c.cluster_n + c.block_n * k_unit / c.cluster_m) / l2_per_sm;
  // pp: one warpgroup's epilogue runs under the other's mainloop, so most of the per-unit cost is hidden (a
  // prior, not yet fitted).
  const double unit_fixed_us = c.mainloop == Mainloop::kPp ? 0.25 * k.unit_us : k.unit_us;
  // Pipeline depth (Little's law): the ring keeps num_stages k-blocks of loads in flight, each taking load_latency_us
  // from issue to arrival, so a unit's k-blocks cannot stream faster than one per load_latency_us / num_stages. A
  // deeper ring ranks ahead of a shallower twin until this bound falls below the WGMMA (or L2) time. 0: no such bound.
  const double latency_us = block ? k.load_latency_us * k.block_load_latency : k.load_latency_us;
  const double ring_s = per_split * latency_us * 1e-6 / c.num_stages;
  double unit_s = std::max(std::max(mma_s, load_s), ring_s) + (per_split * k.k_block_us + unit_fixed_us) * 1e-6;
  if (c.epilogue == Epilogue::kTma) unit_s *= k.tma_store;
  // Workspace split: S partials written and read through L2 by the tile's CTAs. Cluster split: partials move
  // through distributed shared memory; a flat prior (not fitted) for its barrier round trip.
  if (splits > 1 && !split_cluster)
    unit_s += (splits + 1) * c.block_m * c.block_n * 4.0 / (k.reduce_tbps * 1e12 / std::max(1.0, busy_sms));
  if (split_cluster) unit_s += 0.3e-6;
  const double compute_s = waves * unit_s;

  // DRAM: a band of `group` clusters along the minor dimension shares its operand panels in L2.
  const bool along_m = c.raster == Raster::kAlongM;
  const int64_t band = int64_t(std::max(1, c.group)) * (along_m ? c.cluster_n : c.cluster_m);
  const double a_reads = along_m ? double(std::min(ceil_div(g.n_blocks, band), g.n_blocks)) : 1.0;
  const double b_reads = along_m ? 1.0 : double(std::min(ceil_div(g.m_blocks, band), g.m_blocks));
  // D's bytes per element follow the output type (bf16 2, f32 4, e4m3 1).
  const double bytes = double(p.m) * p.k * a_reads + double(p.n) * p.k * b_reads + double(dtype_bytes(p.d)) * p.m * p.n +
                       (splits > 1 && !split_cluster ? 2.0 * splits * m_blocks * c.block_m * n_blocks * c.block_n * 4 : 0.0);
  const double dram_s = bytes / (k.dram_tbps * 1e12);
  return {std::max(compute_s, dram_s) * 1e6 + k.launch_us, waves * mma_s * 1e6};
}

}  // namespace

double estimate_us(const KernelSpec& spec, const Problem& p, int sm_count, const CostConstants& k) {
  return estimate(spec, p, sm_count, k).us;
}

KernelConfig default_config(const Problem& p) {
  KernelConfig c;
  c.block_m = p.m <= 64 ? 64 : 128;
  c.num_math_wg = c.block_m == 64 ? 1 : 2;
  c.block_n = p.n < 128 ? static_cast<int>(round_up(p.n, 16)) : 128;
  c.block_k = 128;
  c.swizzle = 128;
  c.raster = Raster::kAlongM;
  c.group = 8;
  c.mainloop = Mainloop::k2g;  // BLOCK_N <= 128: 3 x 64 + 16 registers fit; promotion every k-block (R20)
  // The TMA-store epilogue where D's rows allow it (rule P3): in four exhaustive sweep DBs (125 problems where both
  // were timed) the default's TMA-store twin was faster on every one (geomean 1.19x, least 1.018x;
  // results/h200/default-tma-store-2026-12-04.md). Each epilogue gets its own deepest pipeline: the
  // staging tile takes shared memory from the ring.
  const auto fit = [&](Epilogue e) {
    c.epilogue = e;
    c.num_stages = std::max(2, deepest_stages(KernelSpec::of(c, p), 8));
    return evaluate_resources(KernelSpec::of(c, p)).ok() && problem_fit(c, p).empty();
  };
  // block1d1d keeps the tile's column scales in registers (R10's kScaleRegs): narrow BLOCK_N by 16 until
  // the config is legal (BLOCK_N 64 for two consumer WGs), so the default runs every problem.
  while (!fit(Epilogue::kTma) && !fit(Epilogue::kDirect) && c.block_n > 16) c.block_n -= 16;
  return c;
}

}  // namespace dgt

namespace dgt {

std::vector<Candidate> rank_candidates(const SearchSpace& space, const Problem& p, int sm_count, size_t limit) {
  struct Ranked {
    Estimate estimate;
    size_t twins;  // canonical index of the first candidate with this estimate that differs at most in promote_every
    Candidate candidate;
  };
  std::vector<Ranked> ranked;
  std::map<std::pair<std::string, double>, size_t> first;  // (key with P = 1, estimate) -> its first candidate
  for (Candidate& c : enumerate(space, p, sm_count).kept) {
    const Estimate e = estimate(KernelSpec::of(c.config, p), p, sm_count, CostConstants{});
    KernelConfig twin = c.config;
    twin.promote_every = 1;
    const size_t twins = first.emplace(std::make_pair(twin.key(), e.us), ranked.size()).first->second;
    ranked.push_back({e, twins, std::move(c)});
  }
  // Ascending estimate. Candidates that differ only in promote_every (P) and estimate exactly the same (P hidden behind
  // the L2, pipeline-depth or DRAM term) rank together at the first one's place, by WGMMA time: largest P first. Every
  // other tie keeps the canonical order (a stable sort). Exact equality: hidden P leaves the estimate bit for bit the
  // same, and a tolerance would not be a strict weak ordering; tools/cost_model/cost_model.py's rank_order mirrors it.
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.estimate.us != b.estimate.us) return a.estimate.us < b.estimate.us;
    if (a.twins != b.twins) return a.twins < b.twins;
    return a.estimate.wgmma_us < b.estimate.wgmma_us;
  });
  if (limit > 0 && ranked.size() > limit) ranked.resize(limit);
  std::vector<Candidate> out;
  out.reserve(ranked.size());
  for (auto& r : ranked) out.push_back(std::move(r.candidate));
  return out;
}

std::vector<KernelConfig> rank_by_estimate(const SearchSpace& space, const Problem& p, int sm_count, size_t limit) {
  std::vector<KernelConfig> out;
  for (Candidate& c : rank_candidates(space, p, sm_count, limit)) out.push_back(std::move(c.config));
  return out;
}

}  // namespace dgt
