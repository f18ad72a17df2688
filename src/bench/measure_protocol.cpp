#include "bench/measure_protocol.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace dgt {

namespace {
constexpr const char* kAdaptiveName = "cold-l2-v1";
}  // namespace

const char* to_string(ProtocolKind k) {
  switch (k) {
    case ProtocolKind::kColdL2: return "cold-l2";
    case ProtocolKind::kHotGraph: return "hot-graph";
    case ProtocolKind::kIsolated: return "isolated";
  }
  return "?";
}

ProtocolKind parse_protocol_kind(std::string_view s) {
  if (s == "cold-l2") return ProtocolKind::kColdL2;
  if (s == "hot-graph") return ProtocolKind::kHotGraph;
  if (s == "isolated") return ProtocolKind::kIsolated;
  DGT_THROW(ErrorKind::kUsage, "unknown protocol '{}': expected cold-l2, hot-graph or isolated", s);
}

MeasureProtocol MeasureProtocol::named(std::string_view s) {
  if (s == "cold-l2" || s == "cold-l2-v2") return cold_l2();
  if (s == "cold-l2-v3") return cold_l2_v3();
  if (s == "hot-graph" || s == "hot-graph-v1") return hot_graph();
  if (s == "isolated" || s == "isolated-v1") return isolated();
  if (s == "isolated-v2") return isolated_v2();
  DGT_THROW(ErrorKind::kUsage, "unknown protocol '{}': expected {}", s, fmt::join(kMeasuringProtocols, ", "));
}

bool protocol_selected(std::string_view filter, std::string_view name) {
  if (filter.empty()) return true;
  for (ProtocolKind k : {ProtocolKind::kColdL2, ProtocolKind::kHotGraph, ProtocolKind::kIsolated})
    if (filter == to_string(k)) {  // a kind: every version of it
      const std::string prefix = std::string(filter) + "-v";
      return name.substr(0, prefix.size()) == prefix;
    }
  return filter == name;
}

std::string MeasureProtocol::name() const { return fmt::format("{}-v{}", to_string(kind), version()); }

std::string MeasureProtocol::to_json() const {
  if (adaptive)
    return nlohmann::json{{"name", kAdaptiveName},     {"flush", "write+read"},      {"flush_factor_l2", flush_factor},
                          {"warmup", warmup},         {"min_samples", min_samples}, {"max_samples", max_samples},
                          {"target_rse", target_rse}, {"max_seconds", max_seconds}, {"timer", "cudaEvent per launch"},
                          {"statistic", "median"}}
        .dump();
  if (kind == ProtocolKind::kIsolated) {
    nlohmann::json j{{"name", name()},
                     {"kind", to_string(kind)},
                     {"version", version()},
                     {"rounds", rounds},
                     {"launches_per_sample", launches_per_sample},
                     {"order", "one side at a time, sides in list order"},
                     {"warmup", warmup},
                     {"flush", "write+read"},
                     {"flush_factor_l2", flush_factor},
                     {"l2", "cold at the first launch of a sample"},
                     {"clock_probe_us", clock_probe_us},
                     {"clock_floor_fraction", clock_floor},
                     {"clock_reference", "cudaDevAttrClockRate"},
                     {"lead_in_us", lead_in_us},
                     {"timer", "cudaEvent pair around launches_per_sample launches / launches_per_sample"},
                     {"statistic", "median"}};
    if (fill_bytes > 0) {  // isolated-v2: a zero fill instead of the flush, one launch per sample
      j.erase("flush_factor_l2");
      j["order"] = "one side at a time, sides in list order, 32 samples queued per sync";
      j["warmup_form"] = "samples (zero fill, launch)";
      j["flush"] = "zero fill of fill_bytes";
      j["fill_bytes"] = fill_bytes;
      j["l2"] = "cold";
      j["timer"] = "cudaEvent pair around one launch";
      j["after"] = "DeepGEMM deep_gemm/testing/bench.py bench_kineto (flush_l2, 30 tests)";
    }
    return j.dump();  // keys sorted
  }
  nlohmann::json j{{"name", name()},
                   {"kind", to_string(kind)},
                   {"version", version()},
                   {"rounds", rounds},
                   {"order", to_string(order)},
                   {"warmup", warmup},
                   {"clock_probe_us", clock_probe_us},
                   {"clock_floor_fraction", clock_floor},
                   {"clock_reference", "cudaDevAttrClockRate"},
                   {"lead_in_us", lead_in_us},
                   {"statistic", "median"}};
  if (gap_us > 0) j["gap_us"] = gap_us;  // a study variant; absent from the standard protocols' JSON
  if (tail_kernels > 0) {                 // cold-l2-v3's queue tail; absent from v2's JSON
    j["tail_kernels"] = tail_kernels;
    j["tail_kernel_us"] = tail_kernel_us;
  }
  if (kind == ProtocolKind::kColdL2) {
    j["flush"] = "write+read";
    j["flush_factor_l2"] = flush_factor;
    j["timer"] = "cudaEvent per launch";
    j["l2"] = "cold";
  } else {
    j["graph_launches"] = graph_launches;
    j["timer"] = "cudaEvent per graph replay / graph_launches";
    j["l2"] = "warm";
  }
  return j.dump();  // nlohmann::json objects keep their keys sorted
}

