#include "launch/gemm_kernel.hpp"

#include <algorithm>

#include "core/driver_api.hpp"
#include "core/error.hpp"
#include "device/tma.hpp"
#include "space/tile_grid.hpp"

namespace dgt::jit {

GemmKernel::GemmKernel(KernelSpec spec, LoadedKernel kernel, int sm_count)
    : spec_(std::move(spec)), kernel_(std::move(kernel)), sm_count_(sm_count) {
  const KernelConfig& c = spec_.config;
  const int cluster = c.cluster_ctas();
  if (cluster > 1) {
    // A cluster must fit inside one GPC; how many 2- or 4-CTA clusters are resident at once depends
    // on the GPC sizes, so ask the driver instead of assuming SMs / cluster size.
    CUresult rc = CUDA_SUCCESS;
    const int n = dgt::max_active_clusters(kernel_.function, cluster, c.threads(), int(kernel_.dynamic_smem_bytes), &rc);
    if (rc != CUDA_SUCCESS || n <= 0)
      DGT_THROW(ErrorKind::kDriver,
                "{}: no cluster of {} CTAs fits on the device (cuOccupancyMaxActiveClusters: {}, {})", spec_.key(),
                cluster, driver_error_name(rc), n);
    max_active_clusters_ = n;
  }
}

int GemmKernel::effective_splits(const Problem& p) const { return dgt::effective_splits(spec_.config, p.k); }

int GemmKernel::grid_size(const Problem& p) const { return grid_size(TileGrid::of(spec_.config, p)); }

int GemmKernel::grid_size(const TileGrid& g) const {
  const KernelConfig& c = spec_.config;
  const int cluster = g.cluster_size();
  int64_t clusters = cluster > 1 ? max_active_clusters_ : sm_count_;
  if (c.sms > 0) clusters = std::min<int64_t>(clusters, std::max(1, c.sms / cluster));
  return static_cast<int>(g.grid_clusters(clusters) * cluster);
}

size_t GemmKernel::workspace_bytes(const Problem& p) const {
  if (effective_splits(p) <= 1 || spec_.config.split_cluster) return 0;  // a cluster split reduces in shared memory
  const KernelConfig& c = spec_.config;
  const TileGrid g = TileGrid::of(c, p);
  return static_cast<size_t>(g.tiles() * g.splits * c.block_m * c.block_n) * sizeof(float);
}

size_t GemmKernel::amax_state_offset(const Problem& p) const {
  if (effective_splits(p) <= 1 || spec_.config.split_cluster) return 0;
  return static_cast<size_t>(TileGrid::of(spec_.config, p).tiles()) * sizeof(uint32_t);
}

size_t GemmKernel::counter_bytes(const Problem& p) const {
  return amax_state_offset(p) + (p.d == DType::kE4M3 ? 2 * sizeof(uint32_t) : 0);
}

void check_operands(const Problem& p, const GemmOperands& ops) {
  for (const auto& [name, ptr] : {std::pair{"scale_a", ops.scale_a}, std::pair{"scale_b", ops.scale_b}}) {
    if (ptr == nullptr)
      DGT_THROW(ErrorKind::kInvalid, "problem {}: operand {} is null ({} scales need a device pointer)", p.label(), name,
                to_string(p.scale));
    if (is_block_scaled(p.scale) && reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
      DGT_THROW(ErrorKind::kInvalid,
                "problem {}: operand {}: address {} is not 16-byte aligned ({} scales: the kernel copies each row of "
                "scales with cp.async.bulk, which needs 16-byte aligned addresses)",
                p.label(), name, static_cast<const void*>(ptr), to_string(p.scale));
  }
  if (p.bias == Bias::kBF16 && ops.bias == nullptr)
    DGT_THROW(ErrorKind::kInvalid, "problem {} has a bf16 bias but the bias pointer is null (N = {} BF16 values needed)",
              p.label(), p.n);
  if (p.bias == Bias::kBF16 && reinterpret_cast<uintptr_t>(ops.bias) % 2 != 0)
    DGT_THROW(ErrorKind::kInvalid, "operand bias: address {} is not 2-byte aligned (BF16 elements)", ops.bias);
  if (p.d == DType::kE4M3 && ops.scale_d == nullptr)
    DGT_THROW(ErrorKind::kInvalid,
              "problem {} has e4m3 output but scale_d is null (e4m3 output needs an FP32 output scale in device "
              "memory: D = e4m3(scale_d x result))",
              p.label());
  if (p.d != DType::kE4M3 && ops.amax != nullptr)
    DGT_THROW(ErrorKind::kInvalid, "problem {}: an amax pointer needs e4m3 output (output type is {})", p.label(),
              to_string(p.d));
  if (p.d == DType::kE4M3 && ops.amax != nullptr && reinterpret_cast<uintptr_t>(ops.amax) % 4 != 0)
    DGT_THROW(ErrorKind::kInvalid, "operand amax: address {} is not 4-byte aligned", static_cast<void*>(ops.amax));
}

void GemmKernel::launch(const Problem& p, const GemmOperands& ops, cudaStream_t stream, const GemmWorkspace* ws) const {
  const KernelConfig& c = spec_.config;
  if (p.a != spec_.a || p.b != spec_.b || p.accum != spec_.accum || p.scale != spec_.scale)
    DGT_THROW(ErrorKind::kInvalid,
              "problem {} does not match kernel {} (operand types, accumulation or scale mode differ)", p.label(),
              spec_.key());
  if (p.d != spec_.d || p.bias != spec_.bias || p.act != spec_.act)
    DGT_THROW(ErrorKind::kInvalid, "problem {} does not match kernel {} (output type, bias or activation differ)",
              p.label(), spec_.key());
  // The main maps and the tail maps the last m-block / n-block loads through (a box of only the rows below M or N:
  // kernels/gemm/fp8_gemm_traits.cuh a_tail_rows); without a tail the main map goes in the tail slot too.
  const int a_rows = a_box_rows(c, p.m), a_tail_rows = a_tail_box_rows(c, p.m);
  const int b_rows = b_box_rows(c), b_tail_rows = b_tail_box_rows(c, p.n);
  const CUtensorMap tma_a = make_kmajor_tma("A", ops.a, p.m, p.k, p.lda, a_rows, c.swizzle);
  const CUtensorMap tma_b = make_kmajor_tma("B", ops.b, p.n, p.k, p.ldb, b_rows, c.swizzle);
  const CUtensorMap tma_a_tail =
      a_tail_rows == a_rows ? tma_a : make_kmajor_tma("A", ops.a, p.m, p.k, p.lda, a_tail_rows, c.swizzle);
  const CUtensorMap tma_b_tail =
      b_tail_rows == b_rows ? tma_b : make_kmajor_tma("B", ops.b, p.n, p.k, p.ldb, b_tail_rows, c.swizzle);
  CUtensorMap tma_d{};
  if (c.epilogue == Epilogue::kTma) {
    // TMA stores only D's columns up to the last whole 16-byte unit of a row; the kernel writes the rest. With
    // no whole unit (N * bytes < 16) the map is never used for a store; it gets one unit so that it encodes.
    const int out_bytes = dtype_bytes(p.d);
    const int64_t tma_cols = std::max<int64_t>(epilogue_tma_cols(p.n, out_bytes), 16 / out_bytes);
    tma_d = make_store_tma("D", ops.d, out_bytes, p.m, static_cast<uint64_t>(tma_cols),
                           static_cast<uint64_t>(p.ldd) * out_bytes, epilogue_box_cols(c.block_n, out_bytes),
                           c.rows_per_wg(), epilogue_swizzle_bytes(c.block_n, out_bytes));
  }
  check_operands(p, ops);  // after A, B, D: their errors come first
  const TileGrid grid = TileGrid::of(c, p);  // once per launch: splits, scheduler divisors, grid size
  unsigned splits = static_cast<unsigned>(grid.splits);
  void* partials = nullptr;
  void* counters = nullptr;
  if (c.splits_per_cluster() > 1 && grid.splits != c.split_k)
    DGT_THROW(ErrorKind::kInvalid,
              "{} on {}: a cluster split needs all {} splits non-empty, but K = {} splits into {} (rule P9)",
              spec_.key(), p.label(), c.split_k, p.k, grid.splits);
  if (splits > 1 && !c.split_cluster) {
    if (!ws || ws->partial_bytes < workspace_bytes(p) || ws->counter_bytes < amax_state_offset(p))
      DGT_THROW(ErrorKind::kInvalid, "{} on {} splits K {} ways and needs a workspace of {} + {} bytes", spec_.key(),
                p.label(), splits, workspace_bytes(p), counter_bytes(p));
    partials = ws->partials;
    counters = ws->counters;
  }
  void* d = ops.d;
  const float* sa = ops.scale_a;
  const float* sb = ops.scale_b;
  const ScaleLayout sl = p.scales();
  unsigned ld_sa = static_cast<unsigned>(sl.ld_a), ld_sb = static_cast<unsigned>(sl.ld_b);
  unsigned m = static_cast<unsigned>(p.m), n = static_cast<unsigned>(p.n), k = static_cast<unsigned>(p.k);
  unsigned long long ldd = static_cast<unsigned long long>(p.ldd);
  const void* bias = p.bias == Bias::kBF16 ? ops.bias : nullptr;
  const float* scale_d = p.d == DType::kE4M3 ? ops.scale_d : nullptr;
  float* amax = p.d == DType::kE4M3 ? ops.amax : nullptr;
  void* amax_state = nullptr;
  if (amax) {
    if (!ws || ws->counters == nullptr || ws->counter_bytes < counter_bytes(p))
      DGT_THROW(ErrorKind::kInvalid,
                "{} on {}: an amax pointer needs the workspace's counters ({} bytes, zeroed once; GemmWorkspace)",
                spec_.key(), p.label(), counter_bytes(p));
    amax_state = static_cast<char*>(ws->counters) + amax_state_offset(p);
  }
  // The scheduler's run-time divisors as multiply-high constants (kernels/gemm/scheduler.cuh SchedDivisors).
  SchedulerDivisors divisors = grid.divisors();
  void* params[] = {const_cast<CUtensorMap*>(&tma_a),
                    const_cast<CUtensorMap*>(&tma_b),
                    const_cast<CUtensorMap*>(&tma_a_tail),
                    const_cast<CUtensorMap*>(&tma_b_tail),
                    &tma_d,
                    &d,
                    &sa,
                    &sb,
                    &ld_sa,
                    &ld_sb,
                    &m,
                    &n,
                    &k,
                    &ldd,
                    &splits,
                    &partials,
                    &counters,
                    &bias,
                    &scale_d,
                    &amax,
                    &amax_state,
                    &divisors};

  CUlaunchConfig cfg{};
  cfg.gridDimX = static_cast<unsigned>(grid_size(grid));
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(c.threads());
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(kernel_.dynamic_smem_bytes);
  cfg.hStream = reinterpret_cast<CUstream>(stream);
  CUlaunchAttribute attr[1];
  if (c.cluster_ctas() > 1) {
    attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[0].value.clusterDim.x = static_cast<unsigned>(c.cluster_ctas());
    attr[0].value.clusterDim.y = 1;
    attr[0].value.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  CUresult rc = driver().launch_kernel_ex(&cfg, kernel_.function, params, nullptr);
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "launch of {} for {} refused: {} (grid {}, block {}, smem {} B)", spec_.key(),
              p.label(), driver_error_name(rc), cfg.gridDimX, cfg.blockDimX, cfg.sharedMemBytes);
}

}  // namespace dgt::jit
