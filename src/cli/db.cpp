// dgtune db check | devices | migrate | prune | merge: maintenance of tuning databases (db/maintenance.hpp has the rules).
#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "db/maintenance.hpp"
#include "db/schema.hpp"
#include "db/tuning_db.hpp"
#include "db/writer_check.hpp"
#include "jit/kernel_hash.hpp"

namespace dgt::cli {

namespace {

struct CheckArgs {
  DbOption db;
  FormatOption format{report::kDbCheckDocument};
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
  a.format.render(t, report::kDbDevicesDocument);
  return 0;
}

struct MigrateArgs {
  DbOption db;
  FormatOption format{report::kDbMigrateDocument};
};

/// Brings an older DB to this dgtune's schema in place (the migrations of src/db/migrations/, one transaction,
/// every row kept), so read-only users (export, compare --db, the loader) can open it.
int run_migrate(const MigrateArgs& a) {
  const std::string path = a.db.existing("db migrate");
  // Read-only: an empty, foreign, damaged or newer file is refused as it is.
  const int before = check_existing_db_writable(path, a.db.flag(), "db migrate");
  { TuningDb db(path); }  // the read-write open migrates (db/schema.hpp)
  const int after = schema::latest_version();
  report::Table t;
  t.title = before == after
                ? fmt::format("dgtune db migrate {}: schema version {}, nothing to migrate", path, after)
                : fmt::format("dgtune db migrate {}: migrated from schema version {} to {} (every row kept)", path,
                              before, after);
  t.columns = {{"from_version", "schema version before"}, {"to_version", "schema version after"},
               {"migrated", "migrated"}};
  t.rows.push_back({static_cast<int64_t>(before), static_cast<int64_t>(after), before != after});
  a.format.render(t);
  return 0;
}

struct PruneArgs {
  DbOption db;
  bool dry_run = false;
  FormatOption format{report::kDbPruneDocument};
};

int run_prune(const PruneArgs& a) {
  const std::string path = a.db.existing("db prune");
  // Read-only first: prune changes a dgtune DB in place, never an empty or damaged file.
  if (a.dry_run)
    check_db_intact(path);
  else
    check_existing_db_writable(path, a.db.flag(), "db prune");
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
  FormatOption format{report::kDbMergeDocument};
};

int run_merge(const MergeArgs& a) {
  // -o is never an input (nor one's -wal/-shm), by path, link or inode; the merge refuses an existing -o anyway.
  std::vector<NamedPath> named;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    named.push_back({fmt::format("input #{}", i + 1), resolve_db_path(a.inputs[i]), true});
  check_output_path(a.out, "-o", named);
  std::vector<std::string> paths;
  for (const auto& in : named) paths.push_back(in.path);
  const std::string out = resolve_db_path(a.out);
  const dbm::MergeReport r = dbm::merge(paths, out);
  report::Table t;
  std::string inputs;
  for (const auto& in : paths) inputs += in + " ";
  t.title = fmt::format("dgtune db merge {}-o {} (rules: docs/database.md 'Merging', db/maintenance.hpp)", inputs, out);
  t.columns = {{"table", "table", false}};
  // Two inputs keep their A/B columns; more get one column per input ("rows in #3") up to eight, and past that
  // the sum (a 64-shard merge would be unreadable as 64 columns; the per-input counts are in the debug log).
  const size_t n = a.inputs.size();
  const bool per_input = n <= 8;
  if (n == 2) {
    t.columns.push_back({"from_a", "rows in A"});
    t.columns.push_back({"from_b", "rows in B"});
  } else if (per_input) {
    for (size_t i = 0; i < n; ++i) t.columns.push_back({fmt::format("from_{}", i + 1), fmt::format("rows in #{}", i + 1)});
  } else {
    t.columns.push_back({"from_inputs", fmt::format("rows in the {} inputs", n)});
  }
  t.columns.push_back({"merged", "rows in output"});
  for (const auto& x : r.tables) {
    std::vector<report::Cell> row{x.name};
    int64_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
      sum += x.from[i];
      if (per_input) row.emplace_back(x.from[i]);
      spdlog::debug("db merge: {} rows of {} in {}", x.from[i], x.name, a.inputs[i]);
    }
    if (!per_input) row.emplace_back(sum);
    row.emplace_back(x.merged);
    t.rows.push_back(std::move(row));
  }
  a.format.render(t);
  return 0;
}

}  // namespace

void add_db(CLI::App& app, Action& action) {
  CLI::App* db = app.add_subcommand("db", "tuning database maintenance: check, devices, migrate, prune, merge");
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
    auto [cmd, a] = add_command<MigrateArgs>(
        *db, action, "migrate", "bring a DB written by an older dgtune to this schema version, in place", run_migrate);
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
                                           "merge two or more tuning DBs into a new one (rules in docs/database.md; more than two fold left)",
                                           run_merge);
    cmd.add_option("inputs", a.inputs, "A.db B.db [C.db ...]")
        ->required()
        ->expected(2, CLI::detail::expected_max_vector_size)
        ->check(db_input_file("tuning database"));
    cmd.add_option("-o,--out", a.out, "output file (must not exist)")->required();
    add_groups(cmd, a.format);
  }
}

}  // namespace dgt::cli
