#include "launch/grouped_operands.hpp"

#include <cstdint>

#include "core/error.hpp"

namespace dgt {

void check_grouped_operands(const GroupedProblem& g, const jit::GroupedOperands& ops) {
  const bool block = g.scale == ScaleMode::kBlock;
  const char* layout_name = g.kind == GroupKind::kMasked ? "masked_m" : "m_indices";
  struct Rule {
    const char* name;
    const void* ptr;
    uintptr_t align;
    const char* why;
  };
  const Rule rules[] = {
      {"a", ops.a, 16, "TMA loads need 16-byte aligned global addresses"},
      {"b", ops.b, 16, "TMA loads need 16-byte aligned global addresses"},
      {"d", ops.d, 16, "TMA stores need 16-byte aligned global addresses"},
      {"scale_a", ops.scale_a, block ? 16u : 4u,
       block ? "block scales are copied with cp.async.bulk, which needs 16 bytes" : "one float"},
      {"scale_b", ops.scale_b, block ? 16u : 4u,
       block ? "block scales are copied with cp.async.bulk, which needs 16 bytes" : "one float"},
      {layout_name, ops.layout, 4, "int32 entries"},
  };
  for (const Rule& r : rules) {
    if (r.ptr == nullptr)
      DGT_THROW(ErrorKind::kInvalid, "grouped GEMM {}: {} is null", g.label(), r.name);
    if (reinterpret_cast<uintptr_t>(r.ptr) % r.align != 0)
      DGT_THROW(ErrorKind::kInvalid, "grouped GEMM {}: {} = {} is not {}-byte aligned ({})", g.label(),
                r.name, r.ptr, r.align, r.why);
  }
}

}  // namespace dgt
