// dgtune_kernel_ab: a kernel change timed the way the brief asks for one: the same config compiled from the old
// kernels/ tree (--old-kernels, e.g. `git archive REV kernels | tar -x -C DIR`) and from this build's embedded sources,
// both loaded in one process and timed round-robin on the same buffers together with cuBLASLt (its heuristic's top
// algorithm with the same epilogue), under the interleaved engine (bench/device_sides.hpp: cold-l2-v2 or
// hot-graph-v1; every round runs every side, the order rotated, the SM clock read after every sample).
//
// Per shape of --shapes: the config is --config, else the shape's line of --configs, else the tuned winner the loader
// would run from --db (dgtune's own kernel), else dgt::default_config. Both kernels' outputs are verified against the reference after the rounds; the
// report gives each side's median, the paired new/old speedup with its 95% interval (stats::compare_paired, sign
// interval) and whether the two kernels' outputs are bitwise equal. Not a test: nothing passes or fails on time. Exit
// status 1 when an output fails verification, 2 on a usage or setup error.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/cublaslt_baseline.hpp"
#include "bench/device_sides.hpp"
#include "bench/problem_data.hpp"
#include "core/thread_pool.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "dgtune/gemm.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "launch/kernel_cache.hpp"
#include "loader/shape_key.hpp"
#include "problem/shapes_file.hpp"
#include "space/cost_model.hpp"
#include "stats/stats.hpp"
#include "ab_report.hpp"
#include "grouped_ab.hpp"
#include "kernel_tree.hpp"

