#include "cli/options.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <charconv>
#include <iostream>
#include <map>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/input_file.hpp"
#include "core/paths.hpp"
#include "launch/environment.hpp"
#include "space/resource_model.hpp"

namespace dgt::cli {

// ---- numbers ----------------------------------------------------------------------------------------

namespace {

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

/// "0100" -> "100", "000" -> "0": CLI11 converts with strtoll(base 0), which would read "0100" as octal.
void strip_leading_zeros(std::string& s) {
  const size_t first = s.find_first_not_of('0');
  s = first == std::string::npos ? "0" : s.substr(first);
}

std::string range_text(int64_t min, int64_t max) {
  if (max == std::numeric_limits<int64_t>::max()) return fmt::format("an integer >= {}", min);
  return fmt::format("an integer from {} to {}", min, max);
}

/// Short form for --help: ">=1" or "0..1" (the error message gives the full range).
std::string range_hint(int64_t min, int64_t max) {
  if (max >= std::numeric_limits<int>::max()) return fmt::format(">={}", min);
  return fmt::format("{}..{}", min, max);
}

std::string range_hint(double min, double max) {
  if (max == std::numeric_limits<double>::max()) return fmt::format(">={}", min);
  return fmt::format("{}..{}", min, max);
}

std::string range_text(double min, double max) {
  if (max == std::numeric_limits<double>::max()) return fmt::format("a number >= {}", min);
  return fmt::format("a number from {} to {}", min, max);
}

/// Digits, an optional fraction, an optional exponent: "2", "0.5", ".5", "1e-3". No sign, hex, inf or nan.
bool decimal_real(const std::string& s) {
  size_t i = 0, digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t exp_start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == exp_start) return false;
  }
  return i == s.size();
}

}  // namespace

CLI::Validator count(int64_t min, int64_t max) {
  const std::string want = range_text(min, max);
  return CLI::Validator(
      [min, max, want](std::string& s) -> std::string {
        // A leading '-' with digits is a negative number: say the range rather than "not decimal".
        // Values are quoted escaped and cut (core/escape.hpp): a 1 MB argument must not make a 1 MB message.
        if (s.size() > 1 && s[0] == '-' && all_digits(s.substr(1)))
          return fmt::format("{} is out of range: want {}", escaped(s), want);
        if (!all_digits(s))
          return fmt::format(
              "'{}' is not a decimal integer (digits 0-9 only: no sign, no 0x/0b prefix, no exponent); want {}",
              escaped(s), want);
        strip_leading_zeros(s);
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
        if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max)
          return fmt::format("{} is out of range: want {}", escaped(s), want);
        return {};
      },
      range_hint(min, max), "count");
}

CLI::Option* add_count_list(CLI::App& cmd, const std::string& name, std::vector<int64_t>& out,
                            const std::string& description, int64_t min, int64_t max) {
  const CLI::Validator each = count(min, max);
  auto split = [](const std::string& s) {
    std::vector<std::string> parts{""};
    for (char c : s) {
      if (c == ',')
        parts.emplace_back();
      else
        parts.back().push_back(c);
    }
    return parts;
  };
  CLI::Option* o = cmd.add_option_function<std::vector<std::string>>(
      name,
      [&out, split](const std::vector<std::string>& lists) {
        out.clear();
        for (const auto& list : lists)
          for (const auto& v : split(list)) out.push_back(std::stoll(v));  // checked and normalized below
      },
      description);
  o->check(CLI::Validator(
      [each, split](std::string& s) -> std::string {
        std::vector<std::string> parts = split(s);
        std::string normalized;
        for (size_t i = 0; i < parts.size(); ++i) {
          if (parts[i].empty())
            return fmt::format("'{}': entry {} of {} is empty (a list is comma-separated values, e.g. 1,64,4096)",
                               escaped(s), i + 1, parts.size());
          if (std::string err = each(parts[i]); !err.empty()) return err;
          normalized += (i ? "," : "") + parts[i];
        }
        s = normalized;  // "0100" -> "100", as count() does for one value
        return {};
      },
      "LIST of " + each.get_description(), "count_list"));
  return o;
}

CLI::Validator count_u64() {
  const std::string want = fmt::format("an integer from 0 to {}", std::numeric_limits<uint64_t>::max());
  return CLI::Validator(
      [want](std::string& s) -> std::string {
        if (!all_digits(s))
          return fmt::format(
              "'{}' is not a decimal integer (digits 0-9 only: no sign, no 0x/0b prefix, no exponent); want {}",
              escaped(s), want);
        strip_leading_zeros(s);
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
        if (ec != std::errc() || end != s.data() + s.size())
          return fmt::format("{} is out of range: want {}", escaped(s), want);
        return {};
      },
      "decimal", "count_u64");
}

