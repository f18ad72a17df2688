#include "bench/grouped_run.hpp"

#include <fmt/format.h>

#include "bench/grouped_data.hpp"
#include "bench/protocol.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "device/device_info.hpp"
#include "device/stream.hpp"
#include "launch/grouped_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"

namespace dgt {

GroupedRunResult run_grouped(const GroupedProblem& g, const KernelConfig& c, const GroupedRunOptions& o) {
  const DeviceInfo device = open_sm90_device(o.device);
  const CudaStream owned_stream;
  const cudaStream_t s = owned_stream.get();
  const jit::CubinCache cubins(usable_cache_dir(o.cache_dir));
  const UtilKernels util(cubins, device.sm_count);
  const KernelSpec spec = KernelSpec::of(c, g.dense_view());
  KernelCache kernels(cubins, device.sm_count);
  const jit::GroupedGemmKernel& kernel = *kernels.get_grouped(spec, g.kind);
  GroupedData data(util, g, o.seed, s);
  GroupedRunResult r;
  r.kernel = fmt::format("{}_{}", spec.key(), to_string(g.kind));
  r.device_name = device.name;
  r.grid = kernel.grid_size(g);
  kernel.launch(g, data.operands(), s);
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  r.verification = data.verify(util, s);
  if (o.time && r.verification.ok) {
    Timer timer(util, device, o.protocol, s);
    r.timing = timer.measure([&](cudaStream_t st) { kernel.launch(g, data.operands(), st); });
    if (r.timing.median_us > 0) r.tflops = g.flops() / (r.timing.median_us * 1e-6) / 1e12;
  }
  return r;
}

}  // namespace dgt
