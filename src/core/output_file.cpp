#include "core/output_file.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/escape.hpp"

namespace dgt {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(std::string_view flag, const std::string& path, std::string_view why) {
  DGT_THROW(ErrorKind::kUsage, "{} '{}': {}; nothing was written", flag, escaped(path), why);
}

/// Where a path's data lives (stat follows symbolic links), when the path exists.
bool identity(const std::string& path, struct stat& st) { return ::stat(path.c_str(), &st) == 0; }

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

/// The directory a new file at `path` is created in ("." for a bare name).
std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

/// The path a write goes to: a symbolic link is followed to the file it names (so the link stays a link).
std::string write_target(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    if (!ec) return resolved.string();
  }
  return path;
}

/// The names a file may be reached by, to compare paths of files that need not exist yet: the path made absolute,
/// and with its symbolic links resolved (the target of a dangling link too).
std::vector<fs::path> spellings(const std::string& path) {
  std::error_code ec;
  std::vector<fs::path> out{fs::absolute(path, ec).lexically_normal()};
  fs::path p = path;
  if (fs::is_symlink(fs::symlink_status(p, ec))) {
    const fs::path target = fs::read_symlink(p, ec);
    if (!ec) p = target.is_absolute() ? target : fs::path(path).parent_path() / target;
  }
  const fs::path real = fs::weakly_canonical(p, ec);
  if (!ec) out.push_back(real);
  return out;
}

std::string type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

void check_not_an_input(const std::string& path, std::string_view flag, const std::vector<NamedPath>& inputs) {
  if (path.empty()) return;
  // A DB's side files are compared by name as well: SQLite removes its -wal (or -journal) when the DB is closed, so
  // they are usually missing, and an output written there would be deleted, or taken for the DB's log, by the next
  // command that opens the DB.
  const std::vector<fs::path> out_names = spellings(path);
  // An input that does not exist yet (a tuning DB the command creates) has no identity to compare: its name counts.
  for (const NamedPath& in : inputs)
    if (!in.path.empty() && names_same_file(path, in.path))
      refuse(flag, path,
             fmt::format("it is the same file as {} '{}'{}; write the output to another file", in.flag, escaped(in.path),
                         in.is_db ? " (the tuning database: writing over it would destroy it)" : " (an input)"));
  for (const NamedPath& in : inputs) {
    if (!in.is_db || in.path.empty()) continue;
    for (const fs::path& db : spellings(in.path))
      for (const char* side : {"-wal", "-shm", "-journal"})
        if (std::find(out_names.begin(), out_names.end(), fs::path(db.string() + side)) != out_names.end())
          refuse(flag, path,
                 fmt::format("it is the {} file of the tuning database {} '{}'; write the output to another file",
                             side, in.flag, escaped(in.path)));
  }
  struct stat out {};
  if (!identity(path, out)) return;
  for (const NamedPath& in : inputs) {
    std::vector<std::pair<std::string, std::string>> names{{in.path, ""}};
    if (in.is_db)
      for (const char* side : {"-wal", "-shm", "-journal"}) names.emplace_back(in.path + side, side);
    for (const auto& [name, side] : names) {
      struct stat st {};
      if (!identity(name, st) || !same_file(st, out)) continue;
      if (side.empty())
        refuse(
            flag, path,
            fmt::format("it is the same file as {} '{}'{}; write the output to another file", in.flag, escaped(in.path),
                        in.is_db ? " (the tuning database: writing over it would destroy it)" : " (an input)"));
      refuse(flag, path,
             fmt::format("it is the {} file of the tuning database {} '{}'; write the output to another file", side,
                         in.flag, escaped(in.path)));
    }
  }
}

void check_output_path(const std::string& path, std::string_view flag, const std::vector<NamedPath>& inputs) {
  if (path.empty()) refuse(flag, path, "the path is empty");
  struct stat out {};
  if (identity(path, out)) {
    if (S_ISDIR(out.st_mode) || S_ISSOCK(out.st_mode) || S_ISBLK(out.st_mode))
      refuse(flag, path, "it is " + type_name(out.st_mode) + ", not a file to write");
    check_not_an_input(path, flag, inputs);
    if (S_ISCHR(out.st_mode) || S_ISFIFO(out.st_mode)) return;  // /dev/null, /dev/stdout: written in place
  } else if (errno != ENOENT) {
    refuse(flag, path, std::strerror(errno));
  } else {
    check_not_an_input(path, flag, inputs);  // a DB's side files count before SQLite has made them
  }
  const std::string dir = parent_of(write_target(path));
  struct stat d {};
  if (::stat(dir.c_str(), &d) != 0) refuse(flag, path, fmt::format("its directory '{}' does not exist", escaped(dir)));
  if (!S_ISDIR(d.st_mode)) refuse(flag, path, fmt::format("'{}' is not a directory", escaped(dir)));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    refuse(flag, path, fmt::format("its directory '{}' is not writable ({})", escaped(dir), std::strerror(errno)));
}

