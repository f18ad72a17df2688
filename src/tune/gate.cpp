#include "tune/gate.hpp"

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
    shapes.push_back({{"problem", p},
                      {"problem_key", s.problem.key()},
                      {"name", s.name},
                      {"config", s.config_key},
                      {"config_source", s.config_source},
                      {"status", s.status},
                      {"error", s.error},
                      {"tuned_algo", s.tuned_algo},
                      {"default_algo", s.default_algo},
                      {"rounds", s.rounds},
                      {"ours_us", s.ours_us},
                      {"cublaslt_tuned_us", s.tuned_us},
                      {"cublaslt_default_us", s.default_us},
                      {"clock_mhz", s.clock_mhz},
                      {"flagged", flagged}});
  }
  json protocol = r.protocol.empty() ? json(nullptr) : json::parse(r.protocol, nullptr, false);
  if (protocol.is_discarded()) protocol = r.protocol;
  json j = {{"schema_version", r.schema_version}, {"kind", "dgtune-gate-baseline"}, {"hardware", hw_json(r.hardware)},
            {"software", sw_json(r.software)},    {"kernel_hash", r.kernel_hash},   {"protocol", protocol},
            {"created_at", r.created_at},         {"pci_bus_id", r.pci_bus_id},     {"shapes", shapes}};
  return j.dump(1) + "\n";
}

namespace {
GateRecord parse_record_fields(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) DGT_THROW(ErrorKind::kUsage, "{}: not a JSON object", source);
  GateRecord r;
  r.schema_version = field<int>(j, "schema_version", source);
  if (r.schema_version != kBaselineSchemaVersion)
    DGT_THROW(ErrorKind::kUsage, "{}: schema_version {} (this dgtune reads version {}); record a new baseline", source,
              r.schema_version, kBaselineSchemaVersion);
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
  for (size_t i = 0; i < shapes.size(); ++i) {
    const json& js = shapes[i];
    const std::string where = fmt::format("{}: shapes[{}]", source, i);
    ShapeRecord s;
    if (!js.is_object() || !js.contains("problem")) DGT_THROW(ErrorKind::kUsage, "{}: missing field 'problem'", where);
    try {
      from_json(js["problem"], s.problem);
    } catch (const json::exception& e) {
      DGT_THROW(ErrorKind::kUsage, "{}: problem: {}", where, escaped(json_error_text(e)));
    } catch (const Error& e) {
      DGT_THROW(ErrorKind::kUsage, "{}: problem: {}", where, e.message());  // what() would add a source location
    }
    s.name = js.value("name", std::string());
    s.config_key = field<std::string>(js, "config", where);
    s.config_source = js.value("config_source", std::string());
    s.status = field<std::string>(js, "status", where);
    s.error = js.value("error", std::string());
    s.tuned_algo = js.value("tuned_algo", std::string());
    s.default_algo = js.value("default_algo", std::string());
    s.rounds = field<std::vector<int>>(js, "rounds", where);
    s.ours_us = field<std::vector<double>>(js, "ours_us", where);
    s.tuned_us = field<std::vector<double>>(js, "cublaslt_tuned_us", where);
    s.default_us = js.value("cublaslt_default_us", std::vector<double>());
    s.clock_mhz = js.value("clock_mhz", std::vector<double>());
    s.flagged = to_bools(js.value("flagged", std::vector<int>()));
    // cublaslt_tuned_us is empty for a shape cuBLASLt does not run (gated on dgtune's absolute time).
    if (s.ours_us.size() != s.rounds.size() || (!s.tuned_us.empty() && s.tuned_us.size() != s.rounds.size()))
      DGT_THROW(ErrorKind::kUsage, "{}: rounds, ours_us and cublaslt_tuned_us must have the same length ({}, {}, {})",
                where, s.rounds.size(), s.ours_us.size(), s.tuned_us.size());
    for (size_t k = 0; k < s.ours_us.size(); ++k)
      if (!(s.ours_us[k] > 0) || !std::isfinite(s.ours_us[k]) ||
          (!s.tuned_us.empty() && (!(s.tuned_us[k] > 0) || !std::isfinite(s.tuned_us[k]))))
        DGT_THROW(ErrorKind::kUsage, "{}: round {}: times must be positive and finite", where, k);
    if (r.find(s.problem.key())) DGT_THROW(ErrorKind::kUsage, "{}: problem {} appears twice", where, s.problem.key());
    r.shapes.push_back(std::move(s));
  }
  return r;
}

}  // namespace

