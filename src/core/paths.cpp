#include "core/paths.hpp"

#include <cstdlib>

namespace dgt {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}
}  // namespace

std::string default_cache_dir() {
  if (auto v = env("DGTUNE_CACHE_DIR"); !v.empty()) return v;
  if (auto v = env("XDG_CACHE_HOME"); !v.empty()) return v + "/dgtune";
  if (auto v = env("HOME"); !v.empty()) return v + "/.cache/dgtune";
  return "/tmp/dgtune-cache";
}

std::string resolve_db_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (auto v = env("DGTUNE_DB"); !v.empty()) return v;
  return "results/tuning.db";
}

}  // namespace dgt
