#include "bench/problem_data.hpp"

#include "core/error.hpp"

namespace dgt {

ProblemData::ProblemData(const Problem& p, const UtilKernels& util, uint64_t seed, cudaStream_t s)
    : p_(p), util_(util), rows_alloc_(p.m + kGuardRows) {
  validate_problem(p);
  a_ = DeviceBuffer(static_cast<size_t>(p.m * p.lda));
  b_ = DeviceBuffer(static_cast<size_t>(p.n * p.ldb));
  d_ = DeviceBuffer(static_cast<size_t>(rows_alloc_ * p.ldd * 2));
  dref_ = DeviceBuffer(static_cast<size_t>(p.m * p.n * 4));
  // Each scale in its own 256-byte slot: cuBLASLt refuses FP8 launches (status 15, NOT_SUPPORTED)
  // whose scale pointers are not 16-byte aligned; seen on the H200 with scale_b at offset 4.
  scales_ = DeviceBuffer(2 * kScaleSlot);
  stats_ = DeviceBuffer(sizeof(CompareStatsHost));
  // Scales in [0.5, 2) derived from the seed, never exactly 1, so a missing scale fails verification.
  scale_a_ = 0.5f + float((seed * 2654435761u) % 1000) / 1000.0f * 1.5f;
  scale_b_ = 0.5f + float((seed * 40503u + 17) % 1000) / 1000.0f * 1.5f;
  if (scale_a_ == 1.0f) scale_a_ = 0.75f;
  if (scale_b_ == 1.0f) scale_b_ = 1.25f;
  DGT_CHECK_CUDA(cudaMemcpyAsync(scale_ptr(0), &scale_a_, sizeof(float), cudaMemcpyHostToDevice, s));
  DGT_CHECK_CUDA(cudaMemcpyAsync(scale_ptr(1), &scale_b_, sizeof(float), cudaMemcpyHostToDevice, s));
  util.fill_fp8(a_.get(), p.m, p.k, p.lda, seed * 2 + 1, p.a, s);
  util.fill_fp8(b_.get(), p.n, p.k, p.ldb, seed * 2 + 2, p.b, s);
  util.reference_gemm(p, a_.get(), b_.get(), scale_ptr(0), scale_ptr(1), dref_.as<float>(), s);
  DGT_CHECK_CUDA(cudaGetLastError());
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
}

jit::GemmOperands ProblemData::operands() const { return {a_.get(), b_.get(), d_.get(), scale_ptr(0), scale_ptr(1)}; }

float* ProblemData::scale_ptr(int i) const { return reinterpret_cast<float*>(scales_.as<char>() + i * kScaleSlot); }

void ProblemData::poison_output(cudaStream_t s) const { util_.fill_u16(d_.get(), rows_alloc_ * p_.ldd, 0xFFFF, s); }

Verification ProblemData::verify(cudaStream_t s) const {
  return verify_output(util_, p_, d_.get(), dref_.as<float>(), rows_alloc_, stats_.as<CompareStatsHost>(),
                       VerifyThresholds::for_accum(p_.accum), s);
}

}  // namespace dgt
