#include "db/device_pick.hpp"

#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace dgt {

int64_t pick_device(const TuningDbReader& db, const std::string& id, const std::string& flag, bool by_measurements) {
  const std::vector<DeviceRow> rows = db.devices();
  std::string list;
  for (const DeviceRow& r : rows)
    list += fmt::format("\n  {} {} ({} SMs, hardware key {}): {} winners, {} measurements", r.id, r.name, r.sm_count,
                        r.hw_key, r.winners, r.measurements);
  if (!id.empty()) {
    for (const DeviceRow& r : rows)
      if (std::to_string(r.id) == id || r.hw_key == id) return r.id;
    DGT_THROW(ErrorKind::kUsage, "{} {}: no device '{}' in {}; it holds:{}", flag, id, id, db.path(),
              list.empty() ? " none" : list);
  }
  std::vector<int64_t> holding;
  for (const DeviceRow& r : rows)
    if ((by_measurements ? r.measurements : r.winners) > 0) holding.push_back(r.id);
  if (holding.size() == 1) return holding[0];
  if (holding.empty() && rows.size() == 1) return rows[0].id;
  if (holding.empty())
    DGT_THROW(ErrorKind::kUsage, "{} holds no {}{}", db.path(),
              by_measurements ? "stored measurements (dgtune compare --save)" : "winners",
              list.empty() ? "" : "; devices:" + list);
  DGT_THROW(ErrorKind::kUsage, "{} holds several devices; name one with {} ID (row id or hardware key):{}", db.path(),
            flag, list);
}

}  // namespace dgt
