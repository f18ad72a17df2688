// dgtune shapes: the shapes file of a model's dense GEMMs from its Hugging Face config.json (no GPU): flags, then one
// call into problem/model_gemms.hpp.
#include <iostream>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "problem/model_gemms.hpp"

namespace dgt::cli {

namespace {
struct Args {
  std::string config;
  ModelSplit split;
  std::vector<int64_t> m;
  bool ladder = false;
  std::string scale, accum = "promote";
};

int run(const Args& a) {
  std::cout << model_shapes(a.config, a.split, a.m, a.scale, a.accum);
  return 0;
}
}  // namespace

void add_shapes(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(
      app, action, "shapes",
      "a shapes file of the dense GEMMs of a Hugging Face model config at tensor parallelism TP (no GPU)", run);
  cmd.add_option("--hf-config", a.config, "the model's config.json")->required()->check(input_file("model config"));
  cmd.add_option("--tp", a.split.tp, "tensor parallelism: column-parallel layers split N, row-parallel ones K")
      ->transform(count(1, 1024))
      ->capture_default_str();
  cmd.add_option("--ep", a.split.ep, "expert parallelism (changes no dense GEMM; recorded for grouped GEMMs)")
      ->transform(count(1, 1024))
      ->capture_default_str();
  auto* m = cmd.add_option("--m", a.m, "M values (tokens per step), comma-separated, e.g. 1,64,4096")
                ->delimiter(',')
                ->transform(count(1, (int64_t(1) << 31) - 1));
  auto* ladder = cmd.add_flag("--m-ladder", a.ladder, "the default M ladder 1..16384 (the default without --m)");
  m->excludes(ladder);
  cmd.add_option("--scale", a.scale, "tensor | channel | block | block1d1d (default: the config's quantization_config)")
      ->check(CLI::IsMember({"tensor", "channel", "block", "block1d1d"}));
  cmd.add_option("--accum", a.accum, "promote | fast")->check(CLI::IsMember({"promote", "fast"}))->capture_default_str();
  cmd.add_flag("--lm-head", a.split.lm_head, "also the LM head (vocabulary padded to 64, split by TP)");
}

}  // namespace dgt::cli
