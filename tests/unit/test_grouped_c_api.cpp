// The C API of dgt::GroupedGemm (dgtune/dgtune.h: dgt_grouped_gemm_*) without a GPU: NULL arguments, enum values out
// of range and broken rules come back as the status of their kind with a message naming the field and the rule, and
// *out is NULL after every failed create. The same calls on an H200 fail the same way (the checks come before the
// device is opened); tests/gpu/test_gpu_grouped_runtime.cpp runs the successful ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "device/device_info.hpp"
#include "dgtune/dgtune.h"

namespace dgt {
namespace {

TEST(GroupedRuntimeCApi, ArgumentErrors) {
  dgt_grouped_gemm* g = reinterpret_cast<dgt_grouped_gemm*>(uintptr_t(1));
  dgt_grouped_problem p{};
  p.layout = 1;
  p.groups = 4;
  p.m = 256;
  p.expected_m = 8;
  p.n = 4096;
  p.k = 7168;
  p.scale = 2;
  // NULL out and NULL problem: usage errors; *out is cleared on every failure.
  EXPECT_EQ(dgt_grouped_gemm_create(&p, nullptr, nullptr), DGT_ERR_USAGE);
  EXPECT_NE(std::string(dgt_last_error()).find("out is NULL"), std::string::npos);
  EXPECT_EQ(dgt_grouped_gemm_create(nullptr, nullptr, &g), DGT_ERR_USAGE);
  EXPECT_EQ(g, nullptr);
  EXPECT_NE(std::string(dgt_last_error()).find("problem is NULL"), std::string::npos);
  dgt_grouped_problem q = p;
  q.layout = 2;
  EXPECT_EQ(dgt_grouped_gemm_create(&q, nullptr, &g), DGT_ERR_USAGE);
  EXPECT_NE(std::string(dgt_last_error()).find("dgt_grouped_problem.layout = 2"), std::string::npos) << dgt_last_error();
  q = p;
  q.scale = 9;
  EXPECT_EQ(dgt_grouped_gemm_create(&q, nullptr, &g), DGT_ERR_USAGE);
  EXPECT_NE(std::string(dgt_last_error()).find("dgt_grouped_problem.scale = 9"), std::string::npos) << dgt_last_error();
  q = p;
  q.scale = 1;  // channel: a valid Fp8Scaling, not a grouped one
  EXPECT_EQ(dgt_grouped_gemm_create(&q, nullptr, &g), DGT_ERR_INVALID);
  EXPECT_NE(std::string(dgt_last_error()).find("G4"), std::string::npos) << dgt_last_error();
  q = p;
  q.m = 300;
  EXPECT_EQ(dgt_grouped_gemm_create(&q, nullptr, &g), DGT_ERR_INVALID);
  EXPECT_NE(std::string(dgt_last_error()).find("m = 300"), std::string::npos) << dgt_last_error();
  dgt_grouped_options o{};
  o.config = "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk2_sm0_2g_p1";
  EXPECT_EQ(dgt_grouped_gemm_create(&p, &o, &g), DGT_ERR_INVALID);
  EXPECT_NE(std::string(dgt_last_error()).find("G3"), std::string::npos) << dgt_last_error();
  // The protocol is checked before the device is opened (dgt_grouped_options.protocol, added with db_path and bundle).
  o = dgt_grouped_options{};
  o.protocol = "warm-l2";
  EXPECT_EQ(dgt_grouped_gemm_create(&p, &o, &g), DGT_ERR_USAGE);
  EXPECT_NE(std::string(dgt_last_error()).find("dgt::GroupedGemmOptions::protocol"), std::string::npos)
      << dgt_last_error();
  EXPECT_NE(std::string(dgt_last_error()).find("warm-l2"), std::string::npos) << dgt_last_error();
  if (cuda_device_count() == 0) {
    o.protocol = "hot-graph";  // a valid one: the device is what fails next
    o.db_path = "/nonexistent/tuning.db";
    EXPECT_EQ(dgt_grouped_gemm_create(&p, &o, &g), DGT_ERR_NO_DEVICE);
    EXPECT_EQ(dgt_grouped_gemm_create(&p, nullptr, &g), DGT_ERR_NO_DEVICE);
    EXPECT_EQ(g, nullptr);
  }
  // A NULL handle: run and config refuse it; destroy ignores it.
  EXPECT_EQ(dgt_grouped_gemm_run(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            DGT_ERR_USAGE);
  EXPECT_NE(std::string(dgt_last_error()).find("dgt_grouped_gemm is NULL"), std::string::npos);
  char key[8] = "x";
  EXPECT_EQ(dgt_grouped_gemm_config(nullptr, key, sizeof key, nullptr, 0), DGT_ERR_USAGE);
  dgt_grouped_gemm_destroy(nullptr);
  // destroy reports nothing: the last error is still the failed config call's.
  EXPECT_NE(std::string(dgt_last_error()).find("dgt_grouped_gemm is NULL"), std::string::npos);
}

}  // namespace
}  // namespace dgt
