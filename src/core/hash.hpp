// Small, stable hashing for cache keys and fingerprints (not cryptographic).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dgt {

/// FNV-1a 64-bit over the bytes of `data`, continuing from `seed` (the FNV offset basis by default).
uint64_t fnv1a64(std::string_view data, uint64_t seed = 14695981039346656037ull);

/// 16 lowercase hex digits.
std::string hex16(uint64_t v);

}  // namespace dgt
