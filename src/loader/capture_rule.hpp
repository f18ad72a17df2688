// What dgt::Gemm does with a call of a shape it has not resolved yet, inside and outside CUDA-graph capture, and which
// M a warm-up resolves (internal header; GPU-free, so unit tests call it).
#pragma once

#include <cstdint>
#include <vector>

#include "dgtune/gemm.hpp"

namespace dgt {

/// The ways a first call of a shape is served.
enum class MissAction {
  kResolve,              ///< not capturing: read the DB (once per family), compile or load, allocate scratch as needed
  kResolveFromWarmFamily,  ///< capturing, family warmed: choose from memory, loaded kernels and warmed scratch only
  kCublasLtHeuristic,    ///< capturing, not warmed, CaptureMiss::kCublasLt: cuBLASLt's heuristic, no workspace
  kRefuse,               ///< capturing, not warmed, CaptureMiss::kError: dgt::Error(kUsage) before the stream is touched
};

/// The rule (docs/loader.md "Inside CUDA-graph capture"): outside capture a miss resolves normally; inside, only a
/// warmed family resolves (without compiling, allocating or reading the DB), else `policy` decides.
/// `warmed_resolve_failed`: the warmed family's resolution needed something warm-up did not prepare (a kernel not
/// loaded, more scratch than allocated), so the call is treated as not warmed.
MissAction miss_action(bool capturing, bool family_warmed, bool warmed_resolve_failed, CaptureMiss policy);

/// The M a warm-up of one family resolves: `requested` (empty: dgt::default_m_ladder(), 1 to 16384) together with
/// every M the family has a tuned entry at (`tuned`), ascending and distinct. Throws Error(kUsage) for an M < 1 or
/// >= 2^31.
std::vector<int64_t> warm_m_values(const std::vector<int64_t>& requested, const std::vector<int64_t>& tuned);

}  // namespace dgt
