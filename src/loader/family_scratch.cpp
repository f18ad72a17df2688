#include "loader/family_scratch.hpp"

#include <cuda_runtime_api.h>

#include "core/error.hpp"

namespace dgt {

bool FamilyScratch::reserve(size_t partial_bytes, size_t counter_bytes, size_t lt_bytes, bool may_allocate,
                            unsigned long long& allocs) {
  const bool grow_p = partials_.bytes() < partial_bytes, grow_c = counters_.bytes() < counter_bytes,
             grow_l = lt_.bytes() < lt_bytes;
  if (!grow_p && !grow_c && !grow_l) return true;
  if (!may_allocate) return false;
  auto grow = [&](DeviceBuffer& buf, size_t bytes) {
    DeviceBuffer fresh(bytes);
    ++allocs;
    if (buf.get()) retired_.push_back(std::move(buf));
    buf = std::move(fresh);
  };
  if (grow_p) grow(partials_, partial_bytes);
  if (grow_l) grow(lt_, lt_bytes);
  if (grow_c) {
    grow(counters_, counter_bytes);
    // Zero and wait: the launches may run on any stream, including non-blocking ones that the legacy stream of
    // cudaMemset does not order.
    DGT_CHECK_CUDA(cudaMemset(counters_.get(), 0, counters_.bytes()));
    DGT_CHECK_CUDA(cudaDeviceSynchronize());
  }
  return true;
}

jit::GemmWorkspace FamilyScratch::split_k() const {
  return {partials_.get(), partials_.bytes(), counters_.get(), counters_.bytes()};
}

}  // namespace dgt
