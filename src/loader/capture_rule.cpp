#include "loader/capture_rule.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "problem/model_gemms.hpp"

namespace dgt {

MissAction miss_action(bool capturing, bool family_warmed, bool warmed_resolve_failed, CaptureMiss policy) {
  if (!capturing) return MissAction::kResolve;
  if (family_warmed && !warmed_resolve_failed) return MissAction::kResolveFromWarmFamily;
  return policy == CaptureMiss::kError ? MissAction::kRefuse : MissAction::kCublasLtHeuristic;
}

std::vector<int64_t> warm_m_values(const std::vector<int64_t>& requested, const std::vector<int64_t>& tuned) {
  std::vector<int64_t> out = requested.empty() ? default_m_ladder() : requested;
  for (int64_t m : out)
    if (m < 1 || m >= (int64_t(1) << 31))
      DGT_THROW(ErrorKind::kUsage, "dgt::Gemm::warmup: M = {} is outside 1 .. 2^31 - 1", m);
  out.insert(out.end(), tuned.begin(), tuned.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace dgt
