// Stored interleaved measurements (schema 5): one run of the measurement engine (bench/rounds.hpp) for
// one problem under one protocol, its sides and every sample, so statistics can be recomputed later
// (`dgtune compare --save`, `dgtune compare --between`). Plain records: db/ does not include bench/,
// the caller converts to and from RoundsResult. The queries are TuningDb members (db/measurements.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "problem/problem.hpp"
#include "records/records.hpp"

namespace dgt {

/// One side of a stored measurement.
struct StoredSide {
  int index = 0;                      ///< side index in the run (Sample::side)
  std::string label;                  ///< e.g. "dgtune", "cublaslt-default", "cublaslt-tuned"
  std::string kind = "config";        ///< "config" (one of our kernel configs) or "provider" (cuBLASLt)
  std::string config_key;             ///< kind config: KernelConfig::key(); "" for providers
  std::string algo;                   ///< kind provider: CublasLtPlan::describe() of the algorithm; "" for configs
  std::string source;                 ///< kind config: db | nearest | default; kind provider: the provider name
  int heuristic_count = 0;            ///< kind provider: algorithms the heuristic returned (0 for configs)
  std::optional<Verification> check;  ///< the output check after replay; empty when not run
};

/// One stored sample (bench/rounds.hpp Sample, field for field).
struct StoredSample {
  int side = 0;
  int round = 0;
  int position = 0;
  double time_us = 0;
  double sm_clock_mhz = 0;
  bool flagged = false;
};

/// One stored run of the engine.
struct StoredMeasurement {
  int64_t id = 0;  ///< row id (set by put_measurement / read back)
  int64_t device_id = 0;
  int64_t environment_id = 0;
  std::string pci_bus_id;
  Problem problem;
  std::string protocol_name;  ///< MeasureProtocol::name(), e.g. "cold-l2-v2"
  std::string protocol_json;  ///< MeasureProtocol::to_json()
  int rounds = 0;
  double reference_clock_mhz = 0;
  double clock_floor_mhz = 0;
  std::string created_at;  ///< empty on put: now (UTC ISO 8601)
  std::vector<StoredSide> sides;
  std::vector<StoredSample> samples;
};

/// One device row (hardware identity) with how much it holds, for listing.
struct DeviceRow {
  int64_t id = 0;
  std::string hw_key;
  std::string name;
  int sm_count = 0;
  int64_t winners = 0;       ///< winners: one per (environment, problem, protocol) that has one
  int64_t measurements = 0;  ///< stored interleaved measurements
};

/// One winner with everything `dgtune export` prints: the winning trial (config, timing, protocol),
/// the environment it was measured under and cuBLASLt-tuned of the same (device, environment, problem,
/// protocol).
struct ExportRow {
  TrialRecord trial;
  int64_t environment_id = 0;
  std::string protocol_name;  ///< protocol the winner was timed under ("cold-l2-v1", "hot-graph-v1", ...)
  std::string kernel_hash;
  std::string dgtune_version;
  std::optional<BaselineRecord> cublas_tuned;
  /// A grouped winner's baseline: the per-group cuBLASLt loop (its cublaslt-default row, schema 11); empty for a
  /// dense winner.
  std::optional<BaselineRecord> group_loop;
};

}  // namespace dgt
