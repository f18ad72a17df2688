#include "jit/fault_injection.hpp"

#include <cstdlib>
#include <string_view>

namespace dgt::jit {

int test_fault_of([[maybe_unused]] const KernelSpec& spec) {
#ifdef DGTUNE_FAULT_INJECTION
  const char* env = std::getenv("DGTUNE_TEST_FAULT");
  if (!env) return 0;
  const std::string key = spec.config.key();
  std::string_view list(env);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    if (item == "trap:" + key) return 1;
    if (item == "spin:" + key) return 2;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
#endif
  return 0;
}

}  // namespace dgt::jit
