#include "loader/ladder_probe.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "device/buffer.hpp"
#include "launch/gemm_launch_plan.hpp"

namespace dgt {

bool probe_prefers_cublaslt(const ProbeTimes& t) { return t.rounds > 0 && 2 * t.cublaslt_rounds > t.rounds; }

ProbeTimes probe_times(const std::vector<double>& kernel_us, const std::vector<double>& cublaslt_us, int operand_sets) {
  if (kernel_us.size() != cublaslt_us.size())
    DGT_THROW(ErrorKind::kInternal, "probe_times: {} kernel rounds but {} cuBLASLt rounds", kernel_us.size(),
              cublaslt_us.size());
  ProbeTimes t;
  t.rounds = int(kernel_us.size());
  t.operand_sets = operand_sets;
  for (size_t r = 0; r < kernel_us.size(); ++r) t.cublaslt_rounds += kernel_us[r] > kProbeCublasLtMargin * cublaslt_us[r];
  if (t.rounds > 0) {
    t.kernel_us = *std::min_element(kernel_us.begin(), kernel_us.end());
    t.cublaslt_us = *std::min_element(cublaslt_us.begin(), cublaslt_us.end());
  }
  return t;
}

int probe_operand_sets(size_t set_bytes, int64_t l2_bytes, bool cold_l2) {
  if (!cold_l2 || set_bytes == 0) return 1;
  const size_t span = 2 * size_t(std::max<int64_t>(l2_bytes, 0));
  const size_t wanted = ceil_div(span, set_bytes);
  const size_t fits = kProbeMaxBytes / set_bytes;
  return int(std::max<size_t>(1, std::min(wanted, fits)));
}

namespace {

/// Fills `bytes` of device memory with seeded random FP8 codes whose magnitude stays below 1 and that are never NaN
/// or infinite in e4m3 or e5m2 (sign, the exponent's two middle bits, the mantissa: mask 0xB7), copied from one host
/// pattern of 1 MiB.
void fill_fp8(void* dst, size_t bytes, cudaStream_t s, std::vector<uint8_t>& pattern) {
  if (pattern.empty()) {
    pattern.resize(size_t(1) << 20);
    uint64_t x = 0x9E3779B97F4A7C15ull;  // fixed seed: a probe's data is the same in every process
    for (uint8_t& b : pattern) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      b = uint8_t(x >> 24) & 0xB7;
    }
  }
  for (size_t off = 0; off < bytes; off += pattern.size())
    DGT_CHECK_CUDA(cudaMemcpyAsync(static_cast<char*>(dst) + off, pattern.data(), std::min(pattern.size(), bytes - off),
                                   cudaMemcpyHostToDevice, s));
}

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    DGT_CHECK_CUDA(cudaEventCreate(&start));
    DGT_CHECK_CUDA(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  double us() const {
    float ms = 0;
    DGT_CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return double(ms) * 1e3;
  }
};

}  // namespace

