#include "grouped_ab.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <memory>

#include "bench/device_sides.hpp"
#include "bench/grouped_data.hpp"
#include "bench/measure_protocol.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/thread_pool.hpp"
#include "device/device_info.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_cache.hpp"
#include "jit/module.hpp"
#include "ab_report.hpp"
#include "kernel_tree.hpp"
#include "launch/grouped_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"
#include "problem/grouped_problem.hpp"
#include "space/grouped_rules.hpp"
#include "stats/stats.hpp"

namespace dgt {
namespace {

/// D of the last launch, copied to the host (after a sync): what the bitwise comparison reads.
std::vector<uint8_t> read_d(const GroupedData& data, cudaStream_t s) {
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<uint8_t> out(size_t(data.problem().total_rows() * data.problem().n * 2));
  DGT_CHECK_CUDA(cudaMemcpy(out.data(), data.d(), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace

int run_grouped_ab(const GroupedAbArgs& a) {
  if (a.config.empty()) DGT_THROW(ErrorKind::kUsage, "--grouped needs --config (the grouped config to time)");
  const KernelConfig config = KernelConfig::parse_key(a.config);
  std::vector<GroupedProblem> problems;
  for (const std::string& text : a.problems) {
    problems.push_back(parse_grouped_problem(text, "--grouped"));
    if (const std::string v = grouped_config_violation(config, problems.back()); !v.empty())
      DGT_THROW(ErrorKind::kUsage, "--config {} cannot run {}: {}", config.key(), problems.back().label(), v);
  }
  // The sides: "old", every --variant, then "new" (this build's embedded sources, null tree).
  std::vector<std::string> labels = {"old"};
  std::vector<std::unique_ptr<KernelTree>> trees;
  trees.push_back(std::make_unique<KernelTree>(a.old_kernels));
  for (const std::string& v : a.variants) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      DGT_THROW(ErrorKind::kUsage, "--variant {}: expected NAME=DIR (a kernels/ tree)", v);
    const std::string name = v.substr(0, eq);
    if (name == "old" || name == "new") DGT_THROW(ErrorKind::kUsage, "--variant {}: the name {} is taken", v, name);
    labels.push_back(name);
    trees.push_back(std::make_unique<KernelTree>(v.substr(eq + 1)));
  }
  labels.push_back("new");
  trees.push_back(nullptr);
  const size_t num_sides = labels.size();
  const DeviceInfo dev = open_device(0);
  DGT_CHECK_CUDA(cudaSetDevice(dev.ordinal));
  MeasureProtocol protocol = MeasureProtocol::of(parse_protocol_kind(a.protocol));
  protocol.rounds = a.rounds;
  const jit::CubinCache cubins(usable_cache_dir(""));
  const UtilKernels util(cubins, dev.sm_count);
  cudaStream_t stream = nullptr;
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Every (problem, side) kernel compiled up front on all cores (the old tree is not in the cubin cache).
  ThreadPool pool(0);
  std::vector<std::future<jit::CompiledKernel>> futures;
  for (const GroupedProblem& g : problems) {
    const KernelSpec spec = KernelSpec::of(config, g.dense_view());
    const auto gen = std::make_shared<const jit::GeneratedKernel>(
        jit::generate_grouped_gemm(spec, g.kind, KernelCache::require_legal(spec)));
    for (size_t side = 0; side < trees.size(); ++side) {
      const jit::CompileOptions options = trees[side] == nullptr ? a.new_edits : jit::CompileOptions{};  // new side only
      futures.push_back(pool.submit([gen, &cubins, t = trees[side].get(), options] {
        // The cubin cache holds the build's own code without edits; anything else is compiled here.
        if (!t && !options.any()) return cubins.get_or_compile(*gen);
        return jit::compile_with_sources(gen->source, gen->program_name, gen->name_expression,
                                         t ? t->sources : jit::embedded_sources(), options);
      }));
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  int failures = 0;
  std::vector<double> speedups;
  for (size_t i = 0; i < problems.size(); ++i) {
    const GroupedProblem& g = problems[i];
    const KernelSpec spec = KernelSpec::of(config, g.dense_view());
    const ResourceReport res = KernelCache::require_legal(spec);
    std::vector<jit::CompiledKernel> codes;
    for (size_t j = 0; j < num_sides; ++j) codes.push_back(futures[num_sides * i + j].get());
    std::vector<std::shared_ptr<jit::GroupedGemmKernel>> kernels;
    for (const jit::CompiledKernel& c : codes)
      kernels.push_back(std::make_shared<jit::GroupedGemmKernel>(spec, g.kind, jit::load_kernel(c, res.smem.total),
                                                                 dev.sm_count));
    const GroupedData data(util, g, 20261203 + i, stream);
    const jit::GroupedOperands ops = data.operands();
    std::vector<Side> sides;
    for (size_t j = 0; j < num_sides; ++j)
      sides.push_back({labels[j], [&, j](cudaStream_t s) { kernels[j]->launch(g, ops, s); }});
    const OutputCheck check{[&](cudaStream_t s) { data.reset_d(s); },
                            [&](cudaStream_t s) { return data.verify(util, s); }};
    const RoundsResult r = measure_sides(util, dev, protocol, stream, sides, &check);
    std::vector<std::vector<uint8_t>> outs;
    for (const auto& k : kernels) {
      data.reset_d(stream);
      k->launch(g, ops, stream);
      outs.push_back(read_d(data, stream));
    }
    const bool bitwise = outs.back() == outs.front();
    std::vector<int> registers;
    for (const jit::CompiledKernel& c : codes) registers.push_back(c.registers);
    const VariantReport variants = variant_report(r, labels, registers, outs);
    const PairedTimes pt = r.paired(int(num_sides) - 1, 0);
    const stats::PairedComparison cmp = stats::compare_paired(pt.x_us, pt.y_us);
    speedups.push_back(cmp.speedup_x_over_y());
    nlohmann::json row = {{"problem", g.label()},
                          {"config", config.key()},
                          {"new_over_old_speedup", cmp.speedup_x_over_y()},
                          {"speedup_lo", cmp.speedup_x_over_y_lo()},
                          {"speedup_hi", cmp.speedup_x_over_y_hi()},
                          {"verdict", stats::to_string(cmp.verdict)},
                          {"bitwise_equal_outputs", bitwise},
                          {"registers_old", codes.front().registers},
                          {"registers_new", codes.back().registers},
                          {"spill_bytes_new", codes.back().spill_bytes},
                          {"variants", variants.json},
                          {"rounds", nlohmann::json::parse(r.to_json())}};
    std::string line = fmt::format("{:<60}", g.label());
    for (const SideSummary& s : r.sides) {
      const bool ok = !s.check || s.check->ok;
      failures += !ok;
      line += fmt::format(" {} {:8.2f} us {:4.0f} MHz{}", s.label, s.all.median, s.median_clock_mhz,
                          ok ? "" : " (VERIFY FAILED)");
      row[s.label + "_median_us"] = s.all.median;
      row[s.label + "_median_clock_mhz"] = s.median_clock_mhz;
      row[s.label + "_verify_ok"] = ok;
      row[s.label + "_tflops"] = g.flops() / (s.all.median * 1e-6) / 1e12;
    }
    print_ab_line(line, cmp, bitwise, variants.text);
    rows.push_back(row);
  }
  const double mean = geomean(speedups);
  fmt::print("{} grouped problems: new/old speedup geomean {:.4f}x ({}, {} rounds)\n", speedups.size(), mean,
             protocol.name(), a.rounds);
  if (!a.out.empty()) {
    const nlohmann::json doc = {{"tool", "dgtune_kernel_ab --grouped"}, {"device", dev.name},
                                {"old_kernels", a.old_kernels},         {"protocol", protocol.name()},
                                {"rounds", a.rounds},                   {"new_over_old_geomean", mean},
                                {"rows", rows}};
    std::ofstream(a.out) << doc.dump(1) << "\n";
  }
  DGT_CHECK_CUDA(cudaStreamDestroy(stream));
  return failures ? 1 : 0;
}

}  // namespace dgt
