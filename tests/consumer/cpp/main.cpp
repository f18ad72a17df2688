// One GEMM through dgt::Gemm, linked against libdgtune_runtime alone, checked exactly: A and B hold -1, 0 or 1
// (exact in e4m3) and the scales are 1/2 and 1/4, so every element of D is k/8 with |k| <= K = 192 < 256, which
// BF16 holds exactly, whatever the order of the FP32 sums. Exit 0: verified; 77: no usable GPU (the library's
// documented dgt::Error of kind kNoDevice, message printed); 1: anything else (a wrong element, another error).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <dgtune/gemm.hpp>

namespace {

// e4m3 (OCP FP8: sign, 4 exponent bits with bias 7, 3 mantissa bits) of v in {-1, 0, 1}.
uint8_t e4m3(int v) { return v == 0 ? 0x00 : v > 0 ? 0x38 : 0xB8; }

float bf16_to_float(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "consumer: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int main() {
  const int64_t M = 200, N = 136, K = 192;
  try {
    dgt::Gemm gemm;  // the DB from $DGTUNE_DB; none: the default config
    std::vector<uint8_t> a(M * K), b(N * K);
    std::vector<int> av(M * K), bv(N * K);
    for (int64_t i = 0; i < M * K; ++i) av[i] = int((i * 7 + 3) % 3) - 1, a[i] = e4m3(av[i]);
    for (int64_t i = 0; i < N * K; ++i) bv[i] = int((i * 5 + 1) % 3) - 1, b[i] = e4m3(bv[i]);
    const float scales[2] = {0.5f, 0.25f};
    void *da = nullptr, *db = nullptr, *dd = nullptr, *ds = nullptr;
    if (!check(cudaMalloc(&da, a.size()), "cudaMalloc A") || !check(cudaMalloc(&db, b.size()), "cudaMalloc B") ||
        !check(cudaMalloc(&dd, M * N * 2), "cudaMalloc D") || !check(cudaMalloc(&ds, 512), "cudaMalloc scales"))
      return 1;
    cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(ds, &scales[0], 4, cudaMemcpyHostToDevice);
    cudaMemcpy(static_cast<char*>(ds) + 256, &scales[1], 4, cudaMemcpyHostToDevice);
    const float* sa = static_cast<const float*>(ds);
    const float* sb = reinterpret_cast<const float*>(static_cast<char*>(ds) + 256);
    const dgt::GemmChoice c = gemm.choose(M, N, K, K, K, N);
    gemm.run(da, db, dd, M, N, K, K, K, N, sa, sb, nullptr);
    if (!check(cudaDeviceSynchronize(), "GEMM")) return 1;
    std::vector<uint16_t> d(M * N);
    cudaMemcpy(d.data(), dd, d.size() * 2, cudaMemcpyDeviceToHost);
    int64_t bad = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += int64_t(av[m * K + k]) * bv[n * K + k];
        const float want = float(acc) * scales[0] * scales[1];
        if (bf16_to_float(d[m * N + n]) != want && ++bad <= 3)
          std::fprintf(stderr, "consumer: D[%lld,%lld] = %g, expected %g\n", (long long)m, (long long)n,
                       bf16_to_float(d[m * N + n]), want);
      }
    std::printf("consumer: %lldx%lldx%lld with %s (%s): %s\n", (long long)M, (long long)N, (long long)K,
                c.config_key.c_str(), c.source.c_str(), bad ? "WRONG" : "verified");
    return bad ? 1 : 0;
  } catch (const dgt::Error& e) {
    std::fprintf(stderr, "consumer: dgt::Error (%s): %s\n", dgt::to_string(e.kind()), e.message().c_str());
    return e.kind() == dgt::ErrorKind::kNoDevice ? 77 : 1;
  }
}
