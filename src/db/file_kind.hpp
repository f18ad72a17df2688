// What a DB path is when it is not a regular file: the one check before SQLite sees a path (the connection) or
// before a command that will write one touches the GPU (db/writer_check).
#pragma once

#include <sys/stat.h>

#include <string>

namespace dgt::sql {

/// What a path that exists but is not a regular file is ("a directory", "a FIFO (named pipe)", "a socket", "a
/// character device", "a block device"), "" for a regular file or a path that does not exist (symlinks followed).
/// SQLite would block forever reading a FIFO and write a schema into /dev/null.
inline std::string non_file_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  return "not a regular file";
}

}  // namespace dgt::sql
