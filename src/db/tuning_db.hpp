// The tuning database's writer: the tuner's (and the gate's, and `compare --save`'s) inserts, claims and
// upserts; it opens a file read-write, creating and migrating it (db/schema.hpp: src/db/schema.sql and
// src/db/migrations/). Every query is the reader's (db/tuning_db_reader.hpp), which it derives from.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"

namespace dgt {

/// The writer of the tuning database (the schema and what the queries return: TuningDbReader). WAL journal,
/// 10 s busy timeout, foreign keys on, one transaction per put_*. Opening a newer schema than this binary
/// knows throws without modifying the file; an older one (v1, v2, ...) is migrated in place in one
/// transaction. Not thread-safe: one object per thread (several processes and connections may share the file).
/// Every SQLite failure throws Error(kSqlite) with the path and SQLite's message.
class TuningDb : public TuningDbReader {
 public:
  /// Opens (and creates, with parent directories, when missing) the database at `path`, migrating an older
  /// schema. read_only: open an existing file without creating or migrating, as TuningDbReader does; the
  /// put_* and upsert_* functions then throw Error(kSqlite). (Kept for callers not yet moved to
  /// TuningDbReader; a read-only user should construct the reader.)
  /// Throws Error(kSqlite) with the path and SQLite's message on failure, when the file is not a
  /// dgtune database, or when its schema version is newer than this dgtune's (read_only: differs
  /// from it); Error(kIo) when the directory cannot be created or, read_only, the file is missing.
  explicit TuningDb(const std::string& path, bool read_only = false);
  ~TuningDb();

  /// Inserts the device (hardware identity) and environment rows if new, in one transaction; returns
  /// their ids with fp.pci_bus_id either way.
  DeviceScope upsert_device(const DeviceFingerprint& fp);

  /// Id of the problem row, inserting it when missing (one transaction); cached.
  int64_t problem_id(const Problem& p);

  /// Stores one trial in one transaction (problem and config rows are upserted); its protocol name
  /// comes from t.protocol. A trial for the same (scope, problem, config, protocol name) is replaced.
  void put_trial(const DeviceScope& s, const TrialRecord& t);
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

  /// The per-group row counts a grouped problem is measured with (schema 11: problem.group_rows, comma list of G
  /// counts, and group_rows_text, as the shapes file gave them). They are not part of the problem's key: the first
  /// call for a problem stores them (upserting the problem row, one transaction) and later calls leave them. Returns
  /// the counts stored now (the first call's), so a caller whose distribution differs can say that the stored
  /// trials were measured with another one. Throws Error(kInvalid) for a problem that is not grouped.
  std::string put_group_rows(const Problem& keyed, const std::string& rows_list, const std::string& rows_text);

  /// Stores one baseline in one transaction (the problem row is upserted); its protocol name comes from
  /// b.protocol. A baseline for the same (scope, problem, provider, protocol name) is replaced.
  void put_baseline(const DeviceScope& s, const BaselineRecord& b);

  /// Records how far a sweep of `p` under `protocol` got (one transaction; replaces the previous state).
  void put_sweep_state(const DeviceScope& s, const Problem& p, const std::string& space, const std::string& strategy,
                       const SweepState& state, const std::string& protocol = kSweepTimerProtocol);

  /// Stores one interleaved measurement with its sides and samples in one transaction under `s` (the problem
  /// row is upserted); returns its id. Throws Error(kInvalid) when a sample names a side that is not listed.
  int64_t put_measurement(const DeviceScope& s, const StoredMeasurement& m);
  /// Appends one gate run and its per-shape results in one transaction; returns the run id.
  int64_t put_gate_run(const GateRunRow& run, const std::vector<GateResultRow>& results);

 private:
  int64_t upsert_problem(const Problem& p);
  int64_t upsert_config(const KernelConfig& c);
};

}  // namespace dgt
