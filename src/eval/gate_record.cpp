#include "eval/gate_record.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/input_file.hpp"
#include "core/json_text.hpp"
#include "core/output_file.hpp"
#include "db/sqlite.hpp"
#include "eval/grouped_compare_tables.hpp"
#include "eval/shape_compare.hpp"
#include "stats/stats.hpp"

namespace dgt::gate {

using nlohmann::json;

// ---- record -------------------------------------------------------------------------------------

std::vector<double> ShapeRecord::log_ratios() const { return stats::log_ratios(ours_us, tuned_us); }

const ShapeRecord* GateRecord::find(const std::string& problem_key) const {
  for (const ShapeRecord& s : shapes)
    if (s.problem.key() == problem_key) return &s;
  return nullptr;
}

namespace {

json hw_json(const HardwareIdentity& h) {
  return {{"name", h.name},         {"cc_major", h.cc_major},         {"cc_minor", h.cc_minor},
          {"sm_count", h.sm_count}, {"memory_bytes", h.memory_bytes}, {"l2_bytes", h.l2_bytes},
          {"key", h.key()}};
}

json sw_json(const SoftwareEnv& s) {
  return {{"driver_version", s.driver_version},
          {"runtime_version", s.runtime_version},
          {"cublaslt_version", s.cublaslt_version},
          {"nvrtc_version", s.nvrtc_version},
          {"kernel_hash", s.kernel_hash},
          {"dgtune_version", s.dgtune_version},
          {"key", s.key()}};
}

/// nlohmann's exception text without its "[json.exception.type_error.302] " prefix.
std::string json_error_text(const json::exception& e) {
  std::string what = e.what();
  if (const size_t b = what.find("] "); what.rfind("[json.exception", 0) == 0 && b != std::string::npos)
    what = what.substr(b + 2);
  return what;
}

/// `v` as T; an integer must be an exact JSON integer that fits T (nlohmann would truncate 4294967297 to 1
/// for an int and round 1.5 down).
template <class T>
T exact(const json& v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!v.is_number_integer()) throw std::invalid_argument(escaped(v.dump()) + " is not an integer");
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                          : v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max());
    if (!fits)
      throw std::invalid_argument(fmt::format("{} is out of range [{}, {}]", escaped(v.dump()),
                                              std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    return v.get<T>();
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    if (!v.is_array()) throw std::invalid_argument("is not an array");
    T out;
    for (const json& e : v) out.push_back(exact<int>(e));
    return out;
  } else {
    return v.get<T>();
  }
}

template <class T>
T field(const json& j, const char* name, const std::string& where) {
  if (!j.is_object() || !j.contains(name)) DGT_THROW(ErrorKind::kUsage, "{}: missing field '{}'", where, name);
  try {
    return exact<T>(j.at(name));
  } catch (const json::exception& e) {
    DGT_THROW(ErrorKind::kUsage, "{}: field '{}': {}", where, name, escaped(json_error_text(e)));
  } catch (const std::invalid_argument& e) {
    DGT_THROW(ErrorKind::kUsage, "{}: field '{}': {}", where, name, e.what());
  }
}

std::vector<bool> to_bools(const std::vector<int>& v) { return {v.begin(), v.end()}; }

}  // namespace

std::string to_json(const GateRecord& r) {
  json shapes = json::array();
  for (const ShapeRecord& s : r.shapes) {
    json p;
    to_json(p, s.problem);
    std::vector<int> flagged(s.flagged.begin(), s.flagged.end());
    json shape = {{"problem", p},
                      {"problem_key", s.problem.key()},
                      {"name", s.name},
                      {"config", s.config_key},
                      {"config_source", s.config_source},
                      {"status", s.status},
                      {"error", s.error},
                      {"cublas_tuned_algo", s.tuned_algo},
                      {"cublas_default_algo", s.default_algo},
                      {"rounds", s.rounds},
                      {"dgtune_us", s.ours_us},
                      {"cublas_tuned_us", s.tuned_us},
                      {"cublas_default_us", s.default_us},
                      {"clock_mhz", s.clock_mhz},
                      {"flagged", flagged}};
    // Only grouped shapes have the field: a dense baseline is the file it was before grouped lines were gated.
    if (s.grouped) shape["grouped"] = grouped_text(*s.grouped);
    shapes.push_back(std::move(shape));
  }
  json protocol = r.protocol.empty() ? json(nullptr) : json::parse(r.protocol, nullptr, false);
  if (protocol.is_discarded()) protocol = r.protocol;
  // The envelope every dgtune JSON document starts with (report/document.hpp), then the data, in this order.
  nlohmann::ordered_json j;
  j["schema"] = std::string(kBaselineSchema);
  j["schema_version"] = r.schema_version;
  j["hardware"] = hw_json(r.hardware);
  j["software"] = sw_json(r.software);
  j["kernel_hash"] = r.kernel_hash;
  j["protocol"] = protocol;
  j["created_at"] = r.created_at;
  j["pci_bus_id"] = r.pci_bus_id;
  j["shapes"] = shapes;
  return j.dump(1) + "\n";
}