GateRecord parse_record(const std::string& text, const std::string& source_path) {
  const std::string source = escaped(source_path);  // quoted in every message
  try {
    return parse_record_fields(text, source);
  } catch (const json::exception& e) {
    // An optional field of the wrong type (j.value("name", ...) on a number): still the file's fault.
    DGT_THROW(ErrorKind::kUsage, "{}: {}", source, escaped(json_error_text(e)));
  }
}

GateRecord read_record(const std::string& path) { return parse_record(read_input_file(path, "baseline file"), path); }

void write_record(const GateRecord& r, const std::string& path) {
  std::ofstream out(path);
  if (!out) DGT_THROW(ErrorKind::kIo, "cannot write {}", path);
  out << to_json(r);
  if (!out) DGT_THROW(ErrorKind::kIo, "writing {} failed", path);
}

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

// ---- decision -----------------------------------------------------------------------------------

const char* to_string(ShapeVerdict v) {
  switch (v) {
    case ShapeVerdict::kPass: return "pass";
    case ShapeVerdict::kCublasFaster: return "cublas-faster";
    case ShapeVerdict::kRegression: return "regression";
    case ShapeVerdict::kVerifyFailed: return "verify-failed";
    case ShapeVerdict::kError: return "error";
    case ShapeVerdict::kNew: return "new";
  }
  return "?";
}

bool is_failure(ShapeVerdict v) { return v == ShapeVerdict::kRegression || v == ShapeVerdict::kVerifyFailed; }

int exit_code_for(int errors, int failures) { return errors > 0 ? 1 : failures > 0 ? 3 : 0; }

int GateReport::exit_code() const { return exit_code_for(errors, regressions + verify_failed); }

std::vector<std::string> GateReport::errored() const {
  std::vector<std::string> v;
  for (const ShapeDecision& d : shapes)
    if (d.verdict == ShapeVerdict::kError) v.push_back(d.label);
  return v;
}

namespace {

std::vector<double> logs(const std::vector<double>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(std::log(x));
  return out;
}

double median_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : stats::median(v); }

}  // namespace