CLI::Validator real(double min, double max) {
  const std::string want = range_text(min, max);
  return CLI::Validator(
      [min, max, want](std::string& s) -> std::string {
        if (s.size() > 1 && s[0] == '-' && decimal_real(s.substr(1)))
          return fmt::format("{} is out of range: want {}", escaped(s), want);
        if (!decimal_real(s))
          return fmt::format(
              "'{}' is not a decimal number (digits, '.', exponent; no sign, no hex, no inf/nan); want {}", escaped(s),
              want);
        const double v = std::strtod(s.c_str(), nullptr);
        if (!(v >= min && v <= max)) return fmt::format("{} is out of range: want {}", escaped(s), want);
        return {};
      },
      range_hint(min, max), "real");
}

namespace {
/// A CLI11 validator that runs `check(path, what)` and shows its Error's message (file, rule) on failure.
CLI::Validator file_validator(void (*check)(const std::string&, std::string_view), const std::string& what,
                              const char* name) {
  return CLI::Validator(
      [check, what](std::string& path) -> std::string {
        try {
          check(path, what);
        } catch (const Error& e) {
          return e.message();
        }
        return {};
      },
      "FILE", name);
}
}  // namespace

CLI::Validator input_file(const std::string& what) { return file_validator(require_input_file, what, "input_file"); }

CLI::Validator db_input_file(const std::string& what) {
  return file_validator(require_regular_input_file, what, "db_input_file");
}

KernelConfig checked_config(const std::string& flag, const std::string& key,
                            const std::vector<std::pair<std::string, Problem>>& problems) {
  KernelConfig c;
  try {
    c = KernelConfig::parse_key(key);
  } catch (const Error& e) {
    DGT_THROW(ErrorKind::kUsage, "{}: {}", flag, e.message());
  }
  // Every problem the config cannot run, so the user sees them all at once; nothing is measured.
  std::string errors;
  size_t bad = 0;
  for (const auto& [where, p] : problems)
    if (const std::string why = config_rule_violation(c, p); !why.empty()) {
      errors += fmt::format("\n  {}{}: {}", where.empty() ? "" : where + ": ", p.label(), why);
      ++bad;
    }
  if (bad == 1 && problems.size() == 1)
    DGT_THROW(ErrorKind::kUsage, "{} {}: cannot run {}: {}; nothing was measured", flag, escaped(key),
              problems[0].second.label(), config_rule_violation(c, problems[0].second));
  if (bad)
    DGT_THROW(ErrorKind::kUsage, "{} {}: cannot run {} of {} shapes; nothing was measured:{}", flag, escaped(key), bad,
              problems.size(), errors);
  return c;
}

// ---- groups -------------------------------------------------------------------------------------------

void DbOption::add(CLI::App& cmd) {
  cmd.add_option("--db", path, "tuning database (default $DGTUNE_DB, else results/tuning.db)")->group("Database");
}

std::string DbOption::resolved() const { return resolve_db_path(path); }

std::string DbOption::flag() const {
  if (!path.empty()) return "--db";
  const char* env = std::getenv("DGTUNE_DB");
  return env && *env ? "$DGTUNE_DB" : "the default tuning database";
}

NamedPath DbOption::named() const { return NamedPath{flag(), resolved(), true}; }

std::string existing_db_input(const std::string& path, const std::string& what, const std::string& command) {
  const std::string p = resolve_db_path(path);
  try {
    require_regular_input_file(p, what);
  } catch (const Error& e) {
    DGT_THROW(ErrorKind::kUsage, "{} ({} never creates one)", e.message(), command);
  }
  return p;
}

std::string DbOption::existing(const std::string& command) const {
  return existing_db_input(path, "tuning database (" + flag() + ")", command);
}

void DeviceOption::add(CLI::App& cmd) {
  cmd.add_option("--device", ordinal, "CUDA device ordinal")
      ->transform(count(0, std::numeric_limits<int>::max()))
      ->capture_default_str()
      ->group("Device");
}

void CacheDirOption::add(CLI::App& cmd) {
  cmd.add_option("--cache-dir", dir, "cubin cache directory (default $DGTUNE_CACHE_DIR, else ~/.cache/dgtune)")
      ->group("Cache");
}

