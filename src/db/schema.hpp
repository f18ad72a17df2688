// The tuning database's schema: src/db/schema.sql (the whole current schema, for new files) and the
// numbered migrations src/db/migrations/NNNN_*.sql (for older files), both embedded into the binary.
// Two translation units: db/schema_check.cpp holds what a reader needs (the version this dgtune knows and
// the checks of a file's version; no schema text, no migration), db/schema.cpp creates and migrates.
#pragma once

#include <string>
#include <vector>

#include "db/sqlite.hpp"

namespace dgt::schema {

/// One embedded migration: src/db/migrations/NNNN_name.sql brings a file from version NNNN-1 to NNNN.
struct Migration {
  int version = 0;
  std::string name;  ///< file name without ".sql", e.g. "0003_identity_split"
  std::string sql;
};

/// The embedded migrations in version order. Throws Error(kInternal) when two files share a number, a
/// number is skipped, or a name does not start with four digits and '_'.
const std::vector<Migration>& migrations();
/// Text of src/db/schema.sql.
const std::string& schema_sql();
/// The version schema.sql creates (its `INSERT INTO schema_version (version) VALUES (N)`).
int schema_sql_version();
/// The version this dgtune reads and writes: the highest migration number (never below schema_sql_version()).
/// Computed by CMake from the same files when it configures (generated/db_schema_version.cpp), so a reader
/// checks a file against it without linking the schema text and the migrations; migrate() and a unit test
/// check that it equals max(schema_sql_version(), the last migration's number).
int latest_version();

/// What a file holds: its schema version (0 without a schema_version table, e.g. a new file) and
/// whether it holds any table, view or index at all.
struct FileState {
  int version = 0;
  bool empty = true;
  bool has_version_table = false;  ///< a schema_version table exists (its version may still be 0 or negative)
};

/// Reads the FileState. Call it inside a transaction: another process may be creating the schema
/// right now, and two separate snapshots could see "no schema_version" and then "not empty".
FileState read_file_state(const sql::Connection& c);
/// Refuses, with Error(kSqlite) and before anything writes, a file this dgtune must leave as it is: a schema
/// version newer than latest_version(), a version below 1 (no dgtune writes one), or a database that holds tables
/// but no schema_version (not dgtune's).
void refuse_unusable(const sql::Connection& c, const FileState& st);
/// The read-only open's check (TuningDbReader; open_and_migrate() of a read-only connection): the file must be
/// a dgtune database at latest_version() exactly; Error(kSqlite) naming both versions otherwise (older: "open
/// it once read-write with this dgtune to migrate it"). Reads one snapshot; writes nothing.
void check_read_only(const sql::Connection& c);

/// Checks the file and brings it to latest_version(). The version is read before anything writes: a
/// newer or foreign file stays byte-for-byte as it is (even switching the journal mode would rewrite
/// its header), and Error(kSqlite) says why. read_only: check_read_only() only.
/// Otherwise the file is switched to WAL and, when older, created or migrated in ONE transaction
/// (new file: schema.sql, then every migration above its version; version v: migrations v+1..latest);
/// a failure leaves the file as it was.
void open_and_migrate(const sql::Connection& c);

/// Registers the SQL functions migrations may call: dgt_hardware_key(name, cc, sm_count,
/// memory_bytes, l2_bytes) and dgt_environment_key(driver, runtime, cublaslt, nvrtc, kernel_hash,
/// dgtune_version), the keys of records/records.hpp (cc = 10 * major + minor).
void register_functions(const sql::Connection& c);

}  // namespace dgt::schema
