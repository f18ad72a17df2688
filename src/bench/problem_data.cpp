#include "bench/problem_data.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/int_math.hpp"

namespace dgt {

ProblemData::ProblemData(const Problem& p, const UtilKernels& util, uint64_t seed, cudaStream_t s)
    : p_(p), util_(util), rows_alloc_(p.m + kGuardRows) {
  validate_problem(p);
  a_ = DeviceBuffer(static_cast<size_t>(p.m * p.lda));
  b_ = DeviceBuffer(static_cast<size_t>(p.n * p.ldb));
  d_ = DeviceBuffer(static_cast<size_t>(rows_alloc_ * p.ldd * 2));
  dref_ = DeviceBuffer(static_cast<size_t>(p.m * p.n * 4));
  // A's and B's scales in one buffer, B's at a 256-byte boundary: cuBLASLt refuses FP8 launches
  // (status 15, NOT_SUPPORTED) whose scale pointers are not 16-byte aligned; seen on the H200 with
  // scale_b at offset 4.
  const ScaleLayout sl = p.scales();
  scale_b_offset_ = static_cast<size_t>(round_up(std::max<int64_t>(sl.a_elems * 4, 1), int64_t(kScaleSlot)));
  scales_ = DeviceBuffer(scale_b_offset_ + static_cast<size_t>(round_up(sl.b_elems * 4, int64_t(kScaleSlot))));
  stats_ = DeviceBuffer(sizeof(CompareStatsHost));
  // Scales in [0.5, 2) derived from the seed, never exactly 1, so a missing or misplaced scale fails
  // verification; the padding of 2-D scale arrays (rows past M, N or the granule count) is 0.
  auto fill = [&](int64_t elems, int64_t ld, int64_t valid, uint64_t salt) {
    std::vector<float> v(static_cast<size_t>(elems));
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + salt;
    for (int64_t i = 0; i < elems; ++i) {
      x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
      float f = 0.5f + float(x % 1000) / 1000.0f * 1.5f;
      if (f == 1.0f) f = salt % 2 ? 0.75f : 1.25f;
      v[size_t(i)] = (ld > 0 && i % ld >= valid) ? 0.f : f;
    }
    return v;
  };
  const std::vector<float> ha = fill(sl.a_elems, sl.ld_a, p.m, 1);
  // B's valid extent per row: K granules (block: rows of ceil(K/128)) or N columns (block1d1d).
  const int64_t b_valid = p.scale == ScaleMode::kBlock ? ceil_div(p.k, kScaleBlock) : p.n;
  const std::vector<float> hb = fill(sl.b_elems, sl.ld_b, b_valid, 2);
  DGT_CHECK_CUDA(cudaMemcpyAsync(scale_ptr(0), ha.data(), ha.size() * 4, cudaMemcpyHostToDevice, s));
  DGT_CHECK_CUDA(cudaMemcpyAsync(scale_ptr(1), hb.data(), hb.size() * 4, cudaMemcpyHostToDevice, s));
  util.fill_fp8(a_.get(), p.m, p.k, p.lda, seed * 2 + 1, p.a, s);
  util.fill_fp8(b_.get(), p.n, p.k, p.ldb, seed * 2 + 2, p.b, s);
  util.reference_gemm(p, a_.get(), b_.get(), scale_ptr(0), scale_ptr(1), dref_.as<float>(), s);
  DGT_CHECK_CUDA(cudaGetLastError());
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
}

jit::GemmOperands ProblemData::operands() const { return {a_.get(), b_.get(), d_.get(), scale_ptr(0), scale_ptr(1)}; }

float* ProblemData::scale_ptr(int i) const {
  return reinterpret_cast<float*>(scales_.as<char>() + (i == 0 ? 0 : scale_b_offset_));
}

void ProblemData::poison_output(cudaStream_t s) const { util_.fill_u16(d_.get(), rows_alloc_ * p_.ldd, 0xFFFF, s); }

Verification ProblemData::verify(cudaStream_t s) const {
  return verify_output(util_, p_, d_.get(), dref_.as<float>(), rows_alloc_, stats_.as<CompareStatsHost>(),
                       VerifyThresholds::for_accum(p_.accum), s);
}

}  // namespace dgt
