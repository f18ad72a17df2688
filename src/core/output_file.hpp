// The one rule for every file a command writes (export --out, gate --record/--junit/--markdown, the gate history
// DB, compare --save, db merge -o, export --format db): the path is checked before anything is measured or opened;
// it is never one of the command's inputs nor the tuning DB (the same file after resolving symbolic and hard links:
// device and inode are compared, and a DB's -wal, -shm and -journal files count as the DB); a file is written to a
// temporary file in the same directory and renamed into place only when complete, so a failed or interrupted run
// leaves the previous file (or none), never half a file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dgt {

/// A file a command reads (or the DB it reads or writes), named for messages: {"--db", "/work/t.db"}.
struct NamedPath {
  std::string flag;  ///< how the user named it: "--db", "--baseline", "$DGTUNE_DB", "input #2"
  std::string path;
  bool is_db = false;  ///< a SQLite file: its -wal, -shm and -journal files are the same data
};

/// Checks that `path` may be written as the output `flag` of a command whose inputs are `inputs` (files that do
/// not exist are skipped). Throws Error(kUsage) (exit 2; nothing was written) naming the flag, the path and the
/// rule when the path is empty, an existing directory, socket or block device, the same file as an input (or one of
/// a DB input's side files), or when its directory is missing or not writable. A character device or FIFO
/// (/dev/null, /dev/stdout) is accepted: it is written in place.
void check_output_path(const std::string& path, std::string_view flag, const std::vector<NamedPath>& inputs);

/// The part of check_output_path() a tuning DB written by SQLite needs (db/writer_check.hpp checks the rest: its type
/// and folders, which SQLite creates): Error(kUsage) when `path` is the same file as an input or one of a DB input's
/// side files (those by name too: SQLite makes them when it opens the DB). Any other path that does not exist passes.
void check_not_an_input(const std::string& path, std::string_view flag, const std::vector<NamedPath>& inputs);

/// True when `a` and `b` name one file: the same spelling once made absolute and with symbolic links resolved (files
/// that need not exist yet), or the same device and inode (hard links).
bool names_same_file(const std::string& a, const std::string& b);

/// check_output_path() for several outputs of one command, each also checked against the others (two flags naming
/// one file would have the second overwrite the first).
void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

/// Writes `content` to `path` (checked by check_output_path() before): a regular or missing file through a
/// temporary file in the same directory, flushed to disk, then renamed onto the path (an existing file keeps its
/// permission bits; a symbolic link keeps pointing at the file it named, which is replaced); a character device or
/// FIFO directly. Throws Error(kIo) naming the path and the system's reason; the temporary file is removed.
void write_output_file(const std::string& path, std::string_view content);

/// A temporary file beside `path` for a writer that fills it itself (SQLite's VACUUM INTO, a merge): created empty
/// and with a unique name (".NAME.XXXXXX.tmp", so it never replaces a user's file), removed when the object goes
/// away unless commit() renamed it onto `path` first.
class PendingFile {
 public:
  /// Creates the temporary file. Throws Error(kIo) naming the directory when it cannot be created.
  explicit PendingFile(const std::string& path);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  /// The temporary file's path.
  const std::string& temp_path() const { return temp_; }
  /// Renames the temporary file onto the path given at construction. `replace` false: Error(kUsage) when that path
  /// exists by now (another process made it), and the temporary file is removed. Error(kIo) when the rename fails.
  void commit(bool replace);

 private:
  std::string target_, temp_;
  bool done_ = false;
};

}  // namespace dgt
