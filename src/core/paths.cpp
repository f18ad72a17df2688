#include "core/paths.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <spdlog/spdlog.h>

#include "core/error.hpp"

namespace dgt {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

/// "" when `dir` exists or can be created and a file can be written in it, else why not.
std::string cache_dir_problem(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ec.message();
  if (!fs::is_directory(dir, ec)) return "not a directory";
  // Permission bits do not say it all (read-only mounts, ACLs, root): try.
  std::string probe = dir + "/.dgtune-probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}
}  // namespace

std::string default_cache_dir() { return cache_dir_candidates("").front(); }

std::vector<std::string> cache_dir_candidates(const std::string& requested) {
  std::vector<std::string> out;
  auto add = [&](const std::string& dir) {
    if (!dir.empty() && std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
  };
  add(requested.empty() ? env("DGTUNE_CACHE_DIR") : requested);
  if (auto v = env("XDG_CACHE_HOME"); !v.empty() && v.front() == '/') add(v + "/dgtune");
  if (auto v = env("HOME"); !v.empty() && v.front() == '/') add(v + "/.cache/dgtune");
  std::error_code ec;
  std::string tmp = std::filesystem::temp_directory_path(ec).string();
  add((ec || tmp.empty() ? std::string("/tmp") : tmp) + "/dgtune-cache-" + std::to_string(::getuid()));
  return out;
}

std::string usable_cache_dir(const std::string& requested) {
  const std::vector<std::string> dirs = cache_dir_candidates(requested);
  std::string tried;
  for (size_t i = 0; i < dirs.size(); ++i) {
    const std::string problem = cache_dir_problem(dirs[i]);
    if (problem.empty()) {
      if (i > 0)
        spdlog::warn("cubin cache: cannot use {}; using {} (set --cache-dir or DGTUNE_CACHE_DIR to choose)", tried,
                     dirs[i]);
      return dirs[i];
    }
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : ", ", dirs[i], problem);
  }
  DGT_THROW(ErrorKind::kIo, "no usable cubin cache directory: tried {}; set --cache-dir or DGTUNE_CACHE_DIR", tried);
}

namespace {
std::string absolute(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return path;
  // "." components go; ".." stays: removing "dir/.." is wrong when dir is a symbolic link.
  for (const auto& part : abs)
    if (part == "..") return abs.string();
  return abs.lexically_normal().string();
}
}  // namespace

std::string resolve_db_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return absolute(explicit_path);
  if (auto v = env("DGTUNE_DB"); !v.empty()) return absolute(v);
  return absolute("results/tuning.db");
}

std::string loader_db_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return absolute(explicit_path);
  return absolute(env("DGTUNE_DB"));
}

std::string this_executable_path() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) DGT_THROW(ErrorKind::kIo, "cannot find this program's path (/proc/self/exe): {}", ec.message());
  return p.string();
}

}  // namespace dgt
