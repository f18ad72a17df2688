// dgtune trace: where one launch of one config spends its time, CTA by CTA. The kernel is compiled with
// DGT_TRACE (kernels/gemm/trace.cuh): each CTA stamps the points of its first work unit (start, setup done,
// first TMA issued, first stage full, mainloop done, split-K reduced, stores issued, end) with %globaltimer
// and %clock64. Warm-up launches first (the first one verified), then one traced launch, after an L2 flush
// (cold, the cold-l2 protocol's state) or right after the warm-up (warm).
#include <algorithm>
#include <array>
#include <cuda_runtime_api.h>

#include "bench/problem_data.hpp"
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "device/buffer.hpp"
#include "device/device_info.hpp"
#include "jit/codegen.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/gemm_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"

namespace dgt::cli {

namespace {
// kernels/gemm/trace.cuh: TracePoint order, kTracePoints, kTraceMaxCtas, two words per point.
constexpr int kPoints = 12;
constexpr int kMaxCtas = 1024;
constexpr std::array<const char*, kPoints> kPointNames = {
    "start", "setup", "first TMA issued", "first stage full", "mainloop done", "split-K reduced", "stores issued", "end",
    "producer registers released", "producer first unit computed", "producer first empty slot", "consumer registers granted"};

struct Args {
  ProblemOptions problem;
  std::string config;
  DeviceOption device;
  CacheDirOption cache;
  std::string l2 = "cold";
  int warmup = 3;
  uint64_t seed = 1;
  FormatOption format;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

report::Cell us(double ns) { return report::Number{ns / 1000.0, 2}; }

int run(const Args& a) {
  const Problem p = a.problem.problem();
  const KernelConfig c = checked_config("--config", a.config, {{"", p}});
  const DeviceInfo dev = open_sm90_device(a.device.ordinal);
  const jit::CubinCache cache(a.cache.dir.empty() ? default_cache_dir() : a.cache.dir);
  const UtilKernels util(cache, dev.sm_count);
  cudaStream_t stream = nullptr;
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // A cache of its own holds only the traced build, so its spec key cannot meet the plain kernel's.
  const KernelSpec spec = KernelSpec::of(c, p);
  KernelCache kernels(cache, dev.sm_count);
  KernelCache::require_legal(spec);
  const auto kernel_ptr = kernels.get(spec, cache.get_or_compile(jit::generate_gemm(spec, /*trace=*/true)));
  const jit::GemmKernel& kernel = *kernel_ptr;
  size_t trace_bytes = 0;
  void* trace = reinterpret_cast<void*>(kernel.kernel().module->global("dgt_trace", &trace_bytes));
  if (trace_bytes != size_t(kMaxCtas) * kPoints * 2 * sizeof(unsigned long long))
    DGT_THROW(ErrorKind::kInternal, "dgt_trace holds {} bytes; this build expects {} CTAs x {} points x 16 bytes",
              trace_bytes, kMaxCtas, kPoints);
  const int grid = kernel.grid_size(p);

  ProblemData data(p, util, a.seed, stream);
  const jit::GemmWorkspace ws = kernels.workspace(kernel, p);
  const int64_t flush_bytes = std::max<int64_t>(2 * dev.l2_bytes, int64_t{64} << 20) / 16 * 16;
  DeviceBuffer flush{static_cast<size_t>(flush_bytes)}, sink{16};

  data.poison_output(stream);
  kernel.launch(p, data.operands(), stream, &ws);
  DGT_CHECK_CUDA(cudaGetLastError());
  const Verification v = data.verify(stream);
  for (int i = 1; i < a.warmup; ++i) kernel.launch(p, data.operands(), stream, &ws);
  DGT_CHECK_CUDA(cudaMemsetAsync(trace, 0, trace_bytes, stream));
  if (a.l2 == "cold") util.flush_l2(flush.get(), flush_bytes, sink.get(), 7, stream);
  kernel.launch(p, data.operands(), stream, &ws);
  DGT_CHECK_CUDA(cudaGetLastError());
  std::vector<unsigned long long> t(trace_bytes / sizeof(unsigned long long));
  DGT_CHECK_CUDA(cudaMemcpyAsync(t.data(), trace, trace_bytes, cudaMemcpyDeviceToHost, stream));
  DGT_CHECK_CUDA(cudaStreamSynchronize(stream));
  DGT_CHECK_CUDA(cudaStreamDestroy(stream));

  const int ctas = std::min(grid, kMaxCtas);
  auto ns = [&](int cta, int point) { return t[(size_t(cta) * kPoints + point) * 2]; };
  auto cyc = [&](int cta, int point) { return t[(size_t(cta) * kPoints + point) * 2 + 1]; };
  unsigned long long t0 = ~0ull, t_end = 0;
  for (int b = 0; b < ctas; ++b)
    if (ns(b, 0)) t0 = std::min(t0, ns(b, 0)), t_end = std::max(t_end, ns(b, 7));
  if (t0 == ~0ull) DGT_THROW(ErrorKind::kInternal, "the traced launch recorded no CTA");

  // When each point was reached, from the first CTA's start (globaltimer, all SMs on one clock).
  report::Table when;
  when.title = fmt::format("dgtune trace {} {} on {} ({} L2, grid {} CTAs{}, output {})", p.label(), c.key(), dev.name,
                           a.l2, grid, grid > kMaxCtas ? fmt::format(", first {} traced", kMaxCtas) : "",
                           v.ok ? "verified" : "WRONG");
  when.columns = {{"point", "point", false}, {"ctas", "CTAs"}, {"min_us", "min us"}, {"median_us", "median us"},
                  {"max_us", "max us"}};
  for (int i = 0; i < kPoints; ++i) {
    std::vector<double> v_ns;
    for (int b = 0; b < ctas; ++b)
      if (ns(b, i)) v_ns.push_back(double(ns(b, i) - t0));
    if (v_ns.empty()) {
      when.rows.push_back({std::string(kPointNames[i]), int64_t{0}, {}, {}, {}});
      continue;
    }
    when.rows.push_back({std::string(kPointNames[i]), int64_t(v_ns.size()), us(*std::min_element(v_ns.begin(), v_ns.end())),
                         us(median(v_ns)), us(*std::max_element(v_ns.begin(), v_ns.end()))});
  }

  // Phases inside each CTA from its own cycle counter (finer than globaltimer), in cycles and in us at the
  // SM clock the CTA ran at (its cycles over its nanoseconds from start to end).
  struct Phase {
    const char* name;
    int from, to;
  };
  // The producer issues the first unit's first k-blocks before its setmaxnreg.dec (kernels/gemm/fp8_gemm.cuh),
  // so the finer start points run: setup, first unit, first empty slot (no wait), first TMA issued, registers.
  const Phase phases[] = {{"setup (barriers, sync)", 0, 1},       {"setup to first TMA issue", 1, 2},
                          {"  setup to first unit computed", 1, 9}, {"  to first empty slot", 9, 10},
                          {"  to first TMA issued (early k-blocks)", 10, 2},
                          {"  to producer registers released", 2, 8},
                          {"setup to consumer registers granted", 1, 11},
                          {"first TMA issue to stage full", 2, 3}, {"mainloop (first full to last k-block)", 3, 4},
                          {"split-K reduction", 4, 5},            {"epilogue (to stores issued)", 5, 6},
                          {"stores issued to end (the CTA's later units too)", 6, 7},
                          {"whole CTA (start to end)", 0, 7}};
  std::vector<double> ghz;
  for (int b = 0; b < ctas; ++b)
    if (ns(b, 0) && ns(b, 7) > ns(b, 0)) ghz.push_back(double(cyc(b, 7) - cyc(b, 0)) / double(ns(b, 7) - ns(b, 0)));
  const double clock_ghz = median(ghz);
  report::Table phase;
  phase.title = fmt::format("phases per CTA (%clock64; us at the median SM clock of the CTAs, {:.0f} MHz); kernel span "
                            "{:.2f} us from the first CTA start to the last CTA end",
                            clock_ghz * 1000, double(t_end - t0) / 1000);
  phase.columns = {{"phase", "phase", false}, {"ctas", "CTAs"}, {"median_cycles", "median cycles"},
                   {"max_cycles", "max cycles"}, {"median_us", "median us"}, {"max_us", "max us"}};
  for (const Phase& ph : phases) {
    std::vector<double> d;
    for (int b = 0; b < ctas; ++b) {
      int from = ph.from;
      // A CTA that is not the last split records no reduction point's successors: skip what it lacks;
      // without split-K "reduced" is never recorded, so the epilogue starts at "mainloop done".
      if (from == 5 && !cyc(b, 5)) from = 4;
      if (!cyc(b, from) || !cyc(b, ph.to)) continue;
      // Points of one CTA come from one SM's clock; a pair stamped by two threads can be out of order (a
      // producer point after a consumer one): such a negative phase is left out, not wrapped.
      const int64_t cycles = int64_t(cyc(b, ph.to)) - int64_t(cyc(b, from));
      if (cycles < 0) continue;
      d.push_back(double(cycles));
    }
    if (d.empty()) {
      phase.rows.push_back({std::string(ph.name), int64_t{0}, {}, {}, {}, {}});
      continue;
    }
    const double med = median(d), mx = *std::max_element(d.begin(), d.end());
    phase.rows.push_back({std::string(ph.name), int64_t(d.size()), int64_t(med), int64_t(mx),
                          clock_ghz > 0 ? report::Cell(us(med / clock_ghz)) : report::Cell{},
                          clock_ghz > 0 ? report::Cell(us(mx / clock_ghz)) : report::Cell{}});
  }
  a.format.render(std::vector<report::Table>{when, phase});
  return v.ok ? 0 : 1;
}
}  // namespace

void add_trace(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(
      app, action, "trace",
      "where one launch of one config spends its time: per-CTA phase timestamps (kernel built with DGT_TRACE)", run);
  add_groups(cmd, a.problem);
  cmd.add_option("--config", a.config, "config key, e.g. 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1")->required();
  cmd.add_option("--l2", a.l2, "L2 state of the traced launch: cold (flushed first, as cold-l2) | warm")
      ->check(CLI::IsMember({"cold", "warm"}))
      ->capture_default_str();
  cmd.add_option("--warmup", a.warmup, "launches before the traced one (the first is verified)")
      ->transform(count(1, 1000))
      ->capture_default_str();
  cmd.add_option("--seed", a.seed, "input seed")->capture_default_str();
  add_groups(cmd, a.device, a.cache, a.format);
}

}  // namespace dgt::cli
