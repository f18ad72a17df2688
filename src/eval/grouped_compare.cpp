#include "eval/grouped_compare.hpp"

#include "eval/grouped_compare_tables.hpp"

#include <cuda_runtime_api.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/device_sides.hpp"
#include "bench/group_loop.hpp"
#include "bench/grouped_data.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "device/device_info.hpp"
#include "device/stream.hpp"
#include "jit/cubin_cache.hpp"
#include "launch/grouped_kernel.hpp"
#include "launch/kernel_cache.hpp"
#include "launch/util_kernels.hpp"
#include "space/cost_model.hpp"
#include "space/grouped_rules.hpp"
#include "stats/stats.hpp"

namespace dgt {

std::vector<report::Table> run_grouped_compare(const GroupedCompareOptions& o) {
  for (const GroupedProblem& g : o.problems) {
    if (const std::string v = grouped_config_violation(o.config, g); !v.empty())
      DGT_THROW(ErrorKind::kUsage, "--config {} cannot run {}: {}", o.config.key(), g.label(), v);
    if (o.vs_config)
      if (const std::string v = grouped_config_violation(*o.vs_config, g); !v.empty())
        DGT_THROW(ErrorKind::kUsage, "--vs-config {} cannot run {}: {}", o.vs_config->key(), g.label(), v);
  }
  const DeviceInfo device = open_sm90_device(o.device);
  const CudaStream owned_stream;
  const cudaStream_t s = owned_stream.get();
  const jit::CubinCache cubins(usable_cache_dir(o.cache_dir));
  const UtilKernels util(cubins, device.sm_count);
  KernelCache kernels(cubins, device.sm_count);
  stats::PairedOptions popts;
  popts.margin = o.stats.margin_pct / 100;
  popts.method = o.stats.interval == "wilcoxon" ? stats::IntervalMethod::kWilcoxon : stats::IntervalMethod::kSign;

  std::vector<GroupedCompareShape> shapes;
  for (const GroupedProblem& g : o.problems) {
    const KernelSpec spec = KernelSpec::of(o.config, g.dense_view());
    const std::shared_ptr<jit::GroupedGemmKernel> grouped_kernel = kernels.get_grouped(spec, g.kind);
    const jit::GroupedGemmKernel& kernel = *grouped_kernel;
    // The second grouped config (grouped-vs), compiled and loaded before the rounds like every other side.
    std::shared_ptr<jit::GroupedGemmKernel> vs_kernel;
    if (o.vs_config) vs_kernel = kernels.get_grouped(KernelSpec::of(*o.vs_config, g.dense_view()), g.kind);
    GroupedData data(util, g, o.seed, s);
    const jit::GroupedOperands ops = data.operands();
    CublasLtGroupLoop loop(g, ops, s);
    // The dense side: the same FLOPs as one dense GEMM, M = sum of the real rows, on A's first rows and group 0's B,
    // writing D; the grouped scale arrays hold at least as many floats as the dense layout reads (the values only
    // need to be finite: this side is timed, not verified).
    Problem dense = g.dense_view();
    dense.m = g.real_rows();
    const KernelConfig dense_config = o.dense_config ? *o.dense_config : default_config(dense);
    const std::shared_ptr<jit::GemmKernel> dense_kernel = kernels.get(KernelSpec::of(dense_config, dense));
    const jit::GemmWorkspace dense_ws = kernels.dedicated_workspace(*dense_kernel, dense);
    jit::GemmOperands dense_ops;
    dense_ops.a = ops.a;
    dense_ops.b = ops.b;
    dense_ops.d = ops.d;
    dense_ops.scale_a = ops.scale_a;
    dense_ops.scale_b = ops.scale_b;

    const jit::GroupedGemmKernel* kp = &kernel;
    const jit::GemmKernel* dp = dense_kernel.get();
    const jit::GemmWorkspace* wp = &dense_ws;
    std::vector<Side> sides;
    sides.push_back({"grouped", [kp, &g, ops](cudaStream_t st) { kp->launch(g, ops, st); }});
    Side loop_side = loop.side("cublaslt-loop");
    // A group run with its count rounded up writes padding rows, which the sentinel check would (rightly) reject.
    loop_side.check_output = loop.padded_groups() == 0;
    sides.push_back(std::move(loop_side));
    sides.push_back({"dense", [dp, &dense, dense_ops, wp](cudaStream_t st) { dp->launch(dense, dense_ops, st, wp); },
                     /*check_output=*/false});
    // grouped-vs writes the same D as the grouped side: the check below resets D to the sentinel before it runs each
    // checked side alone, so each config is verified on its own output, and both configs run on the same addresses.
    if (vs_kernel) {
      const jit::GroupedGemmKernel* vp = vs_kernel.get();
      sides.push_back({kGroupedVsLabel, [vp, &g, ops](cudaStream_t st) { vp->launch(g, ops, st); }});
    }
    const OutputCheck check{[&](cudaStream_t st) { data.reset_d(st); },
                            [&](cudaStream_t st) { return data.verify(util, st); }};
    const RoundsResult r = measure_sides(util, device, o.protocol, s, sides, &check);

    if (r.sides[kGroupedSideGrouped].check && !r.sides[kGroupedSideGrouped].check->ok)
      spdlog::error("{}: the grouped kernel's output is wrong (see the check column)", g.label());
    if (vs_kernel && r.sides[kGroupedSideVs].check && !r.sides[kGroupedSideVs].check->ok)
      spdlog::error("{}: the grouped kernel of --vs-config {} gives a wrong output (see the vs_check column)", g.label(),
                    o.vs_config->key());
    GroupedCompareShape c;
    c.problem = g;
    c.config_key = o.config.key();
    c.dense_config_key = dense_config.key();
    if (o.vs_config) c.vs_config_key = o.vs_config->key();
    c.result = r;
    c.protocol_name = o.protocol.name();
    c.loop_calls = loop.calls();
    c.loop_padded = loop.padded_groups();
    c.loop_algos = loop.describe();
    shapes.push_back(std::move(c));
  }
  return grouped_compare_tables(
      shapes, popts,
      fmt::format("dgtune compare --grouped on {} ({}): the grouped kernel against one cuBLASLt call per group (loop) "
                  "and the dgtune dense kernel over the total M (dense){}; x = other us / grouped us",
                  device.name, o.protocol.name(),
                  o.vs_config ? fmt::format(", and the grouped kernel of {} (grouped-vs)", o.vs_config->key()) : ""));
}

}  // namespace dgt