namespace {

/// The names a version gives the per-round fields: version 1 (written before the envelope) said "ours_us" and
/// "cublaslt_*"; version 2 uses the names of every other dgtune output ("dgtune_us", "cublas_*").
struct SampleNames {
  const char *dgtune_us, *tuned_us, *default_us, *tuned_algo, *default_algo;
};
constexpr SampleNames kV1Names{"ours_us", "cublaslt_tuned_us", "cublaslt_default_us", "tuned_algo", "default_algo"};
constexpr SampleNames kV2Names{"dgtune_us", "cublas_tuned_us", "cublas_default_us", "cublas_tuned_algo",
                               "cublas_default_algo"};

/// `j[name]` as T when present, else `fallback`; a present value of the wrong type is the file's fault.
template <class T>
T optional_field(const json& j, const char* name, const std::string& where, T fallback) {
  if (!j.contains(name) || j.at(name).is_null()) return fallback;
  return field<T>(j, name, where);
}

/// Refuses a field of object `j` that `known` does not list, naming the file and the field's JSON pointer: a
/// misspelt field would otherwise be read as absent (shapes and space files refuse unknown keys the same way).
void check_known_fields(const json& j, const std::string& source, const std::string& pointer,
                        std::initializer_list<const char*> known) {
  if (!j.is_object()) return;  // the field reads below name a missing or mistyped object
  for (const auto& [key, value] : j.items()) {
    bool found = false;
    for (const char* k : known) found = found || key == k;
    if (found) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    DGT_THROW(ErrorKind::kUsage, "{}: {}/{}: unknown field (the fields here: {}); record the baseline again with "
              "`dgtune gate --record`", source, pointer, escaped(key), list);
  }
}

GateRecord parse_record_fields(const std::string& text, const std::string& source_path, const std::string& source) {
  check_json_depth(text, source_path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw_invalid_json(text, source_path, e.byte, e.what());
  } catch (const json::exception& e) {
    throw_invalid_json(text, source_path, 0, e.what());  // a number too large for any type: located by its text
  }
  if (!j.is_object())
    DGT_THROW(ErrorKind::kUsage, "{}: the top level is {}, not an object (a gate baseline is a JSON object)", source,
              j.type_name());
  GateRecord r;
  // Version 1 files (dgtune before the JSON envelope) have no "schema" and say "kind": "dgtune-gate-baseline".
  const bool has_schema = j.contains("schema");
  if (has_schema) {
    const std::string schema = field<std::string>(j, "schema", source);
    if (schema != std::string(kBaselineSchema))
      DGT_THROW(ErrorKind::kUsage, "{}: schema '{}' is not a gate baseline ('{}'): pass the file `gate --record` wrote",
                source, escaped(schema), kBaselineSchema);
  } else if (j.contains("kind") && j["kind"] != std::string(kBaselineSchema)) {
    DGT_THROW(ErrorKind::kUsage, "{}: kind {} is not a gate baseline ('{}')", source, escaped(j["kind"].dump()),
              kBaselineSchema);
  }
  r.schema_version = field<int>(j, "schema_version", source);
  if (r.schema_version > kBaselineSchemaVersion || r.schema_version < 1 || (r.schema_version == 1) == has_schema)
    DGT_THROW(ErrorKind::kUsage,
              "{}: schema_version {}{} (this dgtune reads version {} with \"schema\": \"{}\", and version 1 without "
              "it); record a new baseline",
              source, r.schema_version, has_schema ? " with \"schema\"" : " without \"schema\"",
              kBaselineSchemaVersion, kBaselineSchema);
  const SampleNames& names = r.schema_version == 1 ? kV1Names : kV2Names;
  // Version 1 named its kind ("kind") where later versions name the schema ("schema").
  check_known_fields(j, source, "", {has_schema ? "schema" : "kind", "schema_version", "hardware", "software",
                                     "kernel_hash", "protocol", "created_at", "pci_bus_id", "shapes"});
  r.schema_version = kBaselineSchemaVersion;  // what to_json() writes back
  const json& hw = j.contains("hardware") ? j["hardware"] : json();
  const std::string hw_where = source + ": hardware";
  r.hardware.name = field<std::string>(hw, "name", hw_where);
  r.hardware.cc_major = field<int>(hw, "cc_major", hw_where);
  r.hardware.cc_minor = field<int>(hw, "cc_minor", hw_where);
  r.hardware.sm_count = field<int>(hw, "sm_count", hw_where);
  r.hardware.memory_bytes = field<int64_t>(hw, "memory_bytes", hw_where);
  r.hardware.l2_bytes = field<int64_t>(hw, "l2_bytes", hw_where);
  const json& sw = j.contains("software") ? j["software"] : json();
  const std::string sw_where = source + ": software";
  r.software.driver_version = field<int>(sw, "driver_version", sw_where);
  r.software.runtime_version = field<int>(sw, "runtime_version", sw_where);
  r.software.cublaslt_version = field<int>(sw, "cublaslt_version", sw_where);
  r.software.nvrtc_version = field<int>(sw, "nvrtc_version", sw_where);
  r.software.kernel_hash = field<std::string>(sw, "kernel_hash", sw_where);
  r.software.dgtune_version = field<std::string>(sw, "dgtune_version", sw_where);
  r.kernel_hash = field<std::string>(j, "kernel_hash", source);
  if (!j.contains("protocol") || j["protocol"].is_null())
    DGT_THROW(ErrorKind::kUsage, "{}: missing field 'protocol'", source);
  r.protocol = j["protocol"].is_string() ? j["protocol"].get<std::string>() : j["protocol"].dump();
  r.created_at = field<std::string>(j, "created_at", source);
  r.pci_bus_id = j.value("pci_bus_id", std::string());
  const json& shapes = j.contains("shapes") ? j["shapes"] : json();
  if (!shapes.is_array()) DGT_THROW(ErrorKind::kUsage, "{}: missing array 'shapes'", source);
  // A baseline without shapes would pass every gate having checked nothing.
  if (shapes.empty())
    DGT_THROW(ErrorKind::kUsage,
              "{}: shapes: [] is empty: a baseline without shapes gates nothing; record one with `dgtune gate --record "
              "FILE --shapes SHAPES`",
              source);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const json& js = shapes[i];
    const std::string where = fmt::format("{}: shapes[{}]", source, i);
    ShapeRecord s;
    if (!js.is_object() || !js.contains("problem")) DGT_THROW(ErrorKind::kUsage, "{}: missing field 'problem'", where);
    const std::string pointer = fmt::format("/shapes/{}", i);
    check_known_fields(js["problem"], source, pointer + "/problem",
                       {"m", "n", "k", "lda", "ldb", "ldd", "dtype_a", "dtype_b", "dtype_d", "scale", "accum", "bias",
                        "act", "groups", "group_kind", "m_max", "expected_m"});
    try {
      from_json(js["problem"], s.problem);
    } catch (const json::exception& e) {
      DGT_THROW(ErrorKind::kUsage, "{}: problem: {}", where, escaped(json_error_text(e)));
    } catch (const Error& e) {
      DGT_THROW(ErrorKind::kUsage, "{}: problem: {}", where, e.message());  // what() would add a source location
    }
    // The rules a shapes file's line must follow (TMA alignment, sizes, block scaling needs promotion): a baseline
    // is a list of shapes too, and a shape no kernel can run cannot be gated. A grouped shape is its shapes-file
    // text (parse_grouped_problem checks its rules), which must give back the key it was gated under.
    if (js.contains("grouped")) {
      const std::string text = field<std::string>(js, "grouped", where);
      s.grouped = parse_grouped_problem(text, where + ": grouped");
      if (s.grouped->keyed() != s.problem)
        DGT_THROW(ErrorKind::kUsage, "{}: grouped '{}' is the problem {}, not the shape's problem {}", where,
                  escaped(text), s.grouped->keyed().key(), s.problem.key());
    } else if (s.problem.is_grouped()) {
      DGT_THROW(ErrorKind::kUsage,
                "{}: problem {} is grouped but the shape has no 'grouped' field (its per-group counts); record the "
                "baseline again with `dgtune gate --record`",
                where, s.problem.key());
    } else {
      try {
        validate_problem(s.problem);
      } catch (const Error& e) {
        DGT_THROW(ErrorKind::kUsage, "{}: problem {}: {}", where, s.problem.label(), e.message());
      }
    }
    s.name = optional_field<std::string>(js, "name", where, "");
    s.config_key = field<std::string>(js, "config", where);
    s.config_source = optional_field<std::string>(js, "config_source", where, "");
    s.status = field<std::string>(js, "status", where);
    if (s.status != "ok" && s.status != "verify_failed" && s.status != "error")
      DGT_THROW(ErrorKind::kUsage, "{}: field 'status': '{}' is not ok, verify_failed or error", where,
                escaped(s.status));
    s.error = optional_field<std::string>(js, "error", where, "");
    s.tuned_algo = optional_field<std::string>(js, names.tuned_algo, where, "");
    s.default_algo = optional_field<std::string>(js, names.default_algo, where, "");
    s.rounds = field<std::vector<int>>(js, "rounds", where);
    s.ours_us = field<std::vector<double>>(js, names.dgtune_us, where);
    s.tuned_us = field<std::vector<double>>(js, names.tuned_us, where);
    s.default_us = optional_field<std::vector<double>>(js, names.default_us, where, {});
    s.clock_mhz = optional_field<std::vector<double>>(js, "clock_mhz", where, {});
    s.flagged = to_bools(optional_field<std::vector<int>>(js, "flagged", where, {}));
    // The tuned side is empty for a shape cuBLASLt does not run (gated on dgtune's absolute time).
    if (s.ours_us.size() != s.rounds.size() || (!s.tuned_us.empty() && s.tuned_us.size() != s.rounds.size()))
      DGT_THROW(ErrorKind::kUsage, "{}: rounds, {} and {} must have the same length ({}, {}, {})", where,
                names.dgtune_us, names.tuned_us, s.rounds.size(), s.ours_us.size(), s.tuned_us.size());
    for (size_t k = 0; k < s.ours_us.size(); ++k)
      if (!(s.ours_us[k] > 0) || !std::isfinite(s.ours_us[k]) ||
          (!s.tuned_us.empty() && (!(s.tuned_us[k] > 0) || !std::isfinite(s.tuned_us[k]))))
        DGT_THROW(ErrorKind::kUsage, "{}: round {}: times must be positive and finite", where, k);
    // After the reads: a field of the other version's names is reported as the missing field of this version.
    check_known_fields(js, source, pointer,
                       {"name", "problem", "problem_key", "grouped", "config", "config_source", "status", "error",
                        "rounds", "clock_mhz", "flagged", names.dgtune_us, names.tuned_us, names.default_us,
                        names.tuned_algo, names.default_algo});
    if (r.find(s.problem.key())) DGT_THROW(ErrorKind::kUsage, "{}: problem {} appears twice", where, s.problem.key());
    r.shapes.push_back(std::move(s));
  }
  return r;
}

}  // namespace

