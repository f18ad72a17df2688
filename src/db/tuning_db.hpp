// The SQLite tuning database: device fingerprints, problems, configs, trials, baselines, winners.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "records/records.hpp"

struct sqlite3;

namespace dgt {

/// Progress of one sweep of a problem (per device, search space name and strategy).
struct SweepState {
  int candidates = 0;   ///< candidates the sweep wanted to measure
  int stored = 0;       ///< of those, how many have a stored trial
  bool complete = false;
  std::string updated_at;
};

/// Winner of one problem on one device: the fastest ok trial, with the baselines beside it and the
/// number of trials per status.
struct WinnerRow {
  TrialRecord trial;
  std::optional<BaselineRecord> cublas_default;  ///< provider kProviderCublasDefault, if stored
  std::optional<BaselineRecord> cublas_tuned;    ///< provider kProviderCublasTuned, if stored
  /// to_string(TrialStatus) -> number of trials of this (device, problem) with that status, over
  /// every trial whatever its status; statuses without trials are absent.
  std::map<std::string, int> status_counts;
};

/// Tuning database. Schema (schema_version table, current version kSchemaVersion):
///   device(id, fingerprint UNIQUE, name, cc, sm_count, memory_bytes, l2_bytes, max_sm_clock_mhz,
///          driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash, dgtune_version, created_at)
///          cc = 10 * cc_major + cc_minor (90 for sm_90)
///   problem(id, key UNIQUE, m, n, k, lda, ldb, ldd, dtype_a, dtype_b, dtype_d, scale_mode, accum)
///          dtypes, scale_mode and accum as their to_string() text
///   config(id, key UNIQUE, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m, cluster_n,
///          raster, group_size, epilogue, split_k, sms [schema 2])
///          raster ("m"/"n") and epilogue as their to_string() text
///   trial(id, device_id, problem_id, config_id, status, error, compile_ms, registers, spill_bytes, smem_bytes,
///         median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err, diff, nan_count,
///         pad_touched, sm_clock_mhz, throttled, protocol, created_at, UNIQUE(device_id, problem_id, config_id))
///   baseline(id, device_id, problem_id, provider, status, cublas_status, error, algo, median_us, p10_us, p90_us,
///            samples, rse, tflops, gbps, verify_ok, max_rel_err, diff, nan_count, pad_touched, sm_clock_mhz,
///            throttled, protocol, created_at, UNIQUE(device_id, problem_id, provider))
///   winner (VIEW: trial_id, device_id, problem_id, config_id, problem_key, config_key, median_us, tflops):
///          per (device_id, problem_id) the trial with status 'ok' and the smallest non-NULL median_us,
///          ties broken by the lower config key.
/// The Timing columns (median_us .. rse, sm_clock_mhz, throttled) are NULL when the record has no
/// timing, which reads back as std::nullopt when median_us is NULL. The Verification columns
/// (verify_ok .. pad_touched) are NULL when it has no verification, which reads back as std::nullopt
/// when verify_ok is NULL. verify_ok rather than diff marks presence because SQLite stores a NaN
/// REAL as NULL, and a NaN diff is exactly what a broken kernel produces; any NULL REAL of a present
/// record reads back as NaN.
/// WAL journal, 10 s busy timeout, foreign keys on, one transaction per put_*. Opening a newer
/// schema than this binary knows throws without modifying the file; an older one is migrated in
/// place. Rows of other devices or kernel hashes stay in the file and are simply not returned for
/// this fingerprint. Every SQLite failure throws Error(kSqlite) with the path and SQLite's message.
class TuningDb {
 public:
  static constexpr int kSchemaVersion = 2;

  /// Opens (and creates, with parent directories, when missing) the database at `path`.
  /// read_only: open an existing file without creating or migrating (the loader does this); the
  /// put_* and upsert_* functions then throw Error(kSqlite).
  /// Throws Error(kSqlite) with the path and SQLite's message on failure, when the file is not a
  /// dgtune database, or when its schema version is newer than kSchemaVersion (read_only: differs
  /// from it); Error(kIo) when the directory cannot be created or, read_only, the file is missing.
  explicit TuningDb(const std::string& path, bool read_only = false);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  const std::string& path() const { return path_; }

  /// Inserts the device row if new; returns its id either way.
  int64_t upsert_device(const DeviceFingerprint& fp);
  /// Id of the device row with this fingerprint, if stored.
  std::optional<int64_t> find_device(const std::string& fingerprint) const;

  /// True when a trial for (device, problem, config) is stored, whatever its status.
  bool has_trial(int64_t device_id, const Problem& p, const KernelConfig& c) const;
  /// Stores one trial in one transaction (problem and config rows are upserted). A trial for the
  /// same (device, problem, config) is replaced.
  void put_trial(int64_t device_id, const TrialRecord& t);
  /// All trials of a problem on a device: ok trials with a timing by median_us ascending (ties by
  /// config key), then all the others by config key.
  std::vector<TrialRecord> trials(int64_t device_id, const Problem& p) const;

  /// True when a baseline of `provider` for (device, problem) is stored, whatever its status.
  bool has_baseline(int64_t device_id, const Problem& p, const std::string& provider) const;
  /// Stores one baseline in one transaction (the problem row is upserted). A baseline for the same
  /// (device, problem, provider) is replaced.
  void put_baseline(int64_t device_id, const BaselineRecord& b);
  /// The stored baseline of `provider` for (device, problem), if any.
  std::optional<BaselineRecord> baseline(int64_t device_id, const Problem& p, const std::string& provider) const;

  /// Records how far a sweep of `p` got (one transaction; replaces the previous state).
  void put_sweep_state(int64_t device_id, const Problem& p, const std::string& space, const std::string& strategy,
                       const SweepState& state);
  std::optional<SweepState> sweep_state(int64_t device_id, const Problem& p, const std::string& space,
                                        const std::string& strategy) const;

  /// The winner of one problem, if it has an ok trial with a timing.
  std::optional<WinnerRow> winner(int64_t device_id, const Problem& p) const;
  /// Winners of every problem of the device that has one, ordered by problem (m, n, k, key).
  std::vector<WinnerRow> winners(int64_t device_id) const;
  /// The winner of the problem with the same N, K, dtypes, scale mode and accumulation (leading
  /// dimensions may differ) whose M is nearest to p.m by |log M - log p.m|; used by the loader for
  /// shapes that were not tuned. p itself counts when it has a winner. Ties go to the larger M, then
  /// to p itself, then to the lower problem key. Throws Error(kInvalid) when p.m < 1.
  std::optional<WinnerRow> nearest_winner(int64_t device_id, const Problem& p) const;

 private:
  void exec(const char* sql) const;
  void migrate();
  int64_t upsert_problem(const Problem& p);
  int64_t upsert_config(const KernelConfig& c);
  std::optional<int64_t> find_problem(const Problem& p) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  bool read_only_ = false;
};

}  // namespace dgt
