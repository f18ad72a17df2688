// dgtune_host_cost: the host cost of dgt::Gemm::run in a serving loop (docs/loader.md "Serving").
//
// Warms a tuned model's problems up from a shapes file, picks one problem family and 16 M (8 on the warm-up's list, 8
// between its values), then makes `--calls` calls whose M cycles through the 16 while the A and D pointers rotate over
// 8 buffers, timing each call on the host (steady_clock around Gemm::run). The GPU is kept ahead of the queue by a
// stream synchronisation every 256 calls, outside the timed region, so that no call waits for a full launch queue.
// The same calls as bare launches (the prepared kernel arguments of every (M, buffer) made before the loop, then only
// cuLaunchKernelEx; cublasLtMatmul for an M cuBLASLt runs) are the floor, timed in blocks of 256 interleaved with
// the Gemm::run blocks. What the difference goes to is measured in
// separate loops: the shape lookup and the argument preparation (tensor maps from the per-thread cache, operand checks).
// Then `--first-calls` fresh M (on no list) are called once each: the one-time cost of a new M after warm-up, split by
// what it resolved to (dgtune's kernel; cuBLASLt, whose heuristic is queried for that M).
// Not a test: nothing here passes or fails. Output: a table on stdout and, with --out, a JSON document.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>

#include "core/error.hpp"
#include "device/buffer.hpp"
#include "launch/environment.hpp"
#include "loader/gemm_impl.hpp"
#include "problem/shapes_file.hpp"

namespace dgt {
namespace {

using Clock = std::chrono::steady_clock;

struct Summary {
  double p50 = 0, p99 = 0, mean = 0;
  size_t n = 0;
};
Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.p50 = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, size_t(std::ceil(0.99 * double(v.size()))) - 1)];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  return s;
}
nlohmann::json to_json(const Summary& s) { return {{"p50_us", s.p50}, {"p99_us", s.p99}, {"mean_us", s.mean}, {"n", s.n}}; }
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

/// 8 values spread evenly over `v` (all of them when there are 8 or fewer).
std::vector<int64_t> spread(const std::vector<int64_t>& v, size_t count) {
  if (v.size() <= count) return v;
  std::vector<int64_t> out;
  for (size_t i = 0; i < count; ++i) out.push_back(v[(i * (v.size() - 1)) / (count - 1)]);
  return out;
}

