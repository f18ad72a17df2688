// dgtune shapes: the shapes file of a model's dense GEMMs (and with --experts its routed experts' grouped GEMMs) from
// its Hugging Face config.json (no GPU): flags, then one call into problem/expert_gemms.hpp (model_tuning_shapes).
#include <iostream>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "problem/model_gemms.hpp"

namespace dgt::cli {

namespace {
struct Args {
  ModelOption model;
  bool ladder = false;
};

int run(const Args& a) {
  std::cout << a.model.shapes_text();  // with --experts, the grouped ladder's lines after the dense ones
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
}

}  // namespace dgt::cli