namespace {

/// from_json's reading; a field of the wrong JSON type throws nlohmann's exception, which from_json turns into
/// Error(kInvalid).
MeasureProtocol protocol_from_fields(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("name", std::string()) == kAdaptiveName && !j.contains("kind")) {
    MeasureProtocol p = MeasureProtocol::cold_l2_adaptive();
    p.warmup = j.value("warmup", p.warmup);
    p.flush_factor = j.value("flush_factor_l2", p.flush_factor);
    p.min_samples = j.value("min_samples", p.min_samples);
    p.max_samples = j.value("max_samples", p.max_samples);
    p.target_rse = j.value("target_rse", p.target_rse);
    p.max_seconds = j.value("max_seconds", p.max_seconds);
    return p;
  }
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
    DGT_THROW(ErrorKind::kInvalid, "not a dgtune protocol (no \"kind\" and not {}): {}", kAdaptiveName, text);
  MeasureProtocol p;
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "cold-l2")
    p.kind = ProtocolKind::kColdL2;
  else if (kind == "hot-graph")
    p.kind = ProtocolKind::kHotGraph;
  else if (kind == "isolated")
    p.kind = ProtocolKind::kIsolated;
  else
    DGT_THROW(ErrorKind::kInvalid, "unknown protocol kind '{}' in {}", kind, text);
  const int version = j.value("version", 0);
  if (p.kind == ProtocolKind::kIsolated && version == 2) {
    p = MeasureProtocol::isolated_v2();
    p.fill_bytes = j.value("fill_bytes", p.fill_bytes);
    if (p.fill_bytes <= 0)
      DGT_THROW(ErrorKind::kInvalid, "protocol isolated-v2 with fill_bytes = {}: v2 zero-fills memory before every "
                "sample (at least one byte)", p.fill_bytes);
  }
  if (p.kind == ProtocolKind::kColdL2 && version == 3) {
    p.tail_kernels = j.value("tail_kernels", MeasureProtocol::kV3TailKernels);
    p.tail_kernel_us = j.value("tail_kernel_us", 1.0);
    if (p.tail_kernels <= 0)
      DGT_THROW(ErrorKind::kInvalid, "protocol cold-l2-v3 with tail_kernels = {}: v3 is the engine with a queue tail "
                "(at least one kernel)", p.tail_kernels);
  }
  if (version != p.version())
    DGT_THROW(ErrorKind::kInvalid, "protocol {} version {} is not implemented by this build (it implements {})", kind,
              version,
              p.kind == ProtocolKind::kColdL2     ? "cold-l2-v2 and cold-l2-v3"
              : p.kind == ProtocolKind::kIsolated ? "isolated-v1 and isolated-v2"
                                                  : p.name());
  p.rounds = j.value("rounds", p.rounds);
  p.warmup = j.value("warmup", p.warmup);
  p.graph_launches = j.value("graph_launches", p.graph_launches);
  p.flush_factor = j.value("flush_factor_l2", p.flush_factor);
  p.clock_probe_us = j.value("clock_probe_us", p.clock_probe_us);
  p.lead_in_us = j.value("lead_in_us", p.lead_in_us);
  p.clock_floor = j.value("clock_floor_fraction", p.clock_floor);
  p.launches_per_sample = j.value("launches_per_sample", p.launches_per_sample);
  p.gap_us = j.value("gap_us", p.gap_us);
  if (p.kind != ProtocolKind::kIsolated) {
    try {
      p.order = parse_side_order(j.value("order", std::string("williams")), "order");
    } catch (const Error& e) {
      DGT_THROW(ErrorKind::kInvalid, "{} in {}", e.message(), text);
    }
  }
  return p;
}

}  // namespace

MeasureProtocol MeasureProtocol::from_json(const std::string& text) {
  try {
    return protocol_from_fields(text);
  } catch (const nlohmann::json::exception& e) {
    DGT_THROW(ErrorKind::kInvalid, "protocol JSON with a field of the wrong type ({}): {}", e.what(), text);
  }
}

