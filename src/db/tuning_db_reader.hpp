// The tuning database's reader: every query of the SQLite tuning database (devices, problems, trials,
// baselines, sweep progress, winners, stored measurements, export rows, gate history) on a file opened
// read-only. It never creates, migrates or writes a file and links without the writer (db/tuning_db.hpp:
// inserts, claims, migrations), so the run-time loader needs only this. db/sqlite.hpp wraps SQLite;
// db/schema.hpp checks the file's schema version.
#pragma once

#include <cstdint>
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
  /// Median SM clock (MHz) of the verified ok trials of this (scope, problem, protocol) that recorded one (> 0),
  /// and how many did; 0 and 0 without any. Beside the winner's own clock it shows a single-pass sweep picking the
  /// trial that ran at a higher clock (tune/clock_lead.hpp).
  double trials_median_clock_mhz = 0;
  int clocked_trials = 0;
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

/// A stored cuBLASLt-tuned algorithm of one problem (baseline rows with algo_data, schema 10): what the loader may
/// replay instead of a dgtune kernel when it was faster (loader/choice.hpp).
struct StoredCublasLtAlgo {
  Problem problem;
  std::string algo;                ///< readable attributes (describe_cublaslt_algo + rank)
  std::vector<uint8_t> algo_data;  ///< the cublasLtMatmulAlgo_t, 64 bytes
  int64_t workspace_bytes = 0;
  double median_us = 0;            ///< its median under protocol_name, from the same sweep as the trials
  /// The median of cuBLASLt's heuristic top-1 (provider cublaslt-default) on the same problem, environment and
  /// protocol; 0 when none was stored. What the loader runs off a tuned M is the heuristic, so its checks use this.
  double heuristic_us = 0;
  std::string protocol_name;
  int64_t environment_id = 0;
  int cublaslt_version = 0;  ///< cublasLtGetVersion() of the environment that stored it: the replay rule's key
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

/// Tuning database, schema version schema::latest_version(); the DDL is src/db/schema.sql:
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
///            algo_data (schema 10: the cublasLtMatmulAlgo_t bytes, NULL when none), workspace_bytes,
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
/// Rows of other devices or environments stay in the file: the scoped queries (trials, winner, has_trial,
/// ...) return only the rows of their scope, and the loader reads other environments of its device through
/// environment_winners(). Claims (status 'claimed', TuningDb::claim_trial) are never counted as trials.
/// Problem row ids are resolved once per problem and cached (rows are never deleted). Not thread-safe:
/// one object per thread (several processes and connections may share the file).
/// Every SQLite failure throws Error(kSqlite) with the path and SQLite's message.
///
/// TuningDbReader is for every user that only reads (the loader links nothing else of db/): it opens a file
/// read-only and never creates, migrates or writes it (db/sqlite.hpp's read-only rules: a writable file with
/// `PRAGMA query_only`, a deployed read-only one immutable, no -wal/-shm files left behind). The writer,
/// TuningDb (db/tuning_db.hpp), derives from it: a tuner queries through the same functions.
class TuningDbReader {
 public:
  /// Opens the existing database at `path` read-only. Throws Error(kIo) naming the path when the file is
  /// missing (nothing is created); Error(kSqlite) with the path and SQLite's message on failure, when the
  /// file is not a dgtune database, or when its schema version differs from schema::latest_version() (newer:
  /// use a newer dgtune; older: `dgtune db migrate --db PATH`). The file is never modified.
  explicit TuningDbReader(const std::string& path);
  ~TuningDbReader();
  TuningDbReader(const TuningDbReader&) = delete;
  TuningDbReader& operator=(const TuningDbReader&) = delete;

  const std::string& path() const;

  /// The scope of this fingerprint when both its device and environment rows are stored.
  std::optional<DeviceScope> find_device(const DeviceFingerprint& fp) const;
  /// Id of the device row of this hardware identity, if stored.
  std::optional<int64_t> find_hardware(const HardwareIdentity& hw) const;
  /// Id of the problem row, if stored; cached.
  std::optional<int64_t> find_problem(const Problem& p) const;

