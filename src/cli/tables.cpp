#include "cli/tables.hpp"

#include "core/paths.hpp"
#include "launch/environment.hpp"
#include "space/cost_model.hpp"

namespace dgt::cli {

using report::Cell;
using report::Number;

namespace {
Cell num(double v, int precision) { return Number{v, precision}; }
Cell opt_us(const std::optional<BaselineRecord>& b) {
  if (!b || b->status != TrialStatus::kOk || !b->timing) return std::monostate{};
  return num(b->timing->median_us, 2);
}
Cell speedup(const std::optional<BaselineRecord>& b, double ours_us) {
  if (!b || b->status != TrialStatus::kOk || !b->timing || ours_us <= 0) return std::monostate{};
  return num(b->timing->median_us / ours_us, 3);
}
Cell baseline_status(const std::optional<BaselineRecord>& b) {
  if (!b) return std::string("not measured");
  return b->status == TrialStatus::kOk
             ? b->algo
             : to_string(b->status) + (b->cublas_status ? " (status " + std::to_string(b->cublas_status) + ")" : "");
}
std::string counts_text(const std::map<std::string, int>& counts) {
  std::string s;
  for (const auto& [k, v] : counts) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}
}  // namespace

report::Table winners_table(const std::vector<ShapeOutcome>& outcomes, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"name", "name", false},
               {"accum", "accum", false},
               {"protocol", "protocol", false},
               {"winner", "winner config", false},
               {"median_us", "us", true},
               {"tflops", "TFLOPS", true},
               {"gbps", "GB/s", true},
               {"cublas_default_us", "cuBLASLt default us", true},
               {"x_cublas_default", "x default", true},
               {"cublas_tuned_us", "cuBLASLt tuned us", true},
               {"x_cublas_tuned", "x tuned", true},
               {"candidates", "candidates", true},
               {"measured_now", "measured now", true},
               {"complete", "complete", false},
               {"wall_s", "shape s", true},
               {"status_counts", "trials by status", false},
               {"cublas_tuned_algo", "cuBLASLt tuned algo", false}};
  for (const auto& o : outcomes) {
    const Problem& p = o.entry.problem;
    std::vector<Cell> row;
    row.push_back(p.label());
    row.push_back(o.entry.name);
    row.push_back(std::string(to_string(p.accum)));
    row.push_back(o.protocol);
    if (o.winner && o.winner->trial.timing) {
      const auto& w = *o.winner;
      const double us = w.trial.timing->median_us;
      row.push_back(w.trial.config.key());
      row.push_back(num(us, 2));
      row.push_back(num(w.trial.tflops, 1));
      row.push_back(num(w.trial.gbps, 0));
      row.push_back(opt_us(w.cublas_default));
      row.push_back(speedup(w.cublas_default, us));
      row.push_back(opt_us(w.cublas_tuned));
      row.push_back(speedup(w.cublas_tuned, us));
    } else {
      row.push_back(std::string("no verified candidate"));
      for (int i = 0; i < 7; ++i) row.push_back(std::monostate{});
    }
    row.push_back(int64_t(o.candidates));
    row.push_back(int64_t(o.measured_now));
    row.push_back(std::string(o.complete ? "yes" : "incomplete"));
    row.push_back(num(o.wall_s, 1));
    row.push_back(o.winner ? counts_text(o.winner->status_counts) : std::string());
    row.push_back(o.winner ? baseline_status(o.winner->cublas_tuned) : Cell{std::monostate{}});
    t.rows.push_back(std::move(row));
  }
  return t;
}

report::Table trial_table(const std::vector<TrialRecord>& trials, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},        {"config", "config", false},
               {"status", "status", false},      {"median_us", "us", true},
               {"p10_us", "p10 us", true},       {"p90_us", "p90 us", true},
               {"samples", "samples", true},     {"tflops", "TFLOPS", true},
               {"gbps", "GB/s", true},           {"max_rel_err", "max rel err", true},
               {"diff", "diff", true},           {"registers", "regs", true},
               {"smem_bytes", "smem B", true},   {"compile_ms", "compile ms", true},
               {"sm_clock_mhz", "SM MHz", true}, {"error", "error", false}};
  for (const auto& tr : trials) {
    std::vector<Cell> row;
    row.push_back(tr.problem.label());
    row.push_back(tr.config.key());
    row.push_back(std::string(to_string(tr.status)));
    if (tr.timing) {
      row.push_back(num(tr.timing->median_us, 2));
      row.push_back(num(tr.timing->p10_us, 2));
      row.push_back(num(tr.timing->p90_us, 2));
      row.push_back(int64_t(tr.timing->samples));
      row.push_back(num(tr.tflops, 1));
      row.push_back(num(tr.gbps, 0));
    } else {
      for (int i = 0; i < 6; ++i) row.push_back(std::monostate{});
    }
    if (tr.verification) {
      row.push_back(num(tr.verification->max_rel_err, 6));
      row.push_back(num(tr.verification->diff, 8));
    } else {
      row.push_back(std::monostate{});
      row.push_back(std::monostate{});
    }
    row.push_back(int64_t(tr.registers));
    row.push_back(int64_t(tr.smem_bytes));
    row.push_back(num(tr.compile_ms, 0));
    row.push_back(tr.timing ? num(tr.timing->sm_clock_mhz, 0) : Cell{std::monostate{}});
    row.push_back(tr.error);
    t.rows.push_back(std::move(row));
  }
  return t;
}

