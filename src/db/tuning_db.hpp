// The SQLite tuning database: devices (hardware identity), software environments, problems, configs,
// trials, baselines, sweep progress, winners. The queries; db/sqlite.hpp wraps SQLite and db/schema.hpp
// creates and migrates the schema (src/db/schema.sql, src/db/migrations/).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "db/measurements.hpp"
#include "records/protocol_name.hpp"
#include "records/records.hpp"

namespace dgt {

namespace sql {
class Connection;
}

/// Where measurements are stored and read: the device row (hardware identity), the environment row
/// (software environment) and the PCI bus id of the measuring GPU (stored with every trial and
/// baseline, not part of the identity). upsert_device() returns it.
struct DeviceScope {
  int64_t device_id = 0;
  int64_t environment_id = 0;
  std::string pci_bus_id;
  bool operator==(const DeviceScope&) const = default;
};

/// Progress of one sweep of a problem (per device, environment, search space name, strategy and protocol).
struct SweepState {
  int candidates = 0;  ///< candidates the sweep wanted to measure
  int stored = 0;      ///< of those, how many have a stored trial
  bool complete = false;
  std::string updated_at;
};

/// Winner of one problem in one scope: the fastest ok trial, with the baselines beside it and the
/// number of trials per status.
struct WinnerRow {
  TrialRecord trial;
  std::string protocol_name;                     ///< protocol the winner (and the baselines) were timed under
  std::optional<BaselineRecord> cublas_default;  ///< provider kProviderCublasDefault, if stored
  std::optional<BaselineRecord> cublas_tuned;    ///< provider kProviderCublasTuned, if stored
  /// to_string(TrialStatus) -> number of trials of this (scope, problem, protocol) with that status,
  /// over every trial whatever its status; statuses without trials are absent.
  std::map<std::string, int> status_counts;
};

/// The winner of one problem under one software environment of a device, as the loader sees it: the
/// config as its stored key text (parsed by the caller: a key written by an older dgtune may lack
/// tokens a newer format has) and the environment it was measured under.
struct EnvironmentWinner {
  Problem problem;
  std::string config_key;
  double median_us = 0;
  std::string protocol_name;  ///< protocol the winner was timed under, e.g. "cold-l2-v1", "hot-graph-v1"
  int64_t environment_id = 0;
  SoftwareEnv env;
  std::string env_key;  ///< SoftwareEnv::key() as stored
};

/// One run of `dgtune gate --baseline` (table gate_run, schema 6).
struct GateRunRow {
  DeviceScope scope;  ///< device and environment that measured now
  std::string baseline_path, baseline_created_at, baseline_env_key;
  std::string protocol;  ///< protocol name, e.g. "cold-l2-v2"
  double threshold = 0.05, confidence = 0.95;
  int exit_code = 0, shapes = 0, failures = 0, errors = 0;
  std::string created_at;  ///< filled when empty
};

/// One shape of a gate run (table gate_result). Ratios: median time ratio dgtune / cuBLASLt-tuned;
/// slowdowns: fractions of the ratio test (NaN when not tested); times: medians in microseconds.
struct GateResultRow {
  Problem problem;
  std::string name, config_key, config_baseline, verdict, reason;
  double ratio_baseline = 0, ratio_now = 0, slowdown = 0, slowdown_lo = 0, slowdown_hi = 0, p_value = 0;
  double ours_baseline_us = 0, ours_now_us = 0, tuned_baseline_us = 0, tuned_now_us = 0;
};

/// One point of a shape's gate history, oldest first.
struct GateHistoryPoint {
  int64_t run_id = 0;
  std::string created_at;
  std::string device_name, kernel_hash, env_key;
  int exit_code = 0;  ///< of the whole run
  std::string problem_key;
  GateResultRow result;  ///< result.problem is left default; problem_key names it
};

/// Tuning database, schema version schema::latest_version() (7); the DDL is src/db/schema.sql:
///   device(id, hw_key UNIQUE, name, cc, sm_count, memory_bytes, l2_bytes, max_sm_clock_mhz, created_at):
///          the hardware identity (HardwareIdentity::key()); cc = 10 * cc_major + cc_minor (90 for sm_90)
///   environment(id, env_key UNIQUE, driver_version, runtime_version, cublaslt_version, nvrtc_version,
///          kernel_hash, dgtune_version, created_at): the software environment (SoftwareEnv::key())
///   problem(id, key UNIQUE, m, n, k, lda, ldb, ldd, dtype_a, dtype_b, dtype_d, scale_mode, accum, bias, act)
///   config(id, key UNIQUE, block_m .. split_k, sms, mainloop, promote_every): every tunable as a column;
///          raster, epilogue and mainloop as text
///   trial(id, device_id, environment_id, problem_id, config_id, pci_bus_id, status, error, compile_ms, registers,
///         spill_bytes, smem_bytes, median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err,
///         diff, nan_count, pad_touched, sm_clock_mhz, throttled, protocol, protocol_name, created_at,
///         UNIQUE(device_id, environment_id, problem_id, config_id, protocol_name))
///   baseline(id, device_id, environment_id, problem_id, provider, pci_bus_id, status, cublas_status, error, algo,
///            <the same measurement columns>, UNIQUE(device_id, environment_id, problem_id, provider, protocol_name))
///   sweep(id, device_id, environment_id, problem_id, space, strategy, protocol_name, candidates, stored, complete,
///         updated_at, UNIQUE(device_id, environment_id, problem_id, space, strategy, protocol_name))
///   measurement(id, device_id, environment_id, problem_id, pci_bus_id, protocol_name, protocol, rounds,
///          reference_clock_mhz, clock_floor_mhz, created_at), measurement_side(measurement_id, side, label,
///          kind, config_key, algo, source, heuristic_count, check_ok .. pad_touched),
///          measurement_sample(measurement_id, side, round, position, time_us, sm_clock_mhz, flagged)
///   winner (VIEW): per (device_id, environment_id, problem_id, protocol_name) the trial with status 'ok' and
///          the smallest non-NULL median_us, ties broken by the lower config key; with the environment's kernel_hash.
/// protocol_name is the "name" of the row's protocol JSON (records/protocol_name.hpp), computed by the
/// insert from Measurement::protocol: "cold-l2-v1" when the text is not JSON or names none. Every scoped
/// query below takes the protocol name (`protocol`, default the sweep Timer's "cold-l2-v1") and reads
/// only that protocol's rows: a candidate timed under cold-l2 and under hot-graph is two trials.
/// Statuses are stored as to_string(TrialStatus) text for trials and baselines alike.
/// The Timing columns (median_us .. rse, sm_clock_mhz, throttled) are NULL when the record has no
/// timing, which reads back as std::nullopt when median_us is NULL. The Verification columns
/// (verify_ok .. pad_touched) are NULL when it has no verification, which reads back as std::nullopt
/// when verify_ok is NULL. verify_ok rather than diff marks presence because SQLite stores a NaN
/// REAL as NULL, and a NaN diff is exactly what a broken kernel produces; any NULL REAL of a present
/// record reads back as NaN.
/// WAL journal, 10 s busy timeout, foreign keys on, one transaction per put_*. Opening a newer
/// schema than this binary knows throws without modifying the file; an older one (v1, v2) is
/// migrated in place in one transaction. Rows of other devices or environments stay in the file: the
/// scoped queries (trials, winner, has_trial, ...) return only the rows of their scope, and the loader
/// reads other environments of its device through environment_winners().
/// Problem row ids are resolved once per problem and cached (rows are never deleted). Not thread-safe:
/// one object per thread (several processes and connections may share the file).
/// Every SQLite failure throws Error(kSqlite) with the path and SQLite's message.
class TuningDb {
 public:
  /// Opens (and creates, with parent directories, when missing) the database at `path`.
  /// read_only: open an existing file without creating or migrating (the loader does this); the
  /// put_* and upsert_* functions then throw Error(kSqlite).
  /// Throws Error(kSqlite) with the path and SQLite's message on failure, when the file is not a
  /// dgtune database, or when its schema version is newer than this dgtune's (read_only: differs
  /// from it); Error(kIo) when the directory cannot be created or, read_only, the file is missing.
  explicit TuningDb(const std::string& path, bool read_only = false);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  const std::string& path() const;

