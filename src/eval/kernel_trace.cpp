#include "eval/kernel_trace.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "bench/l2_flush.hpp"
#include "bench/problem_data.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "device/device_info.hpp"
#include "device/stream.hpp"
#include "jit/codegen.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

KernelTrace trace_kernel(const Problem& p, const KernelConfig& c, const KernelTraceOptions& o) {
  const DeviceInfo dev = open_sm90_device(o.device);
  const jit::CubinCache cache(o.cache_dir.empty() ? default_cache_dir() : o.cache_dir);
  const UtilKernels util(cache, dev.sm_count);
  const CudaStream owned_stream;
  const cudaStream_t stream = owned_stream.get();

  // A cache of its own holds only the traced build, so its spec key cannot meet the plain kernel's.
  const KernelSpec spec = KernelSpec::of(c, p);
  KernelCache kernels(cache, dev.sm_count);
  KernelCache::require_legal(spec);
  const auto kernel_ptr = kernels.get(spec, cache.get_or_compile(jit::generate_gemm(spec, /*trace=*/true)));
  const jit::GemmKernel& kernel = *kernel_ptr;
  size_t trace_bytes = 0;
  void* trace = reinterpret_cast<void*>(kernel.kernel().module->global("dgt_trace", &trace_bytes));
  if (trace_bytes != size_t(kTraceMaxCtas) * kTracePoints * 2 * sizeof(unsigned long long))
    DGT_THROW(ErrorKind::kInternal, "dgt_trace holds {} bytes; this build expects {} CTAs x {} points x 16 bytes",
              trace_bytes, kTraceMaxCtas, kTracePoints);

  KernelTrace t;
  t.problem = p;
  t.config_key = c.key();
  t.device_name = dev.name;
  t.cold_l2 = o.cold_l2;
  t.grid = kernel.grid_size(p);
  t.traced_ctas = std::min(t.grid, kTraceMaxCtas);

  ProblemData data(p, util, o.seed, stream);
  const jit::GemmWorkspace ws = kernels.workspace(kernel, p);
  L2Flush flush(util, dev.l2_bytes, MeasureProtocol::cold_l2());

  data.poison_output(stream);
  kernel.launch(p, data.operands(), stream, &ws);
  DGT_CHECK_CUDA(cudaGetLastError());
  t.verified = data.verify(stream).ok;
  for (int i = 1; i < o.warmup; ++i) kernel.launch(p, data.operands(), stream, &ws);
  DGT_CHECK_CUDA(cudaMemsetAsync(trace, 0, trace_bytes, stream));
  if (o.cold_l2) flush.enqueue(stream);
  kernel.launch(p, data.operands(), stream, &ws);
  DGT_CHECK_CUDA(cudaGetLastError());
  t.stamps.resize(trace_bytes / sizeof(unsigned long long));
  DGT_CHECK_CUDA(cudaMemcpyAsync(t.stamps.data(), trace, trace_bytes, cudaMemcpyDeviceToHost, stream));
  DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
  bool any = false;
  for (int b = 0; b < t.traced_ctas && !any; ++b) any = t.ns(b, 0) != 0;
  if (!any) DGT_THROW(ErrorKind::kInternal, "the traced launch recorded no CTA");
  return t;
}

}  // namespace dgt