report::Table baseline_table(const std::vector<BaselineRecord>& rows, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"provider", "provider", false},
               {"status", "status", false},
               {"median_us", "us", true},
               {"tflops", "TFLOPS", true},
               {"max_rel_err", "max rel err", true},
               {"diff", "diff", true},
               {"algo", "algo", false},
               {"error", "error", false}};
  for (const auto& b : rows) {
    std::vector<Cell> row{b.provider, std::string(to_string(b.status))};
    row.push_back(b.timing ? num(b.timing->median_us, 2) : Cell{std::monostate{}});
    row.push_back(b.timing ? num(b.tflops, 1) : Cell{std::monostate{}});
    row.push_back(b.verification ? num(b.verification->max_rel_err, 6) : Cell{std::monostate{}});
    row.push_back(b.verification ? num(b.verification->diff, 8) : Cell{std::monostate{}});
    row.push_back(b.algo);
    row.push_back(b.error);
    t.rows.push_back(std::move(row));
  }
  return t;
}

report::Table space_table(const SearchSpace& space, const Enumeration& en, const Problem& p, int sm_count,
                          const std::string& show) {
  report::Table t;
  t.title = "dgtune space " + space.name + " for " + p.label() + ": " + std::to_string(en.kept.size()) + " kept, " +
            std::to_string(en.rejected.size()) + " rejected of " + std::to_string(space.size());
  t.columns = {{"config", "config", false},         {"grid", "grid", false},
               {"verdict", "verdict", false},       {"smem_total", "smem B", true},
               {"smem_a", "A stages B", true},      {"smem_b", "B stages B", true},
               {"smem_staging", "staging B", true}, {"smem_scales", "scales B", true},
               {"smem_barriers", "barriers B", true},
               {"smem_align", "align B", true},     {"acc_regs", "acc regs", true},
               {"reg_limit", "reg limit", true},    {"threads", "threads", true},
               {"estimate_us", "est us", true},     {"reason", "reason", false}};
  auto add = [&](const Candidate& c) {
    const auto& r = c.resources;
    t.rows.push_back({c.config.key(), c.grid, std::string(c.pruned.empty() ? "kept" : "rejected"),
                      int64_t(r.smem.total), int64_t(r.smem.a_stages), int64_t(r.smem.b_stages),
                      int64_t(r.smem.staging), int64_t(r.smem.scales), int64_t(r.smem.barriers),
                      int64_t(r.smem.align_pad),
                      int64_t(r.regs.accumulators), int64_t(r.regs.limit), int64_t(r.threads),
                      c.pruned.empty() ? Cell{Number{estimate_us(KernelSpec::of(c.config, p), p, sm_count), 1}}
                                       : Cell{std::monostate{}},
                      c.pruned});
  };
  if (show != "rejected")
    for (const auto& c : en.kept) add(c);
  if (show != "kept")
    for (const auto& c : en.rejected) add(c);
  return t;
}

report::Table info_table(int ordinal) {
  report::Table t;
  t.title = "dgtune info";
  t.columns = {{"key", "key", false}, {"value", "value", false}};
  for (const auto& [key, value] : environment_info(ordinal)) t.rows.push_back({key, value});
  return t;
}

std::vector<report::Table> run_tables(const TrialRecord& trial,
                                      const std::optional<std::pair<BaselineRecord, BaselineRecord>>& baselines,
                                      const std::string& device_name) {
  std::vector<report::Table> tables{trial_table({trial}, "dgtune run on " + device_name)};
  if (baselines)
    tables.push_back(baseline_table({baselines->first, baselines->second}, "cuBLASLt (same buffers, same timer)"));
  return tables;
}

}  // namespace dgt::cli