GateRecord parse_record(const std::string& text, const std::string& source_path) {
  const std::string source = escaped(source_path);  // quoted in every message
  try {
    return parse_record_fields(text, source_path, source);
  } catch (const json::exception& e) {
    // An optional field of the wrong type (j.value("name", ...) on a number): still the file's fault.
    DGT_THROW(ErrorKind::kUsage, "{}: {}", source, escaped(json_error_text(e)));
  }
}

GateRecord read_record(const std::string& path) { return parse_record(read_input_file(path, "baseline file"), path); }

void write_record(const GateRecord& r, const std::string& path) { write_output_file(path, to_json(r)); }

std::vector<std::string> hardware_differences(const HardwareIdentity& b, const HardwareIdentity& n) {
  std::vector<std::string> d;
  if (b.name != n.name) d.push_back(fmt::format("GPU name: baseline '{}', now '{}'", b.name, n.name));
  if (b.cc_major != n.cc_major || b.cc_minor != n.cc_minor)
    d.push_back(
        fmt::format("compute capability: baseline {}.{}, now {}.{}", b.cc_major, b.cc_minor, n.cc_major, n.cc_minor));
  if (b.sm_count != n.sm_count) d.push_back(fmt::format("SM count: baseline {}, now {}", b.sm_count, n.sm_count));
  if (b.memory_bytes != n.memory_bytes)
    d.push_back(fmt::format("memory: baseline {} bytes, now {} bytes", b.memory_bytes, n.memory_bytes));
  if (b.l2_bytes != n.l2_bytes) d.push_back(fmt::format("L2: baseline {} bytes, now {} bytes", b.l2_bytes, n.l2_bytes));
  return d;
}

