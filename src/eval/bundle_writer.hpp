// Writing a kernel bundle directory (jit/bundle.hpp): the rule for an existing directory and the atomic publish.
#pragma once

#include <map>
#include <string>

#include "jit/bundle.hpp"

namespace dgt {

/// Checks that `dir` may be written as a bundle before anything is compiled: a path that does not exist (its parent
/// must be a writable directory), an empty directory, or an existing dgtune bundle (a directory holding manifest.json
/// whose "schema" is jit::kBundleFormat, of any version, and otherwise only files named <16 hex digits>.cubin), which
/// is replaced. Anything else (a file, a directory holding other files or folders, a manifest of another format) is
/// Error(kUsage) naming `flag`, the path and what it holds, so a user's files are never deleted.
void check_bundle_output(const std::string& dir, const std::string& flag);

/// Writes the bundle: every cubin of `cubins` (cache key -> cubin bytes; one per manifest entry) and then
/// manifest.json into a new temporary directory beside `dir` (".NAME.tmp.XXXXXX"), then puts it in place of `dir` by
/// one rename, or, when `dir` is an existing bundle or an empty directory, by an atomic exchange (renameat2
/// RENAME_EXCHANGE; where the file system refuses it, two renames) after which the old contents are removed. A reader
/// sees the old bundle or the new one, never a mix. check_bundle_output() is applied again first. Throws
/// Error(kUsage) as check_bundle_output does, Error(kInternal) when a manifest entry has no cubin or its size or hash
/// differs, Error(kIo) naming the path when writing fails (the temporary directory is removed).
void write_bundle(const std::string& dir, const jit::BundleManifest& manifest,
                  const std::map<std::string, std::string>& cubins, const std::string& flag);

}  // namespace dgt
