#include "loader/ladder_probe.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/int_math.hpp"
#include "device/buffer.hpp"
#include "launch/gemm_launch_plan.hpp"

namespace dgt {

bool probe_prefers_cublaslt(const ProbeTimes& t) { return t.rounds > 0 && 2 * t.cublaslt_rounds > t.rounds; }

ProbeTimes probe_times(const std::vector<double>& kernel_us, const std::vector<std::vector<double>>& cublaslt_us,
                       int operand_sets) {
  if (cublaslt_us.empty()) DGT_THROW(ErrorKind::kInternal, "probe_times: no cuBLASLt algorithm");
  for (const std::vector<double>& a : cublaslt_us)
    if (a.size() != kernel_us.size())
      DGT_THROW(ErrorKind::kInternal, "probe_times: {} kernel rounds but {} rounds of an algorithm", kernel_us.size(),
                a.size());
  ProbeTimes t;
  t.rounds = int(kernel_us.size());
  t.algos = int(cublaslt_us.size());
  t.operand_sets = operand_sets;
  if (t.rounds == 0) return t;
  double best_total = 0;
  for (size_t j = 0; j < cublaslt_us.size(); ++j) {
    double total = 0;
    for (double us : cublaslt_us[j]) total += us;
    if (j == 0 || total < best_total) best_total = total, t.algo = int(j);
  }
  const std::vector<double>& lt = cublaslt_us[size_t(t.algo)];
  for (size_t r = 0; r < kernel_us.size(); ++r) t.cublaslt_rounds += kernel_us[r] > kProbeCublasLtMargin * lt[r];
  t.kernel_us = *std::min_element(kernel_us.begin(), kernel_us.end());
  t.cublaslt_us = *std::min_element(lt.begin(), lt.end());
  return t;
}

int probe_operand_sets(size_t set_bytes, int64_t l2_bytes, bool cold_l2) {
  if (!cold_l2 || set_bytes == 0) return 1;
  const size_t span = 2 * size_t(std::max<int64_t>(l2_bytes, 0));
  const size_t wanted = size_t(ceil_div(int64_t(span), int64_t(set_bytes)));
  const size_t fits = kProbeMaxBytes / set_bytes;
  return int(std::max<size_t>(1, std::min({wanted, fits, size_t(kProbeMaxOperandSets)})));
}

namespace {

/// Fills `bytes` of device memory with seeded random FP8 codes whose magnitude stays below 1 and that are never NaN
/// or infinite in e4m3 or e5m2 (mask 0xB7: the sign, byte bits 5 and 4 and the low three bits, so the exponent stays
/// at most 6 of e4m3's bias 7 and 13 of e5m2's bias 15): one host pattern of 1 MiB copied once, then doubled on the
/// device (copying every MiB from pageable host memory would put a host-bound copy of up to 128 MiB of A in each
/// probe).
void fill_fp8(void* dst, size_t bytes, cudaStream_t s) {
  // Made once per process (the same bytes in every process): every probe copies from it.
  static const std::vector<uint8_t> pattern = [] {
    std::vector<uint8_t> v(size_t(1) << 20);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (uint8_t& b : v) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      b = uint8_t(x >> 24) & 0xB7;
    }
    return v;
  }();
  char* d = static_cast<char*>(dst);
  DGT_CHECK_CUDA(cudaMemcpyAsync(d, pattern.data(), std::min(pattern.size(), bytes), cudaMemcpyHostToDevice, s));
  for (size_t done = pattern.size(); done < bytes; done *= 2)
    DGT_CHECK_CUDA(cudaMemcpyAsync(d + done, d, std::min(done, bytes - done), cudaMemcpyDeviceToDevice, s));
}

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    DGT_CHECK_CUDA(cudaEventCreate(&start));
    if (const cudaError_t e = cudaEventCreate(&stop); e != cudaSuccess) {
      cudaEventDestroy(start);
      DGT_CHECK_CUDA(e);
    }
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

/// Holds a stream at a host function until open() (or destruction): the rounds are all enqueued before the GPU starts
/// them, so no launch waits for the host to enqueue the next (a 5 us GEMM is shorter than a launch and two event
/// records on the host). Destruction opens the gate and waits for the stream, so nothing the rounds use is freed while
/// they run, also when an exception unwinds.
class HostGate {
 public:
  explicit HostGate(cudaStream_t s) : stream_(s) { DGT_CHECK_CUDA(cudaLaunchHostFunc(s, &HostGate::wait, this)); }
  ~HostGate() {
    open();
    cudaStreamSynchronize(stream_);
  }
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;
  void open() { open_.store(true, std::memory_order_release); }

