#include "jit/bundle.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "jit/kernel_hash.hpp"

namespace dgt::jit {

namespace fs = std::filesystem;

namespace {

/// The architecture every compile targets, from the NVRTC options (one source of truth for the flag).
std::string compile_arch() {
  const std::string flag = "--gpu-architecture=";
  for (const std::string& o : nvrtc_options())
    if (o.rfind(flag, 0) == 0) return o.substr(flag.size());
  return "unknown";
}

bool is_cache_key(const std::string& k) {
  return k.size() == 16 && std::all_of(k.begin(), k.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

/// Field `name` of `j` as T; Error(kIo) "PATH: field WHERE.NAME is missing / is not a T" otherwise.
template <class T>
T field(const nlohmann::json& j, const char* name, const std::string& where, const std::string& path) {
  const std::string full = where.empty() ? name : where + "." + name;
  if (!j.is_object() || !j.contains(name)) DGT_THROW(ErrorKind::kIo, "{}: field {} is missing", path, full);
  const nlohmann::json& v = j.at(name);
  bool ok = false;
  if constexpr (std::is_same_v<T, std::string>) ok = v.is_string();
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    ok = v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_string(); });
  } else {
    ok = v.is_number_integer() && (std::is_signed_v<T> || v.is_number_unsigned() || v.get<int64_t>() >= 0);
  }
  if (!ok) DGT_THROW(ErrorKind::kIo, "{}: field {} has the wrong type ({})", path, full, v.type_name());
  return v.get<T>();
}

bool read_whole_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return false;
  out = ss.str();
  return true;
}

}  // namespace

std::string BundleManifest::to_text() const {
  nlohmann::ordered_json j;
  j["schema"] = kBundleFormat;
  j["schema_version"] = format_version;
  j["kernel_hash"] = kernel_hash;
  j["arch"] = arch;
  j["nvrtc_version"] = nvrtc_version;
  j["dgtune_version"] = dgtune_version;
  j["device"] = {{"name", device_name}, {"hw_key", hw_key}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const BundleCubin& c : cubins)
    list.push_back({{"key", c.key},
                    {"compiled_key", c.compiled_key},
                    {"configs", c.configs},
                    {"file", c.file},
                    {"bytes", c.bytes},
                    {"fnv1a64", c.fnv},
                    {"lowered_name", c.lowered_name},
                    {"registers", c.registers},
                    {"spill_bytes", c.spill_bytes},
                    {"stack_bytes", c.stack_bytes}});
  j["cubins"] = std::move(list);
  return j.dump(2) + "\n";
}

BundleManifest BundleManifest::parse(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    DGT_THROW(ErrorKind::kIo, "{}: not valid JSON ({})", path, e.what());
  }
  if (!j.is_object()) DGT_THROW(ErrorKind::kIo, "{}: not a JSON object", path);
  const std::string format = field<std::string>(j, "schema", "", path);
  if (format != kBundleFormat)
    DGT_THROW(ErrorKind::kIo, "{}: field schema is \"{}\", expected \"{}\" (not a dgtune kernel bundle)", path, format,
              kBundleFormat);
  BundleManifest m;
  m.format_version = field<int>(j, "schema_version", "", path);
  // A manifest of another layout is refused by its version before the fields below are read by this layout.
  if (m.format_version != kBundleFormatVersion) return m;
  m.kernel_hash = field<std::string>(j, "kernel_hash", "", path);
  m.arch = field<std::string>(j, "arch", "", path);
  m.nvrtc_version = field<std::string>(j, "nvrtc_version", "", path);
  m.dgtune_version = field<std::string>(j, "dgtune_version", "", path);
  const nlohmann::json dev = j.contains("device") ? j.at("device") : nlohmann::json::object();
  m.device_name = field<std::string>(dev, "name", "device", path);
  m.hw_key = field<std::string>(dev, "hw_key", "device", path);
  if (!j.contains("cubins") || !j.at("cubins").is_array())
    DGT_THROW(ErrorKind::kIo, "{}: field cubins is missing or not an array", path);
  const nlohmann::json& list = j.at("cubins");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "cubins[" + std::to_string(i) + "]";
    const nlohmann::json& e = list[i];
    BundleCubin c;
    c.key = field<std::string>(e, "key", where, path);
    c.compiled_key = field<std::string>(e, "compiled_key", where, path);
    c.configs = field<std::vector<std::string>>(e, "configs", where, path);
    c.file = field<std::string>(e, "file", where, path);
    c.bytes = field<uint64_t>(e, "bytes", where, path);
    c.fnv = field<std::string>(e, "fnv1a64", where, path);
    c.lowered_name = field<std::string>(e, "lowered_name", where, path);
    c.registers = field<int>(e, "registers", where, path);
    c.spill_bytes = field<int>(e, "spill_bytes", where, path);
    c.stack_bytes = field<int>(e, "stack_bytes", where, path);
    // The file name is derived from the key, never taken as a path: an entry cannot point outside the bundle.
    if (!is_cache_key(c.key))
      DGT_THROW(ErrorKind::kIo, "{}: field {}.key is \"{}\", expected 16 lowercase hex digits", path, where, c.key);
    if (c.file != c.key + ".cubin")
      DGT_THROW(ErrorKind::kIo, "{}: field {}.file is \"{}\", expected \"{}.cubin\"", path, where, c.file, c.key);
    m.cubins.push_back(std::move(c));
  }
  return m;
}