void TimingOptions::add(CLI::App& cmd) {
  const int max_int = std::numeric_limits<int>::max();
  cmd.add_option("--min-samples", protocol.min_samples, "timing: minimum samples")
      ->transform(count(1, max_int))
      ->capture_default_str()
      ->group("Timing");
  cmd.add_option("--max-samples", protocol.max_samples, "timing: maximum samples")
      ->transform(count(1, max_int))
      ->capture_default_str()
      ->group("Timing");
  cmd.add_option("--target-rse", protocol.target_rse, "timing: stop at this relative standard error of the median")
      ->transform(real(0, 1))
      ->capture_default_str()
      ->group("Timing");
  cmd.add_option("--seed", seed, "input fill seed (per problem: seed ^ hash of the problem)")
      ->transform(count_u64())
      ->capture_default_str()
      ->group("Timing");
}

MeasureProtocol TimingOptions::checked() const {
  protocol.validate();  // names --max-samples and --min-samples when they disagree
  return protocol;
}

void BaselineSwitch::add(CLI::App& cmd) {
  cmd.add_flag(
         "--baseline,!--no-baseline", on,
         std::string("measure cuBLASLt default and tuned on the same buffers (default: ") + (on ? "on" : "off") + ")")
      ->group("Baseline");
  cmd.add_flag("--cublas", on, "old spelling of --baseline")->group("");  // hidden alias
}

void FormatOption::add(CLI::App& cmd) {
  cmd.add_option("--format", name, "output format: table | csv | json | md")
      ->check(CLI::IsMember({"table", "csv", "json", "md"}))
      ->capture_default_str()
      ->group("Output");
}

namespace {
/// Output is the product: a table that did not reach stdout (a full disk, a closed pipe) is an I/O error
/// (exit 1), never a silent success.
void check_stdout() {
  std::cout.flush();
  if (!std::cout)
    DGT_THROW(ErrorKind::kIo, "could not write the output to standard output ({})",
              errno == EPIPE ? "the pipe was closed by the program reading it" : "disk full or pipe closed?");
}
}  // namespace

void FormatOption::render(const report::Table& t) const { render(t, type); }

void FormatOption::render(const report::Table& t, const report::DocumentType& as) const {
  report::render_document(as, t, report::parse_format(name), std::cout);
  check_stdout();
}

void FormatOption::render(const std::vector<report::Table>& tables) const {
  report::render_document(type, tables, report::parse_format(name), std::cout);
  check_stdout();
}

void ProblemOptions::add(CLI::App& cmd) {
  const int64_t max_dim = (int64_t(1) << 31) - 1;
  auto dim = [&](const char* name, int64_t& v, const char* help) {
    cmd.add_option(name, v, help)->required()->transform(count(1, max_dim))->group("Problem");
  };
  dim("--m", m, "rows of A and D (M)");
  dim("--n", n, "rows of B, columns of D (N)");
  dim("--k", k, "reduction length (K)");
  cmd.add_option("--lda", lda, "leading dimension of A in elements (default K)")->transform(count(1))->group("Problem");
  cmd.add_option("--ldb", ldb, "leading dimension of B in elements (default K)")->transform(count(1))->group("Problem");
  cmd.add_option("--ldd", ldd, "leading dimension of D in elements (default N)")->transform(count(1))->group("Problem");
  cmd.add_option("--a", a, "type of A: e4m3 | e5m2")
      ->check(CLI::IsMember({"e4m3", "e5m2"}))
      ->capture_default_str()
      ->group("Problem");
  cmd.add_option("--b", b, "type of B: e4m3 | e5m2")
      ->check(CLI::IsMember({"e4m3", "e5m2"}))
      ->capture_default_str()
      ->group("Problem");
  cmd.add_option("--scale", scale,
                 "scaling of A and B: tensor (one FP32 scale each) | channel (per row of A, per row of B) | block "
                 "(A per 1x128, B per 128x128; needs --accum promote) | block1d1d (A and B per 1x128)")
      ->check(CLI::IsMember({"tensor", "per-tensor", "channel", "block", "block1d1d"}))
      ->capture_default_str()
      ->group("Problem");
  cmd.add_option("--accum", accum, "accumulation: promote (FP32 promotion per k-block) | fast")
      ->check(CLI::IsMember({"promote", "fast"}))
      ->capture_default_str()
      ->group("Problem");
  output.add(cmd, true);
}

