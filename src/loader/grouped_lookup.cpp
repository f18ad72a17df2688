#include "loader/grouped_lookup.hpp"

namespace dgt {

std::optional<GroupedLookup> grouped_lookup(const TuningDbReader& db, const HardwareIdentity& hardware,
                                            const SoftwareEnv& env, const GroupedProblem& g,
                                            const std::string& protocol_kind) {
  const std::optional<int64_t> device_id = db.find_hardware(hardware);
  if (!device_id) return std::nullopt;
  GroupedLookup lookup;
  lookup.candidates = db.environment_winners(*device_id, g.keyed());
  lookup.kernel_hash = env.kernel_hash;
  lookup.env_key = env.key();
  lookup.protocol_kind = protocol_kind;
  return lookup;
}

}  // namespace dgt
