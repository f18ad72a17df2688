#include "core/hash.hpp"

#include <fmt/format.h>

namespace dgt {

uint64_t fnv1a64(std::string_view data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex16(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace dgt