void OutputOptions::add(CLI::App& cmd, bool defaults) {
  auto* od = cmd.add_option("--d", d,
                            "output type: bf16 | f32 | e4m3 (e4m3: D = e4m3(scale_d x result), round to nearest "
                            "even, saturating at +-448, with the amax of the result)");
  od->check(CLI::IsMember({"bf16", "f32", "e4m3"}))->group("Problem");
  auto* ob = cmd.add_option("--bias", bias, "fused bias: none | bf16 (a BF16 vector of N added to every row)");
  ob->check(CLI::IsMember({"none", "bf16"}))->group("Problem");
  auto* oa = cmd.add_option("--act", act,
                            "fused activation after the bias: none | relu | gelu_tanh (0.5x(1+tanh(sqrt(2/pi)(x+"
                            "0.044715x^3))))");
  oa->check(CLI::IsMember({"none", "relu", "gelu_tanh"}))->group("Problem");
  if (defaults) {
    od->default_str("bf16");
    ob->default_str("none");
    oa->default_str("none");
  } else {
    for (auto* o : {od, ob, oa}) o->description(o->get_description() + " (default: each shapes-file line's value)");
  }
}

void OutputOptions::apply(Problem& p) const {
  if (!d.empty()) p.d = parse_output_dtype(d);
  if (!bias.empty()) p.bias = parse_bias(bias);
  if (!act.empty()) p.act = parse_act(act);
}

Problem ProblemOptions::problem() const {
  Problem p = Problem::dense(m, n, k);
  if (lda) p.lda = lda;
  if (ldb) p.ldb = ldb;
  if (ldd) p.ldd = ldd;
  p.a = parse_dtype(a);
  p.b = parse_dtype(b);
  p.scale = parse_scale_mode(scale);
  p.accum = parse_accum(accum);
  output.apply(p);
  validate_problem(p);
  return p;
}

void ShapesOption::add(CLI::App& cmd, bool output_overrides) {
  cmd.add_option("--shapes", path, "shapes file (one 'M N K [key=value ...]' per line)")
      ->required()
      ->check(input_file("shapes file"))
      ->group("Input");
  if (output_overrides) output.add(cmd, false);
}

std::vector<ShapeEntry> ShapesOption::load(bool with_grouped) const {
  auto shapes = with_grouped ? load_shapes_file_with_grouped(path) : load_shapes_file(path);
  const bool overrides = !output.d.empty() || !output.bias.empty() || !output.act.empty();
  for (auto& s : shapes) {
    if (!s.grouped) {
      output.apply(s.problem);
      continue;
    }
    if (overrides)
      DGT_THROW(ErrorKind::kUsage,
                "{}: a grouped problem: --d, --bias and --act do not apply (the grouped kernel writes bf16 without a "
                "fused epilogue); leave them out or move the grouped lines to another file",
                s.where());
  }
  if (shapes.empty()) DGT_THROW(ErrorKind::kUsage, "{}: no shapes (every line is blank or a comment)", escaped(path));
  // Two grouped lines of one key (the host-known identity) must give the same per-group counts: the DB keeps one
  // distribution per key, and a sweep would mix two distributions' trials under it (or, on several GPUs, treat the
  // second line as a repeat and never measure its counts).
  std::map<std::string, const ShapeEntry*> grouped_by_key;
  for (const auto& s : shapes) {
    if (!s.grouped) continue;
    const auto [it, fresh] = grouped_by_key.emplace(s.problem.key(), &s);
    if (!fresh && it->second->grouped->rows_list() != s.grouped->rows_list())
      DGT_THROW(ErrorKind::kUsage,
                "{}: the grouped problem of {} again (key {}) with other per-group counts; one key has one "
                "distribution: give it once, or change what the key holds (G, M_max, expected_m, N, K)",
                s.where(), it->second->where(), s.problem.key());
  }
  // Every line's rule violations, each as "file:line: message", so the user fixes the file once.
  std::string errors;
  int bad = 0;
  for (const auto& s : shapes) {
    if (s.grouped) continue;  // parse_grouped_problem checked it (validate_grouped), the dense rules included
    try {
      validate_problem(s.problem);
    } catch (const Error& e) {
      errors += "\n  " + s.where() + ": " + e.message();
      ++bad;
    }
  }
  if (bad)
    DGT_THROW(ErrorKind::kUsage, "{} of {} shapes break a rule; nothing was measured:{}", bad, shapes.size(), errors);
  return shapes;
}

