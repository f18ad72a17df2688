// The tuning data a grouped choice reads from an open tuning DB (loader/grouped_choice.hpp decides with it). One
// function for every reader: dgt::GroupedGemm (its DB, at construction) and `dgtune compare` / `gate` on a shapes
// file's grouped lines (their read-only --db), so both see the same winners. GPU-free: the caller names the hardware
// identity and the software environment.
#pragma once

#include <optional>
#include <string>

#include "db/tuning_db_reader.hpp"
#include "loader/grouped_choice.hpp"
#include "problem/grouped_problem.hpp"
#include "records/records.hpp"

namespace dgt {

/// The grouped winners of g's layout, G, N, K and scale mode (TuningDbReader::environment_winners of g.keyed(): every
/// environment and protocol) stored for `hardware` in `db`, with `env`'s kernel hash and key (the identity rule's
/// "running kernel first") and `protocol_kind` ("cold-l2" | "hot-graph", the kind preferred). std::nullopt when the
/// DB holds no trials of this hardware identity; a lookup with empty candidates when it holds none of this family.
/// Throws Error(kSqlite) as TuningDbReader does.
std::optional<GroupedLookup> grouped_lookup(const TuningDbReader& db, const HardwareIdentity& hardware,
                                            const SoftwareEnv& env, const GroupedProblem& g,
                                            const std::string& protocol_kind);

}  // namespace dgt
