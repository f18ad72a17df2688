#include "bench/l2_flush.hpp"

namespace dgt {

L2Flush::L2Flush(const UtilKernels& util, int64_t l2_bytes, const MeasureProtocol& p)
    : util_(&util), buffer_(static_cast<size_t>(l2_flush_bytes(p, l2_bytes))), sink_(64) {}

void L2Flush::enqueue(cudaStream_t s) { util_->flush_l2(buffer_.get(), bytes(), sink_.get(), salt_++, s); }

}  // namespace dgt
