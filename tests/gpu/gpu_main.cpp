// GPU test entry: exits 77 (ctest SKIP) with a clear message when no sm_90 GPU is present.
#include <gtest/gtest.h>

#include <cstdio>

#include "device/device_info.hpp"

int main(int argc, char** argv) {
  const int count = dgt::cuda_device_count();
  if (count == 0) {
    std::printf("SKIP: no CUDA device on this machine; GPU tests need an sm_90 GPU (H100/H200)\n");
    return 77;
  }
  dgt::DeviceInfo d = dgt::open_device(0);
  if (!d.is_sm90()) {
    std::printf("SKIP: device 0 is %s (sm_%d%d); GPU tests need sm_90\n", d.name.c_str(), d.cc_major, d.cc_minor);
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
