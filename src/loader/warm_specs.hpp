// The kernels a warm-up loads for a problem family, computed from its DB rows without a GPU (internal header): what
// `dgtune export --format bundle` compiles so that Gemm::warmup finds every kernel in the bundle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"
#include "problem/kernel_config.hpp"
#include "problem/problem.hpp"

namespace dgt {

/// What the loader's choice depends on besides the family's rows (Gemm::Impl: env.kernel_hash, env_key,
/// protocol_kind).
struct LoaderIdentity {
  std::string kernel_hash;    ///< the running kernel hash (jit::kernel_source_hash())
  std::string env_key;        ///< the running SoftwareEnv::key()
  std::string protocol_kind;  ///< GemmOptions::protocol: "cold-l2" or "hot-graph"
};

/// The config the identity rule picks for `p` before the ladder rule's re-rank: choose_stored_winner
/// (loader/choice.hpp) over the family's `candidates` with the loader's legality rule, else dgt::default_config(p)
/// (also with no candidates). The re-rank picks among these configs at the tuned M (its `allowed`), so the picks at
/// every tuned M cover every kernel a first call can load.
KernelConfig loader_config(const std::vector<EnvironmentWinner>& candidates, const Problem& p, const LoaderIdentity& id);

/// The kernel specs Gemm::warmup loads for the family of `family` (its M is ignored) with rows `candidates`
/// (TuningDbReader::environment_winners): one per M of warm_m_values(m, the candidates' M) (loader/capture_rule.hpp;
/// `m` empty: the default ladder), KernelSpec::of(loader_config(...), p), distinct by KernelSpec::key() in first-seen
/// order. The kernel is loaded for every M whatever the backend (cuBLASLt runs beside a loaded kernel), so this is
/// every kernel of the warm-up. Throws Error(kUsage) for an M outside 1 .. 2^31 - 1.
std::vector<KernelSpec> warm_kernel_specs(const std::vector<EnvironmentWinner>& candidates, const Problem& family,
                                          const std::vector<int64_t>& m, const LoaderIdentity& id);

/// warm_kernel_specs() under every identity a process running `kernel_hash` may have: both protocol kinds, and as
/// running environment each environment of the candidates and one of none of them (a deployment's driver or cuBLASLt
/// version is not known when a bundle is made). Distinct by KernelSpec::key(), in first-seen order.
std::vector<KernelSpec> any_loader_kernel_specs(const std::vector<EnvironmentWinner>& candidates, const Problem& family,
                                                const std::vector<int64_t>& m, const std::string& kernel_hash);

}  // namespace dgt