/// `count` M values in 1..max_m spread evenly in log M, none of them in `taken` (sorted), ascending and distinct.
std::vector<int64_t> fresh_m(size_t count, int64_t max_m, const std::vector<int64_t>& taken) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < count * 4 && out.size() < count; ++i) {
    const double t = (double(i % count) + (i / count) * 0.25 + 0.5) / double(count);
    const auto m = std::clamp<int64_t>(int64_t(std::llround(std::pow(double(max_m), t))), 1, max_m);
    if (!std::binary_search(taken.begin(), taken.end(), m) && std::find(out.begin(), out.end(), m) == out.end())
      out.push_back(m);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int run(const std::string& db, const std::string& shapes, size_t family_index, size_t calls, int64_t max_m,
        size_t first_calls, const std::string& out_path) {
  GemmOptions o;
  o.db_path = db;
  Gemm gemm(o);
  const WarmupReport warm = gemm.warmup_shapes(shapes);

  // The family and its listed M.
  std::vector<ShapeKey> families;
  std::map<size_t, std::vector<int64_t>> listed;
  for (const ShapeEntry& e : load_shapes_file(shapes)) {
    const ShapeKey f = shape_key_of(e.problem).family();
    auto it = std::find(families.begin(), families.end(), f);
    if (it == families.end()) families.push_back(f), it = families.end() - 1;
    listed[size_t(it - families.begin())].push_back(e.problem.m);
  }
  if (family_index >= families.size())
    DGT_THROW(ErrorKind::kUsage, "--family {}: {} holds {} problem families", family_index, shapes, families.size());
  const ShapeKey fam = families[family_index];
  std::vector<int64_t> list = listed[family_index];
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  list.erase(std::remove_if(list.begin(), list.end(), [&](int64_t m) { return m > max_m; }), list.end());
  std::vector<int64_t> between;  // rounded geometric midpoints of neighbours that are not listed themselves
  for (size_t i = 0; i + 1 < list.size(); ++i) {
    const auto mid = int64_t(std::llround(std::sqrt(double(list[i]) * double(list[i + 1]))));
    if (!std::binary_search(list.begin(), list.end(), mid)) between.push_back(mid);
  }
  const std::vector<int64_t> on = spread(list, 8), off = spread(between, 8);
  std::vector<int64_t> ms;
  for (size_t i = 0; i < std::max(on.size(), off.size()); ++i) {
    if (i < on.size()) ms.push_back(on[i]);
    if (i < off.size()) ms.push_back(off[i]);
  }
  const int64_t mmax = *std::max_element(ms.begin(), ms.end());

  // Operands: 8 A and 8 D buffers for the largest M, one B, scales and epilogue operands big enough for every M.
  const Problem fp = make_problem({mmax, fam.n, fam.k, fam.lda, fam.ldb, fam.ldd, fam.flags});
  constexpr int kBuffers = 8;
  std::vector<DeviceBuffer> as, ds;
  for (int i = 0; i < kBuffers; ++i) {
    as.emplace_back(size_t(mmax) * size_t(fp.lda) * dtype_bytes(fp.a));
    ds.emplace_back(size_t(mmax) * size_t(fp.ldd) * dtype_bytes(fp.d));
    DGT_CHECK_CUDA(cudaMemset(as.back().get(), 0, as.back().bytes()));
  }
  DeviceBuffer b(size_t(fp.n) * size_t(fp.ldb) * dtype_bytes(fp.b));
  DGT_CHECK_CUDA(cudaMemset(b.get(), 0, b.bytes()));
  const ScaleLayout sl = fp.scales();
  DeviceBuffer sa(size_t(std::max<int64_t>(sl.a_elems, 4) + 64) * 4), sb(size_t(std::max<int64_t>(sl.b_elems, 4) + 64) * 4);
  DGT_CHECK_CUDA(cudaMemset(sa.get(), 0, sa.bytes()));
  DGT_CHECK_CUDA(cudaMemset(sb.get(), 0, sb.bytes()));
  DeviceBuffer bias(size_t(fp.n) * 2 + 16), scale_d(16);
  DGT_CHECK_CUDA(cudaMemset(bias.get(), 0, bias.bytes()));
  DGT_CHECK_CUDA(cudaMemset(scale_d.get(), 0, scale_d.bytes()));
  GemmRunOptions ro = run_options_of(fp);
  if (fp.bias == Bias::kBF16) ro.bias = bias.get();
  if (fp.d == DType::kE4M3) ro.scale_d = scale_d.as<float>();
  cudaStream_t stream = nullptr;
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto call = [&](size_t i) {
    const int64_t m = ms[i % ms.size()];
    gemm.run(as[i % kBuffers].get(), b.get(), ds[i % kBuffers].get(), m, fam.n, fam.k, fam.lda, fam.ldb, fam.ldd,
             sa.as<float>(), sb.as<float>(), stream, ro);
  };

  // First calls of the off-list M: resolved from the warmed family's memory.
  std::vector<double> first_off;
  for (size_t i = 0; i < ms.size(); ++i) {
    const bool is_off = std::find(off.begin(), off.end(), ms[i]) != off.end();
    const auto t0 = Clock::now();
    call(i);
    if (is_off) first_off.push_back(us_since(t0));
  }
  DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
  const GemmStats after_first = gemm.stats();
  for (size_t i = 0; i < ms.size() * kBuffers; ++i) call(i);  // every (M, buffer) once: tensor-map caches filled
  DGT_CHECK_CUDA(cudaStreamSynchronize(stream));

  // The floor: bare launches of the same kernels with arguments prepared before the loop.
  struct Prepared {
    const GemmEntry* e;
    jit::GemmLaunchPlan::Args args;
    jit::GemmOperands ops;
    bool lt;
  };
  std::vector<Prepared> prep;  // prep[i % prep.size()] launches what call(i) launches (same M and buffers)
  for (size_t j = 0; j < ms.size() * kBuffers; ++j) {
    const ShapeKey key{ms[j % ms.size()], fam.n, fam.k, fam.lda, fam.ldb, fam.ldd, fam.flags};
    Prepared p{&GemmAccess::entry(gemm, key), {}, {}, false};
    p.ops = jit::GemmOperands{as[j % kBuffers].get(), b.get(), ds[j % kBuffers].get(), sa.as<float>(),
                              sb.as<float>(), ro.bias, ro.scale_d, nullptr};
    p.lt = p.e->lt && p.e->lt->fits(p.ops);
    if (!p.lt) p.e->plan->args(p.ops, p.args);
    prep.push_back(p);
  }

  // The serving loop and the floor, interleaved in blocks of 256 calls (the order of the two blocks alternating), so
  // that both see the same host conditions (clock, caches, the driver's queue): a block of Gemm::run calls, then the
  // same block of bare launches, each block after a stream synchronisation outside the timed calls.
  constexpr size_t kBlock = 256;
  std::vector<double> t_run(calls), t_floor(calls), t_floor_kernel, t_floor_lt;
  auto run_block = [&](size_t i0, size_t i1) {
    DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
    for (size_t i = i0; i < i1; ++i) {
      const auto t0 = Clock::now();
      call(i);
      t_run[i] = us_since(t0);
    }
  };
  auto floor_block = [&](size_t i0, size_t i1) {
    DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
    for (size_t i = i0; i < i1; ++i) {
      const Prepared& p = prep[i % prep.size()];
      const auto t0 = Clock::now();
      if (p.lt)
        p.e->lt->launch(p.ops, stream);
      else
        p.e->plan->launch(p.args, stream);
      t_floor[i] = us_since(t0);
    }
  };
  for (size_t i0 = 0, block = 0; i0 < calls; i0 += kBlock, ++block) {
    const size_t i1 = std::min(calls, i0 + kBlock);
    if (block % 2 == 0) {
      run_block(i0, i1);
      floor_block(i0, i1);
    } else {
      floor_block(i0, i1);
      run_block(i0, i1);
    }
  }
  DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < calls; ++i) (prep[i % prep.size()].lt ? t_floor_lt : t_floor_kernel).push_back(t_floor[i]);

  // Where the rest goes: the lookup alone and the argument preparation alone (bulk-timed means; no launch).
  const size_t reps = std::min<size_t>(calls, 100000);
  auto t0 = Clock::now();
  size_t found = 0;
  for (size_t i = 0; i < reps; ++i)
    found += GemmAccess::find(gemm, {ms[i % ms.size()], fam.n, fam.k, fam.lda, fam.ldb, fam.ldd, fam.flags}) != nullptr;
  const double lookup_us = us_since(t0) / double(reps);
  size_t prepared = 0;
  jit::GemmLaunchPlan::Args scratch;
  t0 = Clock::now();
  for (size_t i = 0; i < reps; ++i) {
    const Prepared& p = prep[i % prep.size()];
    if (!p.lt) p.e->plan->args(p.ops, scratch), ++prepared;
  }
  const double args_us = prepared ? us_since(t0) / double(prepared) : 0;
  std::vector<double> clock_cost(10000);
  for (double& c : clock_cost) {
    const auto a = Clock::now();
    c = us_since(a);
  }

  // First calls of fresh M after warm-up (none warmed, none called yet): what a serving process pays once per new M,
  // split by what the call resolved to (dgtune's kernel, or cuBLASLt after its heuristic query for that M).
  std::vector<int64_t> taken = warm_m_values({}, list);
  taken.insert(taken.end(), ms.begin(), ms.end());
  std::sort(taken.begin(), taken.end());
  const std::vector<int64_t> fresh = fresh_m(first_calls, mmax, taken);
  std::vector<double> fc_kernel, fc_lt;
  nlohmann::json fresh_json = nlohmann::json::array();
  const GemmStats before_fresh = gemm.stats();
  for (size_t i = 0; i < fresh.size(); ++i) {
    const int64_t m = fresh[i];
    DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
    const auto t0 = Clock::now();
    gemm.run(as[i % kBuffers].get(), b.get(), ds[i % kBuffers].get(), m, fam.n, fam.k, fam.lda, fam.ldb, fam.ldd,
             sa.as<float>(), sb.as<float>(), stream, ro);
    const double us = us_since(t0);
    const GemmChoice c = gemm.choose(m, fam.n, fam.k, fam.lda, fam.ldb, fam.ldd, ro);
    (c.backend == "cublaslt" ? fc_lt : fc_kernel).push_back(us);
    fresh_json.push_back(
        {{"m", m}, {"us", us}, {"backend", c.backend}, {"source", c.source}, {"cublaslt", c.cublaslt_algo}});
  }
  DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
  const GemmStats after_fresh = gemm.stats();

  // Per-backend view of the serving loop.
  std::vector<double> run_kernel, run_lt;
  for (size_t i = 0; i < calls; ++i) (prep[i % prep.size()].lt ? run_lt : run_kernel).push_back(t_run[i]);
  nlohmann::json ms_json = nlohmann::json::array();
  for (int64_t m : ms) {
    const GemmChoice c = gemm.choose(m, fam.n, fam.k, fam.lda, fam.ldb, fam.ldd, ro);
    ms_json.push_back({{"m", m},
                       {"listed", std::binary_search(list.begin(), list.end(), m)},
                       {"source", c.source},
                       {"backend", c.backend},
                       {"config", c.config_key}});
  }
  const GemmStats st = gemm.stats();
  DeviceInfo dev = open_device(0);
  nlohmann::json doc = {
      {"tool", "dgtune_host_cost"},
      {"device", dev.name},
      {"kernel_hash", current_software_env(dev).kernel_hash},
      {"db", db},
      {"shapes", shapes},
      {"family", make_problem({1, fam.n, fam.k, fam.lda, fam.ldb, fam.ldd, fam.flags}).key()},
      {"calls", calls},
      {"buffers", kBuffers},
      {"m", ms_json},
      {"warmup", {{"seconds", warm.seconds}, {"families", warm.families}, {"shapes", warm.shapes},
                  {"kernels", warm.kernels}, {"nvrtc_compiles", warm.nvrtc_compiles}}},
      {"first_call_off_list", to_json(summarize(first_off))},
      {"first_call_fresh",
       {{"kernel", to_json(summarize(fc_kernel))},
        {"cublaslt", to_json(summarize(fc_lt))},
        {"nvrtc_compiles", after_fresh.nvrtc_compiles - before_fresh.nvrtc_compiles},
        {"db_reads", after_fresh.db_reads - before_fresh.db_reads},
        {"device_allocs", after_fresh.device_allocs - before_fresh.device_allocs},
        {"calls", fresh_json}}},
      {"run", to_json(summarize(t_run))},
      {"run_dgtune_backend", to_json(summarize(run_kernel))},
      {"run_cublaslt_backend", to_json(summarize(run_lt))},
      {"floor", to_json(summarize(t_floor))},
      {"floor_cuLaunchKernelEx", to_json(summarize(t_floor_kernel))},
      {"floor_cublasLtMatmul", to_json(summarize(t_floor_lt))},
      {"lookup_mean_us", lookup_us},
      {"args_mean_us", args_us},
      {"clock_read_p50_us", summarize(clock_cost).p50},
      {"stats_after_warmup_first_calls",
       {{"nvrtc_compiles", after_first.nvrtc_compiles}, {"db_reads", after_first.db_reads},
        {"device_allocs", after_first.device_allocs}}},
      {"stats_end",
       {{"nvrtc_compiles", st.nvrtc_compiles}, {"cache_loads", st.cache_loads}, {"bundle_loads", st.bundle_loads},
        {"db_reads", st.db_reads},
        {"device_allocs", st.device_allocs}, {"resolved", st.resolved}, {"capture_fallbacks", st.capture_fallbacks}}},
  };
  (void)found;
  fmt::print("family {}  M: {}\n", doc["family"].get<std::string>(), fmt::join(ms, " "));
  fmt::print("warm-up: {:.2f} s, {} shapes, {} kernels, {} NVRTC compiles, {} modules from a kernel bundle\n",
             warm.seconds, warm.shapes, warm.kernels, warm.nvrtc_compiles, st.bundle_loads);
  auto row = [](const char* what, const Summary& s) {
    fmt::print("{:<34} p50 {:6.2f} us  p99 {:6.2f} us  mean {:6.2f} us  (n = {})\n", what, s.p50, s.p99, s.mean, s.n);
  };
  row("Gemm::run", summarize(t_run));
  row("  dgtune backend", summarize(run_kernel));
  row("  cuBLASLt backend", summarize(run_lt));
  row("floor (bare launches)", summarize(t_floor));
  row("  cuLaunchKernelEx", summarize(t_floor_kernel));
  row("  cublasLtMatmul", summarize(t_floor_lt));
  row("first call of an off-list M", summarize(first_off));
  row("first call, fresh M: kernel", summarize(fc_kernel));
  row("first call, fresh M: cuBLASLt", summarize(fc_lt));
  fmt::print("during the fresh first calls: {} NVRTC compiles, {} DB reads, {} device allocations\n",
             after_fresh.nvrtc_compiles - before_fresh.nvrtc_compiles,
             after_fresh.db_reads - before_fresh.db_reads, after_fresh.device_allocs - before_fresh.device_allocs);
  fmt::print("lookup {:.3f} us, argument preparation {:.3f} us (means); clock read {:.3f} us\n", lookup_us, args_us,
             summarize(clock_cost).p50);
  if (!out_path.empty()) std::ofstream(out_path) << doc.dump(1) << "\n";
  DGT_CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace
}  // namespace dgt

int main(int argc, char** argv) {
  CLI::App app{"dgtune_host_cost: host cost per dgt::Gemm::run call in a serving loop (docs/loader.md \"Serving\")"};
  std::string db, shapes, out;
  size_t family = 0, calls = 100000, first_calls = 64;
  int64_t max_m = 4096;
  app.add_option("--db", db, "tuning DB")->required();
  app.add_option("--shapes", shapes, "shapes file of the model's problems at their M (warmed up)")->required();
  app.add_option("--family", family, "index of the problem family to call (order of first appearance)");
  app.add_option("--calls", calls, "timed calls")->check(CLI::Range(size_t(1000), size_t(10000000)));
  app.add_option("--max-m", max_m, "largest M called")->check(CLI::PositiveNumber);
  app.add_option("--first-calls", first_calls, "fresh M whose first call is timed after the loop")
      ->check(CLI::Range(size_t(0), size_t(4096)));
  app.add_option("--out", out, "write the JSON document here");
  CLI11_PARSE(app, argc, argv);
  try {
    return dgt::run(db, shapes, family, calls, max_m, first_calls, out);
  } catch (const std::exception& e) {
    fmt::print(stderr, "dgtune_host_cost: {}\n", e.what());
    return 1;
  }
}
