// dgtune trace: where one launch of one config spends its time, CTA by CTA: flags, then one call into
// eval/kernel_trace.hpp (the traced launch) and eval/trace_tables.hpp (its tables).
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "device/device_info.hpp"
#include "eval/kernel_trace.hpp"
#include "eval/trace_tables.hpp"

namespace dgt::cli {

namespace {

struct Args {
  ProblemOptions problem;
  std::string config;
  DeviceOption device;
  CacheDirOption cache;
  std::string l2 = "cold";
  int warmup = 3;
  uint64_t seed = 1;
  FormatOption format{report::kTraceDocument};
};

int run(const Args& a) {
  const Problem p = a.problem.problem();
  const KernelConfig c = checked_config("--config", a.config, {{"", p}});
  KernelTraceOptions o;
  o.device = a.device.ordinal;
  o.cache_dir = a.cache.dir;
  o.cold_l2 = a.l2 == "cold";
  o.warmup = a.warmup;
  o.seed = a.seed;
  require_device(o.device);  // before the cubin cache directory is created
  const KernelTrace t = trace_kernel(p, c, o);
  a.format.render(trace_tables(t));
  return t.verified ? 0 : 1;
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
  cmd.add_option("--seed", a.seed, "input seed")->transform(count_u64())->capture_default_str();
  add_groups(cmd, a.device, a.cache, a.format);
}

}  // namespace dgt::cli
