#pragma once

#include <string>

namespace dgt::jit {

/// 16 hex digits identifying the device code dgtune would run: every embedded kernel source (path
/// and text), the codegen version, the NVRTC options, the NVRTC version and the post-compile SASS
/// edits that are on by default (none today). Part of the device fingerprint (a new hash makes
/// stored trials stale) and of every cubin cache key.
const std::string& kernel_source_hash();

}  // namespace dgt::jit
