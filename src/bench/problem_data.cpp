#include "bench/problem_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/int_math.hpp"

namespace dgt {

ProblemData::ProblemData(const Problem& p, const UtilKernels& util, uint64_t seed, cudaStream_t s)
    : p_(p), util_(util), rows_alloc_(p.m + kGuardRows) {
  validate_problem(p);
  a_ = DeviceBuffer(static_cast<size_t>(p.m * p.lda));
  b_ = DeviceBuffer(static_cast<size_t>(p.n * p.ldb));
  // At least 2 bytes per element: compare's copy-limit side (launch/copy_limit) writes D as BF16 whatever
  // the output type, so an e4m3 D gets a BF16-sized allocation (the kernel and the checks use its first
  // rows_alloc x ldd bytes).
  d_ = DeviceBuffer(static_cast<size_t>(rows_alloc_ * p.ldd * std::max(dtype_bytes(p.d), 2)));
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

  // Epilogue operands and the reference epilogue. epi_ holds the bias, scale_d, the kernel's
  // amax and the reference amax bits.
  epi_scalars_ = static_cast<size_t>(round_up(p.n * 2, int64_t(kScaleSlot)));
  epi_ = DeviceBuffer(epi_scalars_ + 16);
  uint32_t* ref_amax_bits = reinterpret_cast<uint32_t*>(epi_.as<char>() + epi_scalars_ + 8);
  auto read_ref_amax = [&] {
    uint32_t bits = 0;
    DGT_CHECK_CUDA(cudaMemsetAsync(ref_amax_bits, 0, 4, s));
    util.reference_epilogue(p, dref_.as<float>(), epi_.get(), false, ref_amax_bits, s);
    DGT_CHECK_CUDA(cudaMemcpyAsync(&bits, ref_amax_bits, 4, cudaMemcpyDeviceToHost, s));
    DGT_CHECK_CUDA(cudaStreamSynchronize(s));
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  if (p.has_epilogue() || p.d == DType::kE4M3) {
    if (p.bias == Bias::kBF16) {
      // Seeded BF16 bias in +-max|raw ref| / 4 (truncated to BF16: the kernel and the reference read the
      // same bits).
      const float raw_max = read_ref_amax();
      const float mag = raw_max > 0 && std::isfinite(raw_max) ? raw_max / 4 : 1.f;
      std::vector<uint16_t> hb(static_cast<size_t>(p.n));
      uint64_t x = seed * 0xD6E8FEB86659FD93ull + 3;
      for (auto& v : hb) {
        x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
        const float f = mag * (float(x % 2001) / 1000.0f - 1.0f);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        v = static_cast<uint16_t>(bits >> 16);
      }
      DGT_CHECK_CUDA(cudaMemcpyAsync(epi_.get(), hb.data(), hb.size() * 2, cudaMemcpyHostToDevice, s));
    }
    DGT_CHECK_CUDA(cudaMemsetAsync(ref_amax_bits, 0, 4, s));
    util.reference_epilogue(p, dref_.as<float>(), epi_.get(), true, ref_amax_bits, s);
  }
  ref_amax_ = read_ref_amax();
  if (p.d == DType::kE4M3) {
    // The largest |scale_d x ref| is 0.8 x 448 = 358.4: the top binade is used, nothing saturates. Sweeps
    // compare with cuBLASLt, whose overflow behaviour is not ours to test; the kernel's saturation has
    // exact-value GPU tests (Epilogues.E4m3SaturationRoundingNanAndAmaxExact).
    scale_d_ = ref_amax_ > 0 && std::isfinite(ref_amax_) ? 0.8f * 448.f / ref_amax_ : 1.f;
    DGT_CHECK_CUDA(cudaMemcpyAsync(scale_d_ptr(), &scale_d_, 4, cudaMemcpyHostToDevice, s));
  }
  DGT_CHECK_CUDA(cudaGetLastError());
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
}

void ProblemData::poison_scale_padding(cudaStream_t s) const {
  const ScaleLayout sl = p_.scales();
  const int64_t b_valid = p_.scale == ScaleMode::kBlock ? ceil_div(p_.k, kScaleBlock) : p_.n;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // One array: its valid floats read back, everything else in its slot set to NaN.
  auto poison = [&](int i, int64_t elems, int64_t ld, int64_t valid, size_t slot_bytes) {
    std::vector<float> h(slot_bytes / 4, nan);
    DGT_CHECK_CUDA(cudaMemcpyAsync(h.data(), scale_ptr(i), size_t(elems) * 4, cudaMemcpyDeviceToHost, s));
    DGT_CHECK_CUDA(cudaStreamSynchronize(s));
    for (int64_t j = 0; j < elems; ++j)
      if (ld > 0 && j % ld >= valid) h[size_t(j)] = nan;
    DGT_CHECK_CUDA(cudaMemcpyAsync(scale_ptr(i), h.data(), h.size() * 4, cudaMemcpyHostToDevice, s));
    DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  };
  poison(0, sl.a_elems, sl.ld_a, p_.m, scale_b_offset_);
  poison(1, sl.b_elems, sl.ld_b, b_valid, scales_.bytes() - scale_b_offset_);
}

float* ProblemData::scale_d_ptr() const { return reinterpret_cast<float*>(epi_.as<char>() + epi_scalars_); }
float* ProblemData::amax_ptr() const { return reinterpret_cast<float*>(epi_.as<char>() + epi_scalars_ + 4); }

jit::GemmOperands ProblemData::operands() const {
  jit::GemmOperands ops{a_.get(), b_.get(), d_.get(), scale_ptr(0), scale_ptr(1)};
  if (p_.bias == Bias::kBF16) ops.bias = epi_.get();
  if (p_.d == DType::kE4M3) ops.scale_d = scale_d_ptr(), ops.amax = amax_ptr();
  return ops;
}

float ProblemData::read_amax(cudaStream_t s) const {
  float f = 0;
  DGT_CHECK_CUDA(cudaMemcpyAsync(&f, amax_ptr(), 4, cudaMemcpyDeviceToHost, s));
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  return f;
}

float* ProblemData::scale_ptr(int i) const {
  return reinterpret_cast<float*>(scales_.as<char>() + (i == 0 ? 0 : scale_b_offset_));
}

void ProblemData::poison_output(cudaStream_t s) const {
  // 0xFF bytes: the BF16 poison 0xFFFF, an FP32 NaN, the e4m3 NaN 0xFF.
  DGT_CHECK_CUDA(cudaMemsetAsync(d_.get(), 0xFF, d_.bytes(), s));
  if (p_.d == DType::kE4M3) DGT_CHECK_CUDA(cudaMemsetAsync(amax_ptr(), 0xFF, 4, s));
}

Verification ProblemData::verify(cudaStream_t s) const {
  Verification v = verify_output(util_, p_, d_.get(), dref_.as<float>(), rows_alloc_, stats_.as<CompareStatsHost>(),
                                 VerifyThresholds::for_problem(p_), scale_d_, s);
  if (p_.d == DType::kE4M3) {
    v.amax_rel_err = amax_relative_error(read_amax(s), ref_amax_);
    if (!(v.amax_rel_err <= VerifyThresholds::for_accum(p_.accum).max_rel_err)) v.ok = false;
  }
  return v;
}

}  // namespace dgt
