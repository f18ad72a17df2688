/* One GEMM through dgtune's C API (dgtune/dgtune.h), linked against the shared libdgtune_runtime with the flags of
 * `pkg-config --cflags --libs dgtune`, checked exactly as tests/consumer/cpp/main.cpp does (A, B in {-1, 0, 1},
 * scales 1/2 and 1/4: every element of D is k/8 with |k| <= K < 256, exact in BF16). Exit 0: verified; 77: no usable
 * GPU (DGT_ERR_NO_DEVICE, dgt_last_error() printed); 1: anything else. */
#include <cuda_runtime_api.h>
#include <dgtune/dgtune.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t e4m3(int v) { return v == 0 ? 0x00 : v > 0 ? 0x38 : 0xB8; }

static float bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

int main(void) {
  enum { M = 129, N = 72, K = 160 };
  dgt_gemm* g = NULL;
  dgt_status s = dgt_gemm_create(NULL, &g);
  if (s != DGT_OK) {
    fprintf(stderr, "consumer.c: dgt_gemm_create: status %d: %s\n", (int)s, dgt_last_error());
    return s == DGT_ERR_NO_DEVICE ? 77 : 1;
  }
  static int av[M * K], bv[N * K];
  static uint8_t a[M * K], b[N * K];
  static uint16_t d[M * N];
  for (int i = 0; i < M * K; ++i) av[i] = (i * 7 + 3) % 3 - 1, a[i] = e4m3(av[i]);
  for (int i = 0; i < N * K; ++i) bv[i] = (i * 5 + 1) % 3 - 1, b[i] = e4m3(bv[i]);
  const float sa = 0.5f, sb = 0.25f;
  void *da, *db, *dd, *ds;
  if (cudaMalloc(&da, sizeof a) || cudaMalloc(&db, sizeof b) || cudaMalloc(&dd, sizeof d) || cudaMalloc(&ds, 512)) {
    fprintf(stderr, "consumer.c: cudaMalloc failed\n");
    return 1;
  }
  cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
  cudaMemcpy(ds, &sa, 4, cudaMemcpyHostToDevice);
  cudaMemcpy((char*)ds + 256, &sb, 4, cudaMemcpyHostToDevice);
  char key[160] = "", source[40] = "";
  const int64_t problem[1][6] = {{M, N, K, K, K, N}};
  if ((s = dgt_gemm_warmup(g, problem, 1, NULL)) != DGT_OK ||
      (s = dgt_gemm_choose(g, M, N, K, K, K, N, NULL, key, sizeof key, source, sizeof source, NULL)) != DGT_OK ||
      (s = dgt_gemm_run(g, da, db, dd, M, N, K, K, K, N, (const float*)ds, (const float*)((char*)ds + 256), NULL,
                        NULL)) != DGT_OK) {
    fprintf(stderr, "consumer.c: status %d: %s\n", (int)s, dgt_last_error());
    return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    fprintf(stderr, "consumer.c: the GEMM failed\n");
    return 1;
  }
  cudaMemcpy(d, dd, sizeof d, cudaMemcpyDeviceToHost);
  long bad = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      long acc = 0;
      for (int k = 0; k < K; ++k) acc += (long)av[m * K + k] * bv[n * K + k];
      if (bf16_to_float(d[m * N + n]) != (float)acc * sa * sb && ++bad <= 3)
        fprintf(stderr, "consumer.c: D[%d,%d] = %g, expected %g\n", m, n, bf16_to_float(d[m * N + n]),
                (float)acc * sa * sb);
    }
  /* A bad argument is refused with its name, and the handle stays usable. */
  const dgt_run_options bad_options = {0, 0, 0, 9, 0, NULL, 0, NULL, NULL};
  if (dgt_gemm_run(g, da, db, dd, M, N, K, K, K, N, (const float*)ds, (const float*)ds, NULL, &bad_options) !=
          DGT_ERR_USAGE ||
      strstr(dgt_last_error(), "scale") == NULL) {
    fprintf(stderr, "consumer.c: scale = 9 was not refused naming the field (%s)\n", dgt_last_error());
    return 1;
  }
  printf("consumer.c: %dx%dx%d with %s (%s): %s\n", M, N, K, key, source, bad ? "WRONG" : "verified");
  dgt_gemm_destroy(g);
  return bad ? 1 : 0;
}
