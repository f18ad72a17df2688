// The reader's half of db/schema.hpp: the version this dgtune knows and the checks of a file's version.
// No schema text and no migration here, so a read-only user (TuningDbReader) links without them.
#include "db/schema.hpp"

#include "core/error.hpp"

namespace dgt {
// Generated when CMake configures (CMakeLists.txt): max(schema.sql's version, the last migration's number).
int db_schema_latest_version();
}  // namespace dgt

namespace dgt::schema {

namespace {

[[noreturn]] void throw_foreign_database(const sql::Connection& c) {
  DGT_THROW(ErrorKind::kSqlite,
            "{} is not a dgtune tuning database (it has no schema_version table); it was left unmodified", c.path());
}

[[noreturn]] void throw_newer_schema(const sql::Connection& c, int stored) {
  DGT_THROW(ErrorKind::kSqlite,
            "tuning database {} has schema version {}, newer than version {} that this dgtune knows; use a newer "
            "dgtune (the file was not modified)",
            c.path(), stored, latest_version());
}

}  // namespace

int latest_version() { return db_schema_latest_version(); }

FileState read_file_state(const sql::Connection& c) {
  FileState st;
  {
    sql::Statement s(c,
                     "SELECT count(*) AS objects, coalesce(sum(type = 'table' AND name = 'schema_version'), 0) AS "
                     "has_version FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'");
    s.step();
    st.empty = s.get_int("objects") == 0;
    if (s.get_int("has_version") == 0) return st;
  }
  st.has_version_table = true;
  sql::Statement s(c, "SELECT max(version) AS v FROM schema_version");
  s.step();
  if (s.is_null("v"))
    DGT_THROW(ErrorKind::kSqlite, "tuning database {}: the schema_version table is empty (damaged file?)", c.path());
  st.version = s.get_int32("v");
  return st;
}

void refuse_unusable(const sql::Connection& c, const FileState& st) {
  if (st.version > latest_version()) throw_newer_schema(c, st.version);
  // The table exists but holds a version no dgtune ever wrote (0 or below): migrating it would run migrations
  // that do not fit whatever the file holds.
  if (st.version < 1 && !st.empty && st.has_version_table)
    DGT_THROW(ErrorKind::kSqlite,
              "tuning database {} has schema version {}, which no dgtune writes (versions start at 1): a damaged or "
              "hand-edited file; it was left unmodified (run `dgtune db check --db {}`)",
              c.path(), st.version, c.path());
  // Never build our tables inside somebody else's database.
  if (st.version == 0 && !st.empty) throw_foreign_database(c);
}

void check_read_only(const sql::Connection& c) {
  FileState st;
  {
    sql::Transaction snapshot(c, "BEGIN");
    st = read_file_state(c);
    snapshot.commit();
  }
  refuse_unusable(c, st);
  if (st.version == 0 && !st.has_version_table) throw_foreign_database(c);
  if (st.version != latest_version())
    DGT_THROW(ErrorKind::kSqlite,
              "tuning database {} has schema version {}, older than version {}; migrate it with `dgtune db migrate "
              "--db {}` (every row is kept)",
              c.path(), st.version, latest_version(), c.path());
}

}  // namespace dgt::schema