ProbeTimes probe_ladder_pick(const jit::GemmKernel& kernel, cublasLtHandle_t handle, const cublasLtMatmulAlgo_t& algo,
                             const Problem& p, int64_t l2_bytes, bool cold_l2) {
  std::string why;
  std::unique_ptr<CublasLtGemm> lt = CublasLtGemm::checked(handle, p, algo, why);
  if (!lt) DGT_THROW(ErrorKind::kCublas, "cuBLASLt cannot run its algorithm on {}: {}", p.label(), why);
  const size_t a_bytes = size_t(p.m) * size_t(p.lda) * size_t(dtype_bytes(p.a)),
               b_bytes = size_t(p.n) * size_t(p.ldb) * size_t(dtype_bytes(p.b)),
               d_bytes = size_t(p.m) * size_t(p.ldd) * size_t(dtype_bytes(p.d));
  if (a_bytes + b_bytes + d_bytes > kProbeMaxBytes)
    DGT_THROW(ErrorKind::kInvalid, "the operands of {} take {} MiB, more than a probe allocates ({} MiB)", p.label(),
              (a_bytes + b_bytes + d_bytes) >> 20, kProbeMaxBytes >> 20);
  const int operand_sets = probe_operand_sets(a_bytes + b_bytes, l2_bytes, cold_l2);

  cudaStream_t stream = nullptr;
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::unique_ptr<CUstream_st, decltype(&cudaStreamDestroy)> own(stream, &cudaStreamDestroy);
  std::vector<DeviceBuffer> as, bs;
  std::vector<uint8_t> pattern;
  for (int i = 0; i < operand_sets; ++i) {
    as.emplace_back(a_bytes);
    bs.emplace_back(b_bytes);
    if (i == 0) {
      fill_fp8(as[0].get(), a_bytes, stream, pattern);
      fill_fp8(bs[0].get(), b_bytes, stream, pattern);
    } else {
      DGT_CHECK_CUDA(cudaMemcpyAsync(as[i].get(), as[0].get(), a_bytes, cudaMemcpyDeviceToDevice, stream));
      DGT_CHECK_CUDA(cudaMemcpyAsync(bs[i].get(), bs[0].get(), b_bytes, cudaMemcpyDeviceToDevice, stream));
    }
  }
  const ScaleLayout sl = p.scales();
  DeviceBuffer d(d_bytes), sa(size_t(sl.a_elems) * sizeof(float)), sb(size_t(sl.b_elems) * sizeof(float));
  DeviceBuffer bias(size_t(p.n) * 2);
  const std::vector<float> ones(size_t(std::max(sl.a_elems, sl.b_elems)), 1.0f);
  DGT_CHECK_CUDA(cudaMemcpyAsync(sa.get(), ones.data(), sa.bytes(), cudaMemcpyHostToDevice, stream));
  DGT_CHECK_CUDA(cudaMemcpyAsync(sb.get(), ones.data(), sb.bytes(), cudaMemcpyHostToDevice, stream));
  DGT_CHECK_CUDA(cudaMemsetAsync(bias.get(), 0, bias.bytes(), stream));
  // The kernel's split-K scratch and cuBLASLt's workspace: the probe's own (counters zeroed; a complete launch
  // leaves them zero).
  DeviceBuffer partials(std::max<size_t>(kernel.workspace_bytes(p), 1)),
      counters(std::max<size_t>(kernel.counter_bytes(p), 1)), ws(std::max<size_t>(lt->workspace_bytes(), 1));
  DGT_CHECK_CUDA(cudaMemsetAsync(counters.get(), 0, counters.bytes(), stream));
  if (lt->workspace_bytes() > 0) lt->bind_workspace(ws.get(), ws.bytes());
  const jit::GemmLaunchPlan plan(kernel, p,
                                 jit::GemmWorkspace{partials.get(), partials.bytes(), counters.get(), counters.bytes()},
                                 /*cache_maps=*/false);
  const auto ops_of = [&](int set) {
    jit::GemmOperands ops;
    ops.a = as[size_t(set)].get(), ops.b = bs[size_t(set)].get(), ops.d = d.get();
    ops.scale_a = sa.as<float>(), ops.scale_b = sb.as<float>();
    ops.bias = p.bias == Bias::kNone ? nullptr : bias.get();
    return ops;
  };
  // One untimed launch each: cuBLASLt loads its kernel's module at its first launch.
  plan.launch(ops_of(0), stream);
  lt->launch(ops_of(0), stream);

  std::vector<EventPair> ev_kernel(static_cast<size_t>(kProbeRounds)), ev_lt(static_cast<size_t>(kProbeRounds));
  int set = 0;
  for (int r = 0; r < kProbeRounds; ++r) {
    // Alternate which side goes first; each launch takes the next operand copy, so under cold-l2 none finds its
    // operands in the L2 from the launch before.
    for (int side = 0; side < 2; ++side) {
      const bool kernel_side = (side == 0) == (r % 2 == 0);
      const jit::GemmOperands ops = ops_of(set);
      set = (set + 1) % operand_sets;
      EventPair& e = kernel_side ? ev_kernel[size_t(r)] : ev_lt[size_t(r)];
      DGT_CHECK_CUDA(cudaEventRecord(e.start, stream));
      if (kernel_side)
        plan.launch(ops, stream);
      else
        lt->launch(ops, stream);
      DGT_CHECK_CUDA(cudaEventRecord(e.stop, stream));
    }
  }
  DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> k_us, l_us;
  for (int r = 0; r < kProbeRounds; ++r) {
    k_us.push_back(ev_kernel[size_t(r)].us());
    l_us.push_back(ev_lt[size_t(r)].us());
  }
  return probe_times(k_us, l_us, operand_sets);
}

}  // namespace dgt
