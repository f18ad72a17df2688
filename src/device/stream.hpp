// RAII CUDA stream.
#pragma once

#include <cuda_runtime_api.h>

namespace dgt {

/// Owns a non-blocking CUDA stream (cudaStreamCreateWithFlags(cudaStreamNonBlocking): it never synchronises with the
/// legacy default stream) on the current device; destroyed with the object. Not copyable or movable. Throws
/// Error(kCuda) when creation fails.
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace dgt
