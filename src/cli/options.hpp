// Option groups shared by the subcommands, each declared once: a plain struct that holds the parsed
// values, `add(cmd)` that declares its flags on a subcommand (under its own heading in --help), and
// accessors that turn the values into what library code takes. A command lists the groups it uses as
// members of its Args struct and calls add_groups(cmd, args.db, args.device, ...); see command.hpp.
//
// Numbers are decimal only: "0100" is 100 (CLI11 alone would read it as octal), "0x10", "0b1", "+5",
// "-5" and "1e2" are refused for counts, naming the value; range errors give the range in plain numbers.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/protocol.hpp"
#include "core/output_file.hpp"
#include "problem/expert_gemms.hpp"
#include "problem/model_gemms.hpp"
#include "problem/problem.hpp"
#include "problem/shard.hpp"
#include "problem/shapes_file.hpp"
#include "report/documents.hpp"
#include "report/table.hpp"
#include "space/search_space.hpp"
#include "tune/session.hpp"

namespace dgt::cli {

// ---- number checks (use with Option::transform; they rewrite "0100" to "100" before CLI11 converts) ----

/// A decimal integer in [min, max] (digits only: no sign, no 0x/0b prefix, no exponent).
CLI::Validator count(int64_t min, int64_t max = std::numeric_limits<int64_t>::max());
/// The same for uint64 options (seeds).
CLI::Validator count_u64();
/// A decimal real in [min, max] ("2", "0.5", "1e-3"; no sign, no hex, no inf/nan).
CLI::Validator real(double min, double max = std::numeric_limits<double>::max());

/// A comma-separated list of counts, each in [min, max], into `out` (repeating the option appends). Used instead of
/// CLI11's delimiter(','), which drops empty entries silently: "1,,2" and "1," are refused naming the empty entry.
CLI::Option* add_count_list(CLI::App& cmd, const std::string& name, std::vector<int64_t>& out,
                            const std::string& description, int64_t min,
                            int64_t max = std::numeric_limits<int64_t>::max());

/// An input file the user names: CLI11 refuses it at parse time (exit 2) unless require_input_file()
/// accepts it (exists, a file or a pipe, readable); the message says "cannot read WHAT 'PATH': REASON".
CLI::Validator input_file(const std::string& what);
/// The same for a tuning DB given as an input (compare --between, db merge): a regular file only
/// (require_regular_input_file(): a FIFO would block SQLite forever).
CLI::Validator db_input_file(const std::string& what);

// ---- option groups --------------------------------------------------------------------------------

/// --db PATH (default $DGTUNE_DB, else results/tuning.db).
struct DbOption {
  std::string path;
  void add(CLI::App& cmd);
  std::string resolved() const;  ///< resolve_db_path(path): absolute
  /// How the user named the DB, for messages: "--db", "$DGTUNE_DB" or "the default tuning database".
  std::string flag() const;
  /// resolved() named by flag(), as a DB (its -wal/-shm files count as the DB): an input no output may overwrite.
  NamedPath named() const;
  /// resolved(), for commands that only read the DB: a missing, directory, FIFO, device or unreadable path is
  /// Error(kUsage) (exit 2) naming --db and saying that `command` never creates one. A file that exists but is damaged
  /// or not a dgtune DB fails later, when it is opened: Error(kSqlite), exit 1 (README, "Exit codes").
  std::string existing(const std::string& command) const;
};

/// resolve_db_path(path) for a command that only reads that DB: a missing, directory, FIFO, device or unreadable path
/// is Error(kUsage) "cannot read WHAT 'PATH': REASON (COMMAND never creates one)". DbOption::existing for --db; also
/// for another flag that names a DB (`history --history`).
std::string existing_db_input(const std::string& path, const std::string& what, const std::string& command);

/// --device N (CUDA ordinal).
struct DeviceOption {
  int ordinal = 0;
  void add(CLI::App& cmd);
};

/// --cache-dir DIR (default $DGTUNE_CACHE_DIR, else ~/.cache/dgtune).
struct CacheDirOption {
  std::string dir;
  void add(CLI::App& cmd);
};

/// Measurement settings: --min-samples --max-samples --target-rse --seed.
struct TimingOptions {
  MeasureProtocol protocol = MeasureProtocol::cold_l2_adaptive();
  uint64_t seed = SessionOptions{}.seed;
  void add(CLI::App& cmd);
  /// The protocol after the cross-field check (max >= min); throws Error(kUsage).
  MeasureProtocol checked() const;
};

/// The cuBLASLt baselines: --baseline / --no-baseline (the default differs per command). The old
/// spellings stay as hidden aliases: `run --cublas` (= --baseline).
struct BaselineSwitch {
  bool on;
  explicit BaselineSwitch(bool default_on) : on(default_on) {}
  void add(CLI::App& cmd);
};

/// --format table|csv|json|md (default table). render() is the one place a command writes its tables; JSON is the
/// command's document (report/document.hpp: the "schema" / "schema_version" envelope, then the data).
struct FormatOption {
  report::DocumentType type;  ///< the command's JSON document (report/documents.hpp)
  std::string name = "table";
  void add(CLI::App& cmd);
  void render(const report::Table& t) const;
  void render(const std::vector<report::Table>& tables) const;
  /// A command that prints several kinds of document (gate: a record or a verdict) names the one it prints.
  void render(const report::Table& t, const report::DocumentType& as) const;
};

/// --d bf16|f32|e4m3, --bias none|bf16, --act none|relu|gelu_tanh: the output type and fused epilogue
/// (output types and fused epilogues). On space/run they are the problem's fields (default bf16, none, none); on sweep/compare
/// they override the shapes file's d=/bias=/act= for every line when given (empty = not given).
struct OutputOptions {
  std::string d, bias, act;
  /// Registers the three options in group "Problem"; `defaults` shows bf16/none/none as the defaults.
  void add(CLI::App& cmd, bool defaults);
  /// Sets the given fields of `p` (Error(kUsage) naming the value for an unknown one).
  void apply(Problem& p) const;
};

/// --m --n --k [--lda --ldb --ldd --a --b --accum --scale --d --bias --act] (leading dims default to tight).
struct ProblemOptions {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  std::string a = "e4m3", b = "e4m3", accum = "promote";
  std::string scale = "tensor";  ///< --scale: tensor | channel | block | block1d1d (ScaleMode)
  OutputOptions output;          ///< --d --bias --act
  void add(CLI::App& cmd);
  /// Builds and validates the problem. Throws Error(kInvalid/kUsage) naming the operand and rule.
  Problem problem() const;
};

/// --shapes FILE (required): one 'M N K [key=value ...]' per line.
struct ShapesOption {
  std::string path;
  OutputOptions output;  ///< --d --bias --act: override every line's output type and epilogue when given
  /// Registers --shapes; with `output_overrides`, also --d/--bias/--act (sweep, compare).
  void add(CLI::App& cmd, bool output_overrides = true);
  /// Reads and checks the whole file (after the overrides); throws Error(kUsage) listing every line
  /// that breaks a rule. `with_grouped`: grouped (MoE) lines are read too (problem/shapes_file.hpp,
  /// parse_shapes_with_grouped); --d/--bias/--act are then refused naming a grouped line (its output is bf16
  /// without an epilogue). Without it a grouped line is refused naming file:line (the command measures dense
  /// problems only).
  std::vector<ShapeEntry> load(bool with_grouped = false) const;
};

/// --shard i/n: this machine's share of the shapes file (the rule and why: problem/shard.hpp). A value that
/// parse_shard() refuses is a parse error (exit 2) naming the value and the rule. Shared by `dgtune sweep` and
/// the fake sweep driver of the CPU tests (tests/fake/fake_sweep.cpp), so both read --shard the same way.
/// The check of a --shard i/n value: parse_shard()'s message for a value it refuses (a parse error, exit 2).
CLI::Validator shard_validator();

struct ShardOption {
  std::string text;  ///< as given; empty: the whole file
  void add(CLI::App& cmd);
  Shard shard() const;  ///< parse_shard(text), or 0/1 without --shard
  /// The entries of this shard, in file order (all of them without --shard). With --shard, logs
  /// ShardSelection::summary at info level: which shard, how many of the file's problems, and for an empty
  /// shard that there is nothing to sweep. `file` names the shapes file in that line.
  std::vector<ShapeEntry> select(const std::vector<ShapeEntry>& all, const std::string& file) const;
};

/// The model flags of `dgtune shapes` and `dgtune tune-model`: --hf-config (required), --tp, --ep, --m, --scale,
/// --accum, --lm-head, and --experts with the grouped ladder's --m-sum and --expected-m (which need --experts), with
/// the same ranges and words (docs/cli.md "dgtune shapes").
struct ModelOption {
  std::string config;
  ModelSplit split;
  std::vector<int64_t> m;  ///< empty: the default M ladder
  std::string scale;       ///< empty: the config's quantization_config
  std::string accum = "promote";
  bool experts = false;    ///< also the routed experts' grouped GEMMs (problem/expert_gemms.hpp)
  ExpertLadder ladder;     ///< their ladder; empty lists: the defaults
  /// Adds the flags to `cmd`; returns the --m option (so a command can add flags that exclude it).
  CLI::Option* add(CLI::App& cmd);
  /// model_tuning_shapes() of these flags: the shapes file's text, the dense lines, then the grouped ones with
  /// --experts. Throws Error(kUsage) naming what it refuses.
  std::string shapes_text() const { return shapes_text(load_model_config(config)); }
  /// The same of the config already read from --hf-config (a pipe can be read once).
  std::string shapes_text(const ModelConfig& c) const {
    return model_tuning_shapes(c, split, m, scale, accum, experts, ladder);
  }
};

/// --space FILE (default: the built-in configs/spaces/sm90-default.json).
struct SpaceOption {
  std::string path;
  void add(CLI::App& cmd);
  SearchSpace load() const;
};

/// The config key of `flag` (e.g. "--config") parsed and checked against every problem with the rules
/// the search space applies (config_rule_violation: R1-R25, P3, P8 and P9), before a GPU or a DB is touched.
/// Throws Error(kUsage) naming the flag, the key, each problem it cannot run (with `where`, e.g. the
/// shapes file line) and the rule.
KernelConfig checked_config(const std::string& flag, const std::string& key,
                            const std::vector<std::pair<std::string, Problem>>& problems);

/// Declares every group's flags on `cmd`, in order.
template <class... Group>
void add_groups(CLI::App& cmd, Group&... group) {
  (group.add(cmd), ...);
}

/// What a TuningSession needs from the DB, device, cache and timing groups.
SessionOptions session_options(const DbOption& db, const DeviceOption& device, const CacheDirOption& cache,
                               const TimingOptions& timing);

// ---- global options (on the app; accepted before or after the subcommand) --------------------------

/// --log-level trace|debug|info|warn|error (case-insensitive; anything else is an error, exit 2).
struct LogLevelOption {
  std::string name = "info";
  void add(CLI::App& app);
  void apply() const;  ///< sets spdlog's level
};

/// --version: dgtune version, kernel-source hash, CUDA runtime / NVRTC / cuBLASLt versions (no GPU needed).
void add_version_flag(CLI::App& app);

}  // namespace dgt::cli