BundleManifest expected_bundle_header() {
  BundleManifest m;
  m.format_version = kBundleFormatVersion;
  m.kernel_hash = kernel_source_hash();
  m.arch = compile_arch();
  m.nvrtc_version = nvrtc_version_string();
  return m;
}

void check_bundle_header(const BundleManifest& m, const BundleManifest& expected, const std::string& path) {
  auto mismatch = [&](const char* name, const std::string& found, const std::string& want, const char* why) {
    if (found != want)
      DGT_THROW(ErrorKind::kInvalid, "{}: {} is \"{}\", this dgtune expects \"{}\" ({}); re-export the bundle with "
                "`dgtune export --format bundle` of this dgtune", path, name, found, want, why);
  };
  mismatch("schema_version", std::to_string(m.format_version), std::to_string(expected.format_version),
           "another manifest layout");
  mismatch("kernel_hash", m.kernel_hash, expected.kernel_hash, "the cubins were compiled from other kernel sources");
  mismatch("arch", m.arch, expected.arch, "the cubins are for another GPU architecture");
  mismatch("nvrtc_version", m.nvrtc_version, expected.nvrtc_version, "compiled by another NVRTC");
}

void verify_bundle_cubin(const BundleCubin& c, const std::string& data, const std::string& path) {
  if (data.size() != c.bytes)
    DGT_THROW(ErrorKind::kIo, "{}: bytes: the manifest says {}, the file has {} (a damaged bundle: re-export it)",
              path, c.bytes, data.size());
  const std::string fnv = hex16(fnv1a64(data));
  if (fnv != c.fnv)
    DGT_THROW(ErrorKind::kIo, "{}: fnv1a64: the manifest says {}, the file has {} (a damaged bundle: re-export it)",
              path, c.fnv, fnv);
}

std::shared_ptr<const Bundle> Bundle::open(const std::string& dir) { return open(dir, expected_bundle_header()); }

std::shared_ptr<const Bundle> Bundle::open(const std::string& dir, const BundleManifest& expected) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    DGT_THROW(ErrorKind::kIo, "kernel bundle {} is not a directory (make one with `dgtune export --format bundle "
              "--out DIR`)", dir);
  const std::string mpath = (fs::path(dir) / kBundleManifestName).string();
  std::string text;
  if (!read_whole_file(mpath, text)) DGT_THROW(ErrorKind::kIo, "{}: cannot read the bundle's manifest", mpath);
  auto b = std::make_shared<Bundle>();
  b->dir_ = dir;
  b->manifest_ = BundleManifest::parse(text, mpath);
  check_bundle_header(b->manifest_, expected, mpath);
  std::sort(b->manifest_.cubins.begin(), b->manifest_.cubins.end(),
            [](const BundleCubin& x, const BundleCubin& y) { return x.key < y.key; });
  for (size_t i = 1; i < b->manifest_.cubins.size(); ++i)
    if (b->manifest_.cubins[i].key == b->manifest_.cubins[i - 1].key)
      DGT_THROW(ErrorKind::kIo, "{}: cubin key {} is listed twice", mpath, b->manifest_.cubins[i].key);
  // Sizes now (one stat each): a truncated copy fails at construction, not at the first call of a shape. The
  // contents' hash is checked when a cubin is read.
  for (const BundleCubin& c : b->manifest_.cubins) {
    const fs::path f = fs::path(dir) / c.file;
    if (!fs::is_regular_file(f, ec))
      DGT_THROW(ErrorKind::kIo, "{}: the cubin listed in {} is missing (or not a regular file)", f.string(), mpath);
    const uintmax_t size = fs::file_size(f, ec);
    if (ec || size != c.bytes)
      DGT_THROW(ErrorKind::kIo, "{}: bytes: the manifest says {}, the file has {} (a damaged bundle: re-export it)",
                f.string(), c.bytes, ec ? std::string("unreadable") : std::to_string(size));
  }
  return b;
}

const BundleCubin* Bundle::entry(const std::string& key) const {
  auto it = std::lower_bound(manifest_.cubins.begin(), manifest_.cubins.end(), key,
                             [](const BundleCubin& c, const std::string& k) { return c.key < k; });
  return it != manifest_.cubins.end() && it->key == key ? &*it : nullptr;
}

std::optional<CompiledKernel> Bundle::find(const std::string& key) const {
  const BundleCubin* c = entry(key);
  if (!c) return std::nullopt;
  const std::string path = (fs::path(dir_) / c->file).string();
  CompiledKernel k;
  if (!read_whole_file(path, k.cubin)) DGT_THROW(ErrorKind::kIo, "{}: cannot read the bundle's cubin", path);
  verify_bundle_cubin(*c, k.cubin, path);
  k.lowered_name = c->lowered_name;
  k.registers = c->registers;
  k.spill_bytes = c->spill_bytes;
  k.stack_bytes = c->stack_bytes;
  return k;
}

}  // namespace dgt::jit