ShapeDecision decide_shape(const ShapeRecord* base, const ShapeRecord& now, const GateSettings& st,
                           bool cublas_software_changed) {
  ShapeDecision d;
  d.problem = now.problem;
  d.problem_key = now.problem.key();
  d.label = now.name.empty() ? now.problem.label() : now.name;
  d.config_now = now.config_key;
  d.ours_now_us = median_or_zero(now.ours_us);
  d.tuned_now_us = median_or_zero(now.tuned_us);
  if (!now.ours_us.empty() && now.ours_us.size() == now.tuned_us.size())
    d.ratio_now = std::exp(stats::median(now.log_ratios()));
  if (base) {
    d.config_baseline = base->config_key;
    d.ours_baseline_us = median_or_zero(base->ours_us);
    d.tuned_baseline_us = median_or_zero(base->tuned_us);
    if (!base->ours_us.empty() && base->ours_us.size() == base->tuned_us.size())
      d.ratio_baseline = std::exp(stats::median(base->log_ratios()));
  }
  // Order of the checks: correctness, then whether there is anything to test, then the test.
  if (now.status == "verify_failed") {
    d.verdict = ShapeVerdict::kVerifyFailed;
    d.reason = "the candidate no longer verifies: " + now.error;
    return d;
  }
  if (!now.ok()) {
    d.verdict = ShapeVerdict::kError;
    d.reason = "not measured now: " + (now.error.empty() ? now.status : now.error);
    return d;
  }
  if (!base) {
    d.verdict = ShapeVerdict::kNew;
    d.reason = "not in the baseline: measured, not gated";
    return d;
  }
  if (!base->ok() || base->ours_us.empty()) {
    // A defect of the baseline, not of this build: measured and reported, not gated (an error here would fail
    // every run until the baseline is re-recorded).
    d.verdict = ShapeVerdict::kNew;
    d.reason = "the baseline has no samples for this shape (" + (base->error.empty() ? base->status : base->error) +
               "): measured, not gated; record a new baseline";
    return d;
  }
  if (now.ours_us.empty()) {
    d.verdict = ShapeVerdict::kError;
    d.reason = "no samples measured now";
    return d;
  }
  const stats::GateOptions opts{st.threshold, st.confidence, stats::ShiftMethod::kAuto};
  if (base->tuned_us.empty() || now.tuned_us.empty()) {
    // cuBLASLt does not run this shape (e.g. dimensions that are not multiples of 16): there is no ratio,
    // so dgtune's absolute time is the statistic (more exposed to clock and machine differences).
    d.absolute_test = stats::gate_test(logs(base->ours_us), logs(now.ours_us), opts);
    const bool pass = d.absolute_test->verdict == stats::GateVerdict::kPass;
    d.verdict = pass ? ShapeVerdict::kPass : ShapeVerdict::kRegression;
    d.reason = fmt::format(
        "no cuBLASLt side (cuBLASLt does not run this shape): gated on dgtune's absolute time, change "
        "{:+.1f}%, 'slowdown <= {:.1f}%' {} (p = {:.3g})",
        d.absolute_test->slowdown() * 100, st.threshold * 100, pass ? "not rejected" : "rejected",
        d.absolute_test->p_value);
    return d;
  }
  d.ratio_test = stats::gate_test(base->log_ratios(), now.log_ratios(), opts);
  d.absolute_test = stats::gate_test(logs(base->ours_us), logs(now.ours_us), opts);
  const std::vector<double> tb = logs(base->tuned_us), tn = logs(now.tuned_us);
  const double cshift = stats::hodges_lehmann_shift(tb, tn);
  const stats::Interval ci = stats::shift_interval(tb, tn, st.confidence);
  d.cublas_change = std::exp(cshift) - 1;
  d.cublas_change_lo = std::exp(ci.lo) - 1;
  d.cublas_change_hi = std::exp(ci.hi) - 1;
  const double slow = d.ratio_test->slowdown() * 100;
  if (d.ratio_test->verdict == stats::GateVerdict::kPass) {
    d.verdict = ShapeVerdict::kPass;
    d.reason = fmt::format("ratio change {:+.1f}%, 'slowdown <= {:.1f}%' not rejected (p = {:.3g})", slow,
                           st.threshold * 100, d.ratio_test->p_value);
    return d;
  }
  const bool absolute_held = d.absolute_test->verdict == stats::GateVerdict::kPass;
  const bool cublas_faster = ci.hi < 0;  // two-sided interval of cuBLASLt's shift entirely below 0
  if (absolute_held && cublas_faster && cublas_software_changed) {
    d.verdict = ShapeVerdict::kCublasFaster;
    d.reason = fmt::format(
        "ratio change {:+.1f}% but dgtune's absolute time changed {:+.1f}% (not a regression) while cuBLASLt-tuned "
        "got faster ({:+.1f}%): a cuBLASLt speed-up, not a dgtune regression",
        slow, d.absolute_test->slowdown() * 100, d.cublas_change * 100);
    return d;
  }
  d.verdict = ShapeVerdict::kRegression;
  d.reason =
      fmt::format("ratio slower by {:+.1f}% (lower bound {:+.1f}% > {:.1f}% at confidence {}, p = {:.3g})", slow,
                  d.ratio_test->slowdown_lower_bound() * 100, st.threshold * 100, st.confidence, d.ratio_test->p_value);
  if (!d.config_baseline.empty() && d.config_baseline != d.config_now)
    d.reason += fmt::format("; config changed from {}", d.config_baseline);
  return d;
}

