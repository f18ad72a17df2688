#include "loader/loader_db.hpp"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "core/error.hpp"

namespace dgt {

std::unique_ptr<TuningDbReader> open_loader_db(const std::string& path, const std::string& from) {
  std::error_code ec;
  const std::string named = from.empty() ? path : path + " (" + from + ")";
  if (!std::filesystem::exists(path, ec)) {
    spdlog::warn("dgt::Gemm: no tuning database at {}; running untuned: every shape uses the default config", named);
    return nullptr;
  }
  try {
    return std::make_unique<TuningDbReader>(path);
  } catch (const Error& e) {
    // An application must keep running on a file it cannot read: default configs are correct, only slower.
    if (e.kind() != ErrorKind::kSqlite && e.kind() != ErrorKind::kIo) throw;
    spdlog::warn("dgt::Gemm: cannot use tuning database {}: {}; using default configs", named, e.message());
    return nullptr;
  }
}

}  // namespace dgt
