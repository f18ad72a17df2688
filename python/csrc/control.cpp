// The control calls of the torch package (python/dgtune/_native.py reaches them with ctypes): configure the per-device
// dgt::Gemm objects (DB, bundle, protocol), choose, warm up, read counters, say what a grouped op runs. JSON in and out; no Python or torch ABI,
// and none of them is on the launch path. Every function returns 0 on success, else 1 with the message in
// dgtune_torch_last_error() (per thread).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "gemm_registry.hpp"
#include "grouped_registry.hpp"

#define DGT_TORCH_EXPORT extern "C" __attribute__((visibility("default")))

namespace dgt::torch_op {
namespace {

thread_local std::string last_error;

using nlohmann::json;

Fp8Format fp8(const std::string& s) {
  if (s == "e4m3") return Fp8Format::kE4M3;
  if (s == "e5m2") return Fp8Format::kE5M2;
  throw Error(ErrorKind::kUsage, "format must be \"e4m3\" or \"e5m2\", got \"" + s + "\"");
}

Fp8Scaling scaling(const std::string& s) {
  if (s == "per-tensor") return Fp8Scaling::kPerTensor;
  if (s == "channel") return Fp8Scaling::kChannel;
  if (s == "block") return Fp8Scaling::kBlock;
  if (s == "block1d1d") return Fp8Scaling::kBlock1d1d;
  throw Error(ErrorKind::kUsage, "scale must be per-tensor, channel, block or block1d1d, got \"" + s + "\"");
}

OutputType output(const std::string& s) {
  if (s == "bf16") return OutputType::kBF16;
  if (s == "f32") return OutputType::kF32;
  if (s == "e4m3") return OutputType::kE4M3;
  throw Error(ErrorKind::kUsage, "out must be bf16, f32 or e4m3, got \"" + s + "\"");
}

// The run options of a problem object (keys a, b, fast_accum, scale, out, bias; all optional).
GemmRunOptions run_options(const json& p) {
  GemmRunOptions o;
  o.a_format = fp8(p.value("a", std::string("e4m3")));
  o.b_format = fp8(p.value("b", std::string("e4m3")));
  o.fast_accum = p.value("fast_accum", false);
  o.scale = scaling(p.value("scale", std::string("per-tensor")));
  o.output = output(p.value("out", std::string("bf16")));
  // choose/warmup only test whether there is a bias and an output scale; these pointers are never read.
  alignas(16) static const char kPresent[16] = {};
  if (p.value("bias", false)) o.bias = kPresent;
  if (o.output == OutputType::kE4M3) o.scale_d = reinterpret_cast<const float*>(kPresent);
  return o;
}

int64_t need_int(const json& p, const char* key) {
  if (!p.contains(key) || !p[key].is_number_integer())
    throw Error(ErrorKind::kUsage, std::string("problem needs an integer \"") + key + "\"");
  return p[key].get<int64_t>();
}

int write_out(const std::string& text, char* out, size_t cap) {
  if (text.size() + 1 > cap) {
    last_error = "buffer too small (need " + std::to_string(text.size() + 1) + ")";
    return 1;
  }
  std::memcpy(out, text.c_str(), text.size() + 1);
  return 0;
}

template <class F>
int guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return 1;
}

}  // namespace
}  // namespace dgt::torch_op

using namespace dgt::torch_op;

DGT_TORCH_EXPORT const char* dgtune_torch_last_error() { return last_error.c_str(); }

DGT_TORCH_EXPORT const char* dgtune_torch_version() { return DGTUNE_VERSION; }

DGT_TORCH_EXPORT int dgtune_torch_configure(const char* options_json) {
  return guarded([&] {
    const json j = json::parse(options_json ? options_json : "{}");
    dgt::GemmOptions o;
    o.db_path = j.value("db", std::string());
    o.bundle = j.value("bundle", std::string());
    o.cache_dir = j.value("cache_dir", std::string());
    o.protocol = j.value("protocol", std::string("cold-l2"));
    if (o.protocol.empty()) o.protocol = "cold-l2";
    if (o.protocol != "cold-l2" && o.protocol != "hot-graph")
      throw dgt::Error(dgt::ErrorKind::kUsage,
                       "protocol must be \"cold-l2\" or \"hot-graph\", got \"" + o.protocol + "\"");
    o.cublaslt = j.value("cublaslt", true);
    o.probe_ladder = j.value("probe_ladder", true);
    o.record_untuned = j.value("record_untuned", std::string());
    const std::string miss = j.value("capture_miss", std::string("cublaslt"));
    if (miss == "cublaslt" || miss.empty()) {
      o.capture_miss = dgt::CaptureMiss::kCublasLt;
    } else if (miss == "error") {
      o.capture_miss = dgt::CaptureMiss::kError;
    } else {
      throw dgt::Error(dgt::ErrorKind::kUsage, "capture_miss must be \"cublaslt\" or \"error\", got \"" + miss + "\"");
    }
    configure(o);
    return 0;
  });
}

DGT_TORCH_EXPORT int dgtune_torch_choose(int device, const char* problem_json, char* out, size_t cap) {
  return guarded([&] {
    const json p = json::parse(problem_json);
    const dgt::GemmChoice c =
        gemm_for(device).choose(need_int(p, "m"), need_int(p, "n"), need_int(p, "k"), need_int(p, "lda"),
                                need_int(p, "ldb"), need_int(p, "ldd"), run_options(p));
    const json r = {{"config_key", c.config_key}, {"source", c.source},   {"backend", c.backend},
                    {"cublaslt_algo", c.cublaslt_algo}, {"protocol", c.protocol}, {"tuned_us", c.tuned_us},
                    {"probe", c.probe}};
    return write_out(r.dump(), out, cap);
  });
}

