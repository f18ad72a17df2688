#include "worker/wire.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <spdlog/fmt/fmt.h>

namespace dgt {

using nlohmann::json;

namespace {
/// A double on the wire. JSON has no NaN or infinity (nlohmann writes them as null), yet a record may carry them
/// (a NaN amax gives an infinite amax_rel_err): those travel as the strings "nan", "inf" and "-inf".
json real(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
}
/// Inverse of real(); null (a non-finite value from an older writer) reads as NaN.
double real_of(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string t = j.get<std::string>();
    if (t == "inf") return std::numeric_limits<double>::infinity();
    if (t == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::numeric_limits<double>::quiet_NaN();
}
}  // namespace

void to_json(json& j, const Timing& t) {
  j = json{{"median_us", real(t.median_us)}, {"p10_us", real(t.p10_us)}, {"p90_us", real(t.p90_us)},
           {"samples", t.samples},               {"rse", real(t.rse)},       {"sm_clock_mhz", real(t.sm_clock_mhz)},
           {"throttled", t.throttled}};
}
void from_json(const json& j, Timing& t) {
  t.median_us = real_of(j.at("median_us"));
  t.p10_us = real_of(j.at("p10_us"));
  t.p90_us = real_of(j.at("p90_us"));
  t.samples = j.at("samples");
  t.rse = real_of(j.at("rse"));
  t.sm_clock_mhz = real_of(j.at("sm_clock_mhz"));
  t.throttled = j.at("throttled");
}

void to_json(json& j, const Verification& v) {
  j = json{{"ok", v.ok},
           {"max_rel_err", real(v.max_rel_err)},
           {"diff", real(v.diff)},
           {"nan_count", v.nan_count},
           {"pad_touched", v.pad_touched},
           {"ulp_over", v.ulp_over},
           {"amax_rel_err", real(v.amax_rel_err)}};
}
void from_json(const json& j, Verification& v) {
  v.ok = j.at("ok");
  v.max_rel_err = real_of(j.at("max_rel_err"));
  v.diff = real_of(j.at("diff"));
  v.nan_count = j.at("nan_count");
  v.pad_touched = j.at("pad_touched");
  v.ulp_over = j.value("ulp_over", int64_t(0));  // e4m3 output
  v.amax_rel_err = j.contains("amax_rel_err") ? real_of(j.at("amax_rel_err")) : 0.0;
}

namespace {
void put_measurement(json& j, const Measurement& m) {
  j["problem"] = m.problem;
  j["status"] = to_string(m.status);
  j["error"] = m.error;
  if (m.timing) j["timing"] = *m.timing;
  if (m.verification) j["verification"] = *m.verification;
  j["protocol"] = m.protocol;
  j["created_at"] = m.created_at;
}
void get_measurement(const json& j, Measurement& m) {
  m.problem = j.at("problem").get<Problem>();
  m.status = parse_trial_status(j.at("status").get<std::string>());
  m.error = j.at("error");
  if (j.contains("timing")) m.set_timing(j.at("timing").get<Timing>());
  if (j.contains("verification")) m.verification = j.at("verification").get<Verification>();
  m.protocol = j.at("protocol");
  m.created_at = j.at("created_at");
}
}  // namespace

void to_json(json& j, const TrialRecord& t) {
  j = json::object();
  put_measurement(j, t);
  j["config"] = t.config;
  j["compile_ms"] = real(t.compile_ms);
  j["registers"] = t.registers;
  j["spill_bytes"] = t.spill_bytes;
  j["smem_bytes"] = t.smem_bytes;
}
void from_json(const json& j, TrialRecord& t) {
  get_measurement(j, t);
  t.config = j.at("config").get<KernelConfig>();
  t.compile_ms = real_of(j.at("compile_ms"));
  t.registers = j.at("registers");
  t.spill_bytes = j.at("spill_bytes");
  t.smem_bytes = j.at("smem_bytes");
}

void to_json(json& j, const BaselineRecord& b) {
  j = json::object();
  put_measurement(j, b);
  j["provider"] = b.provider;
  j["cublas_status"] = b.cublas_status;
  j["algo"] = b.algo;
  j["algo_data"] = b.algo_data;
  j["workspace_bytes"] = b.workspace_bytes;
}
void from_json(const json& j, BaselineRecord& b) {
  get_measurement(j, b);
  b.provider = j.at("provider");
  b.cublas_status = j.at("cublas_status");
  b.algo = j.at("algo");
  b.algo_data = j.at("algo_data").get<std::vector<uint8_t>>();
  b.workspace_bytes = j.at("workspace_bytes");
}

void to_json(json& j, const DeviceFingerprint& f) {
  j = json{{"name", f.name},
           {"cc_major", f.cc_major},
           {"cc_minor", f.cc_minor},
           {"sm_count", f.sm_count},
           {"memory_bytes", f.memory_bytes},
           {"l2_bytes", f.l2_bytes},
           {"max_sm_clock_mhz", f.max_sm_clock_mhz},
           {"driver_version", f.driver_version},
           {"runtime_version", f.runtime_version},
           {"cublaslt_version", f.cublaslt_version},
           {"nvrtc_version", f.nvrtc_version},
           {"kernel_hash", f.kernel_hash},
           {"dgtune_version", f.dgtune_version},
           {"pci_bus_id", f.pci_bus_id}};
}
void from_json(const json& j, DeviceFingerprint& f) {
  f.name = j.at("name");
  f.cc_major = j.at("cc_major");
  f.cc_minor = j.at("cc_minor");
  f.sm_count = j.at("sm_count");
  f.memory_bytes = j.at("memory_bytes");
  f.l2_bytes = j.at("l2_bytes");
  f.max_sm_clock_mhz = j.at("max_sm_clock_mhz");
  f.driver_version = j.at("driver_version");
  f.runtime_version = j.at("runtime_version");
  f.cublaslt_version = j.at("cublaslt_version");
  f.nvrtc_version = j.at("nvrtc_version");
  f.kernel_hash = j.at("kernel_hash");
  f.dgtune_version = j.at("dgtune_version");
  f.pci_bus_id = j.at("pci_bus_id");
}

void to_json(json& j, const SessionOptions& o) {
  const MeasureProtocol& p = o.protocol;
  j = json{{"device", o.device},
           {"cache_dir", o.cache_dir},
           {"kind", to_string(o.kind)},
           {"hot_graph_rounds", o.hot_graph_rounds},
           {"seed", o.seed},
           {"protocol",
            {{"warmup", p.warmup},
             {"min_samples", p.min_samples},
             {"max_samples", p.max_samples},
             {"target_rse", p.target_rse},
             {"max_seconds", p.max_seconds},
             {"watchdog_seconds", p.watchdog_seconds},
             {"flush_factor", p.flush_factor}}}};
}
void from_json(const json& j, SessionOptions& o) {
  o.device = j.at("device");
  o.cache_dir = j.at("cache_dir");
  o.kind = parse_protocol_kind(j.at("kind").get<std::string>());
  o.hot_graph_rounds = j.at("hot_graph_rounds");
  o.seed = j.at("seed");
  const json& p = j.at("protocol");
  o.protocol.warmup = p.at("warmup");
  o.protocol.min_samples = p.at("min_samples");
  o.protocol.max_samples = p.at("max_samples");
  o.protocol.target_rse = p.at("target_rse");
  o.protocol.max_seconds = p.at("max_seconds");
  o.protocol.watchdog_seconds = p.at("watchdog_seconds");
  o.protocol.flush_factor = p.at("flush_factor");
}

std::string error_kind_name(ErrorKind k) { return to_string(k); }

ErrorKind parse_error_kind(const std::string& name) {
  for (ErrorKind k : {ErrorKind::kUsage, ErrorKind::kInvalid, ErrorKind::kCuda, ErrorKind::kDriver, ErrorKind::kNvrtc,
                      ErrorKind::kCublas, ErrorKind::kSqlite, ErrorKind::kIo, ErrorKind::kNoDevice, ErrorKind::kTimeout})
    if (name == to_string(k)) return k;
  return ErrorKind::kInternal;
}

void write_message(int fd, const json& j) {
  const std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      DGT_THROW(ErrorKind::kIo, "writing to the worker pipe (fd {}): {}", fd,
                errno == EPIPE ? "the other process has ended" : std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

LineReader::Result LineReader::read(json* out, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      const std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      try {
        *out = json::parse(line);
      } catch (const json::exception& e) {
        DGT_THROW(ErrorKind::kInternal, "the worker sent a line that is not JSON ({}): '{}'", e.what(),
                  line.substr(0, 200));
      }
      return Result::kMessage;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Result::kTimeout;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) DGT_THROW(ErrorKind::kIo, "poll on the worker pipe: {}", std::strerror(errno));
    if (r == 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) DGT_THROW(ErrorKind::kIo, "reading the worker pipe: {}", std::strerror(errno));
    if (n == 0) return Result::kEof;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace dgt
