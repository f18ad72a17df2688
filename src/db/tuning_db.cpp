#include "db/tuning_db.hpp"

#include <sqlite3.h>

#include <cmath>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"
#include "db/tuning_db_rows.hpp"
#include "records/protocol_name.hpp"

namespace dgt {

namespace {

using dbrows::bind_scope;
using sql::Connection;
using sql::Statement;
using sql::Transaction;

// ---------------------------------------------------------------------------------------------
// Value conversions

std::string created_at_or_now(const std::string& created_at) {
  return created_at.empty() ? sql::utc_now_iso8601() : created_at;
}

/// Binds the columns every measurement has (trials and baselines: the one Measurement record).
void bind_measurement(Statement& s, const Measurement& m) {
  s.bind_text(":status", to_string(m.status));
  s.bind_text(":error", m.error);
  if (const auto& t = m.timing) {
    s.bind_real(":median_us", t->median_us);
    s.bind_real(":p10_us", t->p10_us);
    s.bind_real(":p90_us", t->p90_us);
    s.bind_int(":samples", t->samples);
    s.bind_real(":rse", t->rse);
    s.bind_real(":sm_clock_mhz", t->sm_clock_mhz);
    s.bind_int(":throttled", t->throttled ? 1 : 0);
  } else {
    for (const char* name : {":median_us", ":p10_us", ":p90_us", ":samples", ":rse", ":sm_clock_mhz", ":throttled"})
      s.bind_null(name);
  }
  if (const auto& v = m.verification) {
    s.bind_int(":verify_ok", v->ok ? 1 : 0);
    s.bind_real(":max_rel_err", v->max_rel_err);
    s.bind_real(":diff", v->diff);
    s.bind_int(":nan_count", v->nan_count);
    s.bind_int(":pad_touched", v->pad_touched);
  } else {
    for (const char* name : {":verify_ok", ":max_rel_err", ":diff", ":nan_count", ":pad_touched"}) s.bind_null(name);
  }
  s.bind_real(":tflops", m.tflops);
  s.bind_real(":gbps", m.gbps);
  s.bind_text(":protocol", m.protocol);
  s.bind_text(":created_at", created_at_or_now(m.created_at));
}

/// The protocol_name column of a protocol JSON text: its "name", else the sweep Timer's (text that is not
/// JSON or names no protocol was stored before protocols were named). Migration 0007 uses the same
/// expression for the rows it converts.
#define DGT_PROTOCOL_NAME_OF(json)                                            \
  "CASE WHEN NOT json_valid(" json ") THEN 'cold-l2-v1' WHEN json_type(" json \
  ", '$.name') = 'text' THEN "                                                \
  "json_extract(" json ", '$.name') ELSE 'cold-l2-v1' END"
/// The columns of one measurement row, in the order of the INSERT statements below.
#define DGT_MEASUREMENT_INSERT_COLUMNS                                                                   \
  "status, error, median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err, diff, " \
  "nan_count, pad_touched, sm_clock_mhz, throttled, protocol, protocol_name, created_at"
#define DGT_MEASUREMENT_INSERT_VALUES                                                                         \
  ":status, :error, :median_us, :p10_us, :p90_us, :samples, :rse, :tflops, :gbps, :verify_ok, :max_rel_err, " \
  ":diff, :nan_count, :pad_touched, :sm_clock_mhz, :throttled, :protocol, " DGT_PROTOCOL_NAME_OF(             \
      ":protocol") ", :created_at"

constexpr const char* kTrialInsert =
    // OR REPLACE: re-measuring a candidate under the same protocol overwrites the old row
    // (UNIQUE(device, environment, problem, config, protocol_name)).
    "INSERT OR REPLACE INTO trial (device_id, environment_id, problem_id, config_id, pci_bus_id, compile_ms, "
    "registers, "
    "spill_bytes, smem_bytes, " DGT_MEASUREMENT_INSERT_COLUMNS
    ") "
    "VALUES (:device_id, :environment_id, :problem_id, :config_id, :pci_bus_id, :compile_ms, :registers, :spill_bytes, "
    ":smem_bytes, " DGT_MEASUREMENT_INSERT_VALUES ")";

constexpr const char* kBaselineInsert =
    "INSERT OR REPLACE INTO baseline (device_id, environment_id, problem_id, provider, pci_bus_id, cublas_status, "
    "algo, algo_data, workspace_bytes, " DGT_MEASUREMENT_INSERT_COLUMNS
    ") "
    "VALUES (:device_id, :environment_id, :problem_id, :provider, :pci_bus_id, :cublas_status, "
    ":algo, :algo_data, :workspace_bytes, " DGT_MEASUREMENT_INSERT_VALUES ")";

/// protocol_name of the bound :protocol JSON (claims compare it with the rows' protocol_name).
constexpr const char* kProtocolNameOfParam = DGT_PROTOCOL_NAME_OF(":protocol");

#undef DGT_MEASUREMENT_INSERT_COLUMNS
#undef DGT_MEASUREMENT_INSERT_VALUES
#undef DGT_PROTOCOL_NAME_OF

void require_writable(const Connection& c, const char* what) {
  if (c.read_only())
    DGT_THROW(ErrorKind::kSqlite, "tuning database {} was opened read-only: cannot {}", c.path(), what);
}

void bind_real_or_null(Statement& s, const char* name, double v) {
  if (std::isfinite(v))
    s.bind_real(name, v);
  else
    s.bind_null(name);
}

/// The writer's connection: read-write (created with its parent directories when missing), its schema created
/// or migrated; read_only: the reader's open (schema::open_and_migrate only checks the version then).
std::unique_ptr<Connection> open_writable(const std::string& path, bool read_only) {
  auto conn = std::make_unique<Connection>(path, read_only);
  schema::open_and_migrate(*conn);
  return conn;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TuningDb

TuningDb::TuningDb(const std::string& path, bool read_only) : TuningDbReader(open_writable(path, read_only)) {}

TuningDb::~TuningDb() = default;

DeviceScope TuningDb::upsert_device(const DeviceFingerprint& fp) {
  require_writable(*conn_, "store a device");
  const Connection& c = *conn_;
  const HardwareIdentity hw = fp.hardware();
  const SoftwareEnv env = fp.software();
  const std::string now = sql::utc_now_iso8601();
  Transaction tx(c);
  {
    Statement s(c,
                "INSERT INTO device (hw_key, name, cc, sm_count, memory_bytes, l2_bytes, max_sm_clock_mhz, created_at) "
                "VALUES (:hw_key, :name, :cc, :sm_count, :memory_bytes, :l2_bytes, :max_sm_clock_mhz, :created_at) "
                "ON CONFLICT (hw_key) DO NOTHING");
    s.bind_text(":hw_key", hw.key());
    s.bind_text(":name", hw.name);
    s.bind_int(":cc", 10 * hw.cc_major + hw.cc_minor);
    s.bind_int(":sm_count", hw.sm_count);
    s.bind_int(":memory_bytes", hw.memory_bytes);
    s.bind_int(":l2_bytes", hw.l2_bytes);
    s.bind_int(":max_sm_clock_mhz", fp.max_sm_clock_mhz);
    s.bind_text(":created_at", now);
    s.run();
  }
  {
    Statement s(c,
                "INSERT INTO environment (env_key, driver_version, runtime_version, cublaslt_version, nvrtc_version, "
                "kernel_hash, dgtune_version, created_at) VALUES (:env_key, :driver_version, :runtime_version, "
                ":cublaslt_version, :nvrtc_version, :kernel_hash, :dgtune_version, :created_at) "
                "ON CONFLICT (env_key) DO NOTHING");
    s.bind_text(":env_key", env.key());
    s.bind_int(":driver_version", env.driver_version);
    s.bind_int(":runtime_version", env.runtime_version);
    s.bind_int(":cublaslt_version", env.cublaslt_version);
    s.bind_int(":nvrtc_version", env.nvrtc_version);
    s.bind_text(":kernel_hash", env.kernel_hash);
    s.bind_text(":dgtune_version", env.dgtune_version);
    s.bind_text(":created_at", now);
    s.run();
  }
  std::optional<DeviceScope> scope = find_device(fp);
  if (!scope)
    DGT_THROW(ErrorKind::kInternal, "tuning database {}: device {} missing right after its insert", path(),
              fp.fingerprint());
  tx.commit();
  return *scope;
}

int64_t TuningDb::upsert_problem(const Problem& p) {
  if (std::optional<int64_t> id = find_problem(p)) return *id;
  {
    Statement s(*conn_,
                "INSERT INTO problem (key, m, n, k, lda, ldb, ldd, dtype_a, dtype_b, dtype_d, scale_mode, accum, bias, "
                "act, group_kind, groups, m_max, expected_m) VALUES (:key, :m, :n, :k, :lda, :ldb, :ldd, :dtype_a, "
                ":dtype_b, :dtype_d, :scale_mode, :accum, :bias, :act, :group_kind, :groups, :m_max, :expected_m) "
                "ON CONFLICT (key) DO NOTHING");
    s.bind_text(":key", p.key());
    s.bind_int(":m", p.m);
    s.bind_int(":n", p.n);
    s.bind_int(":k", p.k);
    s.bind_int(":lda", p.lda);
    s.bind_int(":ldb", p.ldb);
    s.bind_int(":ldd", p.ldd);
    s.bind_text(":dtype_a", to_string(p.a));
    s.bind_text(":dtype_b", to_string(p.b));
    s.bind_text(":dtype_d", to_string(p.d));
    s.bind_text(":scale_mode", to_string(p.scale));
    s.bind_text(":accum", to_string(p.accum));
    s.bind_text(":bias", to_string(p.bias));
    s.bind_text(":act", to_string(p.act));
    s.bind_text(":group_kind", dbrows::group_kind_column(p));
    s.bind_int(":groups", p.groups);
    s.bind_int(":m_max", p.m_max);
    s.bind_int(":expected_m", p.expected_m);
    s.run();
  }
  std::optional<int64_t> id = find_problem(p);
  if (!id)
    DGT_THROW(ErrorKind::kInternal, "tuning database {}: problem {} missing right after its insert", path(), p.key());
  return *id;
}

std::string TuningDb::put_group_rows(const Problem& p, const std::string& rows_list, const std::string& rows_text) {
  if (!p.is_grouped())
    DGT_THROW(ErrorKind::kInvalid, "put_group_rows: problem {} is not grouped (groups = 0)", p.key());
  require_writable(*conn_, "store a grouped problem's row counts");
  Transaction tx(*conn_);
  const int64_t id = upsert_problem(p);
  {
    // Only an empty distribution is written: the first sweep's counts are what the stored trials measured.
    Statement s(*conn_,
                "UPDATE problem SET group_rows = :rows, group_rows_text = :text WHERE id = :id AND group_rows = ''");
    s.bind_text(":rows", rows_list);
    s.bind_text(":text", rows_text);
    s.bind_int(":id", id);
    s.run();
  }
  std::string stored;
  {
    Statement s(*conn_, "SELECT group_rows AS r FROM problem WHERE id = :id");
    s.bind_int(":id", id);
    if (s.step()) stored = s.get_text("r");
  }
  tx.commit();
  remember_problem(p, id);
  return stored;
}

int64_t TuningDb::problem_id(const Problem& p) {
  if (std::optional<int64_t> id = find_problem(p)) return *id;
  require_writable(*conn_, "store a problem");
  Transaction tx(*conn_);
  const int64_t id = upsert_problem(p);
  tx.commit();
  remember_problem(p, id);
  return id;
}

int64_t TuningDb::upsert_config(const KernelConfig& cfg) {
  const Connection& c = *conn_;
  std::string key = cfg.key();
  {
    Statement s(
        c,
        "INSERT INTO config (key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m, "
        "cluster_n, raster, group_size, epilogue, split_k, sms, mainloop, promote_every, split_cluster, swap_ab) "
        "VALUES (:key, :block_m, :block_n, :block_k, :num_stages, :num_math_wg, :swizzle, :cluster_m, :cluster_n, "
        ":raster, :group_size, :epilogue, :split_k, :sms, :mainloop, :promote_every, :split_cluster, :swap_ab) "
        "ON CONFLICT (key) DO NOTHING");
    s.bind_text(":key", key);
    s.bind_int(":block_m", cfg.block_m);
    s.bind_int(":block_n", cfg.block_n);
    s.bind_int(":block_k", cfg.block_k);
    s.bind_int(":num_stages", cfg.num_stages);
    s.bind_int(":num_math_wg", cfg.num_math_wg);
    s.bind_int(":swizzle", cfg.swizzle);
    s.bind_int(":cluster_m", cfg.cluster_m);
    s.bind_int(":cluster_n", cfg.cluster_n);
    s.bind_text(":raster", to_string(cfg.raster));
    s.bind_int(":group_size", cfg.group);
    s.bind_text(":epilogue", to_string(cfg.epilogue));
    s.bind_int(":split_k", cfg.split_k);
    s.bind_int(":sms", cfg.sms);
    s.bind_text(":mainloop", to_string(cfg.mainloop));
    s.bind_int(":promote_every", cfg.promote_every);
    s.bind_int(":split_cluster", cfg.split_cluster ? 1 : 0);
    s.bind_int(":swap_ab", cfg.swap_ab ? 1 : 0);
    s.run();
  }
  Statement s(c, "SELECT id AS id FROM config WHERE key = :key");
  s.bind_text(":key", key);
  if (!s.step())
    DGT_THROW(ErrorKind::kInternal, "tuning database {}: config {} missing right after its insert", path(), key);
  return s.get_int("id");
}

void TuningDb::put_trial(const DeviceScope& scope, const TrialRecord& t) {
  require_writable(*conn_, "store a trial");
  const Connection& c = *conn_;
  Transaction tx(c);
  const int64_t problem_id = upsert_problem(t.problem);
  const int64_t config_id = upsert_config(t.config);
  {
    Statement s(c, kTrialInsert);
    bind_scope(s, scope);
    s.bind_int(":problem_id", problem_id);
    s.bind_int(":config_id", config_id);
    s.bind_text(":pci_bus_id", scope.pci_bus_id);
    s.bind_real(":compile_ms", t.compile_ms);
    s.bind_int(":registers", t.registers);
    s.bind_int(":spill_bytes", t.spill_bytes);
    s.bind_int(":smem_bytes", t.smem_bytes);
    bind_measurement(s, t);
    s.run();
  }
  tx.commit();
  remember_problem(t.problem, problem_id);
}

TuningDb::Claim TuningDb::claim_trial(const DeviceScope& scope, const Problem& p, const KernelConfig& cfg,
                                      const std::string& owner, const StaleClaimFn& is_stale,
                                      const std::string& protocol_json) {
  require_writable(*conn_, "claim a trial");
  const Connection& c = *conn_;
  // BEGIN IMMEDIATE: the look and the insert happen under the write lock, so two sweeps cannot both see
  // "unclaimed" and both measure.
  Transaction tx(c);
  const int64_t problem_id = upsert_problem(p);
  const int64_t config_id = upsert_config(cfg);
  {
    Statement s(c,
                "SELECT status AS status, error AS holder, created_at AS claimed_at FROM trial WHERE device_id = "
                ":device_id AND environment_id = :environment_id AND problem_id = :problem_id AND config_id = "
                ":config_id AND protocol_name = " +
                    std::string(kProtocolNameOfParam));
    bind_scope(s, scope);
    s.bind_int(":problem_id", problem_id);
    s.bind_int(":config_id", config_id);
    s.bind_text(":protocol", protocol_json);
    if (s.step()) {
      if (s.get_text("status") != to_string(TrialStatus::kClaimed)) return Claim::kStored;  // rolls back
      const std::string holder = s.get_text("holder");
      if (holder != owner && !is_stale(holder, s.get_text("claimed_at"))) return Claim::kBusy;
      if (holder != owner) spdlog::info("  taking over the claim of {} on {} (its sweep stopped)", holder, cfg.key());
    }
  }
  TrialRecord claim;
  claim.problem = p;
  claim.config = cfg;
  claim.status = TrialStatus::kClaimed;
  claim.error = owner;
  claim.protocol = protocol_json;
  {
    Statement s(c, kTrialInsert);
    bind_scope(s, scope);
    s.bind_int(":problem_id", problem_id);
    s.bind_int(":config_id", config_id);
    s.bind_text(":pci_bus_id", scope.pci_bus_id);
    s.bind_real(":compile_ms", 0);
    s.bind_int(":registers", 0);
    s.bind_int(":spill_bytes", 0);
    s.bind_int(":smem_bytes", 0);
    bind_measurement(s, claim);
    s.run();
  }
  tx.commit();
  remember_problem(p, problem_id);
  return Claim::kClaimed;
}

void TuningDb::release_claim(const DeviceScope& scope, const Problem& p, const KernelConfig& cfg,
                             const std::string& owner, const std::string& protocol_json) {
  require_writable(*conn_, "release a claim");
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return;
  Transaction tx(*conn_);
  Statement s(*conn_,
              "DELETE FROM trial WHERE device_id = :device_id AND environment_id = :environment_id AND problem_id = "
              ":problem_id AND status = 'claimed' AND error = :owner AND config_id = (SELECT id FROM config WHERE key "
              "= :config_key) AND protocol_name = " +
                  std::string(kProtocolNameOfParam));
  bind_scope(s, scope);
  s.bind_int(":problem_id", *problem_id);
  s.bind_text(":owner", owner);
  s.bind_text(":config_key", cfg.key());
  s.bind_text(":protocol", protocol_json);
  s.run();
  tx.commit();
}

void TuningDb::put_baseline(const DeviceScope& scope, const BaselineRecord& b) {
  require_writable(*conn_, "store a baseline");
  const Connection& c = *conn_;
  Transaction tx(c);
  const int64_t problem_id = upsert_problem(b.problem);
  {
    Statement s(c, kBaselineInsert);
    bind_scope(s, scope);
    s.bind_int(":problem_id", problem_id);
    s.bind_text(":provider", b.provider);
    s.bind_text(":pci_bus_id", scope.pci_bus_id);
    s.bind_int(":cublas_status", b.cublas_status);
    s.bind_text(":algo", b.algo);
    s.bind_blob(":algo_data", b.algo_data);
    s.bind_int(":workspace_bytes", b.workspace_bytes);
    bind_measurement(s, b);
    s.run();
  }
  tx.commit();
  remember_problem(b.problem, problem_id);
}

void TuningDb::put_sweep_state(const DeviceScope& scope, const Problem& p, const std::string& space,
                               const std::string& strategy, const SweepState& state, const std::string& protocol) {
  require_writable(*conn_, "store a sweep state");
  const Connection& c = *conn_;
  Transaction tx(c);
  const int64_t problem_id = upsert_problem(p);
  {
    Statement s(c,
                "INSERT OR REPLACE INTO sweep (device_id, environment_id, problem_id, space, strategy, protocol_name, "
                "candidates, stored, complete, updated_at) VALUES (:device_id, :environment_id, :problem_id, :space, "
                ":strategy, :protocol_name, :candidates, :stored, :complete, :updated_at)");
    bind_scope(s, scope);
    s.bind_text(":protocol_name", protocol);
    s.bind_int(":problem_id", problem_id);
    s.bind_text(":space", space);
    s.bind_text(":strategy", strategy);
    s.bind_int(":candidates", state.candidates);
    s.bind_int(":stored", state.stored);
    s.bind_int(":complete", state.complete ? 1 : 0);
    s.bind_text(":updated_at", sql::utc_now_iso8601());
    s.run();
  }
  tx.commit();
  remember_problem(p, problem_id);
}

// ---- interleaved measurements (schema 5; db/measurements.hpp) ----

int64_t TuningDb::put_measurement(const DeviceScope& scope, const StoredMeasurement& m) {
  for (const StoredSample& x : m.samples) {
    bool known = false;
    for (const StoredSide& side : m.sides) known = known || side.index == x.side;
    if (!known)
      DGT_THROW(ErrorKind::kInvalid, "measurement of {}: a sample names side {}, which is not listed",
                m.problem.label(), x.side);
  }
  if (conn_->read_only())
    DGT_THROW(ErrorKind::kSqlite, "tuning database {} was opened read-only: cannot store a measurement", conn_->path());
  const int64_t pid = problem_id(m.problem);
  sql::Transaction tx(*conn_);
  sql::Statement ins(
      *conn_,
      "INSERT INTO measurement (device_id, environment_id, problem_id, pci_bus_id, protocol_name, protocol, "
      "rounds, reference_clock_mhz, clock_floor_mhz, created_at) VALUES (:device_id, :environment_id, "
      ":problem_id, :pci_bus_id, :protocol_name, :protocol, :rounds, :reference_clock_mhz, "
      ":clock_floor_mhz, :created_at)");
  ins.bind_int(":device_id", scope.device_id);
  ins.bind_int(":environment_id", scope.environment_id);
  ins.bind_int(":problem_id", pid);
  ins.bind_text(":pci_bus_id", scope.pci_bus_id);
  ins.bind_text(":protocol_name", m.protocol_name);
  ins.bind_text(":protocol", m.protocol_json);
  ins.bind_int(":rounds", m.rounds);
  ins.bind_real(":reference_clock_mhz", m.reference_clock_mhz);
  ins.bind_real(":clock_floor_mhz", m.clock_floor_mhz);
  ins.bind_text(":created_at", m.created_at.empty() ? sql::utc_now_iso8601() : m.created_at);
  ins.run();
  sql::Statement last(*conn_, "SELECT last_insert_rowid() AS id");
  last.step();
  const int64_t id = last.get_int("id");
  for (const StoredSide& side : m.sides) {
    sql::Statement s(
        *conn_,
        "INSERT INTO measurement_side (measurement_id, side, label, kind, config_key, algo, source, "
        "heuristic_count, check_ok, max_rel_err, diff, nan_count, pad_touched) VALUES (:id, :side, :label, "
        ":kind, :config_key, :algo, :source, :heuristic_count, :check_ok, :max_rel_err, :diff, :nan_count, "
        ":pad_touched)");
    s.bind_int(":id", id);
    s.bind_int(":side", side.index);
    s.bind_text(":label", side.label);
    s.bind_text(":kind", side.kind);
    s.bind_text(":config_key", side.config_key);
    s.bind_text(":algo", side.algo);
    s.bind_text(":source", side.source);
    s.bind_int(":heuristic_count", side.heuristic_count);
    if (side.check) {
      s.bind_int(":check_ok", side.check->ok ? 1 : 0);
      s.bind_real(":max_rel_err", side.check->max_rel_err);
      s.bind_real(":diff", side.check->diff);
      s.bind_int(":nan_count", side.check->nan_count);
      s.bind_int(":pad_touched", side.check->pad_touched);
    } else {
      for (const char* n : {":check_ok", ":max_rel_err", ":diff", ":nan_count", ":pad_touched"}) s.bind_null(n);
    }
    s.run();
  }
  for (const StoredSample& x : m.samples) {
    sql::Statement s(*conn_,
                     "INSERT INTO measurement_sample (measurement_id, side, round, position, time_us, sm_clock_mhz, "
                     "flagged) VALUES (:id, :side, :round, :position, :time_us, :sm_clock_mhz, :flagged)");
    s.bind_int(":id", id);
    s.bind_int(":side", x.side);
    s.bind_int(":round", x.round);
    s.bind_int(":position", x.position);
    s.bind_real(":time_us", x.time_us);
    s.bind_real(":sm_clock_mhz", x.sm_clock_mhz);
    s.bind_int(":flagged", x.flagged ? 1 : 0);
    s.run();
  }
  tx.commit();
  return id;
}

// ---- gate history (tables gate_run and gate_result, migration 0006) ----

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

}  // namespace dgt
