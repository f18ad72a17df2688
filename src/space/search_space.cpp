#include "space/search_space.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "space/tile_grid.hpp"

namespace dgt {

namespace {

/// The problem-aware pruning rules P1..P7 (documented in the header).
std::string prune_reason(const KernelConfig& c, const Problem& problem, int sm_count) {
  const TileGrid g = TileGrid::of(c, problem);
  // P1 and P2 compare the tile with the kernel's problem (swap AB: the transpose); problem_fit takes D's.
  const Problem p = kernel_problem(c, problem);
  const int64_t m_blocks = g.m_blocks, n_blocks = g.n_blocks;
  const int64_t tiles = g.tiles();
  if (c.block_m > 64 && c.block_m >= 2 * round_up(p.m, 64))
    return fmt::format("P1: BLOCK_M = {} >= 2 x M rounded up to 64 ({}): a smaller BLOCK_M covers M", c.block_m,
                       round_up(p.m, 64));
  if (c.block_n > 16 && c.block_n >= p.n + 16)
    return fmt::format("P2: BLOCK_N = {} >= N + 16 = {}: a smaller BLOCK_N covers N", c.block_n, p.n + 16);
  if (std::string why = problem_fit(c, problem); !why.empty()) return why;
  if (c.split_k > 1 && tiles >= sm_count)
    return fmt::format("P4: split-K = {} but the {} tiles already fill {} SMs", c.split_k, tiles, sm_count);
  if (c.split_k > 1 && g.splits != c.split_k)
    return fmt::format("P5: split-K = {} runs as {} splits for {} k-blocks (a duplicate)", c.split_k, g.splits,
                       g.k_blocks);
  if (c.cluster_m > m_blocks || c.cluster_n > n_blocks)
    return fmt::format("P6: cluster {}x{} is larger than the {}x{} tile grid", c.cluster_m, c.cluster_n, m_blocks,
                       n_blocks);
  if (c.sms > 0) {
    // P5 leaves split_k == g.splits here (R15 keeps split_k >= 1).
    const int64_t units = g.cluster_units();
    if (c.sms >= sm_count || c.sms >= units * g.cluster_size())
      return fmt::format("P7: sms = {} does not limit the grid ({} work units, {} SMs)", c.sms, units, sm_count);
  }
  return {};
}

}  // namespace

size_t SpaceGrid::size() const {
  return block_m.size() * block_n.size() * block_k.size() * num_stages.size() * num_math_wg.size() * swizzle.size() *
         cluster.size() * raster.size() * group.size() * epilogue.size() * split_k.size() * sms.size() *
         mainloop.size() * promote_every.size() * split_cluster.size() * swap_ab.size();
}

size_t SearchSpace::size() const {
  size_t n = 0;
  for (const auto& g : grids) n += g.size();
  return n;
}

Enumeration enumerate(const SearchSpace& space, const Problem& p, int sm_count) {
  Enumeration out;
  std::set<std::string> seen;
  // Each point is evaluated once, whether the "max" stage search or the candidate itself asks first: the
  // report travels with the candidate (EvaluatedSpec) and nothing downstream evaluates it again.
  std::unordered_map<std::string, ResourceReport> reports;  // KernelConfig::key() -> its report for p
  auto report_of = [&](const KernelConfig& c) -> const ResourceReport& {
    auto [it, fresh] = reports.try_emplace(c.key());
    if (fresh) it->second = evaluate_resources(KernelSpec::of(c, p));
    return it->second;
  };
  auto legal = [&](const KernelSpec& s) { return report_of(s.config).ok(); };
  auto add = [&](const SpaceGrid& g, KernelConfig c) {
    if (seen.count(c.key())) return;  // produced by an earlier grid already
    seen.insert(c.key());
    Candidate cand;
    cand.grid = g.name;
    cand.config = c;
    cand.resources = report_of(c);
    cand.pruned = cand.resources.rejection;
    if (cand.pruned.empty()) cand.pruned = prune_reason(c, p, sm_count);
    (cand.pruned.empty() ? out.kept : out.rejected).push_back(std::move(cand));
  };
  for (const auto& g : space.grids)
    for (int bm : g.block_m)
      for (int bn : g.block_n)
        for (int bk : g.block_k)
          for (int st : g.num_stages)
            for (int wg : g.num_math_wg)
              for (int sw : g.swizzle)
                for (auto [cm, cn] : g.cluster)
                  for (Raster r : g.raster)
                    for (int grp : g.group)
                      for (Epilogue e : g.epilogue)
                        for (int sk : g.split_k)
                          for (int sms : g.sms)
                            for (Mainloop ml : g.mainloop)
                              for (int pe : g.promote_every)
                                for (bool scl : g.split_cluster)
                                  for (bool swap : g.swap_ab) {
                                  KernelConfig c{bm, bn, bk, st, wg, sw, cm, cn, r, grp, e, sk, sms, ml, pe};
                                  c.split_cluster = scl && sk > 1;  // with one split both values are the same config
                                  c.swap_ab = swap;
                                  if (pe <= 0) c.promote_every = p.accum == Accum::kFast ? std::max(1, 2048 / bk) : 1;
                                  if (st <= 0) {
                                    // "max" / "max-N": the deepest pipeline that fits, minus N.
                                    const int deepest =
                                        deepest_stages(KernelSpec::of(c, p), SearchSpace::kMaxAutoStages, legal);
                                    c.num_stages = deepest ? deepest + st : 2;
                                    if (c.num_stages < 2) continue;  // "max-N" below the minimum: nothing new
                                  }
                                  add(g, c);
                                }
  return out;
}

}  // namespace dgt
