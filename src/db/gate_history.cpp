// TuningDbReader's gate history query (tables gate_run and gate_result, migration 0006). (put_gate_run, the
// writer's, is in db/tuning_db.cpp.)
#include "db/sqlite.hpp"
#include "db/tuning_db_reader.hpp"
#include "db/tuning_db_rows.hpp"

namespace dgt {

using sql::Connection;
using sql::Statement;

std::vector<GateHistoryPoint> TuningDbReader::gate_history(const std::string& shape) const {
  const Connection& c = *conn_;
  // One series per problem (MxNxK matches the fast and the promote problem of those sizes, which are never
  // mixed), oldest run first. A run stored twice (a DB merged by an older dgtune from two files that both held it)
  // has every column equal but its id: grouping by all of them shows it once, under its first id.
  Statement s(
      c,
      "SELECT min(r.id) AS run_id, r.created_at AS created_at, r.exit_code AS exit_code, d.name AS device_name, "
      "e.kernel_hash AS kernel_hash, e.env_key AS env_key, p.key AS problem_key, p.m AS m, p.n AS n, p.k AS k, "
      "p.lda AS lda, p.ldb AS ldb, p.ldd AS ldd, p.dtype_a AS dtype_a, p.dtype_b AS dtype_b, p.dtype_d AS dtype_d, "
      "p.scale_mode AS scale_mode, p.accum AS accum, p.bias AS bias, p.act AS act, p.group_kind AS group_kind, "
      "p.groups AS groups, p.m_max AS m_max, p.expected_m AS expected_m, g.name AS name, "
      "g.config_key AS config_key, g.config_baseline AS config_baseline, g.verdict AS verdict, g.reason AS reason, "
      "g.ratio_baseline AS ratio_baseline, g.ratio_now AS ratio_now, g.slowdown AS slowdown, "
      "g.slowdown_lo AS slowdown_lo, g.slowdown_hi AS slowdown_hi, g.p_value AS p_value, "
      "g.ours_baseline_us AS ours_baseline_us, g.ours_now_us AS ours_now_us, "
      "g.tuned_baseline_us AS tuned_baseline_us, g.tuned_now_us AS tuned_now_us "
      "FROM gate_result g JOIN gate_run r ON r.id = g.run_id JOIN problem p ON p.id = g.problem_id "
      "JOIN device d ON d.id = r.device_id JOIN environment e ON e.id = r.environment_id "
      "WHERE p.key = :shape OR (g.name <> '' AND g.name = :shape) OR (p.m || 'x' || p.n || 'x' || p.k) = :shape "
      "GROUP BY d.hw_key, e.env_key, r.pci_bus_id, r.baseline_path, r.baseline_created_at, r.baseline_env_key, "
      "r.protocol, r.threshold, r.confidence, r.exit_code, r.shapes, r.failures, r.errors, r.created_at, p.key, "
      "g.name, g.config_key, g.config_baseline, g.verdict, g.reason, g.ratio_baseline, g.ratio_now, g.slowdown, "
      "g.slowdown_lo, g.slowdown_hi, g.p_value, g.ours_baseline_us, g.ours_now_us, g.tuned_baseline_us, "
      "g.tuned_now_us "
      "ORDER BY p.key, r.created_at, min(r.id)");
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
    g.problem = dbrows::read_problem(c, s);
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
