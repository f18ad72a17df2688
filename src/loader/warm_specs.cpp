#include "loader/warm_specs.hpp"

#include <algorithm>
#include <set>

#include "loader/capture_rule.hpp"
#include "loader/choice.hpp"
#include "space/cost_model.hpp"

namespace dgt {

KernelConfig loader_config(const std::vector<EnvironmentWinner>& candidates, const Problem& p,
                           const LoaderIdentity& id) {
  const std::optional<StoredChoice> w =
      choose_stored_winner(candidates, p, id.kernel_hash, id.env_key, id.protocol_kind, legal_for_current_kernel);
  return w ? w->config : default_config(p);
}

namespace {

void add_specs(std::vector<KernelSpec>& out, std::set<std::string>& seen, const std::vector<EnvironmentWinner>& cands,
               const Problem& family, const std::vector<int64_t>& m, const LoaderIdentity& id) {
  std::vector<int64_t> tuned;  // as Gemm::warmup collects them: every candidate's M
  for (const EnvironmentWinner& c : cands) tuned.push_back(c.problem.m);
  for (int64_t mi : warm_m_values(m, tuned)) {
    Problem p = family;
    p.m = mi;
    const KernelSpec spec = KernelSpec::of(loader_config(cands, p, id), p);
    if (seen.insert(spec.key()).second) out.push_back(spec);
  }
}

}  // namespace

std::vector<KernelSpec> warm_kernel_specs(const std::vector<EnvironmentWinner>& candidates, const Problem& family,
                                          const std::vector<int64_t>& m, const LoaderIdentity& id) {
  std::vector<KernelSpec> out;
  std::set<std::string> seen;
  add_specs(out, seen, candidates, family, m, id);
  return out;
}

std::vector<KernelSpec> any_loader_kernel_specs(const std::vector<EnvironmentWinner>& candidates, const Problem& family,
                                                const std::vector<int64_t>& m, const std::string& kernel_hash) {
  std::vector<std::string> env_keys{""};  // "": a running environment none of the rows was measured under
  for (const EnvironmentWinner& c : candidates)
    if (std::find(env_keys.begin(), env_keys.end(), c.env_key) == env_keys.end()) env_keys.push_back(c.env_key);
  std::vector<KernelSpec> out;
  std::set<std::string> seen;
  for (const char* kind : {"cold-l2", "hot-graph"})
    for (const std::string& env : env_keys) add_specs(out, seen, candidates, family, m, {kernel_hash, env, kind});
  return out;
}

}  // namespace dgt
