#include "eval/grouped_lines.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "loader/grouped_lookup.hpp"
#include "records/protocol_name.hpp"

namespace dgt {

GroupedChooser::GroupedChooser(const std::string& db_path, const HardwareIdentity& hardware, const SoftwareEnv& env,
                               ProtocolKind protocol)
    : hardware_(hardware), env_(env) {
  // isolated-v1 has no winners of its own (nothing is tuned or stored under it): it runs the cold-l2 winner.
  protocol_kind_ = to_string(protocol == ProtocolKind::kIsolated ? ProtocolKind::kColdL2 : protocol);
  std::error_code ec;
  if (db_path.empty() || !std::filesystem::exists(db_path, ec)) return;
  db_ = std::make_unique<TuningDbReader>(db_path);
  has_device_ = db_->find_hardware(hardware_).has_value();
}

GroupedChooser::~GroupedChooser() = default;

GroupedResolved GroupedChooser::choose(const GroupedProblem& g) const {
  std::optional<GroupedLookup> lookup;
  if (db_ && has_device_) lookup = grouped_lookup(*db_, hardware_, env_, g, protocol_kind_);
  return resolve_grouped_problem(g, "", lookup ? &*lookup : nullptr);
}

void refuse_grouped_lines(const std::vector<ShapeEntry>& shapes, const std::string& flag, const std::string& reason) {
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ShapeEntry& e = shapes[i];
    if (!e.grouped) continue;
    // A shape read back from a gate baseline has no line: it is named by the file and its index there.
    const std::string where = e.line > 0 ? e.where() : fmt::format("{}: shapes[{}]", escaped(e.file), i);
    DGT_THROW(ErrorKind::kUsage, "{}: a grouped (MoE) line ({}): {} {}", where, e.grouped->label(), flag, reason);
  }
}

GroupedCompareShape measure_grouped_line(GroupedMeasurer& measurer, const GroupedChooser& chooser,
                                         const ShapeEntry& line, bool dense) {
  const GroupedProblem& g = *line.grouped;
  const GroupedResolved choice = chooser.choose(g);
  GroupedCompareShape c;
  try {
    GroupedSides sides;
    sides.config = choice.config;
    sides.dense = dense;
    c = measurer.measure(g, sides);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kCuda || e.kind() == ErrorKind::kDriver) throw;
    c.problem = g;
    c.config_key = choice.config.key();
    c.protocol_name = measurer.protocol().name();
    c.note = "error: " + e.message();
    spdlog::warn("{} ({}): not measured: {}", line.where(), g.label(), e.message());
  }
  c.name = line.name;
  c.config_source = choice.choice.source;
  c.tuned_key = choice.choice.tuned_key;
  if (c.measured()) {
    const std::string status = c.status();
    if (status == "verify_failed")
      c.note = fmt::format("verify_failed: config {} gives a wrong output after the rounds (see the check column)",
                           c.config_key);
    else if (status == "error")
      c.note = "error: the per-group cuBLASLt loop's output is wrong after the rounds (see the loop_check column)";
  }
  return c;
}

}  // namespace dgt
