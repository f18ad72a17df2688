#include "core/input_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/escape.hpp"

namespace dgt {

namespace {
[[noreturn]] void refuse(const std::string& path, std::string_view what, std::string_view reason) {
  DGT_THROW(ErrorKind::kUsage, "cannot read {} '{}': {}", what, escaped(path), reason);
}
/// Everything but the open: it exists and is a file or (allow_pipe) a pipe. Returns true for a pipe.
bool check_kind(const std::string& path, std::string_view what, bool allow_pipe = true) {
  namespace fs = std::filesystem;
  if (path.empty()) refuse(path, what, "the path is empty");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows symlinks: /dev/fd/N of `<(...)` is a pipe
  if (ec || !fs::exists(st))
    refuse(path, what, ec && ec != std::errc::no_such_file_or_directory ? ec.message() : "no such file");
  if (fs::is_directory(st)) refuse(path, what, "it is a directory");
  if (!allow_pipe && fs::is_fifo(st)) refuse(path, what, "it is a FIFO (named pipe), not a regular file");
  if (!fs::is_regular_file(st) && !fs::is_fifo(st))
    refuse(path, what, "it is not a regular file (a device or socket is never read as input)");
  return fs::is_fifo(st);
}
}  // namespace

void require_input_file(const std::string& path, std::string_view what) {
  // A pipe is never opened here: a named pipe's open blocks until a writer comes, and closing this probe would
  // leave that writer gone (or dead of SIGPIPE) and the real read (read_input_file) waiting for another forever.
  if (check_kind(path, what)) {
    if (::access(path.c_str(), R_OK) != 0) refuse(path, what, std::strerror(errno));
    return;
  }
  std::ifstream probe(path, std::ios::binary);
  if (!probe) refuse(path, what, std::strerror(errno));
}

void require_regular_input_file(const std::string& path, std::string_view what) {
  check_kind(path, what, /*allow_pipe=*/false);
  if (::access(path.c_str(), R_OK) != 0) refuse(path, what, std::strerror(errno));
}

std::string read_input_file(const std::string& path, std::string_view what) {
  check_kind(path, what);  // opened once: a pipe cannot be read twice
  std::ifstream in(path, std::ios::binary);
  if (!in) refuse(path, what, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) refuse(path, what, "read error");
  return text.str();
}

}  // namespace dgt
