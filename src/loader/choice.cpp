#include "loader/choice.hpp"

#include <algorithm>

#include "records/protocol_name.hpp"
#include "space/resource_model.hpp"

namespace dgt {

bool legal_for_current_kernel(const KernelConfig& config, const Problem& problem) {
  return config_rule_violation(config, problem).empty();
}

namespace {

/// -1, 0, 1 as |log a - log m| is smaller, equal or larger than |log b - log m| (exact, in 128 bits).
int compare_log_distance(int64_t a, int64_t b, int64_t m) {
  using u128 = unsigned __int128;
  u128 lhs = u128(std::max(a, m)) * u128(std::min(b, m)), rhs = u128(std::max(b, m)) * u128(std::min(a, m));
  return lhs < rhs ? -1 : (lhs > rhs ? 1 : 0);
}

}  // namespace

std::optional<StoredChoice> choose_stored_winner(const std::vector<EnvironmentWinner>& candidates, const Problem& p,
                                                 const std::string& kernel_hash, const std::string& env_key,
                                                 const std::string& protocol_kind, const LegalFn& legal) {
  const std::string own_key = p.key();
  std::vector<const EnvironmentWinner*> order;
  for (const auto& c : candidates)
    if (c.problem.m >= 1) order.push_back(&c);
  // True when a is preferred over b (the order documented in choice.hpp).
  auto better = [&](const EnvironmentWinner* a, const EnvironmentWinner* b) {
    const bool a_own = a->problem.key() == own_key, b_own = b->problem.key() == own_key;
    if (a_own != b_own) return a_own;
    const bool a_kind = protocol_kind_of(a->protocol_name) == protocol_kind,
               b_kind = protocol_kind_of(b->protocol_name) == protocol_kind;
    if (a_kind != b_kind) return a_kind;
    const bool a_cur = a->env.kernel_hash == kernel_hash, b_cur = b->env.kernel_hash == kernel_hash;
    if (a_cur != b_cur) return a_cur;
    if (!a_own) {
      int d = compare_log_distance(a->problem.m, b->problem.m, p.m);
      if (d != 0) return d < 0;
      if (a->problem.m != b->problem.m) return a->problem.m > b->problem.m;
      const std::string ak = a->problem.key(), bk = b->problem.key();
      if (ak != bk) return ak < bk;
    }
    const bool a_env = a->env_key == env_key, b_env = b->env_key == env_key;
    if (a_env != b_env) return a_env;
    if (a->environment_id != b->environment_id) return a->environment_id > b->environment_id;  // newest first
    return a->protocol_name > b->protocol_name;  // the newer version of the kind (deterministic either way)
  };
  std::stable_sort(order.begin(), order.end(), better);
  for (const EnvironmentWinner* c : order) {
    KernelConfig config;
    try {
      config = KernelConfig::parse_key(c->config_key);
    } catch (const std::exception&) {
      continue;  // a key format this dgtune does not read
    }
    if (!legal(config, p)) continue;
    StoredChoice out;
    out.config = config;
    out.source = c->problem.key() == own_key ? "db" : "nearest";
    if (protocol_kind_of(c->protocol_name) != protocol_kind) out.source += "-other-protocol";
    out.protocol_name = c->protocol_name;
    out.tuned_us = c->median_us;
    out.from = c->problem;
    out.kernel_hash = c->env.kernel_hash;
    out.older_kernel = c->env.kernel_hash != kernel_hash;
    return out;
  }
  return std::nullopt;
}

}  // namespace dgt
