// Makes a CUDA device current for dgtune's CUDA runtime while an op runs (a torch kernel is called with its inputs'
// device current already, so this is normally one cudaGetDevice). Shared by the dense and the grouped ops.
#pragma once

#include <cuda_runtime_api.h>

namespace dgt::torch_op {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cudaGetDevice(&previous_);
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    int now = 0;
    cudaGetDevice(&now);
    if (now != previous_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace dgt::torch_op
