// The C API (dgtune/dgtune.h) over dgt::Gemm and dgt::GroupedGemm: every call catches what the C++ API throws and
// returns it as a dgt_status, with the message kept per thread for dgt_last_error().
#include <algorithm>
#include <vector>
#include "dgtune/dgtune.h"

#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "dgtune/gemm.hpp"
#include "dgtune/grouped_gemm.hpp"

struct dgt_gemm {
  std::unique_ptr<dgt::Gemm> gemm;
};

struct dgt_grouped_gemm {
  std::unique_ptr<dgt::GroupedGemm> gemm;
};

namespace {

thread_local std::string g_last_error;

static_assert(DGT_ERR_USAGE == 1 + int(dgt::ErrorKind::kUsage) && DGT_ERR_TIMEOUT == 1 + int(dgt::ErrorKind::kTimeout) &&
                  DGT_ERR_INTERNAL == 1 + int(dgt::ErrorKind::kInternal),
              "dgt_status mirrors dgt::ErrorKind");

/// Runs `f`, turning an exception into a status and the thread's last error.
template <class F>
dgt_status guarded(F&& f) {
  try {
    f();
    g_last_error.clear();
    return DGT_OK;
  } catch (const dgt::Error& e) {
    g_last_error = e.message();
    return static_cast<dgt_status>(1 + static_cast<int>(e.kind()));
  } catch (const std::exception& e) {
    g_last_error = e.what();
  } catch (...) {
    g_last_error = "unknown exception";
  }
  return DGT_ERR_INTERNAL;
}

dgt::Gemm& gemm_of(dgt_gemm* g) {
  if (g == nullptr || !g->gemm) DGT_THROW(dgt::ErrorKind::kUsage, "dgt_gemm is NULL (make one with dgt_gemm_create)");
  return *g->gemm;
}

/// A C enum value checked against its range, naming the struct and the field.
template <class E>
E enum_of(int v, int max, const char* field, const char* owner = "dgt_run_options") {
  if (v < 0 || v > max) DGT_THROW(dgt::ErrorKind::kUsage, "{}.{} = {} is out of range [0, {}]", owner, field, v, max);
  return static_cast<E>(v);
}

const dgt::GroupedGemm& grouped_of(const dgt_grouped_gemm* g) {
  if (g == nullptr || !g->gemm)
    DGT_THROW(dgt::ErrorKind::kUsage, "dgt_grouped_gemm is NULL (make one with dgt_grouped_gemm_create)");
  return *g->gemm;
}

dgt::GroupedGemmProblem grouped_problem(const dgt_grouped_problem* p) {
  if (p == nullptr) DGT_THROW(dgt::ErrorKind::kUsage, "dgt_grouped_gemm_create: problem is NULL");
  dgt::GroupedGemmProblem r;
  r.layout = enum_of<dgt::GroupedLayout>(p->layout, 1, "layout", "dgt_grouped_problem");
  r.groups = p->groups;
  r.m = p->m;
  r.expected_m = p->expected_m;
  r.n = p->n;
  r.k = p->k;
  // Every dgt::Fp8Scaling value passes here; the grouped rule (per-tensor or block only) is dgt::GroupedGemm's.
  r.scale = enum_of<dgt::Fp8Scaling>(p->scale, 3, "scale", "dgt_grouped_problem");
  return r;
}

dgt::GemmRunOptions run_options(const dgt_run_options* o) {
  dgt::GemmRunOptions r;
  if (o == nullptr) return r;
  r.a_format = enum_of<dgt::Fp8Format>(o->a_format, 1, "a_format");
  r.b_format = enum_of<dgt::Fp8Format>(o->b_format, 1, "b_format");
  r.fast_accum = o->fast_accum != 0;
  r.scale = enum_of<dgt::Fp8Scaling>(o->scale, 3, "scale");
  r.output = enum_of<dgt::OutputType>(o->output, 2, "output");
  r.bias = o->bias;
  r.act = enum_of<dgt::Activation>(o->act, 2, "act");
  r.scale_d = o->scale_d;
  r.amax = o->amax;
  return r;
}

void copy_text(const std::string& s, char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return;
  const size_t n = std::min(s.size(), capacity - 1);
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" {

dgt_status dgt_gemm_create(const dgt_gemm_options* options, dgt_gemm** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    if (out == nullptr) DGT_THROW(dgt::ErrorKind::kUsage, "dgt_gemm_create: out is NULL");
    dgt::GemmOptions o;
    if (options) {
      if (options->db_path) o.db_path = options->db_path;
      if (options->cache_dir) o.cache_dir = options->cache_dir;
      o.device = options->device;
      if (options->protocol && *options->protocol) o.protocol = options->protocol;
      if (options->bundle) o.bundle = options->bundle;
    }
    auto g = std::make_unique<dgt_gemm>();
    g->gemm = std::make_unique<dgt::Gemm>(o);
    *out = g.release();
  });
}

