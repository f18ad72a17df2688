// dgtune space: the candidates of a search space for one problem, with budgets and rejection reasons.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "space/cost_model.hpp"

namespace dgt::cli {

void add_space(CLI::App& app, int& rc) {
  struct Args {
    ProblemOptions problem;
    std::string space, format = "table", show = "all";
    int sm_count = 132;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("space", "list candidates with their shared-memory/register budget and pruning reasons");
  args->problem.add(*cmd);
  cmd->add_option("--space", args->space, "search space JSON (default: built-in sm90-default)");
  cmd->add_option("--show", args->show, "which rows: all | kept | rejected")
      ->check(CLI::IsMember({"all", "kept", "rejected"}))
      ->capture_default_str();
  cmd->add_option("--sm-count", args->sm_count, "SMs assumed by the estimate column")->capture_default_str();
  add_format_option(*cmd, args->format);
  cmd->callback([args, &rc] {
    const Problem p = args->problem.problem();
    const SearchSpace space = args->space.empty() ? SearchSpace::builtin_default() : SearchSpace::load(args->space);
    const Enumeration en = enumerate(space, p, args->sm_count);
    report::Table t;
    t.title = "dgtune space " + space.name + " for " + p.label() + ": " + std::to_string(en.kept.size()) + " kept, " +
              std::to_string(en.rejected.size()) + " rejected of " + std::to_string(space.size());
    t.columns = {{"config", "config", false},      {"grid", "grid", false},          {"verdict", "verdict", false},
                 {"smem_total", "smem B", true},   {"smem_a", "A stages B", true},   {"smem_b", "B stages B", true},
                 {"smem_staging", "staging B", true}, {"smem_barriers", "barriers B", true}, {"smem_align", "align B", true},
                 {"acc_regs", "acc regs", true},   {"reg_limit", "reg limit", true}, {"threads", "threads", true},
                 {"estimate_us", "est us", true},  {"reason", "reason", false}};
    auto add = [&](const Candidate& c) {
      const auto& r = c.resources;
      t.rows.push_back({c.config.key(), c.grid, std::string(c.pruned.empty() ? "kept" : "rejected"), int64_t(r.smem.total),
                        int64_t(r.smem.a_stages), int64_t(r.smem.b_stages), int64_t(r.smem.staging), int64_t(r.smem.barriers),
                        int64_t(r.smem.align_pad), int64_t(r.regs.accumulators), int64_t(r.regs.limit), int64_t(r.threads),
                        c.pruned.empty() ? report::Cell{report::Number{estimate_us(KernelSpec::of(c.config, p), p, args->sm_count), 1}}
                                         : report::Cell{std::monostate{}},
                        c.pruned});
    };
    if (args->show != "rejected")
      for (const auto& c : en.kept) add(c);
    if (args->show != "kept")
      for (const auto& c : en.rejected) add(c);
    report::render(t, report::parse_format(args->format), std::cout);
    rc = 0;
  });
}

}  // namespace dgt::cli