CLI::Option* ModelOption::add(CLI::App& cmd) {
  cmd.add_option("--hf-config", config, "the model's config.json")->required()->check(input_file("model config"));
  cmd.add_option("--tp", split.tp, "tensor parallelism: column-parallel layers split N, row-parallel ones K")
      ->transform(count(1, 1024))
      ->capture_default_str();
  cmd.add_option("--ep", split.ep, "expert parallelism (changes no dense GEMM; recorded for grouped GEMMs)")
      ->transform(count(1, 1024))
      ->capture_default_str();
  CLI::Option* m_option = add_count_list(cmd, "--m", m, "M values (tokens per step), comma-separated, e.g. 1,64,4096 "
                                                       "(default: the M ladder 1..16384 of `dgtune shapes --m-ladder`)",
                                         1, (int64_t(1) << 31) - 1);
  cmd.add_option("--scale", scale, "tensor | channel | block | block1d1d (default: the config's quantization_config)")
      ->check(CLI::IsMember({"tensor", "channel", "block", "block1d1d"}));
  cmd.add_option("--accum", accum, "promote | fast")->check(CLI::IsMember({"promote", "fast"}))->capture_default_str();
  cmd.add_flag("--lm-head", split.lm_head, "also the LM head (vocabulary padded to 64, split by TP)");
  CLI::Option* experts_flag = cmd.add_flag(
      "--experts", experts,
      "also the routed experts' grouped GEMMs (G = experts / --ep) at the grouped ladder: contiguous at the padded "
      "totals of --m-sum, masked at the points of --expected-m");
  add_count_list(cmd, "--m-sum", ladder.m_sums, "with --experts: contiguous (prefill) ladder, padded total rows M_sum, "
                                               "multiples of 128, comma-separated (default 4096,16384,65536)",
                 128, int64_t(1) << 20)
      ->needs(experts_flag);
  add_count_list(cmd, "--expected-m", ladder.expected_ms, "with --experts: masked (decode) ladder of expected_m, "
                                                        "comma-separated (default: 1, 2, 4, 8, 16 and 1.5x steps up to the "
                                                        "largest decode step's expected_m, 1..64 for DeepSeek-V3 at "
                                                        "EP 8)",
                 1, 1 << 20)
      ->needs(experts_flag);
  return m_option;
}

CLI::Validator shard_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          parse_shard(s);
        } catch (const Error& e) {
          return e.message();
        }
        return {};
      },
      "i/n", "shard");
}

void ShardOption::add(CLI::App& cmd) {
  cmd.add_option("--shard", text,
                 "i/n: sweep only shard i of n (0 <= i < n): problem j of the shapes file (distinct problems in file "
                 "order) goes to shard j mod n; merge the shards' DBs with `dgtune db merge`")
      ->check(shard_validator())
      ->group("Input");
}

Shard ShardOption::shard() const { return text.empty() ? Shard{} : parse_shard(text); }

std::vector<ShapeEntry> ShardOption::select(const std::vector<ShapeEntry>& all, const std::string& file) const {
  if (text.empty()) return all;
  ShardSelection sel = select_shard(all, shard());
  spdlog::info("{}", sel.summary(file));
  return std::move(sel.entries);
}

void SpaceOption::add(CLI::App& cmd) {
  cmd.add_option("--space", path, "search space JSON (default: configs/spaces/sm90-default.json, built in)")
      ->check(input_file("search space file"))
      ->group("Input");
}

SearchSpace SpaceOption::load() const {
  return path.empty() ? SearchSpace::builtin_default() : SearchSpace::load(path);
}

SessionOptions session_options(const DbOption& db, const DeviceOption& device, const CacheDirOption& cache,
                               const TimingOptions& timing) {
  SessionOptions so;
  so.db_path = db.resolved();
  so.db_flag = db.flag();
  so.device = device.ordinal;
  so.cache_dir = cache.dir;
  so.protocol = timing.checked();
  so.seed = timing.seed;
  return so;
}

// ---- global options -----------------------------------------------------------------------------------

void LogLevelOption::add(CLI::App& app) {
  // Errors are printed at every accepted level (there is no "off"); IsMember+ignore_case maps "ERROR" to "error".
  app.add_option("--log-level", name,
                 "trace | debug | info | warn | error (debug also prints source locations of errors)")
      ->transform(CLI::IsMember({"trace", "debug", "info", "warn", "error"}, CLI::ignore_case))
      ->capture_default_str();
}

void LogLevelOption::apply() const { spdlog::set_level(spdlog::level::from_str(name)); }

void add_version_flag(CLI::App& app) {
  app.set_version_flag(
      "--version", std::function<std::string()>(version_text),
      "print dgtune's version, the kernel-source hash and the CUDA runtime / NVRTC / cuBLASLt versions, "
      "then exit");
}

}  // namespace dgt::cli