GateReport decide(const GateRecord& baseline, const GateRecord& now, const GateSettings& st) {
  const auto hw = hardware_differences(baseline.hardware, now.hardware);
  if (!hw.empty()) {
    std::string list;
    for (const auto& x : hw) list += "\n  " + x;
    DGT_THROW(ErrorKind::kUsage,
              "the baseline was recorded on other hardware ({} vs {}); a gate compares one hardware identity only:{}",
              baseline.hardware.name, now.hardware.name, list);
  }
  if (!baseline.protocol.empty() && !now.protocol.empty()) {
    auto name = [](const std::string& p) {
      json j = json::parse(p, nullptr, false);
      return j.is_object() ? j.value("name", p) : p;
    };
    if (name(baseline.protocol) != name(now.protocol))
      DGT_THROW(ErrorKind::kUsage,
                "the baseline was measured under protocol {}, this run under {}; pass --protocol to match",
                name(baseline.protocol), name(now.protocol));
  }
  const bool cublas_changed = baseline.software.cublaslt_version != now.software.cublaslt_version ||
                              baseline.software.runtime_version != now.software.runtime_version ||
                              baseline.software.driver_version != now.software.driver_version;
  GateReport r;
  r.settings = st;
  r.software_differences = software_differences(baseline.software, now.software);
  for (const ShapeRecord& s : now.shapes) {
    ShapeDecision d = decide_shape(baseline.find(s.problem.key()), s, st, cublas_changed);
    switch (d.verdict) {
      case ShapeVerdict::kPass: ++r.passed; break;
      case ShapeVerdict::kCublasFaster: ++r.cublas_faster; break;
      case ShapeVerdict::kRegression: ++r.regressions; break;
      case ShapeVerdict::kVerifyFailed: ++r.verify_failed; break;
      case ShapeVerdict::kError: ++r.errors; break;
      case ShapeVerdict::kNew: ++r.new_shapes; break;
    }
    r.shapes.push_back(std::move(d));
  }
  return r;
}

// ---- writers ------------------------------------------------------------------------------------

namespace {

using report::Cell;
using report::Number;

Cell num(double v, int precision) {
  if (!std::isfinite(v) || v == 0) return std::monostate{};
  return Number{v, precision};
}

Cell pct(double fraction) {
  if (!std::isfinite(fraction)) return std::monostate{};
  return Number{fraction * 100, 1};
}

std::string change_text(const ShapeDecision& d) {
  if (!d.ratio_test) return "-";
  const auto& t = *d.ratio_test;
  auto p = [](double log) {
    return std::isfinite(log) ? fmt::format("{:+.1f}%", (std::exp(log) - 1) * 100) : std::string("inf");
  };
  return fmt::format("{} [{}, {}]", p(t.shift_log), p(t.interval.lo), p(t.interval.hi));
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          o += ' ';
        else
          o += c;
    }
  }
  return o;
}

std::string md_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|')
      o += "\\|";
    else if (c == '\n')
      o += ' ';
    else
      o += c;
  }
  return o;
}

}  // namespace

report::Table gate_table(const GateReport& r, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"problem_key", "problem", false},
               {"config", "config", false},
               {"ratio_baseline", "ratio base"},
               {"ratio_now", "ratio now"},
               {"ratio_change", "change [CI]", false},
               {"lower_bound_pct", "lower bound %"},
               {"p_value", "p"},
               {"ours_baseline_us", "us base"},
               {"ours_now_us", "us now"},
               {"abs_change_pct", "abs %"},
               {"cublas_change_pct", "cuBLASLt %"},
               {"verdict", "verdict", false},
               {"reason", "reason", false}};
  for (const ShapeDecision& d : r.shapes) {
    const bool tested = d.ratio_test.has_value();
    t.rows.push_back({d.label, d.problem_key, d.config_now, num(d.ratio_baseline, 3), num(d.ratio_now, 3),
                      change_text(d), tested ? pct(d.ratio_test->slowdown_lower_bound()) : Cell{},
                      tested ? Cell{Number{d.ratio_test->p_value, 3}} : Cell{}, num(d.ours_baseline_us, 2),
                      num(d.ours_now_us, 2), d.absolute_test ? pct(d.absolute_test->slowdown()) : Cell{},
                      tested ? pct(d.cublas_change) : Cell{}, std::string(to_string(d.verdict)), d.reason});
  }
  return t;
}

