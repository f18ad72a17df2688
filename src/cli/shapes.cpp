// dgtune shapes: the shapes file of a model's dense GEMMs from its Hugging Face config.json (no GPU): flags, then one
// call into problem/model_gemms.hpp.
#include <iostream>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "problem/expert_gemms.hpp"
#include "problem/model_gemms.hpp"

namespace dgt::cli {

namespace {
struct Args {
  ModelOption model;
  bool ladder = false;
  bool experts = false;  ///< --experts: also the routed experts' grouped GEMMs
};

int run(const Args& a) {
  std::cout << a.model.shapes_text();
  if (a.experts)
    std::cout << model_expert_shapes(a.model.config, a.model.split, a.model.m, a.model.scale, a.model.accum);
  return 0;
}
}  // namespace

void add_shapes(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(
      app, action, "shapes",
      "a shapes file of the dense GEMMs of a Hugging Face model config at tensor parallelism TP (no GPU)", run);
  CLI::Option* m = a.model.add(cmd);
  auto* ladder = cmd.add_flag("--m-ladder", a.ladder, "the default M ladder 1..16384 (the default without --m)");
  m->excludes(ladder);
  cmd.add_flag("--experts", a.experts,
               "also the routed experts' grouped GEMMs (G = experts / --ep; masked lines for decode M <= 256, contiguous "
               "for prefill M), which `dgtune sweep` tunes; other commands take dense lines only");
}

}  // namespace dgt::cli
