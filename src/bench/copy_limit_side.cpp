#include "bench/copy_limit_side.hpp"

namespace dgt {

CopyLimitSide::CopyLimitSide(const UtilKernels& util, const Problem& p, int sm_count, const jit::GemmOperands& ops)
    : util_(&util), plan_(plan_copy_limit(p, sm_count)), ops_(ops), sink_(16) {}

Side CopyLimitSide::side() const {
  const UtilKernels* util = util_;
  const CopyLimitPlan* plan = &plan_;
  const jit::GemmOperands ops = ops_;
  uint32_t* sink = sink_.as<uint32_t>();
  return Side{kSideCopyLimit,
              [util, plan, ops, sink](cudaStream_t s) { util->copy_limit(*plan, ops.a, ops.b, ops.d, sink, s); },
              /*check_output=*/false};
}

}  // namespace dgt
