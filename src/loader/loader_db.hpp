// How dgt::Gemm opens its tuning DB: read-only, and never fatal (internal header; GPU-free, so unit tests
// call it on damaged, foreign and newer files).
#pragma once

#include <memory>
#include <string>

#include "db/tuning_db_reader.hpp"

namespace dgt {

/// Opens the loader's tuning DB at `path` with the reader (TuningDbReader, read-only; sql::Connection: a
/// writable file with `PRAGMA query_only`, a deployed read-only one immutable; no -wal/-shm files are left
/// behind). Never throws for the file's sake: when it is missing, damaged ("file is not a database"), not a
/// dgtune DB, or of another schema version (newer than this dgtune, or older and never migrated), it logs ONE
/// warning naming the file and the reason (SQLite's message and code, or both schema versions) and returns
/// nullptr: the caller then runs default configs. The file is never modified. `from` says where the path came from
/// ("GemmOptions::db_path", "$DGTUNE_DB"), named in the warning.
std::unique_ptr<TuningDbReader> open_loader_db(const std::string& path, const std::string& from = "");

}  // namespace dgt