  /// True when a trial for (scope, problem, config, protocol) is stored, whatever its status.
  bool has_trial(const DeviceScope& s, const Problem& p, const KernelConfig& c,
                 const std::string& protocol = kSweepTimerProtocol) const;
  /// Config keys of every trial stored for (scope, problem, protocol), whatever its status: one query
  /// (the sweep's resume check, per protocol).
  std::set<std::string> stored_config_keys(const DeviceScope& s, const Problem& p,
                                           const std::string& protocol = kSweepTimerProtocol) const;
  /// All trials of a problem in a scope under one protocol: ok trials with a timing by median_us
  /// ascending (ties by config key), then all the others by config key.
  std::vector<TrialRecord> trials(const DeviceScope& s, const Problem& p,
                                  const std::string& protocol = kSweepTimerProtocol) const;

  /// True when a baseline of `provider` for (scope, problem, protocol) is stored, whatever its status.
  bool has_baseline(const DeviceScope& s, const Problem& p, const std::string& provider,
                    const std::string& protocol = kSweepTimerProtocol) const;
  /// The stored baseline of `provider` for (scope, problem, protocol), if any.
  std::optional<BaselineRecord> baseline(const DeviceScope& s, const Problem& p, const std::string& provider,
                                         const std::string& protocol = kSweepTimerProtocol) const;

  /// How far the last sweep of `p` under `protocol` with this space and strategy got, if one was recorded.
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
  /// The ladder rule's candidates (loader/choice.hpp rerank_ladder): every ok trial with a timing of device `device_id`
  /// in p's family, every environment and protocol, unordered, as EnvironmentWinner rows (the trial's config and median
  /// in place of the winner's; the environment as for winners).
  std::vector<EnvironmentWinner> family_trials(int64_t device_id, const Problem& p) const;
  /// The loader's other query: every verified cuBLASLt-tuned baseline with its algorithm bytes (schema 10) of
  /// device `device_id` in p's family, every environment and protocol, unordered.
  std::vector<StoredCublasLtAlgo> cublaslt_winners(int64_t device_id, const Problem& p) const;

  // ---- interleaved measurements (schema 5; db/measurements.hpp, implemented in db/measurements.cpp) ----

  /// Every device row with its winner and measurement counts, by id.
  std::vector<DeviceRow> devices() const;
  /// The newest measurement of every (problem, protocol name) of device `device_id` (any environment),
  /// with sides and samples, ordered by problem (m, n, k, key) then protocol name. Error(kSqlite) naming the file and
  /// the measurement when its rows are damaged: a side outside 0..n-1 or stored twice, a sample of a side not stored,
  /// a sample whose time_us is not a positive finite number (side and round named).
  std::vector<StoredMeasurement> latest_measurements(int64_t device_id) const;
  /// Every winner of device `device_id` (one per environment, problem and protocol; the winner view) with
  /// its environment and the cuBLASLt-tuned baseline of the same protocol, ordered by problem (m, n, k,
  /// key), then environment id, then protocol name.
  std::vector<ExportRow> export_rows(int64_t device_id) const;
  /// The gate history of one shape, oldest first (db/gate_history.cpp): `shape` is a problem key, a
  /// shapes-file name, or "MxNxK" (every problem with those dimensions).
  std::vector<GateHistoryPoint> gate_history(const std::string& shape) const;

 protected:
  /// The writer's constructor: `conn` is open and its schema checked (and migrated) already.
  explicit TuningDbReader(std::unique_ptr<sql::Connection> conn);
  /// Caches the id of a committed problem row (the writer calls it after each commit that stored one).
  void remember_problem(const Problem& p, int64_t id) const;

  std::unique_ptr<sql::Connection> conn_;

 private:
  mutable std::unordered_map<std::string, int64_t> problem_ids_;  ///< Problem::key() -> committed row id
};

}  // namespace dgt
