// Internal to db/: the row helpers that the reader's and the writer's translation units share
// (db/tuning_db_reader.cpp defines them; db/tuning_db.cpp and db/measurements.cpp call them).
#pragma once

#include "db/sqlite.hpp"
#include "db/tuning_db_reader.hpp"
#include "problem/problem.hpp"

namespace dgt::dbrows {

/// Reads the problem columns (m .. act) of a row.
Problem read_problem(const sql::Connection& c, const sql::Statement& s);
/// Binds :device_id and :environment_id.
void bind_scope(sql::Statement& s, const DeviceScope& scope);

}  // namespace dgt::dbrows