bool names_same_file(const std::string& a, const std::string& b) {
  const std::vector<fs::path> sa = spellings(a);
  for (const fs::path& name : spellings(b))
    if (std::find(sa.begin(), sa.end(), name) != sa.end()) return true;
  struct stat x {}, y{};
  return identity(a, x) && identity(b, y) && same_file(x, y);
}

void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path.empty()) continue;
    check_output_path(outputs[i].path, outputs[i].flag, inputs);
    for (size_t j = 0; j < i; ++j) {
      if (outputs[j].path.empty()) continue;
      struct stat a {
      }, b{};
      const bool same =
          outputs[i].path == outputs[j].path ||
          (identity(outputs[i].path, a) && identity(outputs[j].path, b) && same_file(a, b) && S_ISREG(a.st_mode));
      if (same)
        refuse(outputs[i].flag, outputs[i].path,
               fmt::format("{} names the same file; give each output its own file", outputs[j].flag));
    }
  }
}

PendingFile::PendingFile(const std::string& path) : target_(write_target(path)) {
  const fs::path p(target_);
  // fmt, not "." + std::string&&: GCC 12 warns (-Wrestrict) on that concatenation, a known false positive.
  std::string pattern = (p.parent_path() / fmt::format(".{}.XXXXXX.tmp", p.filename().string())).string();
  const int fd = ::mkstemps(pattern.data(), 4);
  if (fd < 0)
    DGT_THROW(ErrorKind::kIo, "cannot create a temporary file in '{}' to write '{}': {}", escaped(parent_of(target_)),
              escaped(path), std::strerror(errno));
  // mkstemp makes the file 0600; the output gets what a new file gets (0666 minus the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  temp_ = pattern;
}

PendingFile::~PendingFile() {
  if (!done_) ::unlink(temp_.c_str());
}

void PendingFile::commit(bool replace) {
  if (replace) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
      DGT_THROW(ErrorKind::kIo, "cannot rename '{}' to '{}': {}", escaped(temp_), escaped(target_),
                std::strerror(errno));
  } else {
    // link() fails when the target exists: a file another process made meanwhile is never replaced.
    if (::link(temp_.c_str(), target_.c_str()) != 0) {
      if (errno == EEXIST)
        DGT_THROW(ErrorKind::kUsage, "'{}' appeared while it was being written (another process?); not replaced",
                  escaped(target_));
      DGT_THROW(ErrorKind::kIo, "cannot create '{}': {}", escaped(target_), std::strerror(errno));
    }
    ::unlink(temp_.c_str());
  }
  done_ = true;
}

void write_output_file(const std::string& path, std::string_view content) {
  struct stat st {};
  const bool exists = identity(path, st);
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) DGT_THROW(ErrorKind::kIo, "cannot open '{}' for writing: {}", escaped(path), std::strerror(errno));
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        DGT_THROW(ErrorKind::kIo, "writing '{}' failed: {}", escaped(path), std::strerror(err));
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    return;
  }
  PendingFile pending(path);
  const int fd = ::open(pending.temp_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) DGT_THROW(ErrorKind::kIo, "cannot write '{}': {}", escaped(pending.temp_path()), std::strerror(errno));
  if (exists) (void)::fchmod(fd, st.st_mode & 07777);  // a replaced file keeps its permission bits
  size_t done = 0;
  int err = 0;
  while (done < content.size() && err == 0) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      err = n < 0 ? errno : EIO;
    else
      done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0)
    DGT_THROW(ErrorKind::kIo, "writing '{}' failed: {} (the previous file, if any, is unchanged)", escaped(path),
              std::strerror(err));
  pending.commit(true);
}

}  // namespace dgt
