// Before a command that stores results (sweep, run, gate's history, compare --save, db prune, db migrate) opens the
// GPU or measures anything: will the tuning DB it writes open for writing? Only read-only checks, so a command that
// fails afterwards (no GPU, a device of another kind) leaves the file as it was: not created, not migrated, no
// -wal/-shm files beside it. The writer itself (db/tuning_db.hpp) is opened when there is something to store.
#pragma once

#include <string>
#include <string_view>

namespace dgt {

/// Checks, without writing, that `path` can be opened by TuningDb: Error(kUsage) naming `flag` and the path when
/// something other than a regular file is there (a directory, FIFO, socket or device); Error(kIo) when the file, or
/// the folder it would be created in, is not writable by this process; Error(kSqlite) (the message the writer would
/// give) when the file is damaged (SQLite's quick_check, pointing to `dgtune db check`), not a dgtune DB, of a newer
/// schema version or of a version no dgtune writes. A missing or empty file passes: the writer creates the schema in
/// it.
void check_db_writable(const std::string& path, std::string_view flag);

/// check_db_writable() for a command that changes a DB in place and never creates one (`command`: "db migrate", "db
/// prune"): an empty file, or an SQLite file without dgtune's schema, is Error(kSqlite) "is not a dgtune tuning
/// database" as well, as the readers say. Returns the file's schema version.
int check_existing_db_writable(const std::string& path, std::string_view flag, std::string_view command);

/// For a command that reads a whole DB (export, db merge's inputs, prune --dry-run): Error(kSqlite) naming the file
/// and `dgtune db check` when SQLite's quick_check finds it damaged, so no garbage is read as results. Read-only.
void check_db_intact(const std::string& path);

}  // namespace dgt