namespace dgt {
namespace {

namespace fs = std::filesystem;


std::vector<uint8_t> read_output(const ProblemData& d, cudaStream_t s) {
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<uint8_t> out(d.output_bytes());
  DGT_CHECK_CUDA(cudaMemcpy(out.data(), d.output(), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

struct Args {
  std::string old_kernels, shapes, db, config, configs, protocol = "cold-l2", out;
  std::vector<std::string> variants;  ///< NAME=DIR: more kernels/ trees, each a side between "old" and "new"
  int rounds = 20;
  jit::CompileOptions new_edits;  ///< the post-compile edits of the new side (--ffma-interleave-new, --ffma-reuse-new)
};

int run(const Args& args) {
  // The kernel sides: "old", every --variant, then "new" (this build's embedded sources), each with a cache of its
  // own (the same config has the same module key in every tree).
  struct KernelSide {
    std::string label;
    std::unique_ptr<KernelTree> tree;  ///< null: the embedded sources
    std::unique_ptr<KernelCache> cache;
    jit::CompileOptions options{};
  };
  std::vector<KernelSide> ks;
  ks.push_back({"old", std::make_unique<KernelTree>(args.old_kernels), nullptr});
  for (const std::string& v : args.variants) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      DGT_THROW(ErrorKind::kUsage, "--variant {}: expected NAME=DIR (a kernels/ tree)", v);
    const std::string name = v.substr(0, eq);
    if (name == "old" || name == "new" || name == "cublaslt")
      DGT_THROW(ErrorKind::kUsage, "--variant {}: the name {} is taken", v, name);
    ks.push_back({name, std::make_unique<KernelTree>(v.substr(eq + 1)), nullptr});
  }
  ks.push_back({"new", nullptr, nullptr});
  ks.back().options = args.new_edits;
  const DeviceInfo dev = open_device(0);
  DGT_CHECK_CUDA(cudaSetDevice(dev.ordinal));
  MeasureProtocol protocol = MeasureProtocol::of(parse_protocol_kind(args.protocol));
  protocol.rounds = args.rounds;
  jit::CubinCache cubins(usable_cache_dir(""));
  UtilKernels util(cubins, dev.sm_count);
  for (KernelSide& k : ks) k.cache = std::make_unique<KernelCache>(cubins, dev.sm_count);
  std::unique_ptr<Gemm> tuned;
  if (!args.db.empty()) {
    GemmOptions o;
    o.db_path = args.db;
    o.cublaslt = false;  // the kernel's own winner, never a cuBLASLt dispatch
    tuned = std::make_unique<Gemm>(o);
  }
  CublasLtBaseline lt(1);
  cudaStream_t stream = nullptr;
  DGT_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  nlohmann::json rows = nlohmann::json::array();
  int failures = 0;
  std::vector<double> speedups;
  const std::vector<ShapeEntry> shapes = load_shapes_file(args.shapes);
  // --configs: one config key per line ('#' comments and blank lines skipped), the i-th for the i-th shape.
  std::vector<std::string> config_list;
  if (!args.configs.empty()) {
    std::ifstream in(args.configs);
    if (!in) DGT_THROW(ErrorKind::kUsage, "--configs {}: cannot open", args.configs);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') config_list.push_back(line);
    if (config_list.size() != shapes.size())
      DGT_THROW(ErrorKind::kUsage, "--configs {} has {} config keys, {} has {} shapes: one key per shape, in order",
                args.configs, config_list.size(), args.shapes, shapes.size());
  }
  // The config of shape i: --config, else its --configs line, else the DB's winner, else the default.
  auto config_of = [&](size_t i) -> std::pair<KernelConfig, std::string> {
    const Problem& p = shapes[i].problem;
    if (!args.config.empty()) return {KernelConfig::parse_key(args.config), "--config"};
    if (!config_list.empty()) return {KernelConfig::parse_key(config_list[i]), "--configs"};
    if (tuned) {
      const GemmChoice c = tuned->choose(p.m, p.n, p.k, p.lda, p.ldb, p.ldd, run_options_of(p));
      return {KernelConfig::parse_key(c.config_key), c.source};
    }
    return {default_config(p), "default"};
  };
  // Every (shape, side) kernel is compiled up front on all cores (independent NVRTC programs; the old sides' trees
  // are not in the cubin cache), so a GPU machine's time goes to the rounds rather than to one compile after another.
  ThreadPool pool(0);
  std::vector<std::vector<std::future<jit::CompiledKernel>>> codes(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const KernelSpec spec = KernelSpec::of(config_of(i).first, shapes[i].problem);
    try {
      KernelCache::require_legal(spec);
    } catch (const Error&) {
      continue;  // reported in the timing loop
    }
    const auto g = std::make_shared<const jit::GeneratedKernel>(jit::generate_gemm(spec));
    for (KernelSide& k : ks)
      codes[i].push_back(pool.submit([g, tree = k.tree.get(), options = k.options] {
        return jit::compile_with_sources(g->source, g->program_name, g->name_expression,
                                         tree ? tree->sources : jit::embedded_sources(), options);
      }));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem& p = shapes[i].problem;
    const auto [config, source] = config_of(i);
    const KernelSpec spec = KernelSpec::of(config, p);
    try {
      KernelCache::require_legal(spec);
    } catch (const Error& e) {
      fmt::print("{:<28} skipped: {}\n", p.label(), e.message());  // e.g. a config of an older kernel version
      rows.push_back({{"shape", p.label()}, {"config", config.key()}, {"skipped", e.message()}});
      continue;
    }
    struct Loaded {
      jit::CompiledKernel code;
      std::shared_ptr<jit::GemmKernel> kernel;
      jit::GemmWorkspace ws;
    };
    std::vector<Loaded> loaded;
    for (size_t j = 0; j < ks.size(); ++j) {
      Loaded l;
      l.code = codes[i][j].get();
      l.kernel = ks[j].cache->get(spec, l.code);
      l.ws = ks[j].cache->dedicated_workspace(*l.kernel, p);
      loaded.push_back(std::move(l));
    }

    ProblemData data(p, util, 20261203 + i, stream);
    const jit::GemmOperands ops = data.operands();
    CublasLtPlan plan(lt, data);
    std::vector<Side> sides;
    for (size_t j = 0; j < ks.size(); ++j)
      sides.push_back({ks[j].label, [&, j](cudaStream_t s) { loaded[j].kernel->launch(p, ops, s, &loaded[j].ws); }});
    if (plan.supported())
      sides.push_back({"cublaslt", [&](cudaStream_t s) {
                         if (plan.launch(0, s) != 0) DGT_THROW(ErrorKind::kCublas, "cuBLASLt refused {}", p.label());
                       }});
    const OutputCheck check{[&](cudaStream_t s) { data.poison_output(s); },
                            [&](cudaStream_t s) { return data.verify(s); }};
    const RoundsResult r = measure_sides(util, dev, protocol, stream, sides, &check);
    // Bitwise comparison of each kernel's output with the old one's (untimed, after the rounds).
    std::vector<std::vector<uint8_t>> outs;
    for (const Loaded& l : loaded) {
      data.poison_output(stream);
      l.kernel->launch(p, ops, stream, &l.ws);
      outs.push_back(read_output(data, stream));
    }
    const bool bitwise = outs.back() == outs.front();
    const int new_side = int(ks.size()) - 1;
    std::vector<std::string> labels;
    std::vector<int> registers;
    for (size_t j = 0; j < ks.size(); ++j) labels.push_back(ks[j].label), registers.push_back(loaded[j].code.registers);
    const VariantReport variants = variant_report(r, labels, registers, outs);

    const PairedTimes pt = r.paired(new_side, 0);
    const stats::PairedComparison cmp = stats::compare_paired(pt.x_us, pt.y_us);
    const double speedup = cmp.speedup_x_over_y();
    speedups.push_back(speedup);
    nlohmann::json row = {{"shape", p.label()},
                          {"problem", p.key()},
                          {"where", shapes[i].where()},
                          {"config", config.key()},
                          {"config_source", source},
                          {"new_over_old_speedup", speedup},
                          {"speedup_lo", cmp.speedup_x_over_y_lo()},
                          {"speedup_hi", cmp.speedup_x_over_y_hi()},
                          {"verdict", stats::to_string(cmp.verdict)},
                          {"bitwise_equal_outputs", bitwise},
                          {"registers_old", loaded.front().code.registers},
                          {"registers_new", loaded.back().code.registers},
                          {"spill_bytes_new", loaded.back().code.spill_bytes},
                          {"variants", variants.json},
                          {"rounds", nlohmann::json::parse(r.to_json())}};
    std::string line = fmt::format("{:<28} {:<52}", p.label(), config.key());
    for (const SideSummary& s : r.sides) {
      const bool ok = !s.check || s.check->ok;
      failures += !ok;
      line += fmt::format(" {} {:8.2f} us{}", s.label, s.all.median, ok ? "" : " (VERIFY FAILED)");
      row[s.label + "_median_us"] = s.all.median;
      row[s.label + "_median_clock_mhz"] = s.median_clock_mhz;
      row[s.label + "_verify_ok"] = ok;
    }
    print_ab_line(line, cmp, bitwise, variants.text);
    rows.push_back(row);
  }
  const double mean = geomean(speedups);
  fmt::print("{} shapes: new/old speedup geomean {:.4f}x ({}, {} rounds)\n", speedups.size(), mean,
             protocol.name(), args.rounds);
  if (!args.out.empty()) {
    const nlohmann::json doc = {{"tool", "dgtune_kernel_ab"},
                                {"device", dev.name},
                                {"old_kernels", args.old_kernels},
                                {"shapes", args.shapes},
                                {"protocol", protocol.name()},
                                {"rounds", args.rounds},
                                {"new_over_old_geomean", mean},
                                {"rows", rows}};
    std::ofstream(args.out) << doc.dump(1) << "\n";
  }
  DGT_CHECK_CUDA(cudaStreamDestroy(stream));
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace dgt

int main(int argc, char** argv) {
  CLI::App app{"dgtune_kernel_ab: one config compiled from two kernels/ trees, timed round-robin with cuBLASLt"};
  dgt::Args a;
  app.add_option("--old-kernels", a.old_kernels, "the old kernels/ directory (e.g. from git archive)")->required();
  std::vector<std::string> grouped;
  auto* shapes = app.add_option("--shapes", a.shapes, "shapes file");
  app.add_option("--grouped", grouped,
                 "a grouped problem (dgtune run --grouped's text form; repeatable): time the grouped kernel of --config "
                 "instead of the shapes")
      ->excludes(shapes);
  app.add_option("--db", a.db, "tuning DB: run each shape's tuned kernel config");
  app.add_option("--variant", a.variants, "NAME=DIR: another kernels/ tree timed as its own side (repeatable)");
  app.add_option("--config", a.config, "one config key for every shape (instead of the DB or the default)");
  app.add_option("--configs", a.configs, "a file of config keys, one per shape in the shapes file's order");
  app.add_option("--protocol", a.protocol, "cold-l2 or hot-graph")->check(CLI::IsMember({"cold-l2", "hot-graph"}));
  app.add_option("--rounds", a.rounds, "rounds of the engine")->check(CLI::Range(6, 1000));
  app.add_flag("--ffma-interleave-new", a.new_edits.ffma_interleave,
               "compile the new side with the FFMA interleaving edit of its machine code (off in dgtune; "
               "src/jit/ffma_interleave.hpp): with --old-kernels set to this build's kernels/, an A/B of the edit alone");
  app.add_flag("--ffma-reuse-new", a.new_edits.ffma_scale_reuse,
               "compile the new side with the FFMA scale-reuse edit (src/jit/ffma_interleave.hpp), an experiment");
  app.add_option("--out", a.out, "write the JSON document here");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!grouped.empty())
      return dgt::run_grouped_ab({a.old_kernels, a.variants, grouped, a.config, a.protocol, a.rounds, a.out, a.new_edits});
    if (a.shapes.empty()) DGT_THROW(dgt::ErrorKind::kUsage, "--shapes or --grouped is required");
    return dgt::run(a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "dgtune_kernel_ab: {}\n", e.what());
    return 2;
  }
}
