#include "db/writer_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "db/file_kind.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"

namespace dgt {

namespace fs = std::filesystem;

namespace {

/// The nearest folder of `path` that exists (the writer creates the missing ones below it).
fs::path existing_folder(const std::string& path) {
  fs::path dir = fs::absolute(path).parent_path();
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  return dir;
}

}  // namespace

void check_db_writable(const std::string& path, std::string_view flag) {
  if (path.empty()) DGT_THROW(ErrorKind::kUsage, "{}: the tuning database path is empty", flag);
  if (const std::string kind = sql::non_file_kind(path); !kind.empty())
    DGT_THROW(ErrorKind::kUsage, "{} '{}': it is {}, not a tuning database file; nothing was written", flag,
              escaped(path), kind);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (::access(path.c_str(), R_OK | W_OK) != 0)
      DGT_THROW(ErrorKind::kIo, "tuning database {} ({}) is not writable by this process: {}; nothing was written",
                path, flag, std::strerror(errno));
  } else if (errno != ENOENT) {
    DGT_THROW(ErrorKind::kUsage, "{} '{}': {}", flag, escaped(path), std::strerror(errno));
  }
  // SQLite creates the -wal/-shm files (and a new database) in the folder.
  const fs::path dir = existing_folder(path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    DGT_THROW(ErrorKind::kUsage, "{} '{}': '{}' is not a directory", flag, escaped(path), escaped(dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    DGT_THROW(ErrorKind::kIo,
              "tuning database {} ({}): the folder {} is not writable by this process ({}); SQLite needs to create "
              "the database's -wal and -shm files there; nothing was written",
              path, flag, dir.string(), std::strerror(errno));
  if (st.st_size == 0) return;  // missing or empty: the writer creates the schema
  // The writer's checks on the file as it stands, through a connection that cannot write it.
  sql::Connection c(path, /*read_only=*/true);
  schema::FileState state;
  {
    sql::Transaction snapshot(c, "BEGIN");
    state = schema::read_file_state(c);
    snapshot.commit();
  }
  schema::refuse_unusable(c, state);
}

}  // namespace dgt
