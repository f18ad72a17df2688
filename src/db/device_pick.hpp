// Which device of a tuning DB a read-only command reads (export, compare --between).
#pragma once

#include <cstdint>
#include <string>

#include "db/tuning_db_reader.hpp"

namespace dgt {

/// The device of `db` named by `id` (its row id or hardware key); without `id`, the only device holding
/// measurements (by_measurements) or winners (or the only device at all). Several and none named, or an `id` the
/// DB does not hold: Error(kUsage) listing the devices, with `flag` as the option that names one (exit 2).
int64_t pick_device(const TuningDbReader& db, const std::string& id, const std::string& flag, bool by_measurements);

}  // namespace dgt
