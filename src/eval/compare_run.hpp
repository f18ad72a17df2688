// `dgtune compare` as library calls: measure the shapes now (the loader's choice vs cuBLASLt default and tuned in
// interleaved rounds, eval/shape_compare.hpp), or compare two DBs' stored samples. The CLI parses flags and
// renders the tables that come back.
#pragma once

#include <string>
#include <vector>

#include "bench/measure_protocol.hpp"
#include "problem/kernel_config.hpp"
#include "problem/shapes_file.hpp"
#include "report/table.hpp"
#include "stats/stats.hpp"

namespace dgt {

/// How each shape's speedup interval and verdict are computed.
struct CompareStatsOptions {
  double margin_pct = 2;          ///< equivalence band: "equivalent" when the interval lies inside +-margin
  std::string interval = "sign";  ///< "sign" (median) or "wilcoxon" (pseudo-median)
};

struct CompareRunOptions {
  std::string shapes_path;          ///< for the title
  std::vector<ShapeEntry> shapes;   ///< loaded and checked by the caller
  MeasureProtocol protocol;         ///< cold-l2-v2/v3, hot-graph-v1 or isolated-v1/v2, rounds, order and gap inside
  std::string db_path;              ///< read-only; missing: every shape runs the default config
  std::string db_flag = "--db";     ///< how the user named db_path, for messages
  std::string save_path;            ///< empty: nothing stored; else every sample goes into this DB
  std::vector<KernelConfig> extra;  ///< --config: timed as extra sides of the same rounds
  bool copy_limit = true;
  int device = 0;
  std::string cache_dir;
  CompareStatsOptions stats;
};

/// compare's checks of its protocol before anything is opened: validate(), and Error(kUsage) naming the option and
/// the rule for --side-order / --gap-us with an isolated protocol (no rounds), and, when `saving` (--save), for
/// isolated-v1 / v2 and for the study variants (a non-Williams order, a gap), which are measured under the standard
/// protocol's name and so are never stored.
void check_compare_protocol(const MeasureProtocol& protocol, bool saving);

/// The title's words for the protocol's settings: "rounds" (plus ", fixed side order", ", 200 us gap before every
/// sample" for the study variants), isolated-v1's "samples per side of N back-to-back launches, ..." or
/// isolated-v2's "samples per side of one launch after a zero fill of 8 GB, ...".
std::string protocol_detail(const MeasureProtocol& p);

/// The paired comparison's options of these settings (margin as a fraction, the interval method).
stats::PairedOptions paired_options(const CompareStatsOptions& options);

/// The check of compare's read-only --db before the GPU is opened: a path that exists must be a regular, readable
/// file (Error(kUsage) naming `db_flag`, "compare never creates one") holding a tuning DB this dgtune reads
/// (Error(kSqlite) from TuningDbReader for a damaged or foreign file or another schema version). A missing path is
/// accepted (every shape then runs the default config).
void check_compare_db(const std::string& db_path, const std::string& db_flag);

/// compare's refusals for a shapes file's grouped lines, before anything is opened: `saving` (--save: stored compares
/// are the dense sides that --between and the gate read) and `extra_configs` (--config: extra dense configs; a second
/// grouped config is `compare --grouped SPEC --config KEY --vs-config KEY2`). Error(kUsage) naming the first grouped
/// line's file:line, the flag and the reason (eval/grouped_lines.hpp refuse_grouped_lines).
void check_grouped_compare(const std::vector<ShapeEntry>& shapes, bool saving, bool extra_configs);

/// Measures every shape and returns the tables: for the dense lines (when there are any) the per-shape table, the
/// extra configs' table and the summary; for the grouped lines (when there are any) one row per line with what
/// dgt::GroupedGemm would run for its key against the per-group cuBLASLt loop and the dense kernel over the real rows
/// (eval/grouped_lines.hpp, grouped_compare_tables with the config's source and tuned key), then the grouped summary
/// (grouped_summary_table). Grouped lines are measured after the dense ones, on the same device. Checks first, before the GPU is opened:
/// the protocol, an existing --db being a readable tuning DB (Error(kUsage) / Error for a damaged DB), --save being
/// neither the --db file nor the shapes file (device and inode) and opening for writing (db/writer_check.hpp), and
/// the GPU existing; the --save DB is created or migrated only when the GPU is open.
std::vector<report::Table> run_compare(const CompareRunOptions& options);

/// `compare --between A.db B.db`: the newest stored measurement per (shape, protocol) in both DBs (only
/// `protocol`'s kind when not empty), each DB's speedup and the change B vs A. `device_a/b`: row id or hardware
/// key, empty when the DB holds one device with measurements. Error(kUsage) naming the DB(s) when either holds no
/// saved compare (`compare --save` writes them); Error(kSqlite) naming the DB, the shape, the side and the round
/// for a stored sample that is not a positive finite time (a damaged file: exit 1).
std::vector<report::Table> compare_between(const std::string& a_path, const std::string& b_path,
                                           const std::string& device_a, const std::string& device_b,
                                           const std::string& protocol, const CompareStatsOptions& stats);

}  // namespace dgt