std::string junit_xml(const GateReport& r) {
  const int failures = r.regressions + r.verify_failed;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"dgtune gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
                   r.shapes.size(), failures, r.errors, r.new_shapes);
  x += fmt::format("  <testsuite name=\"dgtune-gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
                   r.shapes.size(), failures, r.errors, r.new_shapes);
  x += fmt::format(
      "    <properties>\n      <property name=\"threshold\" value=\"{}\"/>\n"
      "      <property name=\"confidence\" value=\"{}\"/>\n",
      r.settings.threshold, r.settings.confidence);
  for (const auto& s : r.software_differences)
    x += fmt::format("      <property name=\"software_difference\" value=\"{}\"/>\n", xml_escape(s));
  x += "    </properties>\n";
  for (const ShapeDecision& d : r.shapes) {
    x += fmt::format("    <testcase classname=\"dgtune.gate\" name=\"{}\">\n",
                     xml_escape(d.label + " " + d.problem_key));
    const std::string msg = xml_escape(d.reason);
    switch (d.verdict) {
      case ShapeVerdict::kRegression:
      case ShapeVerdict::kVerifyFailed:
        x += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", to_string(d.verdict), msg, msg);
        break;
      case ShapeVerdict::kError:
        x += fmt::format("      <error type=\"error\" message=\"{}\">{}</error>\n", msg, msg);
        break;
      case ShapeVerdict::kNew: x += fmt::format("      <skipped message=\"{}\"/>\n", msg); break;
      default: x += fmt::format("      <system-out>{}: {}</system-out>\n", to_string(d.verdict), msg); break;
    }
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

std::string markdown_summary(const GateReport& r) {
  const int code = r.exit_code();
  const char* head = code == 0 ? "PASS" : code == 3 ? "FAIL (regression)" : "ERROR";
  std::string m = fmt::format("## dgtune gate: {}\n\n", head);
  m += fmt::format(
      "{} shapes: {} pass, {} cuBLASLt-faster (pass), {} regression, {} verify-failed, {} error, {} new. "
      "Threshold {:.1f}% slowdown of the same-round ratio dgtune/cuBLASLt-tuned, one-sided test at confidence {}.\n\n",
      r.shapes.size(), r.passed, r.cublas_faster, r.regressions, r.verify_failed, r.errors, r.new_shapes,
      r.settings.threshold * 100, r.settings.confidence);
  bool any = false;
  for (const ShapeDecision& d : r.shapes) {
    if (!is_failure(d.verdict) && d.verdict != ShapeVerdict::kError) continue;
    if (!any) m += "### Failing shapes\n\n";
    any = true;
    m += fmt::format("- **{}** `{}`: {}: {}\n", md_escape(d.label), d.config_now, to_string(d.verdict),
                     md_escape(d.reason));
  }
  if (any) m += "\n";
  if (!r.software_differences.empty()) {
    m += "### Software differences from the baseline\n\n";
    for (const auto& s : r.software_differences) m += "- " + md_escape(s) + "\n";
    m += "\n";
  }
  m += "| shape | config | ratio base | ratio now | change [CI] | us base | us now | cuBLASLt | verdict |\n";
  m += "|---|---|---:|---:|---|---:|---:|---:|---|\n";
  auto f = [](double v, int p) { return v > 0 && std::isfinite(v) ? fmt::format("{:.{}f}", v, p) : std::string("-"); };
  for (const ShapeDecision& d : r.shapes)
    m += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |\n", md_escape(d.label), d.config_now,
                     f(d.ratio_baseline, 3), f(d.ratio_now, 3), change_text(d), f(d.ours_baseline_us, 2),
                     f(d.ours_now_us, 2), d.ratio_test ? fmt::format("{:+.1f}%", d.cublas_change * 100) : "-",
                     to_string(d.verdict));
  return m;
}