std::vector<std::string> software_differences(const SoftwareEnv& b, const SoftwareEnv& n) {
  std::vector<std::string> d;
  auto num = [&](const char* what, int x, int y) {
    if (x != y) d.push_back(fmt::format("{}: baseline {}, now {}", what, x, y));
  };
  num("driver", b.driver_version, n.driver_version);
  num("CUDA runtime", b.runtime_version, n.runtime_version);
  num("cuBLASLt", b.cublaslt_version, n.cublaslt_version);
  num("NVRTC", b.nvrtc_version, n.nvrtc_version);
  if (b.kernel_hash != n.kernel_hash)
    d.push_back(fmt::format("kernel hash: baseline {}, now {}", b.kernel_hash, n.kernel_hash));
  if (b.dgtune_version != n.dgtune_version)
    d.push_back(fmt::format("dgtune: baseline {}, now {}", b.dgtune_version, n.dgtune_version));
  return d;
}

ShapeRecord record_of(const ShapeMeasurement& m) {
  ShapeRecord rec;
  rec.problem = m.problem;
  rec.name = m.name;
  rec.config_key = m.config_key;
  rec.config_source = m.config_source;
  rec.status = m.status;
  rec.error = m.error;
  rec.tuned_algo = m.tuned_algo;
  rec.default_algo = m.default_algo;
  if (!m.ok() || !m.rounds) return rec;
  for (const AlignedRound& a : aligned_rounds(m)) {
    rec.rounds.push_back(a.round);
    rec.ours_us.push_back(a.ours->time_us);
    if (a.tuned) rec.tuned_us.push_back(a.tuned->time_us);
    if (a.def) rec.default_us.push_back(a.def->time_us);
    rec.clock_mhz.push_back(a.ours->sm_clock_mhz);
    rec.flagged.push_back(a.ours->flagged || (a.tuned && a.tuned->flagged) || (a.def && a.def->flagged));
  }
  return rec;
}

