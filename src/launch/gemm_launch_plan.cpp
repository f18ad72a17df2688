#include "launch/gemm_launch_plan.hpp"

#include <algorithm>

#include "core/driver_api.hpp"
#include "core/error.hpp"
#include "device/tma.hpp"
#include "launch/tensor_map_cache.hpp"

namespace dgt::jit {

GemmLaunchPlan::GemmLaunchPlan(const GemmKernel& kernel, const Problem& p, const GemmWorkspace& ws, bool cache_maps)
    : kernel_(&kernel), p_(p), grid_(TileGrid::of(kernel.spec().config, p)) {
  const KernelSpec& spec = kernel.spec();
  const KernelConfig& c = spec.config;
  if (p.a != spec.a || p.b != spec.b || p.accum != spec.accum || p.scale != spec.scale)
    DGT_THROW(ErrorKind::kInvalid,
              "problem {} does not match kernel {} (operand types, accumulation or scale mode differ)", p.label(),
              spec.key());
  if (p.d != spec.d || p.bias != spec.bias || p.act != spec.act)
    DGT_THROW(ErrorKind::kInvalid, "problem {} does not match kernel {} (output type, bias or activation differ)",
              p.label(), spec.key());
  // The main maps and the tail maps the last m-block / n-block loads through (a box of only the rows below M or N:
  // kernels/gemm/fp8_gemm_traits.cuh a_tail_rows); without a tail the main map goes in the tail slot too.
  // Swap AB: the kernel computes D^T = B A^T; its operand maps, shape and scales are the transposed problem's.
  kp_ = kernel_problem(c, p);
  a_rows_ = a_box_rows(c, kp_.m), a_tail_rows_ = a_tail_box_rows(c, kp_.m);
  b_rows_ = b_box_rows(c), b_tail_rows_ = b_tail_box_rows(c, kp_.n);
  out_bytes_ = dtype_bytes(p.d);
  tma_d_ = c.epilogue == Epilogue::kTma;
  // TMA stores only D's columns up to the last whole 16-byte unit of a row; the kernel writes the rest (swap AB: its
  // transposed boxes, epilogue_store_map).
  if (tma_d_) d_map_ = epilogue_store_map(c, p.n, out_bytes_);
  if (c.splits_per_cluster() > 1 && grid_.splits != c.split_k)
    DGT_THROW(ErrorKind::kInvalid,
              "{} on {}: a cluster split needs all {} splits non-empty, but K = {} splits into {} (rule P9)",
              spec.key(), p.label(), c.split_k, p.k, grid_.splits);
  needs_ws_ = grid_.splits > 1 && !c.split_cluster;
  if (needs_ws_ && (ws.partial_bytes < kernel.workspace_bytes(p) || ws.counter_bytes < kernel.amax_state_offset(p)))
    DGT_THROW(ErrorKind::kInvalid, "{} on {} splits K {} ways and needs a workspace of {} + {} bytes", spec.key(),
              p.label(), grid_.splits, kernel.workspace_bytes(p), kernel.counter_bytes(p));
  ws_ = ws;
  divisors_ = grid_.divisors();
  const ScaleLayout sl = kp_.scales();
  ld_sa_ = static_cast<unsigned>(sl.ld_a), ld_sb_ = static_cast<unsigned>(sl.ld_b);
  cfg_.gridDimX = static_cast<unsigned>(kernel.grid_size(p));
  cfg_.gridDimY = cfg_.gridDimZ = 1;
  cfg_.blockDimX = static_cast<unsigned>(c.threads());
  cfg_.blockDimY = cfg_.blockDimZ = 1;
  cfg_.sharedMemBytes = static_cast<unsigned>(kernel.kernel().dynamic_smem_bytes);
  if (c.cluster_ctas() > 1) {
    attr_[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr_[0].value.clusterDim.x = static_cast<unsigned>(c.cluster_ctas());
    attr_[0].value.clusterDim.y = 1;
    attr_[0].value.clusterDim.z = 1;
    cfg_.numAttrs = 1;
  }
  if (cache_maps) owner_ = next_tensor_map_owner_id();
}

void GemmLaunchPlan::args(const GemmOperands& ops, Args& a) const {
  const KernelConfig& c = kernel_->spec().config;
  const Problem& p = p_;
  const Problem& kp = kp_;  // the kernel's problem (swap AB: the transpose; its A is the caller's B)
  const void* ka = c.swap_ab ? ops.b : ops.a;
  const void* kb = c.swap_ab ? ops.a : ops.b;
  const char* ka_name = c.swap_ab ? "B" : "A";
  const char* kb_name = c.swap_ab ? "A" : "B";
  // Operand slots of the cache key: 0 the kernel's A, 1 its B, 2 A tail, 3 B tail, 4 D.
  cached_tensor_map(owner_, 0, ka, a.tma_a,
                    [&] { return make_kmajor_tma(ka_name, ka, kp.m, kp.k, kp.lda, a_rows_, c.swizzle); });
  cached_tensor_map(owner_, 1, kb, a.tma_b,
                    [&] { return make_kmajor_tma(kb_name, kb, kp.n, kp.k, kp.ldb, b_rows_, c.swizzle); });
  if (a_tail_rows_ == a_rows_)
    a.tma_a_tail = a.tma_a;
  else
    cached_tensor_map(owner_, 2, ka, a.tma_a_tail,
                      [&] { return make_kmajor_tma(ka_name, ka, kp.m, kp.k, kp.lda, a_tail_rows_, c.swizzle); });
  if (b_tail_rows_ == b_rows_)
    a.tma_b_tail = a.tma_b;
  else
    cached_tensor_map(owner_, 3, kb, a.tma_b_tail,
                      [&] { return make_kmajor_tma(kb_name, kb, kp.n, kp.k, kp.ldb, b_tail_rows_, c.swizzle); });
  if (tma_d_)
    cached_tensor_map(owner_, 4, ops.d, a.tma_d, [&] {
      return make_store_tma("D", ops.d, out_bytes_, p.m, d_map_.cols, static_cast<uint64_t>(p.ldd) * out_bytes_,
                            d_map_.box_cols, d_map_.box_rows, d_map_.swizzle);
    });
  else
    a.tma_d = CUtensorMap{};
  check_operands(p, ops);  // after A, B, D: their errors come first
  a.d = ops.d;
  a.scale_a = c.swap_ab ? ops.scale_b : ops.scale_a;
  a.scale_b = c.swap_ab ? ops.scale_a : ops.scale_b;
  a.ld_sa = ld_sa_, a.ld_sb = ld_sb_;
  a.m = static_cast<unsigned>(kp.m), a.n = static_cast<unsigned>(kp.n), a.k = static_cast<unsigned>(kp.k);
  a.ldd = static_cast<unsigned long long>(p.ldd);
  a.splits = static_cast<unsigned>(grid_.splits);
  a.partials = needs_ws_ ? ws_.partials : nullptr;
  a.counters = needs_ws_ ? ws_.counters : nullptr;
  a.bias = p.bias == Bias::kBF16 ? ops.bias : nullptr;
  a.scale_d = p.d == DType::kE4M3 ? ops.scale_d : nullptr;
  a.amax = p.d == DType::kE4M3 ? ops.amax : nullptr;
  a.amax_state = nullptr;
  if (a.amax) {
    if (ws_.counters == nullptr || ws_.counter_bytes < kernel_->counter_bytes(p))
      DGT_THROW(ErrorKind::kInvalid,
                "{} on {}: an amax pointer needs the workspace's counters ({} bytes, zeroed once; GemmWorkspace)",
                kernel_->spec().key(), p.label(), kernel_->counter_bytes(p));
    a.amax_state = static_cast<char*>(ws_.counters) + kernel_->amax_state_offset(p);
  }
  a.divisors = divisors_;
}

void GemmLaunchPlan::launch(const Args& a, cudaStream_t stream) const {
  void* params[] = {const_cast<CUtensorMap*>(&a.tma_a),
                    const_cast<CUtensorMap*>(&a.tma_b),
                    const_cast<CUtensorMap*>(&a.tma_a_tail),
                    const_cast<CUtensorMap*>(&a.tma_b_tail),
                    const_cast<CUtensorMap*>(&a.tma_d),
                    const_cast<void**>(&a.d),
                    const_cast<const float**>(&a.scale_a),
                    const_cast<const float**>(&a.scale_b),
                    const_cast<unsigned*>(&a.ld_sa),
                    const_cast<unsigned*>(&a.ld_sb),
                    const_cast<unsigned*>(&a.m),
                    const_cast<unsigned*>(&a.n),
                    const_cast<unsigned*>(&a.k),
                    const_cast<unsigned long long*>(&a.ldd),
                    const_cast<unsigned*>(&a.splits),
                    const_cast<void**>(&a.partials),
                    const_cast<void**>(&a.counters),
                    const_cast<const void**>(&a.bias),
                    const_cast<const float**>(&a.scale_d),
                    const_cast<float**>(&a.amax),
                    const_cast<void**>(&a.amax_state),
                    const_cast<SchedulerDivisors*>(&a.divisors),
                    const_cast<GroupKernelArgs*>(&a.group)};
  CUlaunchConfig cfg = cfg_;
  cfg.hStream = reinterpret_cast<CUstream>(stream);
  CUlaunchAttribute attr[1] = {attr_[0]};
  if (cfg.numAttrs) cfg.attrs = attr;
  const CUresult rc = driver().launch_kernel_ex(&cfg, kernel_->kernel().function, params, nullptr);
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "launch of {} for {} refused: {} (grid {}, block {}, smem {} B)",
              kernel_->spec().key(), p_.label(), driver_error_name(rc), cfg.gridDimX, cfg.blockDimX,
              cfg.sharedMemBytes);
}

}  // namespace dgt::jit