std::vector<GateResultRow> history_rows(const GateReport& r) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<GateResultRow> rows;
  for (const ShapeDecision& d : r.shapes) {
    GateResultRow g;
    g.problem = d.problem;
    g.name = d.label;
    g.config_key = d.config_now;
    g.config_baseline = d.config_baseline;
    g.verdict = to_string(d.verdict);
    g.reason = d.reason;
    auto pos = [&](double v) { return v > 0 ? v : nan; };
    g.ratio_baseline = pos(d.ratio_baseline);
    g.ratio_now = pos(d.ratio_now);
    g.slowdown = d.ratio_test ? d.ratio_test->slowdown() : nan;
    g.slowdown_lo =
        d.ratio_test && std::isfinite(d.ratio_test->interval.lo) ? std::exp(d.ratio_test->interval.lo) - 1 : nan;
    g.slowdown_hi =
        d.ratio_test && std::isfinite(d.ratio_test->interval.hi) ? std::exp(d.ratio_test->interval.hi) - 1 : nan;
    g.p_value = d.ratio_test ? d.ratio_test->p_value : nan;
    g.ours_baseline_us = pos(d.ours_baseline_us);
    g.ours_now_us = pos(d.ours_now_us);
    g.tuned_baseline_us = pos(d.tuned_baseline_us);
    g.tuned_now_us = pos(d.tuned_now_us);
    rows.push_back(std::move(g));
  }
  return rows;
}

GateRunRow history_run(const GateReport& r, const GateRecord& baseline, const std::string& baseline_path) {
  GateRunRow run;
  run.baseline_path = baseline_path;
  run.baseline_created_at = baseline.created_at;
  run.baseline_env_key = baseline.software.key();
  json p = json::parse(baseline.protocol, nullptr, false);
  run.protocol = p.is_object() ? p.value("name", baseline.protocol) : baseline.protocol;
  run.threshold = r.settings.threshold;
  run.confidence = r.settings.confidence;
  run.exit_code = r.exit_code();
  run.shapes = static_cast<int>(r.shapes.size());
  run.failures = r.regressions + r.verify_failed;
  run.errors = r.errors;
  return run;
}

report::Table history_table(const std::vector<GateHistoryPoint>& points, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"run_id", "run"},
               {"created_at", "when", false},
               {"device", "device", false},
               {"kernel_hash", "kernel", false},
               {"problem_key", "problem", false},
               {"config", "config", false},
               {"ratio_baseline", "ratio base"},
               {"ratio_now", "ratio now"},
               {"slowdown_pct", "change %"},
               {"slowdown_lo_pct", "lo %"},
               {"slowdown_hi_pct", "hi %"},
               {"ours_now_us", "us now"},
               {"tuned_now_us", "cuBLASLt us"},
               {"verdict", "verdict", false},
               {"exit_code", "run exit"}};
  for (const GateHistoryPoint& h : points) {
    const GateResultRow& g = h.result;
    t.rows.push_back({h.run_id, h.created_at, h.device_name, h.kernel_hash, h.problem_key, g.config_key,
                      num(g.ratio_baseline, 3), num(g.ratio_now, 3), pct(g.slowdown), pct(g.slowdown_lo),
                      pct(g.slowdown_hi), num(g.ours_now_us, 2), num(g.tuned_now_us, 2), g.verdict,
                      static_cast<int64_t>(h.exit_code)});
  }
  return t;
}

report::Table record_table(const GateRecord& r, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"config", "config", false},
               {"source", "source", false},
               {"status", "status", false},
               {"rounds", "rounds"},
               {"ours_us", "dgtune us"},
               {"tuned_us", "cuBLASLt-tuned us"},
               {"default_us", "cuBLASLt-default us"},
               {"ratio", "ratio"},
               {"flagged", "flagged"}};
  for (const ShapeRecord& s : r.shapes) {
    int flagged = 0;
    for (bool b : s.flagged) flagged += b;
    const bool ok = s.ok() && !s.ours_us.empty();
    const bool has_tuned = ok && !s.tuned_us.empty();
    t.rows.push_back(
        {s.name.empty() ? s.problem.label() : s.name, s.config_key, s.config_source,
         s.ok() ? s.status : s.status + ": " + s.error, static_cast<int64_t>(s.rounds.size()),
         ok ? num(stats::median(s.ours_us), 2) : Cell{}, has_tuned ? num(stats::median(s.tuned_us), 2) : Cell{},
         s.default_us.empty() ? Cell{} : num(stats::median(s.default_us), 2),
         has_tuned ? num(std::exp(stats::median(s.log_ratios())), 3) : Cell{}, static_cast<int64_t>(flagged)});
  }
  return t;
}

}  // namespace dgt::gate