 private:
  static void CUDART_CB wait(void* self) {
    const auto* g = static_cast<const HostGate*>(self);
    while (!g->open_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  cudaStream_t stream_;
  std::atomic<bool> open_{false};
};

size_t align256(size_t bytes) { return size_t(round_up(int64_t(bytes), 256)); }

}  // namespace

bool probe_fits(const Problem& p) {
  return probe_operand_bytes(p) + size_t(p.m) * size_t(p.ldd) * size_t(dtype_bytes(p.d)) <= kProbeMaxBytes;
}

size_t probe_operand_bytes(const Problem& p) {
  return size_t(p.m) * size_t(p.lda) * size_t(dtype_bytes(p.a)) + size_t(p.n) * size_t(p.ldb) * size_t(dtype_bytes(p.b));
}

ProbeTimes probe_ladder_pick(const jit::GemmKernel& kernel, cublasLtHandle_t handle,
                             const std::vector<cublasLtMatmulAlgo_t>& algos, const Problem& p, int64_t l2_bytes,
                             bool cold_l2) {
  if (!probe_fits(p))
    DGT_THROW(ErrorKind::kInvalid, "the operands of {} take more than a probe allocates ({} MiB)", p.label(),
              kProbeMaxBytes >> 20);
  if (algos.empty()) DGT_THROW(ErrorKind::kInvalid, "no cuBLASLt algorithm to probe for {}", p.label());
  std::vector<std::unique_ptr<CublasLtGemm>> lts;
  size_t ws_bytes = 1;
  for (const cublasLtMatmulAlgo_t& algo : algos) {
    std::string why;
    lts.push_back(CublasLtGemm::checked(handle, p, algo, why));
    if (!lts.back()) DGT_THROW(ErrorKind::kCublas, "cuBLASLt cannot run its algorithm on {}: {}", p.label(), why);
    ws_bytes = std::max(ws_bytes, lts.back()->workspace_bytes());
  }
  const size_t a_bytes = size_t(p.m) * size_t(p.lda) * size_t(dtype_bytes(p.a)),
               b_bytes = size_t(p.n) * size_t(p.ldb) * size_t(dtype_bytes(p.b)),
               d_bytes = size_t(p.m) * size_t(p.ldd) * size_t(dtype_bytes(p.d));
  const int operand_sets = probe_operand_sets(a_bytes + b_bytes, l2_bytes, cold_l2);
  const size_t a_stride = align256(a_bytes), set_stride = a_stride + align256(b_bytes);

  cudaStream_t stream = nullptr;
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::unique_ptr<CUstream_st, decltype(&cudaStreamDestroy)> own(stream, &cudaStreamDestroy);
  // One slab of operand copies (A then B, each 256-byte aligned as cuBLASLt's algorithms and TMA want).
  DeviceBuffer slab(set_stride * size_t(operand_sets));
  char* base = static_cast<char*>(slab.get());
  fill_fp8(base, a_bytes, stream);
  fill_fp8(base + a_stride, b_bytes, stream);
  for (int i = 1; i < operand_sets; ++i)
    DGT_CHECK_CUDA(cudaMemcpyAsync(base + set_stride * size_t(i), base, set_stride, cudaMemcpyDeviceToDevice, stream));
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
      counters(std::max<size_t>(kernel.counter_bytes(p), 1)), ws(ws_bytes);
  DGT_CHECK_CUDA(cudaMemsetAsync(counters.get(), 0, counters.bytes(), stream));
  // Declared after every buffer, so destroyed before them: whatever throws below, the stream is done first.
  const std::unique_ptr<CUstream_st, decltype(&cudaStreamSynchronize)> drain(stream, &cudaStreamSynchronize);
  for (const auto& lt : lts)  // launches are stream-ordered: one workspace serves every algorithm
    if (lt->workspace_bytes() > 0) lt->bind_workspace(ws.get(), ws.bytes());
  const jit::GemmLaunchPlan plan(kernel, p,
                                 jit::GemmWorkspace{partials.get(), partials.bytes(), counters.get(), counters.bytes()},
                                 /*cache_maps=*/false);
  // Every copy's operands and the kernel's arguments (its tensor maps encoded) before any timing: a timed launch is
  // the bare launch, as a cached call of dgt::Gemm is.
  std::vector<jit::GemmOperands> ops(static_cast<size_t>(operand_sets));
  std::vector<jit::GemmLaunchPlan::Args> args(static_cast<size_t>(operand_sets));
  for (int i = 0; i < operand_sets; ++i) {
    jit::GemmOperands& o = ops[size_t(i)];
    o.a = base + set_stride * size_t(i), o.b = base + set_stride * size_t(i) + a_stride, o.d = d.get();
    o.scale_a = sa.as<float>(), o.scale_b = sb.as<float>();
    o.bias = p.bias == Bias::kNone ? nullptr : bias.get();
    plan.args(o, args[size_t(i)]);
  }
  // One untimed launch each on copy 0, which the rounds then visit last: cuBLASLt loads its kernel's module at its
  // first launch. Then the device idles (work other streams queued before this call is done).
  plan.launch(args[0], stream);
  for (const auto& lt : lts) lt->launch(ops[0], stream);
  DGT_CHECK_CUDA(cudaDeviceSynchronize());

  // Side 0 is the kernel, side 1 + j cuBLASLt's algorithm j.
  const size_t sides = 1 + lts.size();
  std::vector<EventPair> ev(sides * size_t(kProbeRounds));
  {
    HostGate gate(stream);
    int set = 0;
    for (int r = 0; r < kProbeRounds; ++r) {
      // The order rotates by one side per round; each launch takes the next operand copy (copy 0 after the last), so
      // under cold-l2 no launch finds its operands in the L2 from the launches before.
      for (size_t i = 0; i < sides; ++i) {
        const size_t side = (i + size_t(r)) % sides;
        set = (set + 1) % operand_sets;
        EventPair& e = ev[side * size_t(kProbeRounds) + size_t(r)];
        DGT_CHECK_CUDA(cudaEventRecord(e.start, stream));
        if (side == 0)
          plan.launch(args[size_t(set)], stream);
        else
          lts[side - 1]->launch(ops[size_t(set)], stream);
        DGT_CHECK_CUDA(cudaEventRecord(e.stop, stream));
      }
    }
    gate.open();
  }  // the gate waits for the stream
  DGT_CHECK_CUDA(cudaGetLastError());
  std::vector<double> k_us;
  std::vector<std::vector<double>> l_us(lts.size());
  for (int r = 0; r < kProbeRounds; ++r) {
    k_us.push_back(ev[size_t(r)].us());
    for (size_t j = 0; j < lts.size(); ++j) l_us[j].push_back(ev[(1 + j) * size_t(kProbeRounds) + size_t(r)].us());
  }
  return probe_times(k_us, l_us, operand_sets);
}

}  // namespace dgt
