// The gate's records (`dgtune gate`): one shape's round-aligned samples as the gate keeps them (ShapeRecord), a
// whole gate measurement (GateRecord: the baseline file's contents, or a measurement made now) and the baseline
// file's JSON. Pure CPU. What is gated and why: eval/gate_decision.hpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "problem/grouped_problem.hpp"
#include "problem/problem.hpp"
#include "records/records.hpp"
#include "report/documents.hpp"

namespace dgt {
struct ShapeMeasurement;
struct GroupedCompareShape;
}  // namespace dgt

namespace dgt::gate {

/// The baseline file `dgtune gate --record` writes: {"schema": kBaselineSchema, "schema_version": 2, ...}
/// (docs/schemas/dgtune-gate-baseline.schema.json). Version 1 files (no "schema" key, per-round fields "ours_us" and
/// "cublaslt_*_us") are still read.
inline constexpr std::string_view kBaselineSchema = report::kGateBaselineDocument.schema;
inline constexpr int kBaselineSchemaVersion = report::kGateBaselineDocument.version;

/// One shape as measured by one gate run (recorded into a baseline, or measured now).
struct ShapeRecord {
  Problem problem;
  /// A grouped (MoE) line: its problem with the per-group counts it was measured with (problem is its keyed()); the
  /// baseline file holds it as its shapes-file text ("grouped"), so a check measures the same counts. Its baseline
  /// side (tuned_us, tuned_algo) is the per-group cuBLASLt loop; it has no cuBLASLt-default side.
  std::optional<GroupedProblem> grouped;
  std::string name;           ///< the shapes file's name= (may be empty)
  std::string config_key;     ///< what the loader's choice ran
  std::string config_source;  ///< "db" | "db-other-protocol" | "ladder" | "nearest" | "ladder-other-protocol" | "nearest-other-protocol" | "default"
  /// "ok": measured and every side verified; "verify_failed": our kernel's output is wrong (before timing
  /// or after replay); "error": measuring failed (CUDA, NVRTC, cuBLASLt refusal); error holds the message.
  std::string status = "ok";
  std::string error;
  std::string tuned_algo;  ///< cuBLASLt-tuned's algorithm text
  std::string default_algo;
  /// Round-aligned samples in microseconds: ours_us[i], tuned_us[i] (and default_us[i] when measured)
  /// were taken in interleaved round rounds[i]. Flagged (low-clock) rounds are kept, marked in flagged.
  std::vector<int> rounds;
  std::vector<double> ours_us, tuned_us, default_us;
  std::vector<double> clock_mhz;  ///< SM clock of our sample in that round (0 = unknown)
  std::vector<bool> flagged;      ///< any side of that round was below the clock floor

  bool ok() const { return status == "ok"; }
  /// ln(ours_us[i] / tuned_us[i]) for every round (throws Error(kInvalid) on lengths or non-positive times).
  std::vector<double> log_ratios() const;
};

/// A whole gate measurement: the baseline file's contents, and the form of a current measurement.
struct GateRecord {
  int schema_version = kBaselineSchemaVersion;
  HardwareIdentity hardware;
  SoftwareEnv software;
  std::string kernel_hash;  ///< = software.kernel_hash (kept at top level for readers of the file)
  std::string protocol;     ///< MeasureProtocol::to_json()
  std::string created_at;   ///< ISO 8601 UTC
  std::string pci_bus_id;   ///< of the GPU that measured (informational)
  std::vector<ShapeRecord> shapes;

  const ShapeRecord* find(const std::string& problem_key) const;
};

/// JSON text of the record (keys sorted, samples as arrays). Round trip: parse_record(to_json(r)) == r.
std::string to_json(const GateRecord& r);
/// Parses a baseline file's text (version 1 or kBaselineSchemaVersion). Throws Error(kUsage) naming `source` and
/// the field when the text is not JSON (with line and column), nests deeper than kMaxJsonDepth, lacks a field, has
/// another schema or version, holds no shapes, or a shape breaks a rule of validate_problem() (a grouped shape: of
/// parse_grouped_problem, and its "grouped" text must give its "problem" back).
GateRecord parse_record(const std::string& text, const std::string& source = "baseline");
/// Reads and parses a file (Error(kUsage) when it cannot be read).
GateRecord read_record(const std::string& path);
/// Writes to_json(r) to path through a temporary file (core/output_file.hpp; Error(kIo) on failure).
void write_record(const GateRecord& r, const std::string& path);

/// "name: baseline X, now Y" for every field of the hardware identity that differs (empty: same hardware).
std::vector<std::string> hardware_differences(const HardwareIdentity& baseline, const HardwareIdentity& now);
/// The same for the software environment (driver, runtime, cuBLASLt, NVRTC, kernel hash, dgtune version).
std::vector<std::string> software_differences(const SoftwareEnv& baseline, const SoftwareEnv& now);

/// The gate's record of one compare-style measurement (eval/shape_compare.hpp): the rounds in which every GEMM
/// side it needs has a sample (dgtune and cuBLASLt-tuned, and cuBLASLt-default when it was a side), in round
/// order, with dgtune's clock and a flag when any of them was below the clock floor. A measurement of a shape
/// cuBLASLt does not run keeps dgtune's samples alone. Status and error are the measurement's.
ShapeRecord record_of(const ShapeMeasurement& m);

/// The gate's record of one grouped line measured now (eval/grouped_lines.hpp): the rounds in which the grouped kernel
/// and the per-group cuBLASLt loop both have a sample, in round order, the grouped kernel's samples as dgtune's, the
/// loop's as the baseline side's (tuned_us; tuned_algo is the loop's algorithms), dgtune's clock and a flag when
/// either was below the clock floor. Status GroupedCompareShape::status(), error its note; "error" when no round has
/// both samples.
ShapeRecord record_of_grouped(const GroupedCompareShape& c);

/// A GateRecord header (no shapes) for measurements made now on the device of `fp` under `protocol_json`
/// (MeasureProtocol::to_json()), created_at = now (UTC).
GateRecord record_header(const DeviceFingerprint& fp, const std::string& protocol_json);

}  // namespace dgt::gate
