#include "launch/grouped_kernel.hpp"

#include <algorithm>

#include "core/driver_api.hpp"
#include "core/error.hpp"
#include "core/int_math.hpp"
#include "device/tma.hpp"
#include "launch/group_args.hpp"
#include "launch/grouped_operands.hpp"
#include "launch/tensor_map_cache.hpp"
#include "space/tile_grid.hpp"

namespace dgt::jit {

GroupedGemmKernel::GroupedGemmKernel(KernelSpec spec, GroupKind kind, LoadedKernel kernel, int sm_count)
    : spec_(std::move(spec)), kind_(kind), kernel_(std::move(kernel)), sm_count_(sm_count) {
  const KernelConfig& c = spec_.config;
  if (c.cluster_ctas() > 1) {
    CUresult rc = CUDA_SUCCESS;
    const int n = dgt::max_active_clusters(kernel_.function, c.cluster_ctas(), c.threads(),
                                           int(kernel_.dynamic_smem_bytes), &rc);
    if (rc != CUDA_SUCCESS || n <= 0)
      DGT_THROW(ErrorKind::kDriver, "{}: no cluster of {} CTAs fits on the device (cuOccupancyMaxActiveClusters: {})",
                spec_.key(), c.cluster_ctas(), driver_error_name(rc));
    max_active_clusters_ = n;
  }
}

int GroupedGemmKernel::grid_size(const GroupedProblem& g) const {
  const KernelConfig& c = spec_.config;
  const int cluster = c.cluster_ctas();
  const int64_t cn = ceil_div(ceil_div(g.n, c.block_n), c.cluster_n);
  int64_t units = 0;
  if (g.kind == GroupKind::kMasked) {
    units = int64_t(g.groups) * ceil_div(g.expected_m, c.block_m) * cn;
  } else {
    for (int64_t r : g.rows) units += ceil_div(r, c.block_m) * cn;
  }
  int64_t clusters = cluster > 1 ? max_active_clusters_ : sm_count_;
  if (c.sms > 0) clusters = std::min<int64_t>(clusters, std::max(1, c.sms / cluster));
  return static_cast<int>(std::max<int64_t>(1, std::min(units, clusters)) * cluster);
}

void GroupedGemmKernel::launch(const GroupedProblem& g, const GroupedOperands& ops, cudaStream_t stream,
                               uint64_t map_owner) const {
  const KernelConfig& c = spec_.config;
  if (g.kind != kind_ || g.scale != spec_.scale || g.accum != spec_.accum)
    DGT_THROW(ErrorKind::kInvalid, "grouped problem {} does not match kernel {} ({}; kind, scale mode or accumulation "
              "differ)", g.label(), spec_.key(), to_string(kind_));
  check_grouped_operands(g, ops);
  const Problem dense = g.dense_view();
  const int64_t rows = g.total_rows();
  // A and D: 2-D [total_rows, K] / [total_rows, N]; every m-block is whole (G1, G5, 128-row segments), so A needs no
  // tail map. B: 2-D [G*N, K]; the last n-block of a group reads through the N-tail map, whose box stops at the
  // group's N (rounded up to 8 rows: up to 7 rows of the next group feed columns >= N, which are never stored).
  const int a_rows = a_box_rows(c, rows), b_rows = b_box_rows(c), b_tail_rows = b_tail_box_rows(c, g.n);
  // Maps from this thread's cache when the caller owns a fixed problem (map_owner, e.g. dgt::GroupedGemm), as the
  // dense launch plan does (launch/tensor_map_cache.hpp): encoding them was the largest host cost of a launch.
  CUtensorMap tma_a, tma_b, tma_b_tail;
  cached_tensor_map(map_owner, 0, ops.a, tma_a, [&] {
    return make_kmajor_tma("A", ops.a, uint64_t(rows), uint64_t(g.k), uint64_t(g.k), a_rows, c.swizzle);
  });
  const uint64_t b_total = uint64_t(g.groups) * uint64_t(g.n);
  cached_tensor_map(map_owner, 1, ops.b, tma_b, [&] {
    return make_kmajor_tma("B", ops.b, b_total, uint64_t(g.k), uint64_t(g.k), b_rows, c.swizzle);
  });
  if (b_tail_rows == b_rows) {
    tma_b_tail = tma_b;
  } else {
    cached_tensor_map(map_owner, 2, ops.b, tma_b_tail, [&] {
      return make_kmajor_tma("B", ops.b, b_total, uint64_t(g.k), uint64_t(g.k), b_tail_rows, c.swizzle);
    });
  }
  // D for the TMA epilogue: [total_rows, N] as the dense kernel's map (gemm_launch_plan.cpp); the kernel stores a
  // warpgroup's box with it only when all of the box's rows are real rows.
  CUtensorMap tma_d{};
  if (c.epilogue == Epilogue::kTma) {
    const int out_bytes = 2;  // bf16 (rule G4)
    const EpilogueStoreMap m = epilogue_store_map(c, g.n, out_bytes);
    cached_tensor_map(map_owner, 3, ops.d, tma_d, [&] {
      return make_store_tma("D", ops.d, out_bytes, uint64_t(rows), m.cols, uint64_t(g.n) * out_bytes, m.box_cols,
                            m.box_rows, m.swizzle);
    });
  }
  const ScaleLayout sl = dense.scales();
  const int64_t k_granules = ceil_div(g.k, kScaleBlock), n_blocks = ceil_div(g.n, kScaleBlock);
  unsigned ld_sa = g.kind == GroupKind::kMasked ? unsigned(g.m_max) : unsigned(rows);
  unsigned ld_sb = unsigned(sl.ld_b);
  GroupKernelArgs grp;
  grp.layout = ops.layout;
  grp.num_groups = unsigned(g.groups);
  grp.m_max = g.kind == GroupKind::kMasked ? unsigned(g.m_max) : 0u;
  grp.sa_group = g.kind == GroupKind::kMasked ? unsigned(k_granules * g.m_max) : 0u;
  grp.sb_group = g.scale == ScaleMode::kBlock ? unsigned(n_blocks * sl.ld_b) : 0u;
  if (g.scale != ScaleMode::kBlock) ld_sa = ld_sb = 0;
  SchedulerDivisors div = grouped_divisors(c, g);
  void* d = ops.d;
  const float* sa = ops.scale_a;
  const float* sb = ops.scale_b;
  unsigned m = unsigned(rows), n = unsigned(g.n), k = unsigned(g.k), splits = 1;
  unsigned long long ldd = static_cast<unsigned long long>(g.n);
  void* null_ptr = nullptr;
  const void* null_cptr = nullptr;
  const float* null_fptr = nullptr;
  float* null_amax = nullptr;
  void* params[] = {const_cast<CUtensorMap*>(&tma_a),      const_cast<CUtensorMap*>(&tma_b),
                    const_cast<CUtensorMap*>(&tma_a),      const_cast<CUtensorMap*>(&tma_b_tail),
                    const_cast<CUtensorMap*>(&tma_d),      &d,
                    &sa,                                   &sb,
                    &ld_sa,                                &ld_sb,
                    &m,                                    &n,
                    &k,                                    &ldd,
                    &splits,                               &null_ptr,
                    &null_ptr,                             &null_cptr,
                    &null_fptr,                            &null_amax,
                    &null_ptr,                             &div,
                    &grp};
  CUlaunchConfig cfg{};
  cfg.gridDimX = static_cast<unsigned>(grid_size(g));
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(c.threads());
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(kernel_.dynamic_smem_bytes);
  cfg.hStream = reinterpret_cast<CUstream>(stream);
  CUlaunchAttribute attr[1]{};
  if (c.cluster_ctas() > 1) {
    attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[0].value.clusterDim.x = static_cast<unsigned>(c.cluster_ctas());
    attr[0].value.clusterDim.y = attr[0].value.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  const CUresult rc = driver().launch_kernel_ex(&cfg, kernel_.function, params, nullptr);
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "launch of grouped {} ({}) for {} refused: {} (grid {}, block {}, smem {} B)",
              spec_.key(), to_string(kind_), g.label(), driver_error_name(rc), cfg.gridDimX, cfg.blockDimX,
              cfg.sharedMemBytes);
}

}  // namespace dgt::jit
