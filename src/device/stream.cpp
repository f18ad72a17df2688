#include "device/stream.hpp"

#include "core/error.hpp"

namespace dgt {

CudaStream::CudaStream() { DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }

CudaStream::~CudaStream() {
  if (s_) cudaStreamDestroy(s_);
}

}  // namespace dgt
