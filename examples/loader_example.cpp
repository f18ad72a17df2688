// Example: use the dgtune loader (dgtune/gemm.hpp) from application code.
//
//   dgtune_loader_example [--db results/tuning.db] [--tuned M N K] [--untuned M N K]
//   dgtune_loader_example_table [--tuned M N K] [--untuned M N K]   (the same, from an exported header)
//
// The _table build includes a header made by `dgtune export --format cpp` (DGT_EXAMPLE_TABLE_HEADER, set by
// CMake) and runs from its constexpr table instead of a DB: no SQLite at run time, NVRTC still needed.
//
// Runs one shape that a sweep tuned and one it did not, checks each output against a host reference
// on sampled elements, and reports the config chosen, the host overhead per call on a warm cache and
// the GPU time per call. Exit code 0 only if both outputs are correct; 77 without a usable GPU (dgt::Error kNoDevice).
#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dgtune/gemm.hpp"
#ifdef DGT_EXAMPLE_TABLE_HEADER
#include DGT_EXAMPLE_TABLE_HEADER
#endif

namespace {

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// OCP e4m3: bias 7, S.1111.111 is NaN.
float e4m3_to_float(uint8_t v) {
  const int e = (v >> 3) & 0xF, m = v & 7;
  const float mag = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(float(8 + m), e - 10);
  return (v & 0x80) ? -mag : mag;
}

float bf16_to_float(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool run_shape(dgt::Gemm& gemm, int64_t m, int64_t n, int64_t k, const char* label) {
  const int64_t lda = k, ldb = k, ldd = n;
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 7 + k));
  // Random finite e4m3 values with magnitudes between 2^-3 and 2^4.
  auto random_fp8 = [&] { return uint8_t((rng() & 0x80) | ((4 + rng() % 8) << 3) | (rng() & 7)); };
  std::vector<uint8_t> a(size_t(m * lda)), b(size_t(n * ldb));
  for (auto& x : a) x = random_fp8();
  for (auto& x : b) x = random_fp8();
  const float scales[2] = {0.75f, 1.25f};

  void *da, *db, *dd;
  void* ds_raw;
  CHECK(cudaMalloc(&da, a.size()));
  CHECK(cudaMalloc(&db, b.size()));
  CHECK(cudaMalloc(&dd, size_t(m * ldd * 2)));
  CHECK(cudaMalloc(&ds_raw, sizeof scales));
  float* ds = static_cast<float*>(ds_raw);
  CHECK(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(ds, scales, sizeof scales, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dd, 0xFF, size_t(m * ldd * 2)));  // NaN poison: unwritten outputs fail the check
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  const dgt::GemmChoice choice = gemm.choose(m, n, k, lda, ldb, ldd);
  gemm.run(da, db, dd, m, n, k, lda, ldb, ldd, ds, ds + 1, stream);
  CHECK(cudaStreamSynchronize(stream));
  std::vector<uint16_t> d(size_t(m * ldd));
  CHECK(cudaMemcpy(d.data(), dd, d.size() * 2, cudaMemcpyDeviceToHost));

  // Host reference on sampled elements (always including the last row and column: the tails).
  // Error is normalised by the largest |reference| sampled, as dgtune's verifier does: FP8 tensor-core
  // sums carry absolute error proportional to the partial sums, so a per-element relative check would
  // flag correct results whose value happens to be near zero. Limit 2^-7 (twice BF16's unit roundoff).
  std::vector<std::pair<int64_t, int64_t>> samples = {{0, 0}, {m - 1, n - 1}, {m - 1, 0}, {0, n - 1}};
  for (int i = 0; i < 400; ++i) samples.emplace_back(rng() % m, rng() % n);
  std::vector<double> refs, gots;
  double max_ref = 0;
  for (auto [r, c] : samples) {
    double ref = 0;
    for (int64_t kk = 0; kk < k; ++kk)
      ref += double(e4m3_to_float(a[size_t(r * lda + kk)])) * e4m3_to_float(b[size_t(c * ldb + kk)]);
    ref *= double(scales[0]) * scales[1];
    refs.push_back(ref);
    gots.push_back(bf16_to_float(d[size_t(r * ldd + c)]));
    max_ref = std::max(max_ref, std::fabs(ref));
  }
  double max_rel = 0;
  int bad = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    const double rel = std::isfinite(gots[i]) ? std::fabs(gots[i] - refs[i]) / std::max(max_ref, 1e-30) : INFINITY;
    bad += rel > 1.0 / 128;
    max_rel = std::max(max_rel, rel);
  }

  // Host overhead per call on a warm cache, and GPU time per call.
  const int calls = 200;
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventRecord(e0, stream));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) gemm.run(da, db, dd, m, n, k, lda, ldb, ldd, ds, ds + 1, stream);
  const double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
  CHECK(cudaEventRecord(e1, stream));
  CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));

  std::printf(
      "%-8s %6lldx%6lldx%6lld  config %-48s source %-8s tuned_us %8.2f  sampled max rel err %.2e  bad %d/%zu  "
      "host %.2f us/call  gpu %.2f us/call (back to back)  %s\n",
      label, (long long)m, (long long)n, (long long)k, choice.config_key.c_str(), choice.source.c_str(),
      choice.tuned_us, max_rel, bad, samples.size(), host_us, ms * 1000.0 / calls, bad == 0 ? "OK" : "FAILED");
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  cudaFree(ds);
  cudaStreamDestroy(stream);
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  dgt::GemmOptions options;
#ifdef DGT_EXAMPLE_TABLE_HEADER
  options.table = &dgtune_tuned::kTable;  // winners compiled in; no DB is opened
#endif
  int64_t tuned[3] = {4096, 4096, 4096}, untuned[3] = {777, 1000, 528};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--db" && i + 1 < argc) {
      options.db_path = argv[++i];
    } else if ((arg == "--tuned" || arg == "--untuned") && i + 3 < argc) {
      int64_t* dst = arg == "--tuned" ? tuned : untuned;
      for (int j = 0; j < 3; ++j) dst[j] = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--db PATH] [--tuned M N K] [--untuned M N K]\n", argv[0]);
      return 2;
    }
  }
  try {
    dgt::Gemm gemm(options);
    bool ok = run_shape(gemm, tuned[0], tuned[1], tuned[2], "tuned");
    ok = run_shape(gemm, untuned[0], untuned[1], untuned[2], "untuned") && ok;
    return ok ? 0 : 1;
  } catch (const dgt::Error& e) {
    // The library's errors name what failed; without a usable GPU (no driver, no device, not sm_90) it is kNoDevice.
    std::fprintf(stderr, "error (%s): %s\n", dgt::to_string(e.kind()), e.message().c_str());
    return e.kind() == dgt::ErrorKind::kNoDevice ? 77 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
