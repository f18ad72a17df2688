#include "worker/worker_sweep.hpp"

#include <set>

#include <spdlog/spdlog.h>

#include "core/escape.hpp"
#include "core/paths.hpp"
#include "db/tuning_db.hpp"
#include "db/writer_check.hpp"
#include "jit/cubin_cache.hpp"
#include "tune/compile_queue.hpp"
#include "tune/sweep_loop.hpp"
#include "worker/wire.hpp"

namespace dgt {

WorkerCommand worker_command(const std::vector<std::string>& worker_argv, SessionOptions options, int device) {
  options.device = device;
  WorkerCommand c;
  c.argv = worker_argv;
  c.argv.push_back("--config");
  c.argv.push_back(nlohmann::json(options).dump());
  c.label = fmt::format("gpu {}", device);
  return c;
}

std::vector<int> parse_devices(const std::string& text, int device_count) {
  std::vector<int> out;
  if (text == "all") {
    if (device_count <= 0) DGT_THROW(ErrorKind::kNoDevice, "--devices all: no CUDA device found (no driver or no GPU)");
    for (int d = 0; d < device_count; ++d) out.push_back(d);
    return out;
  }
  // The text first (bad input whatever the machine has), then whether the devices exist (the machine's answer).
  std::set<int> seen;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const bool decimal = !item.empty() && item.size() <= 6 &&
                         item.find_first_not_of("0123456789") == std::string::npos &&
                         (item.size() == 1 || item[0] != '0');
    if (!decimal)
      DGT_THROW(ErrorKind::kUsage,
                "--devices '{}': '{}' is not a device ordinal (expected 'all' or a comma-separated list of decimal "
                "ordinals such as 0,1,3)",
                escaped(text), escaped(item));
    const int d = std::stoi(item);
    if (!seen.insert(d).second)
      DGT_THROW(ErrorKind::kUsage, "--devices '{}': device {} is listed twice", escaped(text), d);
    out.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (int d : out)
    if (d >= device_count)
      DGT_THROW(ErrorKind::kNoDevice, "--devices '{}': {}", escaped(text),
                device_count == 0 ? std::string("no CUDA device found (no driver or no GPU on this machine)")
                                  : fmt::format("device {} does not exist: this machine has {} CUDA device(s) (0..{})",
                                                d, device_count, device_count - 1));
  return out;
}

WorkerSweepResult sweep_with_workers(const WorkerSweepOptions& o, const std::vector<ShapeEntry>& shapes,
                                     const SweepOptions& sweep) {
  if (o.devices.empty()) DGT_THROW(ErrorKind::kInternal, "sweep_with_workers without devices");
  if (o.session.kind == ProtocolKind::kHotGraph) o.session.hot_graph().validate();
  // The DB is checked read-only before any worker starts (a damaged, newer or unwritable file is refused, untouched),
  // and opened for writing (created, or migrated) only once the devices are known to be usable.
  check_db_writable(o.session.db_path, o.session.db_flag);
  SessionOptions so = o.session;
  so.cache_dir = usable_cache_dir(so.cache_dir);  // the workers use the directory the parent compiles into
  jit::CubinCache cache(so.cache_dir);
  CompileQueue compiles(cache, so.compile_threads);

  std::vector<std::unique_ptr<WorkerMeasurer>> measurers;
  for (int d : o.devices)
    measurers.push_back(std::make_unique<WorkerMeasurer>(worker_command(o.worker_argv, so, d), o.limits, &compiles,
                                                         so.protocol_name(), so.protocol_json()));
  WorkerSweepResult result;
  for (const auto& m : measurers) result.devices.push_back(m->fingerprint());
  for (size_t i = 1; i < result.devices.size(); ++i)
    if (result.devices[i].hardware().key() != result.devices[0].hardware().key())
      DGT_THROW(ErrorKind::kUsage,
                "--devices: device {} ({}, {} SMs) and device {} ({}, {} SMs) are different kinds of GPU; a winner "
                "belongs to one kind (its hardware identity), so sweep each kind separately",
                o.devices[0], result.devices[0].name, result.devices[0].sm_count, o.devices[i], result.devices[i].name,
                result.devices[i].sm_count);

  std::vector<std::unique_ptr<TuningDb>> dbs;  // one connection per lane (SQLite connections stay on one thread)
  std::vector<SweepLane> lanes;
  for (size_t i = 0; i < measurers.size(); ++i) {
    dbs.push_back(std::make_unique<TuningDb>(so.db_path));
    lanes.push_back(SweepLane{dbs.back().get(), dbs.back()->upsert_device(result.devices[i]), measurers[i].get()});
  }
  result.outcomes = run_sweep(lanes, shapes, sweep);
  for (const auto& m : measurers) result.worker_restarts += m->restarts();
  return result;
}

}  // namespace dgt
