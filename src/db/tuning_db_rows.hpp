// Internal to db/: the row helpers that the reader's and the writer's translation units share
// (db/tuning_db_reader.cpp defines them; db/tuning_db.cpp and db/measurements.cpp call them).
#pragma once

#include "db/sqlite.hpp"
#include "db/tuning_db_reader.hpp"
#include "problem/problem.hpp"

namespace dgt::dbrows {

/// The problem table's group_kind text of `p`: "none" (dense), "contiguous" or "masked" (schema 11).
const char* group_kind_column(const Problem& p);
/// Reads the problem columns (m .. act, and schema 11's group_kind, groups, m_max, expected_m) of a row.
Problem read_problem(const sql::Connection& c, const sql::Statement& s);
/// Binds :device_id and :environment_id.
void bind_scope(sql::Statement& s, const DeviceScope& scope);

}  // namespace dgt::dbrows
