#include "cli/common.hpp"

#include <iostream>

#include "core/error.hpp"

namespace dgt::cli {

using report::Cell;
using report::Number;

void ProblemOptions::add(CLI::App& cmd) {
  cmd.add_option("--m", m, "rows of A and D (M)")->required()->check(CLI::PositiveNumber);
  cmd.add_option("--n", n, "rows of B, columns of D (N)")->required()->check(CLI::PositiveNumber);
  cmd.add_option("--k", k, "reduction length (K)")->required()->check(CLI::PositiveNumber);
  cmd.add_option("--lda", lda, "leading dimension of A in elements (default K)");
  cmd.add_option("--ldb", ldb, "leading dimension of B in elements (default K)");
  cmd.add_option("--ldd", ldd, "leading dimension of D in elements (default N)");
  cmd.add_option("--a", a, "type of A: e4m3 | e5m2")->capture_default_str();
  cmd.add_option("--b", b, "type of B: e4m3 | e5m2")->capture_default_str();
  cmd.add_option("--accum", accum, "accumulation: promote (FP32 promotion per k-block) | fast")->capture_default_str();
}

Problem ProblemOptions::problem() const {
  Problem p = Problem::dense(m, n, k);
  if (lda) p.lda = lda;
  if (ldb) p.ldb = ldb;
  if (ldd) p.ldd = ldd;
  p.a = parse_dtype(a);
  p.b = parse_dtype(b);
  p.accum = parse_accum(accum);
  validate_problem(p);
  return p;
}

void add_format_option(CLI::App& cmd, std::string& out) {
  cmd.add_option("--format", out, "output format: table | csv | json | md")
      ->check(CLI::IsMember({"table", "csv", "json", "md"}))
      ->capture_default_str();
}

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
  t.columns = {{"shape", "shape", false},   {"config", "config", false},    {"status", "status", false},
               {"median_us", "us", true},   {"p10_us", "p10 us", true},     {"p90_us", "p90 us", true},
               {"samples", "samples", true}, {"tflops", "TFLOPS", true},    {"gbps", "GB/s", true},
               {"max_rel_err", "max rel err", true}, {"diff", "diff", true}, {"registers", "regs", true},
               {"smem_bytes", "smem B", true}, {"compile_ms", "compile ms", true}, {"sm_clock_mhz", "SM MHz", true},
               {"error", "error", false}};
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
  t.columns = {{"provider", "provider", false}, {"status", "status", false}, {"median_us", "us", true},
               {"tflops", "TFLOPS", true},      {"max_rel_err", "max rel err", true}, {"diff", "diff", true},
               {"algo", "algo", false},         {"error", "error", false}};
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

}  // namespace dgt::cli
