#include "db/schema.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "records/records.hpp"

namespace dgt {
// Generated at build time (CMakeLists.txt, cmake/embed_file.cmake and cmake/embed_migrations.cmake).
const char* db_schema_sql();
struct EmbeddedSqlFile {
  const char* name;
  const char* (*text)();
};
const EmbeddedSqlFile* db_migration_files(int* count);
}  // namespace dgt

namespace dgt::schema {

namespace {

int parse_schema_sql_version(const std::string& text) {
  const std::string marker = "INSERT INTO schema_version (version) VALUES (";
  size_t at = text.find(marker);
  if (at == std::string::npos)
    DGT_THROW(ErrorKind::kInternal, "src/db/schema.sql lacks `{}N);`: it must set its version", marker);
  return std::atoi(text.c_str() + at + marker.size());
}

/// Creates or upgrades the schema under the write lock, in one transaction.
void migrate(const sql::Connection& c) {
  // Re-read the version under the write lock: another process may have created the schema (or
  // upgraded the file) between the first check and now.
  sql::Transaction tx(c);
  FileState st = read_file_state(c);
  refuse_unusable(c, st);                      // newer or foreign: tx rolls back; nothing was written
  if (st.version == latest_version()) return;  // tx rolls back an empty transaction
  if (st.version == 0) {
    c.exec(schema_sql());
    st.version = schema_sql_version();
  }
  register_functions(c);
  for (const Migration& m : migrations()) {
    if (m.version <= st.version) continue;
    if (m.version != st.version + 1)
      DGT_THROW(ErrorKind::kInternal, "tuning database {}: no migration from schema version {} to {}", c.path(),
                st.version, st.version + 1);
    c.exec(m.sql);
    st.version = m.version;
  }
  sql::Statement v(c, "UPDATE schema_version SET version = :version");
  v.bind_int(":version", latest_version());
  v.run();
  tx.commit();
}

void sql_hardware_key(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  if (argc != 5) return sqlite3_result_error(ctx, "dgt_hardware_key takes 5 arguments", -1);
  HardwareIdentity hw;
  const unsigned char* name = sqlite3_value_text(argv[0]);
  hw.name = name ? reinterpret_cast<const char*>(name) : "";
  const int64_t cc = sqlite3_value_int64(argv[1]);
  hw.cc_major = static_cast<int>(cc / 10);
  hw.cc_minor = static_cast<int>(cc % 10);
  hw.sm_count = sqlite3_value_int(argv[2]);
  hw.memory_bytes = sqlite3_value_int64(argv[3]);
  hw.l2_bytes = sqlite3_value_int64(argv[4]);
  const std::string key = hw.key();
  sqlite3_result_text(ctx, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
}

void sql_environment_key(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  if (argc != 6) return sqlite3_result_error(ctx, "dgt_environment_key takes 6 arguments", -1);
  auto text = [&](int i) {
    const unsigned char* t = sqlite3_value_text(argv[i]);
    return std::string(t ? reinterpret_cast<const char*>(t) : "");
  };
  SoftwareEnv env;
  env.driver_version = sqlite3_value_int(argv[0]);
  env.runtime_version = sqlite3_value_int(argv[1]);
  env.cublaslt_version = sqlite3_value_int(argv[2]);
  env.nvrtc_version = sqlite3_value_int(argv[3]);
  env.kernel_hash = text(4);
  env.dgtune_version = text(5);
  const std::string key = env.key();
  sqlite3_result_text(ctx, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> kAll = [] {
    int count = 0;
    const EmbeddedSqlFile* files = db_migration_files(&count);
    std::vector<Migration> out;
    for (int i = 0; i < count; ++i) {
      const std::string name = files[i].name;
      if (name.size() < 6 || !std::all_of(name.begin(), name.begin() + 4, [](char ch) { return std::isdigit(ch); }) ||
          name[4] != '_')
        DGT_THROW(ErrorKind::kInternal, "migration src/db/migrations/{}.sql: the name must be NNNN_what.sql", name);
      out.push_back(Migration{std::atoi(name.substr(0, 4).c_str()), name, files[i].text()});
    }
    std::sort(out.begin(), out.end(), [](const Migration& a, const Migration& b) { return a.version < b.version; });
    for (size_t i = 1; i < out.size(); ++i)
      if (out[i].version != out[i - 1].version + 1)
        DGT_THROW(ErrorKind::kInternal, "migrations {} and {}: numbers must be consecutive and unique", out[i - 1].name,
                  out[i].name);
    return out;
  }();
  return kAll;
}

const std::string& schema_sql() {
  static const std::string kText = db_schema_sql();
  return kText;
}

int schema_sql_version() {
  static const int kVersion = parse_schema_sql_version(schema_sql());
  return kVersion;
}


void register_functions(const sql::Connection& c) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  int rc =
      sqlite3_create_function(c.handle(), "dgt_hardware_key", 5, flags, nullptr, sql_hardware_key, nullptr, nullptr);
  if (rc != SQLITE_OK) c.fail(rc, "registering dgt_hardware_key");
  rc = sqlite3_create_function(c.handle(), "dgt_environment_key", 6, flags, nullptr, sql_environment_key, nullptr,
                               nullptr);
  if (rc != SQLITE_OK) c.fail(rc, "registering dgt_environment_key");
}

void open_and_migrate(const sql::Connection& c) {
  if (c.read_only()) return check_read_only(c);
  // latest_version() was computed by CMake from the same files (db/schema_check.cpp): they must agree.
  const int embedded = std::max(schema_sql_version(), migrations().empty() ? 0 : migrations().back().version);
  if (embedded != latest_version())
    DGT_THROW(ErrorKind::kInternal,
              "schema.sql and the migrations embedded in this dgtune end at version {}, but it was configured for {} "
              "(re-run cmake)",
              embedded, latest_version());
  FileState st;
  {
    sql::Transaction snapshot(c, "BEGIN");
    st = read_file_state(c);
    snapshot.commit();
  }
  refuse_unusable(c, st);
  c.enable_wal();
  if (st.version < latest_version()) migrate(c);  // an up-to-date file needs no write lock
}

}  // namespace dgt::schema
