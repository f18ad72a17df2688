#include "jit/cubin_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "jit/kernel_hash.hpp"

namespace dgt::jit {

namespace fs = std::filesystem;

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

/// Writes `data` to a temporary file in the same directory, then renames it over `path`.
void write_atomic(const std::string& path, const std::string& data) {
  // Unique per process and thread: the per-key lock already keeps writers of one key apart, this keeps a
  // stale temp file of a killed writer from ever being renamed by another.
  static std::atomic<uint64_t> serial{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) DGT_THROW(ErrorKind::kIo, "cannot write cubin cache file {}", tmp);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    f.flush();
    if (!f) {
      f.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      DGT_THROW(ErrorKind::kIo, "short write to cubin cache file {} (disk full?)", tmp);
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    DGT_THROW(ErrorKind::kIo, "cannot publish cubin cache file {}: {}", path, ec.message());
  }
}

/// RAII exclusive flock on a lock file.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) DGT_THROW(ErrorKind::kIo, "cannot open lock file {}", path);
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) DGT_THROW(ErrorKind::kIo, "cannot lock {}", path);
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

CubinCache::CubinCache(std::string dir, CompileFn compile) : dir_(std::move(dir)), compile_(std::move(compile)) {
  if (!compile_) compile_ = jit::compile;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    DGT_THROW(ErrorKind::kIo, "cannot create cubin cache directory {}: {} (set DGTUNE_CACHE_DIR)", dir_, ec.message());
}

std::string CubinCache::key_of(const GeneratedKernel& g) const {
  uint64_t h = fnv1a64(kernel_source_hash());
  h = fnv1a64(g.source, h);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(g.name_expression, h);
  return hex16(h);
}

bool CubinCache::try_read(const std::string& key, CompiledKernel& out) const {
  std::string meta_text, cubin;
  if (!read_file(dir_ + "/" + key + ".json", meta_text)) return false;
  if (!read_file(dir_ + "/" + key + ".cubin", cubin)) return false;
  try {
    auto meta = nlohmann::json::parse(meta_text);
    if (meta.at("cubin_bytes").get<size_t>() != cubin.size()) return false;
    if (meta.at("cubin_fnv").get<std::string>() != hex16(fnv1a64(cubin))) return false;
    out.cubin = std::move(cubin);
    out.lowered_name = meta.at("lowered_name").get<std::string>();
    out.registers = meta.at("registers").get<int>();
    out.spill_bytes = meta.at("spill_bytes").get<int>();
    out.stack_bytes = meta.at("stack_bytes").get<int>();
    out.compile_ms = meta.at("compile_ms").get<double>();
    out.log = meta.value("log", std::string());
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;  // corrupt metadata: rebuild
  }
}

void CubinCache::publish(const std::string& key, const CompiledKernel& k) const {
  nlohmann::json meta = {{"cubin_bytes", k.cubin.size()},      {"cubin_fnv", hex16(fnv1a64(k.cubin))},
                         {"lowered_name", k.lowered_name},     {"registers", k.registers},
                         {"spill_bytes", k.spill_bytes},       {"stack_bytes", k.stack_bytes},
                         {"compile_ms", k.compile_ms},         {"log", k.log},
                         {"kernel_hash", kernel_source_hash()}};
  write_atomic(dir_ + "/" + key + ".cubin", k.cubin);
  write_atomic(dir_ + "/" + key + ".json", meta.dump(1));
}

CompiledKernel CubinCache::get_or_compile(const GeneratedKernel& g, bool* hit) const {
  const std::string key = key_of(g);
  CompiledKernel out;
  if (try_read(key, out)) {
    if (hit) *hit = true;
    return out;
  }
  FileLock lock(dir_ + "/" + key + ".lock");
  if (try_read(key, out)) {  // another process compiled it while we waited
    if (hit) *hit = true;
    return out;
  }
  out = compile_(g.source, g.program_name, g.name_expression);
  try {
    publish(key, out);
  } catch (const Error& e) {
    // The cache only saves time: a kernel that compiled is still usable when it cannot be stored.
    spdlog::warn("cubin cache: {}; the kernel is used without being cached", e.message());
  }
  if (hit) *hit = false;
  return out;
}

}  // namespace dgt::jit
