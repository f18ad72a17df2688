// dgtune export: one row per stored winner with every tunable, its protocol, time, TFLOPS and ratio to
// cuBLASLt-tuned, as table/csv/json/md, a self-contained C++ header for dgt::GemmOptions::table, a deployable DB copy,
// or a kernel bundle for dgt::GemmOptions::bundle.
#include <algorithm>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/export_text.hpp"
#include "db/device_pick.hpp"
#include "cli/options.hpp"
#include "db/maintenance.hpp"
#include "db/schema.hpp"
#include "db/tuning_db_reader.hpp"
#include "db/writer_check.hpp"
#include "eval/bundle_export.hpp"
#include "jit/kernel_hash.hpp"
#include "loader/choice.hpp"
#include "loader/export_header.hpp"

namespace dgt::cli {

namespace {
struct Args {
  DbOption db;
  std::string device;
  std::string format = "table";
  std::string columns;  ///< "short" | "all"; empty: short for table and md, all for csv and json
  std::string out;
  int jobs = -1;        ///< --format bundle: NVRTC threads (0 all cores); -1: not given (all cores)
  CacheDirOption cache;  ///< --format bundle: the cubin cache the kernels are compiled through
};

/// The columns a reader of the table wants first: which shape, what won, how fast, against cuBLASLt-tuned. Every
/// tunable, the problem's other fields and the versions are `--columns all` (and the machine formats' default).
const std::vector<std::string> kShortColumns = {"shape",  "config",          "protocol",       "median_us",
                                                "tflops", "cublas_tuned_us", "x_cublas_tuned", "backend"};

/// `t` with only the columns whose ids are in `ids`, in the table's order.
report::Table only_columns(const report::Table& t, const std::vector<std::string>& ids) {
  report::Table out;
  out.title = t.title;
  std::vector<size_t> keep;
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (std::find(ids.begin(), ids.end(), t.columns[i].id) != ids.end()) {
      keep.push_back(i);
      out.columns.push_back(t.columns[i]);
    }
  for (const auto& row : t.rows) {
    std::vector<report::Cell> r;
    for (size_t i : keep) r.push_back(row[i]);
    out.rows.push_back(std::move(r));
  }
  return out;
}

using report::Cell;
using report::Number;

/// The grouped (MoE) columns, present only when the DB holds a grouped winner, so a dense-only DB's export keeps
/// its columns: layout, G, M_max, expected_m (masked), total M (the 2-D view's rows: contiguous the padded sum of
/// the groups' rows, masked G x M_max), and the per-group cuBLASLt loop (the grouped baseline) with x = loop us /
/// dgtune us.
const std::vector<std::string> kGroupedColumns = {"kind", "groups", "m_max", "expected_m", "total_m", "loop_us",
                                                  "x_loop"};

report::Table export_table(const std::vector<ExportRow>& rows, const std::string& title, bool grouped) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"m", "M", true},
               {"n", "N", true},
               {"k", "K", true},
               {"lda", "lda", true},
               {"ldb", "ldb", true},
               {"ldd", "ldd", true},
               {"a", "a", false},
               {"b", "b", false},
               {"scale", "scale", false},
               {"accum", "accum", false},
               {"d", "d", false},
               {"bias", "bias", false},
               {"act", "act", false},
               {"config", "config", false},
               {"block_m", "BM", true},
               {"block_n", "BN", true},
               {"block_k", "BK", true},
               {"num_stages", "stages", true},
               {"num_math_wg", "wg", true},
               {"swizzle", "swizzle", true},
               {"cluster_m", "cluster M", true},
               {"cluster_n", "cluster N", true},
               {"raster", "raster", false},
               {"group_size", "band", true},
               {"epilogue", "epilogue", false},
               {"split_k", "split-K", true},
               {"split_reduce", "split reduce", false},
               {"sms", "SMs", true},
               {"mainloop", "mainloop", false},
               {"promote_every", "promote every", true},
               {"protocol", "protocol", false},
               {"median_us", "us", true},
               {"p10_us", "p10", true},
               {"p90_us", "p90", true},
               {"tflops", "TFLOPS", true},
               {"gbps", "GB/s", true},
               {"cublas_tuned_us", "cuBLASLt tuned us", true},
               {"x_cublas_tuned", "x tuned", true},
               {"backend", "backend", false},
               {"cublaslt_algo", "cuBLASLt algorithm", false},
               {"kernel_hash", "kernel hash", false},
               {"dgtune_version", "dgtune", false},
               {"environment_id", "env", true}};
  // Grouped columns after the problem's fields (before "config"), only for a DB with grouped winners.
  const size_t grouped_at = 14;
  if (grouped)
    t.columns.insert(t.columns.begin() + grouped_at, {{"kind", "kind", false},
                                                      {"groups", "G", true},
                                                      {"m_max", "M_max", true},
                                                      {"expected_m", "expected_m", true},
                                                      {"total_m", "total M", true},
                                                      {"loop_us", "cuBLASLt loop us", true},
                                                      {"x_loop", "x loop", true}});
  for (const ExportRow& r : rows) {
    const Problem& p = r.trial.problem;
    const KernelConfig& c = r.trial.config;
    std::vector<Cell> row{p.label(),
                          p.m,
                          p.n,
                          p.k,
                          p.lda,
                          p.ldb,
                          p.ldd,
                          std::string(to_string(p.a)),
                          std::string(to_string(p.b)),
                          std::string(to_string(p.scale)),
                          std::string(to_string(p.accum)),
                          std::string(to_string(p.d)),
                          std::string(to_string(p.bias)),
                          std::string(to_string(p.act)),
                          c.key(),
                          int64_t(c.block_m),
                          int64_t(c.block_n),
                          int64_t(c.block_k),
                          int64_t(c.num_stages),
                          int64_t(c.num_math_wg),
                          int64_t(c.swizzle),
                          int64_t(c.cluster_m),
                          int64_t(c.cluster_n),
                          std::string(to_string(c.raster)),
                          int64_t(c.group),
                          std::string(to_string(c.epilogue)),
                          int64_t(c.split_k),
                          std::string(c.split_k <= 1 ? "none" : c.splits_per_cluster() > 1 ? "cluster" : "workspace"),
                          int64_t(c.sms),
                          std::string(to_string(c.mainloop)),
                          int64_t(c.promote_every),
                          r.protocol_name};
    const double us = r.trial.timing ? r.trial.timing->median_us : 0;
    row.push_back(Number{us, 2});
    row.push_back(r.trial.timing ? Cell{Number{r.trial.timing->p10_us, 2}} : Cell{});
    row.push_back(r.trial.timing ? Cell{Number{r.trial.timing->p90_us, 2}} : Cell{});
    row.push_back(Number{r.trial.tflops, 1});
    row.push_back(Number{r.trial.gbps, 0});
    const bool tuned_ok = r.cublas_tuned && r.cublas_tuned->status == TrialStatus::kOk && r.cublas_tuned->timing;
    row.push_back(tuned_ok ? Cell{Number{r.cublas_tuned->timing->median_us, 2}} : Cell{});
    row.push_back(tuned_ok && us > 0 ? Cell{Number{r.cublas_tuned->timing->median_us / us, 3}} : Cell{});
    // The loader's backend rule (loader/choice.hpp stored_algo_beats_kernel).
    const bool lt_wins = tuned_ok && stored_algo_beats_kernel(p, us, r.cublas_tuned->timing->median_us,
                                                           r.cublas_tuned->algo_data.size());
    row.push_back(std::string(lt_wins ? "cublaslt" : "dgtune"));
    row.push_back(lt_wins ? Cell{r.cublas_tuned->algo} : Cell{});
    row.push_back(r.kernel_hash);
    row.push_back(r.dgtune_version);
    row.push_back(r.environment_id);
    if (grouped) {
      // A dense row leaves the grouped cells empty; a grouped row's loop is its cublaslt-default baseline.
      std::vector<Cell> g(kGroupedColumns.size());
      if (p.is_grouped()) {
        const bool masked = p.group_kind == GroupKind::kMasked;
        const bool loop_ok = r.group_loop && r.group_loop->status == TrialStatus::kOk && r.group_loop->timing;
        g = {std::string(masked ? "masked" : "contiguous"),
             int64_t(p.groups),
             masked ? Cell{p.m_max} : Cell{},
             masked ? Cell{p.expected_m} : Cell{},
             p.m,
             loop_ok ? Cell{Number{r.group_loop->timing->median_us, 2}} : Cell{},
             loop_ok && us > 0 ? Cell{Number{r.group_loop->timing->median_us / us, 3}} : Cell{}};
      }
      row.insert(row.begin() + grouped_at, g.begin(), g.end());
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

std::string export_text(const std::string& path, const std::string& device_arg, const std::string& format,
                        const std::string& columns) {
  TuningDbReader db(path);  // never created or migrated
  const int64_t device_id = pick_device(db, device_arg, "--device", false);
  DeviceRow device;
  for (const DeviceRow& r : db.devices())
    if (r.id == device_id) device = r;
  std::vector<ExportRow> rows = db.export_rows(device_id);
  const bool grouped = std::any_of(rows.begin(), rows.end(), [](const ExportRow& r) { return r.trial.problem.is_grouped(); });
  // The C++ header is dgt::Gemm's table of dense winners: grouped winners are not loadable through it (yet).
  if (format == "cpp") std::erase_if(rows, [](const ExportRow& r) { return r.trial.problem.is_grouped(); });
  const bool all_columns = columns.empty() ? format == "csv" || format == "json" : columns == "all";
  const std::string title = fmt::format(
      "dgtune export {} device {} ({}, hardware key {}): {} winners (one per software "
      "environment, problem and protocol; x tuned = cuBLASLt-tuned us / dgtune us under the same protocol{})",
      path, device.id, device.name, device.hw_key, rows.size(),
      all_columns ? "" : "; --columns all adds every tunable, the problem's fields and the versions");
  std::ostringstream text;
  if (format == "cpp") {
    HeaderInfo info;
    info.hw_key = device.hw_key;
    info.device_name = device.name;
    info.kernel_hash = jit::kernel_source_hash();
    info.dgtune_version = DGTUNE_VERSION;
    text << export_header(rows, info);
  } else {
    report::Table table = export_table(rows, title, grouped);
    if (!all_columns) {
      std::vector<std::string> ids = kShortColumns;
      if (grouped) ids.insert(ids.end(), kGroupedColumns.begin(), kGroupedColumns.end());
      table = only_columns(table, ids);
    }
    if (format == "json") {
      std::ostringstream table_json;
      report::render(table, report::Format::kJson, table_json);
      nlohmann::ordered_json doc;
      doc["schema"] = std::string(report::kExportDocument.schema);
      doc["schema_version"] = report::kExportDocument.version;
      doc["db_schema_version"] = schema::latest_version();
      doc["dgtune_version"] = DGTUNE_VERSION;
      doc["kernel_hash"] = jit::kernel_source_hash();
      doc["db"] = path;
      doc["device"] = {
          {"id", device.id}, {"name", device.name}, {"hw_key", device.hw_key}, {"sm_count", device.sm_count}};
      doc["winners"] = nlohmann::ordered_json::parse(table_json.str())["rows"];
      text << doc.dump(2) << "\n";
    } else {
      report::render(table, report::parse_format(format), text);
    }
  }
  return text.str();
}

namespace {

int run(const Args& a) {
  const std::string path = a.db.existing("export");
  if (a.format != "bundle" && (a.jobs >= 0 || !a.cache.dir.empty()))
    DGT_THROW(ErrorKind::kUsage, "--jobs and --cache-dir apply to --format bundle only");
  if (a.format == "bundle") {
    // A directory: the bundle writer's own rule (eval/bundle_writer.hpp) is checked before anything is compiled.
    if (a.out.empty()) DGT_THROW(ErrorKind::kUsage, "export --format bundle needs --out DIR (a new or empty directory, "
                                                    "or an existing bundle to replace)");
    if (!a.columns.empty()) DGT_THROW(ErrorKind::kUsage, "--columns applies to table, csv, json and md");
    BundleExportOptions o;
    o.db_path = path, o.device = a.device, o.out_dir = a.out, o.cache_dir = a.cache.dir, o.jobs = std::max(a.jobs, 0);
    check_db_intact(path);
    const BundleExportReport r = export_bundle(o);
    std::cout << fmt::format(
        "wrote kernel bundle {}: {} cubins ({:.1f} MB) for {} kernel configs of {} problem families and {} grouped "
        "kernels of {} grouped families of {} (hardware key {}) in {:.1f} s; load it with dgt::GemmOptions::bundle, "
        "dgt::GroupedGemmOptions::bundle or $DGTUNE_BUNDLE\n",
        a.out, r.cubins, double(r.bytes) / 1e6, r.specs, r.families, r.grouped_specs, r.grouped_families, r.device_name,
        r.hw_key, r.seconds);
    return 0;
  }
  // The output is checked before anything is read: never the DB (or its -wal/-shm), through a link or not.
  if (!a.out.empty()) check_output_path(a.out, "--out", {a.db.named()});
  if (a.format == "db") {
    // The whole file, not one device's winners: a deployable DB for dgt::Gemm (README "Read-only deployment").
    if (a.out.empty()) DGT_THROW(ErrorKind::kUsage, "export --format db needs --out FILE (a new file)");
    if (!a.device.empty())
      DGT_THROW(ErrorKind::kUsage, "export --format db copies every device of the DB; drop --device");
    check_db_intact(path);
    dbm::deployable_copy(path, a.out);
    std::cout << fmt::format("wrote {}: a copy of {} in journal_mode=DELETE for read-only deployment\n", a.out, path);
    return 0;
  }
  if (!a.columns.empty() && (a.format == "cpp"))
    DGT_THROW(ErrorKind::kUsage, "--columns applies to table, csv, json and md; --format cpp writes every field");
  check_db_intact(path);  // a damaged file would export garbage (or nothing) as its winners
  const std::string text = export_text(path, a.device, a.format, a.columns);
  if (a.out.empty()) {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) DGT_THROW(ErrorKind::kIo, "could not write the output to standard output");
  } else {
    write_output_file(a.out, text);  // a temporary file renamed into place: complete or not there
  }
  return 0;
}
}  // namespace

void add_export(CLI::App& app, Action& action) {
  auto [cmd, a] = add_command<Args>(
      app, action, "export",
      "one row per stored winner with every tunable, a C++ header for dgt::GemmOptions::table, or a kernel bundle "
      "for dgt::GemmOptions::bundle",
      run);
  add_groups(cmd, a.db);
  cmd.add_option("--device", a.device, "device of the DB (row id or hardware key; needed when it holds several)");
  cmd.add_option("--format", a.format,
                 "table, csv, json (with a schema version), md, cpp (a self-contained header), or db (with --out: a "
                 "copy of the whole DB in journal_mode=DELETE for read-only deployment), or bundle (with --out DIR: "
                 "every kernel dgt::Gemm can load for the device's tuned families, compiled, for "
                 "dgt::GemmOptions::bundle)")
      ->check(CLI::IsMember({"table", "csv", "json", "md", "cpp", "db", "bundle"}))
      ->capture_default_str()
      ->group("Output");
  cmd.add_option("--columns", a.columns,
                 "short (shape, config, protocol, us, TFLOPS, cuBLASLt-tuned us, x tuned) or all (every tunable, the "
                 "problem's fields, p10/p90, GB/s, versions); default: short for table and md, all for csv and json")
      ->check(CLI::IsMember({"short", "all"}))
      ->group("Output");
  cmd.add_option("--out", a.out,
                 "write to FILE instead of stdout (never the DB; written to a temporary file and renamed when complete); "
                 "--format bundle: the bundle directory (new, empty, or a bundle to replace)")
      ->group("Output");
  cmd.add_option("--jobs", a.jobs, "--format bundle: compile threads (0 = all cores)")
      ->check(CLI::Range(0, 4096))
      ->group("Bundle");
  a.cache.add(cmd);
}

}  // namespace dgt::cli
