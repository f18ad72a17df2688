// TuningDbReader's queries of the interleaved measurements (schema 5): db/measurements.hpp. (put_measurement,
// the writer's, is in db/tuning_db.cpp.)
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"
#include "db/sqlite.hpp"
#include "db/tuning_db_reader.hpp"
#include "db/tuning_db_rows.hpp"

namespace dgt {

namespace {

// A stored measurement's sides are 0..n-1 (one row each, the order of the rounds), every sample names one of them
// and holds a positive finite time: compare --between indexes its tables by side and divides by the times, so rows
// that break this (a hand-edited or damaged file) are refused here, naming the file and the measurement, instead of
// indexed out of bounds or averaged.
void check_stored_measurement(const sql::Connection& c, const StoredMeasurement& m) {
  const auto bad = [&](const std::string& what) {
    DGT_THROW(ErrorKind::kSqlite, "tuning database {}: stored measurement {} ({}, {}) {} (damaged file?); run `dgtune db check --db {}`",
              c.path(), m.id, m.problem.label(), m.protocol_name, what, c.path());
  };
  std::set<int> sides;
  for (const StoredSide& s : m.sides) {
    if (s.index < 0 || s.index >= int(m.sides.size()))
      bad(fmt::format("has side {} ({}), outside 0..{}", s.index, s.label, int(m.sides.size()) - 1));
    if (!sides.insert(s.index).second) bad(fmt::format("has side {} twice", s.index));
  }
  for (const StoredSample& x : m.samples)
    if (!sides.count(x.side)) bad(fmt::format("has a sample of side {}, which it does not store", x.side));
  // A time that is not a positive finite number (dgtune never stores one) is named with its side and round before
  // any statistic divides by it.
  for (const StoredSample& x : m.samples)
    if (!(x.time_us > 0) || !std::isfinite(x.time_us)) {
      std::string side = std::to_string(x.side);
      for (const StoredSide& d : m.sides)
        if (d.index == x.side) side = "'" + d.label + "'";
      DGT_THROW(ErrorKind::kSqlite,
                "tuning database {}: stored compare measurement {} of {} ({}), side {}, round {}: time_us = {} is not "
                "a positive finite time (dgtune never stores one: the file was changed or is damaged); run `dgtune "
                "db check --db {}`",
                c.path(), m.id, m.problem.label(), m.protocol_name, side, x.round, x.time_us, c.path());
    }
}

}  // namespace

std::vector<DeviceRow> TuningDbReader::devices() const {
  sql::Statement s(*conn_,
                   "SELECT d.id AS id, d.hw_key AS hw_key, d.name AS name, d.sm_count AS sm_count, "
                   "(SELECT count(DISTINCT w.problem_id) FROM winner w WHERE w.device_id = d.id) AS winners, "
                   "(SELECT count(*) FROM measurement m WHERE m.device_id = d.id) AS measurements "
                   "FROM device d ORDER BY d.id");
  std::vector<DeviceRow> out;
  while (s.step()) {
    DeviceRow r;
    r.id = s.get_int("id");
    r.hw_key = s.get_text("hw_key");
    r.name = s.get_text("name");
    r.sm_count = s.get_int32("sm_count");
    r.winners = s.get_int("winners");
    r.measurements = s.get_int("measurements");
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<StoredMeasurement> TuningDbReader::latest_measurements(int64_t device_id) const {
  const sql::Connection& c = *conn_;
  sql::Statement s(
      c,
      "SELECT m.id AS id, m.device_id AS device_id, m.environment_id AS environment_id, m.pci_bus_id AS "
      "pci_bus_id, m.protocol_name AS protocol_name, m.protocol AS protocol, m.rounds AS rounds, "
      "m.reference_clock_mhz AS reference_clock_mhz, m.clock_floor_mhz AS clock_floor_mhz, m.created_at "
      "AS created_at, p.m AS m, p.n AS n, p.k AS k, p.lda AS lda, p.ldb AS ldb, p.ldd AS ldd, p.dtype_a "
      "AS dtype_a, p.dtype_b AS dtype_b, p.dtype_d AS dtype_d, p.scale_mode AS scale_mode, p.accum AS accum, p.bias AS bias, p.act AS act, "
      "p.group_kind AS group_kind, p.groups AS groups, p.m_max AS m_max, p.expected_m AS expected_m "
      "FROM measurement m JOIN problem p ON p.id = m.problem_id WHERE m.device_id = :device_id AND m.id = "
      "(SELECT max(m2.id) FROM measurement m2 WHERE m2.device_id = m.device_id AND m2.problem_id = "
      "m.problem_id AND m2.protocol_name = m.protocol_name) ORDER BY p.m, p.n, p.k, p.key, m.protocol_name");
  s.bind_int(":device_id", device_id);
  std::vector<StoredMeasurement> out;
  while (s.step()) {
    StoredMeasurement m;
    m.id = s.get_int("id");
    m.device_id = s.get_int("device_id");
    m.environment_id = s.get_int("environment_id");
    m.pci_bus_id = s.get_text("pci_bus_id");
    m.problem = dbrows::read_problem(c, s);
    m.protocol_name = s.get_text("protocol_name");
    m.protocol_json = s.get_text("protocol");
    m.rounds = s.get_int32("rounds");
    m.reference_clock_mhz = s.get_real("reference_clock_mhz");
    m.clock_floor_mhz = s.get_real("clock_floor_mhz");
    m.created_at = s.get_text("created_at");
    out.push_back(std::move(m));
  }
  for (StoredMeasurement& m : out) {
    sql::Statement sd(
        c,
        "SELECT side AS side, label AS label, kind AS kind, config_key AS config_key, algo AS algo, source "
        "AS source, heuristic_count AS heuristic_count, check_ok AS check_ok, max_rel_err AS max_rel_err, "
        "diff AS diff, nan_count AS nan_count, pad_touched AS pad_touched FROM measurement_side WHERE "
        "measurement_id = :id ORDER BY side");
    sd.bind_int(":id", m.id);
    while (sd.step()) {
      StoredSide side;
      side.index = sd.get_int32("side");
      side.label = sd.get_text("label");
      side.kind = sd.get_text("kind");
      side.config_key = sd.get_text("config_key");
      side.algo = sd.get_text("algo");
      side.source = sd.get_text("source");
      side.heuristic_count = sd.get_int32("heuristic_count");
      if (!sd.is_null("check_ok")) {
        Verification v;
        v.ok = sd.get_int("check_ok") != 0;
        v.max_rel_err = sd.get_real("max_rel_err");
        v.diff = sd.get_real("diff");
        v.nan_count = sd.get_int("nan_count");
        v.pad_touched = sd.get_int("pad_touched");
        side.check = v;
      }
      m.sides.push_back(std::move(side));
    }
    sql::Statement ss(c,
                      // A text where a time belongs would read as 0.0: select it as NULL (NaN), which the readers refuse.
                      "SELECT side AS side, round AS round, position AS position, CASE WHEN typeof(time_us) IN "
                      "('real', 'integer') THEN time_us END AS time_us, sm_clock_mhz AS "
                      "sm_clock_mhz, flagged AS flagged FROM measurement_sample WHERE measurement_id = :id ORDER BY "
                      "round, position");
    ss.bind_int(":id", m.id);
    while (ss.step()) {
      StoredSample x;
      x.side = ss.get_int32("side");
      x.round = ss.get_int32("round");
      x.position = ss.get_int32("position");
      x.time_us = ss.get_real("time_us");  // NaN when not a number (see the query)
      x.sm_clock_mhz = ss.get_real("sm_clock_mhz");
      x.flagged = ss.get_int("flagged") != 0;
      m.samples.push_back(x);
    }
    check_stored_measurement(c, m);
  }
  return out;
}

}  // namespace dgt
