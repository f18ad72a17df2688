#include "bench/verify.hpp"

#include <cstring>

#include "core/error.hpp"

namespace dgt {

namespace {
float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
}  // namespace

Verification judge(const CompareStatsHost& st, const VerifyThresholds& t) {
  Verification v;
  v.nan_count = static_cast<int64_t>(st.nan_count);
  v.pad_touched = static_cast<int64_t>(st.pad_touched);
  const double max_err = bits_to_float(st.max_abs_err_bits);
  const double max_ref = bits_to_float(st.max_abs_ref_bits);
  v.max_rel_err = max_ref > 0 ? max_err / max_ref : (max_err > 0 ? 1.0 : 0.0);
  v.diff = st.sum_sq > 0 ? 1.0 - 2.0 * st.sum_xy / st.sum_sq : 0.0;
  v.ok = v.nan_count == 0 && v.pad_touched == 0 && v.max_rel_err <= t.max_rel_err && v.diff <= t.max_diff;
  return v;
}

Verification verify_output(const UtilKernels& util, const Problem& p, const void* d, const float* dref,
                           int64_t rows_alloc, CompareStatsHost* stats_buf, const VerifyThresholds& t, cudaStream_t s) {
  DGT_CHECK_CUDA(cudaMemsetAsync(stats_buf, 0, sizeof(CompareStatsHost), s));
  util.compare(p, d, dref, rows_alloc, stats_buf, s);
  CompareStatsHost host{};
  DGT_CHECK_CUDA(cudaMemcpyAsync(&host, stats_buf, sizeof host, cudaMemcpyDeviceToHost, s));
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  return judge(host, t);
}

}  // namespace dgt