  /// Inserts the device (hardware identity) and environment rows if new, in one transaction; returns
  /// their ids with fp.pci_bus_id either way.
  DeviceScope upsert_device(const DeviceFingerprint& fp);
  /// The scope of this fingerprint when both its device and environment rows are stored.
  std::optional<DeviceScope> find_device(const DeviceFingerprint& fp) const;
  /// Id of the device row of this hardware identity, if stored.
  std::optional<int64_t> find_hardware(const HardwareIdentity& hw) const;

  /// Id of the problem row, inserting it when missing (one transaction); cached.
  int64_t problem_id(const Problem& p);
  /// Id of the problem row, if stored; cached.
  std::optional<int64_t> find_problem(const Problem& p) const;

  /// True when a trial for (scope, problem, config, protocol) is stored, whatever its status.
  bool has_trial(const DeviceScope& s, const Problem& p, const KernelConfig& c,
                 const std::string& protocol = kSweepTimerProtocol) const;
  /// Config keys of every trial stored for (scope, problem, protocol), whatever its status: one query
  /// (the sweep's resume check, per protocol).
  std::set<std::string> stored_config_keys(const DeviceScope& s, const Problem& p,
                                           const std::string& protocol = kSweepTimerProtocol) const;
  /// Stores one trial in one transaction (problem and config rows are upserted); its protocol name
  /// comes from t.protocol. A trial for the same (scope, problem, config, protocol name) is replaced.
  void put_trial(const DeviceScope& s, const TrialRecord& t);
  /// All trials of a problem in a scope under one protocol: ok trials with a timing by median_us
  /// ascending (ties by config key), then all the others by config key.
  std::vector<TrialRecord> trials(const DeviceScope& s, const Problem& p,
                                  const std::string& protocol = kSweepTimerProtocol) const;
  /// What claim_trial() found.
  enum class Claim {
    kClaimed,  ///< the caller holds the claim now: measure, then put_trial() (which replaces the claim row)
    kStored,   ///< a trial is stored (any status but claimed): nothing to measure
    kBusy,     ///< another owner's claim that is not stale: measure something else and ask again later
  };
  /// (holder, claimed_at) -> true when the claim's owner is gone (tune/claim_owner.hpp decides).
  using StaleClaimFn = std::function<bool(const std::string& holder, const std::string& claimed_at)>;
  /// Claims (scope, problem, config, protocol) for `owner` in one BEGIN IMMEDIATE transaction, so that
  /// sweeps sharing the file never measure a candidate twice: a trial row with status 'claimed', the owner
  /// text in `error` and the claim time in `created_at`; `protocol_json` is stored with it, so its
  /// protocol name (part of the trial key, schema 7) is the sweep's and claims of two protocols do not
  /// block each other. Another owner's claim is taken over when is_stale(holder, claimed_at) says so (its
  /// process died: SIGKILL, power loss). Problem and config rows are upserted. Claims are never counted
  /// as trials (has_trial, stored_config_keys, trials, winners, exports and merges skip them).
  Claim claim_trial(const DeviceScope& s, const Problem& p, const KernelConfig& c, const std::string& owner,
                    const StaleClaimFn& is_stale, const std::string& protocol_json = "");
  /// Deletes `owner`'s claim of (scope, problem, config, protocol) if it is still a claim (a candidate
  /// given up without a measurement). One transaction.
  void release_claim(const DeviceScope& s, const Problem& p, const KernelConfig& c, const std::string& owner,
                     const std::string& protocol_json = "");

