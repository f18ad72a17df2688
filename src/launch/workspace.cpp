#include "launch/workspace.hpp"

#include <cuda_runtime_api.h>

#include "core/error.hpp"

namespace dgt {

jit::GemmWorkspace WorkspaceArena::get(const jit::GemmKernel& kernel, const Problem& p) {
  const size_t partial_bytes = kernel.workspace_bytes(p), counter_bytes = kernel.counter_bytes(p);
  if (partial_bytes == 0) return {};
  if (partials_.bytes() < partial_bytes) partials_ = DeviceBuffer(partial_bytes);
  if (counters_.bytes() < counter_bytes) {
    counters_ = DeviceBuffer(counter_bytes);
    // Zero and wait: the launches that use them may run on any stream, including non-blocking ones
    // that the legacy stream of cudaMemset does not order. The kernel keeps them zero afterwards.
    DGT_CHECK_CUDA(cudaMemset(counters_.get(), 0, counters_.bytes()));
    DGT_CHECK_CUDA(cudaDeviceSynchronize());
  }
  return {partials_.get(), partials_.bytes(), counters_.get(), counters_.bytes()};
}

}  // namespace dgt
