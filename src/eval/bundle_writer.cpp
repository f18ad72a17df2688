#include "eval/bundle_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/escape.hpp"

namespace dgt {

namespace fs = std::filesystem;

namespace {

bool is_cubin_name(const std::string& name) {
  if (name.size() != 16 + 6 || name.compare(16, 6, ".cubin") != 0) return false;
  for (size_t i = 0; i < 16; ++i)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

/// "" when `dir` holds only a dgtune bundle's files (or nothing), else what makes it something else.
std::string foreign_content(const fs::path& dir) {
  bool manifest = false;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == jit::kBundleManifestName && it->is_regular_file(ec)) {
      manifest = true;
      continue;
    }
    if (is_cubin_name(name) && it->is_regular_file(ec)) continue;
    return "it holds " + escaped(name) + ", which is not a bundle's file";
  }
  if (ec) return "it cannot be listed: " + ec.message();
  if (!manifest) {
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      return "it holds .cubin files but no manifest.json";
    return "";  // empty
  }
  std::ifstream f(dir / jit::kBundleManifestName);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.is_object() && j.value("schema", std::string()) == jit::kBundleFormat) return "";
  } catch (const nlohmann::json::exception&) {
  }
  return "its manifest.json is not a dgtune kernel bundle's";
}

void write_file(const fs::path& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) DGT_THROW(ErrorKind::kIo, "cannot create {}: {}", path.string(), std::strerror(errno));
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  f.flush();
  if (!f) DGT_THROW(ErrorKind::kIo, "short write to {} (disk full?)", path.string());
}

/// A temporary directory beside the output, removed unless released.
struct TempDir {
  fs::path path;
  bool keep = false;
  ~TempDir() {
    std::error_code ec;
    if (!keep && !path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

void check_bundle_output(const std::string& dir, const std::string& flag) {
  if (dir.empty()) DGT_THROW(ErrorKind::kUsage, "{} is empty: name a directory for the bundle", flag);
  const fs::path p(dir);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (fs::exists(st)) {
    if (fs::is_symlink(st))
      DGT_THROW(ErrorKind::kUsage, "{} {} is a symbolic link: name the bundle directory itself (nothing written)", flag,
                escaped(dir));
    if (!fs::is_directory(st))
      DGT_THROW(ErrorKind::kUsage, "{} {} exists and is not a directory: a bundle is a directory (nothing written)",
                flag, escaped(dir));
    const std::string why = foreign_content(p);
    if (!why.empty())
      DGT_THROW(ErrorKind::kUsage,
                "{} {} exists and is not a dgtune kernel bundle ({}); name a new or empty directory, or an existing "
                "bundle to replace (nothing written)",
                flag, escaped(dir), why);
    return;
  }
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    DGT_THROW(ErrorKind::kUsage, "{} {}: directory {} does not exist (nothing written)", flag, escaped(dir),
              escaped(parent.string()));
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    DGT_THROW(ErrorKind::kUsage, "{} {}: directory {} is not writable (nothing written)", flag, escaped(dir),
              escaped(parent.string()));
}

void write_bundle(const std::string& dir, const jit::BundleManifest& manifest,
                  const std::map<std::string, std::string>& cubins, const std::string& flag) {
  check_bundle_output(dir, flag);
  for (const jit::BundleCubin& c : manifest.cubins) {
    auto it = cubins.find(c.key);
    if (it == cubins.end()) DGT_THROW(ErrorKind::kInternal, "bundle manifest lists {} but no cubin was given", c.key);
    jit::verify_bundle_cubin(c, it->second, c.file);  // the manifest describes exactly the bytes written
  }
  fs::path out = fs::absolute(fs::path(dir)).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();  // "DIR/"
  TempDir tmp;
  std::string templ = (out.parent_path() / ("." + out.filename().string() + ".tmp.XXXXXX")).string();
  if (!::mkdtemp(templ.data()))
    DGT_THROW(ErrorKind::kIo, "cannot create a temporary directory beside {}: {}", out.string(), std::strerror(errno));
  tmp.path = templ;
  ::chmod(tmp.path.c_str(), 0755);  // mkdtemp makes it 0700; a bundle is shared with the serving processes' users
  for (const jit::BundleCubin& c : manifest.cubins) write_file(tmp.path / c.file, cubins.at(c.key));
  write_file(tmp.path / jit::kBundleManifestName, manifest.to_text());  // last: a complete directory
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(out, ec))) {
    if (::rename(tmp.path.c_str(), out.c_str()) != 0)
      DGT_THROW(ErrorKind::kIo, "cannot rename {} to {}: {}", tmp.path.string(), out.string(), std::strerror(errno));
    tmp.keep = true;
    return;
  }
  // Replace the existing bundle (checked above): one exchange, so a reader never sees a half-replaced directory.
  if (::renameat2(AT_FDCWD, tmp.path.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) == 0) return;  // tmp: old
  // A file system without RENAME_EXCHANGE: the old directory moves aside, then the new one takes its name.
  const fs::path aside = tmp.path.string() + ".old";
  if (::rename(out.c_str(), aside.c_str()) != 0)
    DGT_THROW(ErrorKind::kIo, "cannot move the old bundle {} aside: {}", out.string(), std::strerror(errno));
  if (::rename(tmp.path.c_str(), out.c_str()) != 0) {
    const int err = errno;
    ::rename(aside.c_str(), out.c_str());
    DGT_THROW(ErrorKind::kIo, "cannot rename {} to {}: {}", tmp.path.string(), out.string(), std::strerror(err));
  }
  fs::remove_all(aside, ec);
}

}  // namespace dgt
