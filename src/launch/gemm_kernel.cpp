#include "launch/gemm_kernel.hpp"

#include <algorithm>

#include "core/driver_api.hpp"
#include "core/error.hpp"
#include "launch/gemm_launch_plan.hpp"
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
  // One-off launches (tuner, tests) prepare and launch at once; dgt::Gemm keeps its plans (launch/gemm_launch_plan).
  GemmLaunchPlan(*this, p, ws ? *ws : GemmWorkspace{}, /*cache_maps=*/false).launch(ops, stream);
}

}  // namespace dgt::jit
