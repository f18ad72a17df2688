// The tuning database's schema: src/db/schema.sql (the whole current schema, for new files) and the
// numbered migrations src/db/migrations/NNNN_*.sql (for older files), both embedded into the binary.
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
/// The version this dgtune writes: the highest migration number (never below schema_sql_version()).
int latest_version();

/// What a file holds: its schema version (0 without a schema_version table, e.g. a new file) and
/// whether it holds any table, view or index at all.
struct FileState {
  int version = 0;
  bool empty = true;
};

/// Checks the file and brings it to latest_version(). The version is read before anything writes: a
/// newer or foreign file stays byte-for-byte as it is (even switching the journal mode would rewrite
/// its header), and Error(kSqlite) says why. read_only: the file must already be at latest_version().
/// Otherwise the file is switched to WAL and, when older, created or migrated in ONE transaction
/// (new file: schema.sql, then every migration above its version; version v: migrations v+1..latest);
/// a failure leaves the file as it was.
void open_and_migrate(const sql::Connection& c);

/// Registers the SQL functions migrations may call: dgt_hardware_key(name, cc, sm_count,
/// memory_bytes, l2_bytes) and dgt_environment_key(driver, runtime, cublaslt, nvrtc, kernel_hash,
/// dgtune_version), the keys of records/records.hpp (cc = 10 * major + minor).
void register_functions(const sql::Connection& c);

}  // namespace dgt::schema
