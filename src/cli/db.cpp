// dgtune db check | devices | prune | merge: maintenance of tuning databases (db/maintenance.hpp has the rules).
#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "db/maintenance.hpp"
#include "jit/kernel_hash.hpp"

namespace dgt::cli {

namespace {

struct CheckArgs {
  DbOption db;
  FormatOption format;
};

int run_check(const CheckArgs& a) {
  const std::string path = a.db.existing("db check");
  const dbm::CheckReport r = dbm::check(path);
  report::Table t;
  t.title = fmt::format("dgtune db check {} (schema version {}, this dgtune writes {}; read-only, not migrated)", path,
                        r.version, r.latest);
  t.columns = {{"kind", "kind", false}, {"message", "message", false}};
  for (const auto& p : r.problems) t.rows.push_back({std::string("problem"), p});
  for (const auto& n : r.notes) t.rows.push_back({std::string("note"), n});
  if (r.ok())
    t.rows.push_back({std::string("ok"), std::string("integrity_check, foreign keys and dgtune's invariants hold")});
  a.format.render(t);
  return r.ok() ? 0 : 1;
}

int run_devices(const CheckArgs& a) {
  const std::string path = a.db.existing("db devices");
  report::Table t;
  t.title = "devices (hardware identities) in " + path;
  t.columns = {
      {"id", "id"},         {"hw_key", "hardware key", false}, {"name", "name", false}, {"cc", "cc"},
      {"sm_count", "SMs"},  {"memory_gib", "memory GiB"},      {"l2_mib", "L2 MiB"},    {"environments", "envs"},
      {"trials", "trials"}, {"baselines", "baselines"},        {"winners", "winners"}};
  for (const auto& d : dbm::devices(path))
    t.rows.push_back({d.id, d.hw_key, d.name, static_cast<int64_t>(d.cc), static_cast<int64_t>(d.sm_count),
                      report::Number{d.memory_bytes / 1073741824.0, 1}, report::Number{d.l2_bytes / 1048576.0, 1},
                      static_cast<int64_t>(d.environments), static_cast<int64_t>(d.trials),
                      static_cast<int64_t>(d.baselines), static_cast<int64_t>(d.winners)});
  a.format.render(t);
  return 0;
}

struct PruneArgs {
  DbOption db;
  bool dry_run = false;
  FormatOption format;
};

int run_prune(const PruneArgs& a) {
  const std::string path = a.db.existing("db prune");
  const std::string keep = jit::kernel_source_hash();
  const dbm::PruneReport r = dbm::prune(path, keep, a.dry_run);
  report::Table t;
  t.title = fmt::format(
      "dgtune db prune {}{}: trials and sweep states of kernel versions other than the running {} "
      "({} trials of it kept; baselines and gate history kept)",
      path, a.dry_run ? " --dry-run (nothing removed)" : "", keep, r.kept_trials);
  t.columns = {{"kernel_hash", "kernel hash", false},
               {"trials", a.dry_run ? "trials to remove" : "trials removed"},
               {"sweeps", a.dry_run ? "sweeps to remove" : "sweeps removed"}};
  for (const auto& h : r.removed)
    t.rows.push_back({h.kernel_hash, static_cast<int64_t>(h.trials), static_cast<int64_t>(h.sweeps)});
  a.format.render(t);
  return 0;
}

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string out;
  FormatOption format;
};

int run_merge(const MergeArgs& a) {
  if (a.inputs.size() != 2) DGT_THROW(ErrorKind::kUsage, "db merge takes two input files: A.db B.db -o C.db");
  const dbm::MergeReport r = dbm::merge(a.inputs[0], a.inputs[1], a.out);
  report::Table t;
  t.title = fmt::format("dgtune db merge {} {} -o {} (rules: README 'Tuning database', db/maintenance.hpp)",
                        a.inputs[0], a.inputs[1], a.out);
  t.columns = {
      {"table", "table", false}, {"from_a", "rows in A"}, {"from_b", "rows in B"}, {"merged", "rows in output"}};
  for (const auto& x : r.tables) t.rows.push_back({x.name, x.from_a, x.from_b, x.merged});
  a.format.render(t);
  return 0;
}

}  // namespace

void add_db(CLI::App& app, Action& action) {
  CLI::App* db = app.add_subcommand("db", "tuning database maintenance: check, devices, prune, merge");
  db->require_subcommand(1);
  {
    auto [cmd, a] =
        add_command<CheckArgs>(*db, action, "check",
                               "SQLite integrity check plus dgtune's invariants (read-only; never migrates); "
                               "exit 1 when a problem is found",
                               run_check);
    add_groups(cmd, a.db, a.format);
  }
  {
    auto [cmd, a] =
        add_command<CheckArgs>(*db, action, "devices", "the devices (hardware identities) a DB holds", run_devices);
    add_groups(cmd, a.db, a.format);
  }
  {
    auto [cmd, a] = add_command<PruneArgs>(
        *db, action, "prune", "remove trials (and sweep states) of kernel versions other than the running one",
        run_prune);
    cmd.add_flag("--dry-run", a.dry_run, "count what would be removed; write nothing");
    add_groups(cmd, a.db, a.format);
  }
  {
    auto [cmd, a] = add_command<MergeArgs>(*db, action, "merge",
                                           "merge two tuning DBs into a new one (rules in the README)", run_merge);
    cmd.add_option("inputs", a.inputs, "A.db B.db")->required()->expected(2)->check(input_file("tuning database"));
    cmd.add_option("-o,--out", a.out, "output file (must not exist)")->required();
    add_groups(cmd, a.format);
  }
}

}  // namespace dgt::cli