ShapeRecord record_of_grouped(const GroupedCompareShape& c) {
  ShapeRecord rec;
  rec.problem = c.problem.keyed();
  rec.grouped = c.problem;
  rec.name = c.name;
  rec.config_key = c.config_key;
  rec.config_source = c.config_source;
  rec.status = c.status();
  rec.error = c.note;
  rec.tuned_algo = c.loop_algos;
  if (!c.measured()) return rec;
  if (!rec.ok()) return rec;
  const RoundsResult& r = c.result;
  for (int round = 0; round < r.rounds; ++round) {
    const Sample* ours = r.find_sample(round, kGroupedSideGrouped);
    const Sample* loop = r.find_sample(round, kGroupedSideLoop);
    if (!ours || !loop) continue;
    rec.rounds.push_back(round);
    rec.ours_us.push_back(ours->time_us);
    rec.tuned_us.push_back(loop->time_us);
    rec.clock_mhz.push_back(ours->sm_clock_mhz);
    rec.flagged.push_back(ours->flagged || loop->flagged);
  }
  if (rec.rounds.empty()) {
    rec.status = "error";
    rec.error = "no complete round was measured";
  }
  return rec;
}

GateRecord record_header(const DeviceFingerprint& fp, const std::string& protocol_json) {
  GateRecord r;
  r.hardware = fp.hardware();
  r.software = fp.software();
  r.kernel_hash = r.software.kernel_hash;
  r.protocol = protocol_json;
  r.created_at = sql::utc_now_iso8601();
  r.pci_bus_id = fp.pci_bus_id;
  return r;
}

}  // namespace dgt::gate
