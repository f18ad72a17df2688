// The gate history queries of TuningDb (tables gate_run and gate_result, migration 0006).
#include <sqlite3.h>

#include <cmath>

#include "core/error.hpp"
#include "db/sqlite.hpp"
#include "db/tuning_db.hpp"

namespace dgt {

using sql::Connection;
using sql::Statement;
using sql::Transaction;

namespace {
void bind_real_or_null(Statement& s, const char* name, double v) {
  if (std::isfinite(v))
    s.bind_real(name, v);
  else
    s.bind_null(name);
}
}  // namespace

int64_t TuningDb::put_gate_run(const GateRunRow& run, const std::vector<GateResultRow>& results) {
  const Connection& c = *conn_;
  if (c.read_only())
    DGT_THROW(ErrorKind::kSqlite, "tuning database {} is open read-only: cannot store a gate run", c.path());
  Transaction tx(c);
  int64_t run_id = 0;
  {
    Statement s(
        c,
        "INSERT INTO gate_run (device_id, environment_id, pci_bus_id, baseline_path, baseline_created_at, "
        "baseline_env_key, protocol, threshold, confidence, exit_code, shapes, failures, errors, created_at) VALUES "
        "(:device_id, :environment_id, :pci_bus_id, :baseline_path, :baseline_created_at, :baseline_env_key, "
        ":protocol, :threshold, :confidence, :exit_code, :shapes, :failures, :errors, :created_at)");
    s.bind_int(":device_id", run.scope.device_id);
    s.bind_int(":environment_id", run.scope.environment_id);
    s.bind_text(":pci_bus_id", run.scope.pci_bus_id);
    s.bind_text(":baseline_path", run.baseline_path);
    s.bind_text(":baseline_created_at", run.baseline_created_at);
    s.bind_text(":baseline_env_key", run.baseline_env_key);
    s.bind_text(":protocol", run.protocol);
    s.bind_real(":threshold", run.threshold);
    s.bind_real(":confidence", run.confidence);
    s.bind_int(":exit_code", run.exit_code);
    s.bind_int(":shapes", run.shapes);
    s.bind_int(":failures", run.failures);
    s.bind_int(":errors", run.errors);
    s.bind_text(":created_at", run.created_at.empty() ? sql::utc_now_iso8601() : run.created_at);
    s.run();
    run_id = sqlite3_last_insert_rowid(c.handle());
  }
  for (const GateResultRow& r : results) {
    const int64_t problem_id = upsert_problem(r.problem);
    Statement s(
        c,
        "INSERT INTO gate_result (run_id, problem_id, name, config_key, config_baseline, verdict, reason, "
        "ratio_baseline, ratio_now, slowdown, slowdown_lo, slowdown_hi, p_value, ours_baseline_us, ours_now_us, "
        "tuned_baseline_us, tuned_now_us) VALUES (:run_id, :problem_id, :name, :config_key, :config_baseline, "
        ":verdict, :reason, :ratio_baseline, :ratio_now, :slowdown, :slowdown_lo, :slowdown_hi, :p_value, "
        ":ours_baseline_us, :ours_now_us, :tuned_baseline_us, :tuned_now_us)");
    s.bind_int(":run_id", run_id);
    s.bind_int(":problem_id", problem_id);
    s.bind_text(":name", r.name);
    s.bind_text(":config_key", r.config_key);
    s.bind_text(":config_baseline", r.config_baseline);
    s.bind_text(":verdict", r.verdict);
    s.bind_text(":reason", r.reason);
    bind_real_or_null(s, ":ratio_baseline", r.ratio_baseline);
    bind_real_or_null(s, ":ratio_now", r.ratio_now);
    bind_real_or_null(s, ":slowdown", r.slowdown);
    bind_real_or_null(s, ":slowdown_lo", r.slowdown_lo);
    bind_real_or_null(s, ":slowdown_hi", r.slowdown_hi);
    bind_real_or_null(s, ":p_value", r.p_value);
    bind_real_or_null(s, ":ours_baseline_us", r.ours_baseline_us);
    bind_real_or_null(s, ":ours_now_us", r.ours_now_us);
    bind_real_or_null(s, ":tuned_baseline_us", r.tuned_baseline_us);
    bind_real_or_null(s, ":tuned_now_us", r.tuned_now_us);
    s.run();
  }
  tx.commit();
  return run_id;
}

std::vector<GateHistoryPoint> TuningDb::gate_history(const std::string& shape) const {
  const Connection& c = *conn_;
  Statement s(
      c,
      "SELECT r.id AS run_id, r.created_at AS created_at, r.exit_code AS exit_code, d.name AS device_name, "
      "e.kernel_hash AS kernel_hash, e.env_key AS env_key, p.key AS problem_key, g.name AS name, "
      "g.config_key AS config_key, g.config_baseline AS config_baseline, g.verdict AS verdict, g.reason AS reason, "
      "g.ratio_baseline AS ratio_baseline, g.ratio_now AS ratio_now, g.slowdown AS slowdown, "
      "g.slowdown_lo AS slowdown_lo, g.slowdown_hi AS slowdown_hi, g.p_value AS p_value, "
      "g.ours_baseline_us AS ours_baseline_us, g.ours_now_us AS ours_now_us, "
      "g.tuned_baseline_us AS tuned_baseline_us, g.tuned_now_us AS tuned_now_us "
      "FROM gate_result g JOIN gate_run r ON r.id = g.run_id JOIN problem p ON p.id = g.problem_id "
      "JOIN device d ON d.id = r.device_id JOIN environment e ON e.id = r.environment_id "
      "WHERE p.key = :shape OR (g.name <> '' AND g.name = :shape) OR (p.m || 'x' || p.n || 'x' || p.k) = :shape "
      "ORDER BY r.created_at, r.id, p.key");
  s.bind_text(":shape", shape);
  std::vector<GateHistoryPoint> out;
  while (s.step()) {
    GateHistoryPoint h;
    h.run_id = s.get_int("run_id");
    h.created_at = s.get_text("created_at");
    h.exit_code = s.get_int32("exit_code");
    h.device_name = s.get_text("device_name");
    h.kernel_hash = s.get_text("kernel_hash");
    h.env_key = s.get_text("env_key");
    h.problem_key = s.get_text("problem_key");
    GateResultRow& g = h.result;
    g.name = s.get_text("name");
    g.config_key = s.get_text("config_key");
    g.config_baseline = s.get_text("config_baseline");
    g.verdict = s.get_text("verdict");
    g.reason = s.get_text("reason");
    g.ratio_baseline = s.get_real("ratio_baseline");
    g.ratio_now = s.get_real("ratio_now");
    g.slowdown = s.get_real("slowdown");
    g.slowdown_lo = s.get_real("slowdown_lo");
    g.slowdown_hi = s.get_real("slowdown_hi");
    g.p_value = s.get_real("p_value");
    g.ours_baseline_us = s.get_real("ours_baseline_us");
    g.ours_now_us = s.get_real("ours_now_us");
    g.tuned_baseline_us = s.get_real("tuned_baseline_us");
    g.tuned_now_us = s.get_real("tuned_now_us");
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace dgt