  /// True when a baseline of `provider` for (scope, problem, protocol) is stored, whatever its status.
  bool has_baseline(const DeviceScope& s, const Problem& p, const std::string& provider,
                    const std::string& protocol = kSweepTimerProtocol) const;
  /// Stores one baseline in one transaction (the problem row is upserted); its protocol name comes from
  /// b.protocol. A baseline for the same (scope, problem, provider, protocol name) is replaced.
  void put_baseline(const DeviceScope& s, const BaselineRecord& b);
  /// The stored baseline of `provider` for (scope, problem, protocol), if any.
  std::optional<BaselineRecord> baseline(const DeviceScope& s, const Problem& p, const std::string& provider,
                                         const std::string& protocol = kSweepTimerProtocol) const;

  /// Records how far a sweep of `p` under `protocol` got (one transaction; replaces the previous state).
  void put_sweep_state(const DeviceScope& s, const Problem& p, const std::string& space, const std::string& strategy,
                       const SweepState& state, const std::string& protocol = kSweepTimerProtocol);
  std::optional<SweepState> sweep_state(const DeviceScope& s, const Problem& p, const std::string& space,
                                        const std::string& strategy,
                                        const std::string& protocol = kSweepTimerProtocol) const;

  /// The winner of one problem in a scope under `protocol`, if it has an ok trial with a timing; the
  /// baselines and status counts beside it are of the same protocol.
  std::optional<WinnerRow> winner(const DeviceScope& s, const Problem& p,
                                  const std::string& protocol = kSweepTimerProtocol) const;
  /// Winners under `protocol` of every problem of the scope that has one, ordered by problem (m, n, k, key).
  std::vector<WinnerRow> winners(const DeviceScope& s, const std::string& protocol = kSweepTimerProtocol) const;
  /// The winner in the scope of the problem with the same N, K, dtypes, scale mode and accumulation
  /// (leading dimensions may differ) whose M is nearest to p.m by |log M - log p.m|. p itself counts
  /// when it has a winner. Ties go to the larger M, then to p itself, then to the lower problem key.
  /// Throws Error(kInvalid) when p.m < 1.
  /// Only winners under `protocol` count.
  std::optional<WinnerRow> nearest_winner(const DeviceScope& s, const Problem& p,
                                          const std::string& protocol = kSweepTimerProtocol) const;

