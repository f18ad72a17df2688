#include "eval/grouped_measure.hpp"

#include <spdlog/spdlog.h>

#include "bench/device_sides.hpp"
#include "bench/group_loop.hpp"
#include "bench/grouped_data.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "launch/environment.hpp"
#include "launch/grouped_kernel.hpp"
#include "space/cost_model.hpp"

namespace dgt {

GroupedMeasurer::GroupedMeasurer(int device, const std::string& cache_dir, MeasureProtocol protocol, uint64_t seed)
    : protocol_(std::move(protocol)), seed_(seed) {
  device_ = open_sm90_device(device);
  fingerprint_ = make_fingerprint(device_);
  cubins_ = std::make_unique<jit::CubinCache>(usable_cache_dir(cache_dir));
  util_ = std::make_unique<UtilKernels>(*cubins_, device_.sm_count);
  kernels_ = std::make_unique<KernelCache>(*cubins_, device_.sm_count);
  stream_ = std::make_unique<CudaStream>();
}

GroupedMeasurer::~GroupedMeasurer() {
  stream_.reset();
  kernels_.reset();
}

GroupedCompareShape GroupedMeasurer::measure(const GroupedProblem& g, const GroupedSides& o) {
  const cudaStream_t s = stream_->get();
  const UtilKernels& util = *util_;
  const std::shared_ptr<jit::GroupedGemmKernel> grouped_kernel =
      kernels_->get_grouped(KernelSpec::of(o.config, g.dense_view()), g.kind);
  // The second grouped config (grouped-vs), compiled and loaded before the rounds like every other side.
  std::shared_ptr<jit::GroupedGemmKernel> vs_kernel;
  if (o.vs_config) vs_kernel = kernels_->get_grouped(KernelSpec::of(*o.vs_config, g.dense_view()), g.kind);
  GroupedData data(util, g, seed_, s);
  const jit::GroupedOperands ops = data.operands();
  CublasLtGroupLoop loop(g, ops, s);
  // The dense side: the same FLOPs as one dense GEMM, M = sum of the real rows, on A's first rows and group 0's B,
  // writing D; the grouped scale arrays hold at least as many floats as the dense layout reads (the values only
  // need to be finite: this side is timed, not verified).
  Problem dense = g.dense_view();
  dense.m = g.real_rows();
  std::optional<KernelConfig> dense_config;
  std::shared_ptr<jit::GemmKernel> dense_kernel;
  std::optional<jit::GemmWorkspace> dense_ws;
  if (o.dense) {
    dense_config = o.dense_config ? *o.dense_config : default_config(dense);
    dense_kernel = kernels_->get(KernelSpec::of(*dense_config, dense));
    dense_ws = kernels_->dedicated_workspace(*dense_kernel, dense);
  }
  jit::GemmOperands dense_ops;
  dense_ops.a = ops.a;
  dense_ops.b = ops.b;
  dense_ops.d = ops.d;
  dense_ops.scale_a = ops.scale_a;
  dense_ops.scale_b = ops.scale_b;

  const jit::GroupedGemmKernel* kp = grouped_kernel.get();
  std::vector<Side> sides;
  sides.push_back({"grouped", [kp, &g, ops](cudaStream_t st) { kp->launch(g, ops, st); }});
  Side loop_side = loop.side("cublaslt-loop");
  // A group run with its count rounded up writes padding rows, which the sentinel check would (rightly) reject.
  loop_side.check_output = loop.padded_groups() == 0;
  sides.push_back(std::move(loop_side));
  if (dense_kernel) {
    const jit::GemmKernel* dp = dense_kernel.get();
    const jit::GemmWorkspace* wp = &*dense_ws;
    sides.push_back({"dense", [dp, &dense, dense_ops, wp](cudaStream_t st) { dp->launch(dense, dense_ops, st, wp); },
                     /*check_output=*/false});
  }
  // grouped-vs writes the same D as the grouped side: the check below resets D to the sentinel before it runs each
  // checked side alone, so each config is verified on its own output, and both configs run on the same addresses.
  // Its index is kGroupedSideVs: a vs side needs the dense side before it.
  if (vs_kernel) {
    if (!dense_kernel) DGT_THROW(ErrorKind::kInternal, "a grouped-vs side needs the dense side before it");
    const jit::GroupedGemmKernel* vp = vs_kernel.get();
    sides.push_back({kGroupedVsLabel, [vp, &g, ops](cudaStream_t st) { vp->launch(g, ops, st); }});
  }
  const OutputCheck check{[&](cudaStream_t st) { data.reset_d(st); },
                          [&](cudaStream_t st) { return data.verify(util, st); }};
  const RoundsResult r = measure_sides(util, device_, protocol_, s, sides, &check);

  if (r.sides[kGroupedSideGrouped].check && !r.sides[kGroupedSideGrouped].check->ok)
    spdlog::error("{}: the grouped kernel's output is wrong (see the check column)", g.label());
  if (vs_kernel && r.sides[kGroupedSideVs].check && !r.sides[kGroupedSideVs].check->ok)
    spdlog::error("{}: the grouped kernel of the vs config {} gives a wrong output (see the vs_check column)",
                  g.label(), o.vs_config->key());
  GroupedCompareShape c;
  c.problem = g;
  c.config_key = o.config.key();
  if (dense_config) c.dense_config_key = dense_config->key();
  if (o.vs_config) c.vs_config_key = o.vs_config->key();
  c.result = r;
  c.protocol_name = protocol_.name();
  c.loop_calls = loop.calls();
  c.loop_padded = loop.padded_groups();
  c.loop_algos = loop.describe();
  return c;
}

}  // namespace dgt