DGT_TORCH_EXPORT int dgtune_torch_warmup(int device, const char* request_json, char* out, size_t cap) {
  return guarded([&] {
    const json q = json::parse(request_json);
    dgt::Gemm& g = gemm_for(device);
    dgt::WarmupReport rep;
    if (q.contains("shapes_file")) {
      rep = g.warmup_shapes(q["shapes_file"].get<std::string>());
    } else if (q.value("tuned", false)) {
      rep = g.warmup_tuned();
    } else if (q.contains("problems")) {
      std::vector<dgt::WarmupProblem> problems;
      for (const json& p : q["problems"]) {
        dgt::WarmupProblem w;
        w.n = need_int(p, "n");
        w.k = need_int(p, "k");
        w.lda = need_int(p, "lda");
        w.ldb = need_int(p, "ldb");
        w.ldd = need_int(p, "ldd");
        w.options = run_options(p);
        if (p.contains("m")) w.m = p["m"].get<std::vector<int64_t>>();
        problems.push_back(std::move(w));
      }
      rep = g.warmup(problems);
    } else {
      throw dgt::Error(dgt::ErrorKind::kUsage, "warmup needs \"shapes_file\", \"tuned\": true or \"problems\"");
    }
    const json r = {{"families", rep.families},
                    {"shapes", rep.shapes},
                    {"kernels", rep.kernels},
                    {"nvrtc_compiles", rep.nvrtc_compiles},
                    {"seconds", rep.seconds}};
    return write_out(r.dump(), out, cap);
  });
}

DGT_TORCH_EXPORT int dgtune_torch_stats(int device, char* out, size_t cap) {
  return guarded([&] {
    dgt::GemmStats s;
    if (dgt::Gemm* g = existing_gemm(device)) s = g->stats();
    const OpCounters& c = counters_for(device);
    const json r = {{"nvrtc_compiles", s.nvrtc_compiles},
                    {"cache_loads", s.cache_loads},
                    {"bundle_loads", s.bundle_loads},
                    {"db_reads", s.db_reads},
                    {"device_allocs", s.device_allocs},
                    {"resolved", s.resolved},
                    {"capture_fallbacks", s.capture_fallbacks},
                    {"ladder_probes", s.ladder_probes},
                    {"calls", c.calls.load()},
                    {"scale_copies", c.scale_copies.load()}};
    return write_out(r.dump(), out, cap);
  });
}

// What the grouped op runs for one problem: the GroupedGemm an op call made (grouped_registry.cpp), never a new one,
// so the answer is the object that launched and the query compiles nothing. Problem keys: layout ("contiguous" or
// "masked"), groups, m (M_sum or M_max), expected_m (masked; contiguous 0), n, k, scale ("block" or "per-tensor").
DGT_TORCH_EXPORT int dgtune_torch_grouped_choice(int device, const char* problem_json, char* out, size_t cap) {
  return guarded([&] {
    const json p = json::parse(problem_json);
    dgt::GroupedGemmProblem key;
    const std::string layout = p.value("layout", std::string());
    if (layout == "contiguous") {
      key.layout = dgt::GroupedLayout::kContiguous;
    } else if (layout == "masked") {
      key.layout = dgt::GroupedLayout::kMasked;
    } else {
      throw dgt::Error(dgt::ErrorKind::kUsage, "layout must be \"contiguous\" or \"masked\", got \"" + layout + "\"");
    }
    key.groups = static_cast<int>(need_int(p, "groups"));
    key.m = need_int(p, "m");
    key.expected_m = p.value("expected_m", int64_t{0});
    key.n = need_int(p, "n");
    key.k = need_int(p, "k");
    const std::string scale = p.value("scale", std::string("block"));
    if (scale != "block" && scale != "per-tensor")
      throw dgt::Error(dgt::ErrorKind::kUsage, "scale must be \"block\" or \"per-tensor\", got \"" + scale + "\"");
    key.scale = scaling(scale);
    const dgt::GroupedGemm* g = grouped_find(device, key);
    // "make": dgtune.warmup_grouped: make the op's object now (choose, compile or load), as its first call would,
    // so that a later first call inside CUDA-graph capture finds it. Refused while the current stream captures.
    if (g == nullptr && p.value("make", false))
      g = &grouped_for(device, key,
                       reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(p.value("stream", uint64_t{0}))),
                       "warmup_grouped");
    if (g == nullptr)
      throw dgt::Error(dgt::ErrorKind::kUsage, "no grouped GEMM of this problem on device " + std::to_string(device) +
                                                   " yet (" + p.dump() + "): the op's first call makes it");
    const dgt::GroupedGemmChoice& c = g->choice();
    const json r = {{"config_key", c.config_key}, {"source", c.source},       {"protocol", c.protocol},
                    {"tuned_key", c.tuned_key},   {"tuned_us", c.tuned_us},   {"older_kernel", c.older_kernel},
                    {"grid_ctas", g->grid_ctas()}};
    return write_out(r.dump(), out, cap);
  });
}
