// `dgtune db check | devices | prune | merge`: maintenance of tuning databases (with the CI gate's history).
//
// Merge rules (written here once; README "Tuning database" repeats them):
//   1. Identity rows are unioned by their keys: device by hw_key (hardware identity), environment by env_key,
//      problem by key, config by key. Devices of other hardware stay separate rows: their trials, baselines
//      and winners sit side by side in the output and are never mixed (every query is per device).
//   2. Trials are unioned. Two trials with the same (hardware, environment -- which holds the kernel hash --,
//      problem, config) are duplicates: the one with status "ok" wins over a non-ok one; between two of the same
//      okness the one with more timing samples wins; on a tie the first input (A) wins. So the result does not
//      depend on anything but the files and their order. (A trial row keeps only its timing summary, so the
//      samples of the losing duplicate are dropped; stored compare measurements keep every sample.)
//   3. Baselines: the same rule per (hardware, environment, problem, provider).
//   4. Winners are not stored: the winner view recomputes them from the merged trials.
//   5. Sweep state per (hardware, environment, problem, space, strategy): a state present in both inputs is
//      complete only when both were complete; candidates and stored are the larger of the two. A state present in
//      one input is copied as it is.
//   6. Gate history: every run of A, then every run of B, appended with new run ids (the history is a log).
// More than two inputs fold left by the same rules: A B C merges as (A merged with B) merged with C, so a tie
// goes to the earliest input, a sweep state is complete only when every input holding it was, and the gate
// runs follow the input order. (`dgtune sweep --shard i/n` shards hold disjoint problems, so for them the
// order only matters for the identity rows' non-key columns.)
// The inputs are never modified: each is copied (VACUUM INTO) to a temporary file, which is migrated to the
// current schema when older, and read from there. The output must not exist; it is written to OUT.merge.tmp
// and renamed when complete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dgt::dbm {

/// What `db check` found. Opens the file read-only and never migrates it.
struct CheckReport {
  int version = 0;                    ///< schema version of the file (0: not a dgtune DB)
  int latest = 0;                     ///< the version this dgtune writes
  std::vector<std::string> problems;  ///< broken invariants and integrity errors (empty: healthy)
  std::vector<std::string> notes;     ///< informational (older schema: what was not checked)
  bool ok() const { return problems.empty(); }
};
/// SQLite's integrity_check (when it finds damage, only its findings are reported: dgtune's queries would fail on
/// the damaged pages) and foreign_key_check, then dgtune's invariants: one schema_version row not newer than this
/// dgtune; device.hw_key and environment.env_key equal the keys recomputed from their columns; problem.key equals
/// Problem::key() of its columns; config keys parse and every tunable column agrees with the key; trial and baseline
/// statuses are known; an ok trial has a timing and a passed verification; an ok trial's or baseline's median_us is a
/// positive finite number and its protocol is named; a sweep stores no more than its candidates and is complete only
/// when it stored them all; stored compare samples are positive finite times. Throws Error(kIo/kSqlite) when the
/// file cannot be opened.
CheckReport check(const std::string& path);

/// One device (hardware identity) of a DB with what it holds.
struct DeviceSummary {
  int64_t id = 0;
  std::string hw_key, name;
  int cc = 0, sm_count = 0;
  int64_t memory_bytes = 0, l2_bytes = 0;
  int environments = 0, trials = 0, baselines = 0, winners = 0;
};
/// Read-only; the file must be at the current schema (Error(kSqlite) saying to open it read-write otherwise).
std::vector<DeviceSummary> devices(const std::string& path);

/// What prune removed (or would remove).
struct PruneReport {
  struct PerHash {
    std::string kernel_hash;
    int trials = 0, sweeps = 0;
  };
  std::vector<PerHash> removed;  ///< per kernel hash other than the kept one
  int kept_trials = 0;
  bool dry_run = true;
};
/// Deletes the trials (and sweep states) measured with a kernel hash other than `keep_kernel_hash`
/// (the running kernel's), in one transaction; baselines (cuBLASLt's, not our kernel's), identity rows and the
/// gate history stay. dry_run: counts only, nothing written. Migrates an older file (it is a writer).
PruneReport prune(const std::string& path, const std::string& keep_kernel_hash, bool dry_run);

/// Writes a copy of the tuning DB at `path` for read-only deployment to the new file `out` (`dgtune export
/// --format db`): every device, a consistent snapshot (VACUUM INTO, WAL content included), claims of running
/// sweeps dropped, journal_mode=DELETE so readers need no -wal/-shm files (it opens in a read-only folder and
/// leaves nothing behind). The source is only read; it must be at the current schema version. Written to
/// `out`.tmp and renamed, so `out` is complete or absent. Throws Error(kUsage) when out exists,
/// Error(kSqlite/kIo) naming the file otherwise.
void deployable_copy(const std::string& path, const std::string& out);

/// Row counts of one merge.
struct MergeReport {
  struct Table {
    std::string name;
    std::vector<int64_t> from;  ///< rows in each input (its migrated copy), in input order
    int64_t merged = 0;         ///< rows in the output; duplicates = sum(from) - merged (trial, baseline, sweep)
  };
  std::vector<Table> tables;
};
/// Merges `inputs` (two or more, in this order) into the new file `out` by the rules at the top of this file,
/// folding left: one transaction per input into OUT.merge.tmp, renamed to `out` at the end (complete or absent).
/// Every input is checked (exists, a dgtune DB, not newer than this dgtune) before anything is written.
/// Throws Error(kUsage) for fewer than two inputs, when out exists, when two inputs are the same file, or for a
/// bad input (naming it); Error(kSqlite/kIo) naming the file otherwise.
MergeReport merge(const std::vector<std::string>& inputs, const std::string& out);
/// merge({a, b}, out).
MergeReport merge(const std::string& a, const std::string& b, const std::string& out);

}  // namespace dgt::dbm
