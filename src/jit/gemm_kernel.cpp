#include "jit/gemm_kernel.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "device/driver_api.hpp"
#include "device/tma.hpp"

namespace dgt::jit {

GemmKernel::GemmKernel(KernelSpec spec, LoadedKernel kernel, int sm_count)
    : spec_(std::move(spec)), kernel_(std::move(kernel)), sm_count_(sm_count) {}

int GemmKernel::grid_size(const Problem& p) const {
  const int64_t tiles = ((p.m + spec_.config.block_m - 1) / spec_.config.block_m) *
                        ((p.n + spec_.config.block_n - 1) / spec_.config.block_n);
  return static_cast<int>(std::min<int64_t>(tiles, sm_count_));
}

void GemmKernel::launch(const Problem& p, const GemmOperands& ops, cudaStream_t stream) const {
  const KernelConfig& c = spec_.config;
  if (p.a != spec_.a || p.b != spec_.b || p.accum != spec_.accum)
    DGT_THROW(ErrorKind::kInvalid, "problem {} does not match kernel {} (operand types or accumulation differ)", p.label(),
              spec_.key());
  const CUtensorMap tma_a = make_kmajor_tma("A", ops.a, p.m, p.k, p.lda, c.block_m, c.swizzle);
  const CUtensorMap tma_b = make_kmajor_tma("B", ops.b, p.n, p.k, p.ldb, c.block_n, c.swizzle);
  void* d = ops.d;
  const float* sa = ops.scale_a;
  const float* sb = ops.scale_b;
  unsigned m = static_cast<unsigned>(p.m), n = static_cast<unsigned>(p.n), k = static_cast<unsigned>(p.k);
  unsigned long long ldd = static_cast<unsigned long long>(p.ldd);
  void* params[] = {const_cast<CUtensorMap*>(&tma_a), const_cast<CUtensorMap*>(&tma_b), &d, &sa, &sb, &m, &n, &k, &ldd};

  CUlaunchConfig cfg{};
  cfg.gridDimX = static_cast<unsigned>(grid_size(p));
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(c.threads());
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(kernel_.dynamic_smem_bytes);
  cfg.hStream = reinterpret_cast<CUstream>(stream);
  CUlaunchAttribute attr[1];
  if (c.cluster_m * c.cluster_n > 1) {
    attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[0].value.clusterDim.x = static_cast<unsigned>(c.cluster_m * c.cluster_n);
    attr[0].value.clusterDim.y = 1;
    attr[0].value.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  CUresult rc = driver().launch_kernel_ex(&cfg, kernel_.function, params, nullptr);
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "launch of {} for {} refused: {} (grid {}, block {}, smem {} B)", spec_.key(), p.label(),
              driver_error_name(rc), cfg.gridDimX, cfg.blockDimX, cfg.sharedMemBytes);
}

}  // namespace dgt::jit
