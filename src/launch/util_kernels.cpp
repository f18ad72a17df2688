#include "launch/util_kernels.hpp"

#include "core/driver_api.hpp"
#include "core/error.hpp"
#include "core/int_math.hpp"
#include "jit/codegen.hpp"

namespace dgt {

static_assert(sizeof(CompareStatsHost) == 48, "must match dgt::util::CompareStats");

UtilKernels::UtilKernels(const jit::CubinCache& cache, int sm_count) : sm_count_(sm_count) {
  jit::CompiledKernel k = cache.get_or_compile(jit::generate_util_module());
  auto module = std::make_shared<jit::Module>(k.cubin);
  auto get = [&](const char* name) {
    jit::LoadedKernel lk;
    lk.module = module;
    lk.function = module->function(name);
    return lk;
  };
  fill_fp8_ = get("dgt_fill_fp8");
  fill_u16_ = get("dgt_fill_u16");
  flush_write_ = get("dgt_flush_write");
  flush_read_ = get("dgt_flush_read");
  ref_gemm_ = get("dgt_ref_gemm");
  compare_ = get("dgt_compare");
  ref_epilogue_ = get("dgt_ref_epilogue");
  clock_probe_ = get("dgt_clock_probe");
  copy_limit_ = get("dgt_copy_limit");
}

void UtilKernels::launch(CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by, void** params,
                         cudaStream_t s) const {
  CUresult rc = driver().launch_kernel(f, gx, gy, 1, bx, by, 1, 0, reinterpret_cast<CUstream>(s), params, nullptr);
  if (rc != CUDA_SUCCESS) DGT_THROW(ErrorKind::kDriver, "utility kernel launch failed: {}", driver_error_name(rc));
}

void UtilKernels::fill_fp8(void* p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, DType type,
                           cudaStream_t s) const {
  unsigned long long r = rows, c = cols, l = ld, sd = seed;
  unsigned t = fp8_type_code(type);
  void* params[] = {&p, &r, &c, &l, &sd, &t};
  launch(fill_fp8_.function, sm_count_ * 4, 1, 256, 1, params, s);
}

void UtilKernels::fill_u16(void* p, int64_t count, uint16_t value, cudaStream_t s) const {
  unsigned long long n = count;
  unsigned short v = value;
  void* params[] = {&p, &n, &v};
  launch(fill_u16_.function, sm_count_ * 4, 1, 256, 1, params, s);
}

void UtilKernels::flush_l2(void* buf, int64_t bytes, void* sink, uint32_t salt, cudaStream_t s) const {
  unsigned long long n16 = bytes / 16;
  unsigned sl = salt;
  void* wparams[] = {&buf, &n16, &sl};
  launch(flush_write_.function, sm_count_ * 8, 1, 512, 1, wparams, s);
  void* rparams[] = {&buf, &n16, &sink};
  launch(flush_read_.function, sm_count_ * 8, 1, 512, 1, rparams, s);
}

void UtilKernels::reference_gemm(const Problem& p, const void* a, const void* b, const float* scale_a,
                                 const float* scale_b, float* dref, cudaStream_t s) const {
  const ScaleLayout sl = p.scales();
  reference_gemm(p, a, b, scale_a, scale_b, sl.ld_a, sl.ld_b, dref, s);
}

void UtilKernels::reference_gemm(const Problem& p, const void* a, const void* b, const float* scale_a,
                                 const float* scale_b, int64_t ld_sa_elems, int64_t ld_sb_elems, float* dref,
                                 cudaStream_t s) const {
  unsigned m = p.m, n = p.n, k = p.k;
  unsigned long long lda = p.lda, ldb = p.ldb;
  unsigned ta = fp8_type_code(p.a), tb = fp8_type_code(p.b);
  unsigned mode = scale_mode_code(p.scale), ld_sa = static_cast<unsigned>(ld_sa_elems),
           ld_sb = static_cast<unsigned>(ld_sb_elems);
  void* params[] = {&a, &b, &dref, &m, &n, &k, &lda, &ldb, &scale_a, &scale_b, &ta, &tb, &mode, &ld_sa, &ld_sb};
  launch(ref_gemm_.function, static_cast<unsigned>(ceil_div(p.n, 64)), static_cast<unsigned>(ceil_div(p.m, 64)), 16, 16,
         params, s);
}

void UtilKernels::reference_epilogue(const Problem& p, float* dref, const void* bias, bool apply,
                                     uint32_t* amax_bits, cudaStream_t s) const {
  unsigned m = p.m, n = p.n;
  unsigned has_bias = apply && p.bias == Bias::kBF16 ? 1u : 0u;
  unsigned act = apply ? act_code(p.act) : 0u;
  void* params[] = {&dref, &m, &n, &bias, &has_bias, &act, &amax_bits};
  launch(ref_epilogue_.function, sm_count_ * 4, 1, 256, 1, params, s);
}

void UtilKernels::compare(const Problem& p, const void* d, const float* dref, int64_t rows_alloc,
                          CompareStatsHost* stats, float scale_d, float ulp_slack, cudaStream_t s) const {
  unsigned m = p.m, n = p.n;
  unsigned long long ldd = p.ldd, rows = rows_alloc;
  unsigned out = out_type_code(p.d);
  void* params[] = {&d, &dref, &m, &n, &ldd, &rows, &stats, &out, &scale_d, &ulp_slack};
  launch(compare_.function, sm_count_ * 4, 1, 256, 1, params, s);
}

void UtilKernels::copy_limit(const CopyLimitPlan& plan, const void* a, const void* b, void* d, uint32_t* sink,
                             cudaStream_t s) const {
  CopyLimitArgs args = plan.args;
  args.a.base = a;
  args.b.base = b;
  args.d = d;
  args.sink = sink;
  void* params[] = {&args};
  launch(copy_limit_.function, plan.grid, 1, plan.block, 1, params, s);
}

void UtilKernels::clock_probe(uint64_t* out, uint64_t spin_ns, cudaStream_t s) const {
  unsigned long long ns = spin_ns;
  void* params[] = {&out, &ns};
  launch(clock_probe_.function, 1, 1, 1, 1, params, s);
}

int UtilKernels::max_active_clusters(int cluster_size, int smem_bytes) const {
  if (cluster_size < 1 || cluster_size > 8)
    DGT_THROW(ErrorKind::kInvalid, "max_active_clusters: cluster size {} is outside 1..8", cluster_size);
  CUfunction f = clock_probe_.function;
  CUresult rc = driver().func_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes);
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "max_active_clusters: {} bytes of dynamic shared memory refused: {}", smem_bytes,
              driver_error_name(rc));
  const int n = dgt::max_active_clusters(f, cluster_size, 128, smem_bytes, &rc);
  if (rc != CUDA_SUCCESS)
    DGT_THROW(ErrorKind::kDriver, "cuOccupancyMaxActiveClusters (cluster of {}): {}", cluster_size,
              driver_error_name(rc));
  return n;
}

}  // namespace dgt