  /// The loader's query: the winner of every environment of device `device_id` for p and for every
  /// problem of its family (same N, K, dtypes, scale mode, accumulation; any M and leading
  /// dimensions) under every protocol (EnvironmentWinner::protocol_name), unordered. The loader's rule
  /// (loader/choice.hpp) picks one.
  std::vector<EnvironmentWinner> environment_winners(int64_t device_id, const Problem& p) const;

  // ---- interleaved measurements (schema 5; db/measurements.hpp, implemented in db/measurements.cpp) ----

  /// Every device row with its winner and measurement counts, by id.
  std::vector<DeviceRow> devices() const;
  /// Stores one measurement with its sides and samples in one transaction under `s` (the problem row is
  /// upserted); returns its id. Throws Error(kInvalid) when a sample names a side that is not listed.
  int64_t put_measurement(const DeviceScope& s, const StoredMeasurement& m);
  /// The newest measurement of every (problem, protocol name) of device `device_id` (any environment),
  /// with sides and samples, ordered by problem (m, n, k, key) then protocol name.
  std::vector<StoredMeasurement> latest_measurements(int64_t device_id) const;
  /// Every winner of device `device_id` (one per environment, problem and protocol; the winner view) with
  /// its environment and the cuBLASLt-tuned baseline of the same protocol, ordered by problem (m, n, k,
  /// key), then environment id, then protocol name.
  std::vector<ExportRow> export_rows(int64_t device_id) const;
  /// Appends one gate run and its per-shape results in one transaction (db/gate_history.cpp);
  /// returns the run id.
  int64_t put_gate_run(const GateRunRow& run, const std::vector<GateResultRow>& results);
  /// The gate history of one shape, oldest first: `shape` is a problem key, a shapes-file name, or
  /// "MxNxK" (every problem with those dimensions).
  std::vector<GateHistoryPoint> gate_history(const std::string& shape) const;

 private:
  int64_t upsert_problem(const Problem& p);
  int64_t upsert_config(const KernelConfig& c);
  void remember_problem(const Problem& p, int64_t id) const;

  std::unique_ptr<sql::Connection> conn_;
  mutable std::unordered_map<std::string, int64_t> problem_ids_;  ///< Problem::key() -> committed row id
};

}  // namespace dgt