void dgt_gemm_destroy(dgt_gemm* gemm) { delete gemm; }

dgt_status dgt_gemm_run(dgt_gemm* gemm, const void* a, const void* b, void* d, int64_t m, int64_t n, int64_t k,
                        int64_t lda, int64_t ldb, int64_t ldd, const float* scale_a, const float* scale_b, void* stream,
                        const dgt_run_options* options) {
  return guarded([&] {
    gemm_of(gemm).run(a, b, d, m, n, k, lda, ldb, ldd, scale_a, scale_b, static_cast<cudaStream_t>(stream),
                      run_options(options));
  });
}

dgt_status dgt_gemm_choose(dgt_gemm* gemm, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldd,
                           const dgt_run_options* options, char* config_key, size_t config_key_capacity, char* source,
                           size_t source_capacity, double* tuned_us) {
  return guarded([&] {
    const dgt::GemmChoice c = gemm_of(gemm).choose(m, n, k, lda, ldb, ldd, run_options(options));
    copy_text(c.config_key, config_key, config_key_capacity);
    copy_text(c.source, source, source_capacity);
    if (tuned_us) *tuned_us = c.tuned_us;
  });
}

dgt_status dgt_gemm_warmup(dgt_gemm* gemm, const int64_t (*problems)[6], size_t count, const dgt_run_options* options) {
  return guarded([&] {
    dgt::Gemm& g = gemm_of(gemm);
    if (problems == nullptr && count > 0) DGT_THROW(dgt::ErrorKind::kUsage, "dgt_gemm_warmup: problems is NULL");
    const dgt::GemmRunOptions o = run_options(options);
    // One WarmupProblem per family (N, K, leading dimensions), with the M values given for it.
    std::vector<dgt::WarmupProblem> families;
    for (size_t i = 0; i < count; ++i) {
      const int64_t* q = problems[i];
      auto it = std::find_if(families.begin(), families.end(), [&](const dgt::WarmupProblem& w) {
        return w.n == q[1] && w.k == q[2] && w.lda == q[3] && w.ldb == q[4] && w.ldd == q[5];
      });
      if (it == families.end()) {
        families.push_back(dgt::WarmupProblem{q[1], q[2], q[3], q[4], q[5], o, {}});
        it = families.end() - 1;
      }
      it->m.push_back(q[0]);
    }
    (void)g.warmup(families);
  });
}

dgt_status dgt_grouped_gemm_create(const dgt_grouped_problem* problem, const dgt_grouped_options* options,
                                   dgt_grouped_gemm** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    if (out == nullptr) DGT_THROW(dgt::ErrorKind::kUsage, "dgt_grouped_gemm_create: out is NULL");
    const dgt::GroupedGemmProblem p = grouped_problem(problem);
    dgt::GroupedGemmOptions o;
    if (options) {
      o.device = options->device;
      if (options->cache_dir) o.cache_dir = options->cache_dir;
      if (options->config) o.config = options->config;
      if (options->db_path) o.db_path = options->db_path;
      if (options->protocol && *options->protocol) o.protocol = options->protocol;
      if (options->bundle) o.bundle = options->bundle;
    }
    auto g = std::make_unique<dgt_grouped_gemm>();
    g->gemm = std::make_unique<dgt::GroupedGemm>(p, o);
    *out = g.release();
  });
}

void dgt_grouped_gemm_destroy(dgt_grouped_gemm* gemm) { delete gemm; }

dgt_status dgt_grouped_gemm_run(const dgt_grouped_gemm* gemm, const void* a, const void* b, void* d,
                                const float* scale_a, const float* scale_b, const int32_t* layout, void* stream) {
  return guarded([&] {
    grouped_of(gemm).run(a, b, d, scale_a, scale_b, layout, static_cast<cudaStream_t>(stream));
  });
}

dgt_status dgt_grouped_gemm_config(const dgt_grouped_gemm* gemm, char* config_key, size_t config_key_capacity,
                                   char* source, size_t source_capacity) {
  return guarded([&] {
    const dgt::GroupedGemmChoice& c = grouped_of(gemm).choice();
    copy_text(c.config_key, config_key, config_key_capacity);
    copy_text(c.source, source, source_capacity);
  });
}

const char* dgt_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
