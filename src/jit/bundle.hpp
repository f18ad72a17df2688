// A kernel bundle: a read-only directory of compiled cubins with a manifest (`dgtune export --format bundle`), from
// which dgt::Gemm loads its kernels before it asks the cubin cache or NVRTC (docs/loader.md "Kernel bundles").
//
//   DIR/manifest.json      what the bundle was built for (schema version, kernel hash, arch, NVRTC version) and
//                          one entry per cubin: its cubin-cache key, compiled key, the spec keys using it, file
//                          name, size and FNV-1a hash, lowered kernel name and ptxas' resource numbers
//   DIR/<cache key>.cubin  the cubins, named by CubinCache::key_of of their generated source
//
// The reader never writes, creates or locks anything in DIR, so a bundle may live on a read-only file system or be
// shared by many processes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/compiler.hpp"

namespace dgt::jit {

/// The manifest's "schema" value (the envelope of dgtune's JSON documents, report/documents.hpp kBundleDocument, with
/// docs/schemas/dgtune-bundle.schema.json): what marks a directory as a dgtune bundle (the export replaces only such
/// one).
inline constexpr const char* kBundleFormat = "dgtune-bundle";
/// The manifest layout ("schema_version") this dgtune writes and reads; a manifest of another version is refused.
inline constexpr int kBundleFormatVersion = 1;
/// The manifest's file name inside a bundle directory.
inline constexpr const char* kBundleManifestName = "manifest.json";

/// One cubin of a bundle.
struct BundleCubin {
  std::string key;           ///< CubinCache::key_of(generated source): 16 hex digits, the lookup key
  std::string compiled_key;  ///< KernelSpec::compiled_key() of the code
  std::vector<std::string> configs;  ///< KernelSpec::key() of every spec the loader may choose that uses it, sorted
  std::string file;          ///< "<key>.cubin", relative to the bundle directory
  uint64_t bytes = 0;        ///< size of the file in bytes
  std::string fnv;           ///< hex16(fnv1a64(file contents)): core/hash.hpp
  std::string lowered_name;  ///< mangled kernel name (CompiledKernel::lowered_name)
  int registers = 0, spill_bytes = 0, stack_bytes = 0;  ///< ptxas' numbers (CompiledKernel)
};

/// manifest.json of a bundle.
struct BundleManifest {
  int format_version = kBundleFormatVersion;  ///< "schema_version"
  std::string kernel_hash;    ///< jit::kernel_source_hash() of the dgtune that built it
  std::string arch;           ///< GPU architecture the cubins are for, "sm_90a"
  std::string nvrtc_version;  ///< nvrtc_version_string() of the compiler, "major.minor"
  std::string dgtune_version;  ///< informational
  std::string device_name, hw_key;  ///< the device whose winners were exported (informational)
  std::vector<BundleCubin> cubins;  ///< sorted by key

  /// The manifest as JSON text (2-space indent; the layout is docs/schemas/dgtune-bundle.schema.json).
  std::string to_text() const;
  /// Parses manifest text read from `path` (named in errors). Throws Error(kIo) "PATH: ..." naming the field for
  /// invalid JSON, a missing or mistyped field, a "schema" other than kBundleFormat, or a cubin whose file name is not
  /// "<key>.cubin" with a 16-hex-digit key (so no entry can name a path outside the bundle).
  static BundleManifest parse(const std::string& text, const std::string& path);
};

/// The fields a bundle must match to be used by this build: schema version, kernel hash, arch and NVRTC version of
/// the running dgtune (no cubin entries).
BundleManifest expected_bundle_header();

/// Throws Error(kInvalid) "PATH: FIELD is FOUND, this dgtune expects EXPECTED (...)" for the first of schema_version,
/// kernel_hash, arch and nvrtc_version in which `m` differs from `expected`.
void check_bundle_header(const BundleManifest& m, const BundleManifest& expected, const std::string& path);

/// Throws Error(kIo) "FILE: FIELD ..., the manifest says EXPECTED, the file has FOUND" when `data` (the contents of
/// the file of `c`, read from `path`) does not have the manifest's size or FNV-1a hash.
void verify_bundle_cubin(const BundleCubin& c, const std::string& data, const std::string& path);

/// An opened, checked bundle directory (read-only). Thread-safe: every member is const.
class Bundle {
 public:
  /// Reads and checks DIR/manifest.json against `expected` (default: this build, expected_bundle_header()) and
  /// checks that every listed cubin is a regular file of the listed size. Throws Error(kIo) naming the path for a
  /// directory or file that cannot be read or a size that differs, Error(kInvalid) naming the field, the value
  /// expected and the value found for a manifest built for another dgtune (kernel hash, arch, schema or NVRTC
  /// version). Writes nothing.
  static std::shared_ptr<const Bundle> open(const std::string& dir);
  static std::shared_ptr<const Bundle> open(const std::string& dir, const BundleManifest& expected);

  const std::string& dir() const { return dir_; }
  const BundleManifest& manifest() const { return manifest_; }
  /// The manifest entry of cubin-cache key `key`, or null.
  const BundleCubin* entry(const std::string& key) const;
  /// The compiled kernel of `key` read from its file, or std::nullopt when the bundle does not hold `key`. Throws
  /// Error(kIo) naming the file, the field (bytes or fnv1a64), the manifest's value and the file's when the file no
  /// longer matches the manifest (a corrupt bundle is an error, not a silent NVRTC compile), or when it cannot be
  /// read.
  std::optional<CompiledKernel> find(const std::string& key) const;

 private:
  std::string dir_;
  BundleManifest manifest_;
};

}  // namespace dgt::jit
