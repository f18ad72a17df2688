// `dgtune gate` and `dgtune history` as library calls: record a baseline, or measure now and gate against one
// (eval/gate_decision.hpp), writing the JUnit/markdown files and appending the run to the history DB. The CLI
// parses flags and renders what comes back.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "problem/shapes_file.hpp"
#include "report/document.hpp"
#include "report/table.hpp"

namespace dgt {

struct GateRunOptions {
  std::string record_path;    ///< --record FILE: measure now and write a baseline (exactly one of record/baseline)
  std::string baseline_path;  ///< --baseline FILE: measure now and gate against it
  /// The shapes to measure (a shapes file's, loaded and checked by the caller); empty with a baseline: the
  /// baseline's shapes. A record needs them.
  std::vector<ShapeEntry> shapes;
  /// A kind or name of MeasureProtocol::named (not isolated); empty: the baseline's (check) or cold-l2 (record).
  std::string protocol;
  int rounds = 0;        ///< 0: the baseline's (check) or kRecordRounds (record)
  int search = 0;        ///< > 0: gate the fastest of the cost model's top K candidates screened now
  double threshold_pct = 5, confidence = 0.95;
  uint64_t seed = 20261129;  ///< input fill seed
  std::string shapes_path;   ///< the file `shapes` came from (empty: none), checked against the outputs
  std::string db_path;       ///< the tuning DB the loader's choice is read from (read-only)
  std::string db_flag = "--db";  ///< how the user named db_path, for messages ("--db", "$DGTUNE_DB", ...)
  std::string history_path;  ///< empty: db_path; the DB every gate --baseline run is appended to
  std::string junit_path, markdown_path;  ///< written when not empty (check only)
  int device = 0;
  std::string cache_dir;
  /// Prints a table (the CLI's --format) as the document `type` (report/documents.hpp): the record summary or the
  /// gate table, as soon as it is ready, before the JUnit/markdown files and the history are written.
  std::function<void(const report::Table&, const report::DocumentType& type)> show;
};

/// gate --record's default interleaved rounds per shape: the one-sided test needs more power than compare's 20.
inline constexpr int kRecordRounds = 50;

/// Runs one gate and returns its exit code: 0 pass, 3 regression or verification failure, 1 a shape not
/// measured (outranks 3). Every input (baseline file and its shapes, shapes, protocol, rounds) and every output
/// (--record, --junit, --markdown: never an input nor a DB, core/output_file.hpp; the history DB: writable, never
/// an input, db/writer_check.hpp) is checked before the GPU is opened, and nothing is created or written before
/// the shapes are measured; throws Error(kUsage) for bad input (exit 2), e.g. a baseline of other hardware, naming
/// each difference.
int run_gate(const GateRunOptions& options);

/// `dgtune history`: the gate series of one shape (a problem key, a shapes-file name= or MxNxK) in the history
/// DB at `path`, oldest run first. Error(kUsage) when the DB holds none for it.
report::Table gate_history(const std::string& path, const std::string& shape);

}  // namespace dgt