void MeasureProtocol::validate() const {
  if (adaptive) {  // cold-l2-v1: the adaptive timer's settings
    if (kind != ProtocolKind::kColdL2)
      DGT_THROW(ErrorKind::kInternal, "protocol {}: only cold-l2 has an adaptive timer", name());
    if (tail_kernels != 0)
      DGT_THROW(ErrorKind::kInternal, "protocol {}: a queue tail is the engine's (cold-l2-v3), not the timer's",
                name());
    if (min_samples < 1 || max_samples < min_samples)
      DGT_THROW(ErrorKind::kUsage, "--max-samples = {} must be >= 1 and >= --min-samples = {}", max_samples,
                min_samples);
    if (!(target_rse >= 0)) DGT_THROW(ErrorKind::kUsage, "protocol {}: target_rse = {} must be >= 0", name(), target_rse);
    if (!(max_seconds > 0))
      DGT_THROW(ErrorKind::kUsage, "protocol {}: max_seconds = {} must be > 0", name(), max_seconds);
    if (warmup < 0) DGT_THROW(ErrorKind::kUsage, "protocol {}: warmup = {} must be >= 0", name(), warmup);
    if (!(flush_factor > 0))
      DGT_THROW(ErrorKind::kUsage, "protocol {}: flush_factor = {} must be > 0", name(), flush_factor);
    if (!(watchdog_seconds > 0))
      DGT_THROW(ErrorKind::kUsage, "protocol {}: watchdog_seconds = {} must be > 0", name(), watchdog_seconds);
    return;
  }
  if (rounds < 1) DGT_THROW(ErrorKind::kUsage, "protocol {}: rounds = {} must be >= 1", name(), rounds);
  if (!(gap_us >= 0 && gap_us <= 1e6))
    DGT_THROW(ErrorKind::kUsage, "protocol {}: gap_us = {} must be in [0, 1e6] (microseconds)", name(), gap_us);
  if (kind == ProtocolKind::kIsolated) {
    if (order != SideOrder::kWilliams || gap_us > 0)
      DGT_THROW(ErrorKind::kUsage,
                "protocol {} runs one side at a time, back to back: it has no round order and no gap (order = {}, "
                "gap_us = {})",
                name(), to_string(order), gap_us);
    if (launches_per_sample < 1)
      DGT_THROW(ErrorKind::kUsage, "protocol {}: launches_per_sample = {} must be >= 1", name(), launches_per_sample);
    if (fill_bytes > 0 && launches_per_sample != 1)
      DGT_THROW(ErrorKind::kUsage,
                "protocol {} times one launch per sample after its zero fill (launches_per_sample = {}; drop "
                "--launches, or measure back-to-back launches with isolated-v1)",
                name(), launches_per_sample);
  }
  if (fill_bytes < 0 || (fill_bytes > 0 && kind != ProtocolKind::kIsolated))
    DGT_THROW(ErrorKind::kInternal, "protocol {}: a zero fill ({} bytes) is isolated-v2's alone", name(), fill_bytes);
  if (tail_kernels != 0 && kind != ProtocolKind::kColdL2)
    DGT_THROW(ErrorKind::kInternal, "protocol {}: a queue tail ({} kernels) is cold-l2-v3's alone", name(),
              tail_kernels);
  if (tail_kernels < 0 || tail_kernels > 4096 || !(tail_kernel_us > 0 && tail_kernel_us <= 1000))
    DGT_THROW(ErrorKind::kUsage,
              "protocol {}: tail_kernels = {} must be in [0, 4096] and tail_kernel_us = {} in (0, 1000]", name(),
              tail_kernels, tail_kernel_us);
  if (warmup < 0) DGT_THROW(ErrorKind::kUsage, "protocol {}: warmup = {} must be >= 0", name(), warmup);
  if (graph_launches < 1)
    DGT_THROW(ErrorKind::kUsage, "protocol {}: graph_launches = {} must be >= 1", name(), graph_launches);
  if (!(flush_factor > 0))
    DGT_THROW(ErrorKind::kUsage, "protocol {}: flush_factor = {} must be > 0", name(), flush_factor);
  if (!(clock_probe_us > 0))
    DGT_THROW(ErrorKind::kUsage, "protocol {}: clock_probe_us = {} must be > 0", name(), clock_probe_us);
  if (!(lead_in_us >= 0)) DGT_THROW(ErrorKind::kUsage, "protocol {}: lead_in_us = {} must be >= 0", name(), lead_in_us);
  if (!(clock_floor >= 0 && clock_floor <= 1))
    DGT_THROW(ErrorKind::kUsage, "protocol {}: clock_floor = {} must be in [0, 1]", name(), clock_floor);
  if (!(watchdog_seconds > 0))
    DGT_THROW(ErrorKind::kUsage, "protocol {}: watchdog_seconds = {} must be > 0", name(), watchdog_seconds);
}

int64_t l2_flush_bytes(const MeasureProtocol& p, int64_t l2_bytes) {
  const int64_t bytes = static_cast<int64_t>(p.flush_factor * double(l2_bytes));
  return std::max<int64_t>(bytes, int64_t{64} << 20) / 16 * 16;
}

}  // namespace dgt
