// dgtune space: the candidates of a search space for one problem, with budgets and rejection reasons (no GPU).
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/tables.hpp"

namespace dgt::cli {

namespace {
struct Args {
  ProblemOptions problem;
  SpaceOption space;
  std::string show = "all";
  int sm_count = 132;
  FormatOption format{report::kSpaceDocument};
};

int run(const Args& a) {
  const Problem p = a.problem.problem();
  const SearchSpace space = a.space.load();
  a.format.render(space_table(space, enumerate(space, p, a.sm_count), p, a.sm_count, a.show));
  return 0;
}
}  // namespace

void add_space(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(
      app, action, "space", "list candidates with their shared-memory/register budget and pruning reasons", run);
  add_groups(cmd, a.problem, a.space);
  cmd.add_option("--show", a.show, "which rows: all | kept | rejected")
      ->check(CLI::IsMember({"all", "kept", "rejected"}))
      ->capture_default_str();
  cmd.add_option("--sm-count", a.sm_count, "SMs assumed by the estimate column")
      ->transform(count(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  add_groups(cmd, a.format);
}

}  // namespace dgt::cli
