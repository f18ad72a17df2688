#include "db/tuning_db_reader.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "db/schema.hpp"
#include "db/sqlite.hpp"
#include "db/tuning_db_rows.hpp"
#include "records/protocol_name.hpp"

namespace dgt {

namespace {

using sql::Connection;
using sql::Statement;

// ---------------------------------------------------------------------------------------------
// Value conversions

ScaleMode parse_scale_mode(const Connection& c, const std::string& text) {
  for (ScaleMode m : {ScaleMode::kPerTensor, ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d})
    if (text == to_string(m)) return m;
  DGT_THROW(ErrorKind::kSqlite, "tuning database {}: unknown scale_mode '{}' in the problem table", c.path(), text);
}

}  // namespace

const char* dbrows::group_kind_column(const Problem& p) {
  if (!p.is_grouped()) return "none";
  return p.group_kind == GroupKind::kMasked ? "masked" : "contiguous";
}

Problem dbrows::read_problem(const Connection& c, const Statement& s) {
  Problem p;
  p.m = s.get_int("m");
  p.n = s.get_int("n");
  p.k = s.get_int("k");
  p.lda = s.get_int("lda");
  p.ldb = s.get_int("ldb");
  p.ldd = s.get_int("ldd");
  p.a = parse_dtype(s.get_text("dtype_a"));
  p.b = parse_dtype(s.get_text("dtype_b"));
  p.d = parse_dtype(s.get_text("dtype_d"));
  p.scale = parse_scale_mode(c, s.get_text("scale_mode"));
  p.accum = parse_accum(s.get_text("accum"));
  p.bias = parse_bias(s.get_text("bias"));
  p.act = parse_act(s.get_text("act"));
  // Schema 11: a grouped problem's identity (its key: Problem::key()); 'none' for a dense one.
  const std::string kind = s.get_text("group_kind");
  if (kind != "none") {
    if (kind != "contiguous" && kind != "masked")
      DGT_THROW(ErrorKind::kSqlite, "tuning database {}: unknown group_kind '{}' in the problem table", c.path(), kind);
    p.group_kind = kind == "masked" ? GroupKind::kMasked : GroupKind::kContiguous;
    p.groups = s.get_int32("groups");
    p.m_max = s.get_int("m_max");
    p.expected_m = s.get_int("expected_m");
  }
  // dgtune stores only problems that pass these rules: one that does not was damaged or edited, and would be passed on
  // (exported, merged, chosen) as if it were real.
  try {
    validate_problem(p);
  } catch (const Error& e) {
    DGT_THROW(ErrorKind::kSqlite, "tuning database {}: problem table, key {}: {} (damaged or hand-edited file?); run "
              "`dgtune db check --db {}`", c.path(), p.key(), e.message(), c.path());
  }
  return p;
}

void dbrows::bind_scope(Statement& s, const DeviceScope& scope) {
  s.bind_int(":device_id", scope.device_id);
  s.bind_int(":environment_id", scope.environment_id);
}

namespace {

using dbrows::bind_scope;
using dbrows::read_problem;

/// An ok measurement's median must be a positive finite time: winners, exports and the loader rank by it (a winner at
/// -1 us beat every real one). `row` names the row for the message: its table and keys.
void check_timing(const Connection& c, const Measurement& m, const std::string& row) {
  if (m.status != TrialStatus::kOk || !m.timing) return;
  const double t = m.timing->median_us;
  if (!(t > 0) || !std::isfinite(t))
    DGT_THROW(ErrorKind::kSqlite, "tuning database {}: {}: status ok with median_us = {}, not a positive finite time "
              "(damaged or hand-edited file?); run `dgtune db check --db {}`", c.path(), row, t, c.path());
}

/// Reads the columns every measurement has (DGT_MEASUREMENT_COLUMNS below).
void read_measurement(const Connection& c, const Statement& s, Measurement& m) {
  m.problem = read_problem(c, s);
  m.status = parse_trial_status(s.get_text("status"));
  m.error = s.get_text("error");
  if (!s.is_null("median_us")) {
    Timing t;
    t.median_us = s.get_real("median_us");
    t.p10_us = s.get_real("p10_us");
    t.p90_us = s.get_real("p90_us");
    t.samples = s.get_int32("samples");
    t.rse = s.get_real("rse");
    t.sm_clock_mhz = s.get_real("sm_clock_mhz");
    t.throttled = s.get_int("throttled") != 0;
    m.timing = t;
  }
  if (!s.is_null("verify_ok")) {
    Verification v;
    v.ok = s.get_int("verify_ok") != 0;
    v.max_rel_err = s.get_real("max_rel_err");
    v.diff = s.get_real("diff");
    v.nan_count = s.get_int("nan_count");
    v.pad_touched = s.get_int("pad_touched");
    m.verification = v;
  }
  m.tflops = s.get_real("tflops");
  m.gbps = s.get_real("gbps");
  m.protocol = s.get_text("protocol");
  m.created_at = s.get_text("created_at");
}

// Column lists shared by every query that reads whole records. Only constant SQL is concatenated;
// values are always bound.
#define DGT_PROBLEM_COLUMNS                                                                        \
  "p.m AS m, p.n AS n, p.k AS k, p.lda AS lda, p.ldb AS ldb, p.ldd AS ldd, p.dtype_a AS dtype_a, " \
  "p.dtype_b AS dtype_b, p.dtype_d AS dtype_d, p.scale_mode AS scale_mode, p.accum AS accum, p.bias AS bias, " \
  "p.act AS act, p.group_kind AS group_kind, p.groups AS groups, p.m_max AS m_max, p.expected_m AS expected_m"
#define DGT_MEASUREMENT_COLUMNS(t)                                                                                    \
  t ".status AS status, " t ".error AS error, " t ".median_us AS median_us, " t ".p10_us AS p10_us, " t               \
    ".p90_us AS p90_us, " t ".samples AS samples, " t ".rse AS rse, " t ".sm_clock_mhz AS sm_clock_mhz, " t           \
    ".throttled AS throttled, " t ".verify_ok AS verify_ok, " t ".max_rel_err AS max_rel_err, " t ".diff AS diff, " t \
    ".nan_count AS nan_count, " t ".pad_touched AS pad_touched, " t ".tflops AS tflops, " t ".gbps AS gbps, " t       \
    ".protocol AS protocol, " t ".created_at AS created_at"

constexpr const char* kTrialSelect =
    "SELECT t.problem_id AS problem_id, c.key AS config_key, c.mainloop AS mainloop, c.promote_every AS promote_every, "
    "c.split_cluster AS split_cluster, c.swap_ab AS swap_ab, "
    "t.compile_ms AS compile_ms, t.registers AS registers, "
    "t.spill_bytes AS spill_bytes, t.smem_bytes AS smem_bytes, " DGT_PROBLEM_COLUMNS ", " DGT_MEASUREMENT_COLUMNS(
        "t") " FROM trial t JOIN problem p ON p.id = t.problem_id JOIN config c ON c.id = t.config_id ";

constexpr const char* kBaselineSelect =
    "SELECT b.provider AS provider, b.cublas_status AS cublas_status, b.algo AS algo, b.algo_data AS algo_data, "
    "b.workspace_bytes AS workspace_bytes, " DGT_PROBLEM_COLUMNS
    ", " DGT_MEASUREMENT_COLUMNS("b") " FROM baseline b JOIN problem p ON p.id = b.problem_id ";

/// The problem columns of `p` (read_problem's), for the loader's queries that build their text at run time.
constexpr const char* kProblemColumns = DGT_PROBLEM_COLUMNS;

#undef DGT_PROBLEM_COLUMNS
#undef DGT_MEASUREMENT_COLUMNS

TrialRecord read_trial(const Connection& c, const Statement& s) {
  TrialRecord t;
  read_measurement(c, s, t);
  t.config = KernelConfig::parse_key(s.get_text("config_key"));
  // The key carries every tunable; the schema-4 columns must agree with it (old keys without the
  // _1g/_2g and _pP tokens parse to 1g and P = 1, the columns' defaults).
  // Schema 9's split_cluster column likewise (keys without "c" after the split count: 0).
  const std::string mainloop = s.get_text("mainloop");
  const int promote_every = s.get_int32("promote_every");
  const int split_cluster = s.get_int32("split_cluster");
  // Schema 12's swap_ab column likewise (keys without "_swapab": 0).
  const int swap_ab = s.get_int32("swap_ab");
  if (mainloop != to_string(t.config.mainloop) || promote_every != t.config.promote_every ||
      split_cluster != (t.config.split_cluster ? 1 : 0) || swap_ab != (t.config.swap_ab ? 1 : 0))
    DGT_THROW(ErrorKind::kSqlite,
              "tuning database {}: config {} is stored with mainloop {}, promote_every {}, split_cluster {} and swap_ab "
              "{}, which its key contradicts (damaged file?)",
              c.path(), t.config.key(), mainloop, promote_every, split_cluster, swap_ab);
  check_timing(c, t, fmt::format("trial table, problem {}, config {}", t.problem.key(), t.config.key()));
  t.compile_ms = s.get_real("compile_ms");
  t.registers = s.get_int32("registers");
  t.spill_bytes = s.get_int32("spill_bytes");
  t.smem_bytes = s.get_int32("smem_bytes");
  return t;
}

BaselineRecord read_baseline(const Connection& c, const Statement& s) {
  BaselineRecord b;
  read_measurement(c, s, b);
  b.provider = s.get_text("provider");
  check_timing(c, b, fmt::format("baseline table, problem {}, provider {}", b.problem.key(), b.provider));
  b.cublas_status = s.get_int32("cublas_status");
  b.algo = s.get_text("algo");
  b.algo_data = s.get_blob("algo_data");
  b.workspace_bytes = s.get_int("workspace_bytes");
  return b;
}

// ---------------------------------------------------------------------------------------------
// Queries by problem id (the public functions resolve the Problem to its id first)

std::optional<BaselineRecord> baseline_by_id(const Connection& c, const DeviceScope& scope, int64_t problem_id,
                                             std::string_view provider, const std::string& protocol) {
  Statement s(c, std::string(kBaselineSelect) +
                     "WHERE b.device_id = :device_id AND b.environment_id = :environment_id "
                     "AND b.problem_id = :problem_id AND b.provider = :provider AND b.protocol_name = :protocol_name");
  bind_scope(s, scope);
  s.bind_int(":problem_id", problem_id);
  s.bind_text(":provider", provider);
  s.bind_text(":protocol_name", protocol);
  if (!s.step()) return std::nullopt;
  return read_baseline(c, s);
}

/// One pass over the trials of one (scope, problem, protocol), claims aside: WinnerRow::status_counts, and the
/// median SM clock of the verified ok trials that recorded one with their number (WinnerRow::trials_median_clock_mhz,
/// clocked_trials). The median by hand: src/stats is not part of the runtime library this reader belongs to.
void tally_trials(const Connection& c, const DeviceScope& scope, int64_t problem_id, const std::string& protocol,
                  WinnerRow& w) {
  Statement s(c,
              "SELECT status AS status, CASE WHEN status = 'ok' AND verify_ok = 1 AND sm_clock_mhz > 0 THEN "
              "sm_clock_mhz END AS mhz FROM trial WHERE device_id = :device_id AND environment_id = :environment_id "
              "AND problem_id = :problem_id AND protocol_name = :protocol_name AND status != 'claimed'");
  bind_scope(s, scope);
  s.bind_int(":problem_id", problem_id);
  s.bind_text(":protocol_name", protocol);
  std::vector<double> mhz;
  while (s.step()) {
    ++w.status_counts[s.get_text("status")];
    if (!s.is_null("mhz")) mhz.push_back(s.get_real("mhz"));
  }
  if (mhz.empty()) return;
  std::sort(mhz.begin(), mhz.end());
  const size_t n = mhz.size();
  w.trials_median_clock_mhz = n % 2 ? mhz[n / 2] : (mhz[n / 2 - 1] + mhz[n / 2]) / 2;
  w.clocked_trials = static_cast<int>(n);
}

/// Adds the baselines, status counts and the trials' median clock (of the same protocol) to a winning trial.
WinnerRow complete_winner(const Connection& c, const DeviceScope& scope, int64_t problem_id,
                          const std::string& protocol, TrialRecord trial) {
  WinnerRow w;
  w.trial = std::move(trial);
  w.protocol_name = protocol;
  w.cublas_default = baseline_by_id(c, scope, problem_id, kProviderCublasDefault, protocol);
  w.cublas_tuned = baseline_by_id(c, scope, problem_id, kProviderCublasTuned, protocol);
  tally_trials(c, scope, problem_id, protocol, w);
  return w;
}

/// The winner of one problem, read through the winner view so that ad-hoc SQL and dgtune agree.
std::optional<WinnerRow> winner_by_id(const Connection& c, const DeviceScope& scope, int64_t problem_id,
                                      const std::string& protocol) {
  Statement s(c, std::string(kTrialSelect) +
                     "JOIN winner w ON w.trial_id = t.id WHERE w.device_id = :device_id AND w.environment_id = "
                     ":environment_id AND w.problem_id = :problem_id AND w.protocol_name = :protocol_name");
  bind_scope(s, scope);
  s.bind_int(":problem_id", problem_id);
  s.bind_text(":protocol_name", protocol);
  if (!s.step()) return std::nullopt;
  TrialRecord trial = read_trial(c, s);
  return complete_winner(c, scope, problem_id, protocol, std::move(trial));
}

/// Exact comparison of log distances: |log a - log m| < |log b - log m| is max(a,m)/min(a,m) <
/// max(b,m)/min(b,m), compared by cross-multiplication in 128 bits so that equal ratios (M = 64 and
/// M = 256 around 128) tie exactly instead of by rounding.
int compare_log_distance(int64_t a, int64_t b, int64_t m) {
  using u128 = unsigned __int128;
  u128 an = u128(std::max(a, m)), ad = u128(std::min(a, m));
  u128 bn = u128(std::max(b, m)), bd = u128(std::min(b, m));
  u128 lhs = an * bd, rhs = bn * ad;
  return lhs < rhs ? -1 : (lhs > rhs ? 1 : 0);
}

/// Binds the fields that make a problem family (everything but M and the leading dimensions).
void bind_family(Statement& s, const Problem& p) {
  s.bind_int(":n", p.n);
  s.bind_int(":k", p.k);
  s.bind_text(":dtype_a", to_string(p.a));
  s.bind_text(":dtype_b", to_string(p.b));
  s.bind_text(":dtype_d", to_string(p.d));
  s.bind_text(":scale_mode", to_string(p.scale));
  s.bind_text(":accum", to_string(p.accum));
  s.bind_text(":bias", to_string(p.bias));
  s.bind_text(":act", to_string(p.act));
  s.bind_text(":group_kind", dbrows::group_kind_column(p));
  s.bind_int(":groups", p.groups);
}

// The grouped identity is part of the family: a dense lookup never takes a grouped problem's winner (whose N and K
// are one group's) as its nearest M, nor a grouped lookup another G's or layout's.
constexpr const char* kFamilyWhere =
    "p.n = :n AND p.k = :k AND p.dtype_a = :dtype_a AND p.dtype_b = :dtype_b AND p.dtype_d = :dtype_d "
    "AND p.scale_mode = :scale_mode AND p.accum = :accum AND p.bias = :bias AND p.act = :act "
    "AND p.group_kind = :group_kind AND p.groups = :groups";

}  // namespace

// ---------------------------------------------------------------------------------------------
// TuningDbReader

TuningDbReader::TuningDbReader(const std::string& path)
    : conn_(std::make_unique<sql::Connection>(path, /*read_only=*/true)) {
  schema::check_read_only(*conn_);  // never migrates: an older, newer or foreign file is refused as it is
}

TuningDbReader::TuningDbReader(std::unique_ptr<sql::Connection> conn) : conn_(std::move(conn)) {}

TuningDbReader::~TuningDbReader() = default;

const std::string& TuningDbReader::path() const { return conn_->path(); }

std::optional<int64_t> TuningDbReader::find_hardware(const HardwareIdentity& hw) const {
  Statement s(*conn_, "SELECT id AS id FROM device WHERE hw_key = :hw_key");
  s.bind_text(":hw_key", hw.key());
  if (!s.step()) return std::nullopt;
  return s.get_int("id");
}

std::optional<DeviceScope> TuningDbReader::find_device(const DeviceFingerprint& fp) const {
  std::optional<int64_t> device_id = find_hardware(fp.hardware());
  if (!device_id) return std::nullopt;
  Statement s(*conn_, "SELECT id AS id FROM environment WHERE env_key = :env_key");
  s.bind_text(":env_key", fp.software().key());
  if (!s.step()) return std::nullopt;
  return DeviceScope{*device_id, s.get_int("id"), fp.pci_bus_id};
}

void TuningDbReader::remember_problem(const Problem& p, int64_t id) const { problem_ids_.emplace(p.key(), id); }

std::optional<int64_t> TuningDbReader::find_problem(const Problem& p) const {
  const std::string key = p.key();
  if (auto it = problem_ids_.find(key); it != problem_ids_.end()) return it->second;
  Statement s(*conn_, "SELECT id AS id FROM problem WHERE key = :key");
  s.bind_text(":key", key);
  if (!s.step()) return std::nullopt;
  // Only ids of committed rows are cached (a row inserted by a transaction that rolls back would
  // leave a stale id): outside a transaction every row found is committed.
  const int64_t id = s.get_int("id");
  if (!conn_->in_transaction()) problem_ids_.emplace(key, id);
  return id;
}

bool TuningDbReader::has_trial(const DeviceScope& scope, const Problem& p, const KernelConfig& cfg,
                         const std::string& protocol) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return false;
  Statement s(*conn_,
              "SELECT 1 AS found FROM trial t JOIN config c ON c.id = t.config_id WHERE t.device_id = :device_id "
              "AND t.environment_id = :environment_id AND t.problem_id = :problem_id AND c.key = :config_key "
              "AND t.protocol_name = :protocol_name AND t.status != 'claimed'");
  bind_scope(s, scope);
  s.bind_text(":protocol_name", protocol);
  s.bind_int(":problem_id", *problem_id);
  s.bind_text(":config_key", cfg.key());
  return s.step();
}

std::set<std::string> TuningDbReader::stored_config_keys(const DeviceScope& scope, const Problem& p,
                                                   const std::string& protocol) const {
  std::set<std::string> keys;
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return keys;
  Statement s(*conn_,
              "SELECT c.key AS config_key FROM trial t JOIN config c ON c.id = t.config_id WHERE t.device_id = "
              ":device_id AND t.environment_id = :environment_id AND t.problem_id = :problem_id AND t.protocol_name = "
              ":protocol_name AND t.status != 'claimed'");
  bind_scope(s, scope);
  s.bind_text(":protocol_name", protocol);
  s.bind_int(":problem_id", *problem_id);
  while (s.step()) keys.insert(s.get_text("config_key"));
  return keys;
}

std::vector<TrialRecord> TuningDbReader::trials(const DeviceScope& scope, const Problem& p,
                                          const std::string& protocol) const {
  std::vector<TrialRecord> out;
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return out;
  const Connection& c = *conn_;
  Statement s(
      c, std::string(kTrialSelect) +
             "WHERE t.device_id = :device_id AND t.environment_id = :environment_id AND t.problem_id = :problem_id "
             "AND t.protocol_name = :protocol_name AND t.status != 'claimed' "
             // Timed ok trials first (fastest first), then everything else; config key breaks ties.
             "ORDER BY (t.status = 'ok' AND t.median_us IS NOT NULL) DESC, "
             "CASE WHEN t.status = 'ok' THEN t.median_us END ASC, c.key ASC");
  bind_scope(s, scope);
  s.bind_text(":protocol_name", protocol);
  s.bind_int(":problem_id", *problem_id);
  while (s.step()) out.push_back(read_trial(c, s));
  return out;
}

bool TuningDbReader::has_baseline(const DeviceScope& scope, const Problem& p, const std::string& provider,
                            const std::string& protocol) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return false;
  Statement s(*conn_,
              "SELECT 1 AS found FROM baseline WHERE device_id = :device_id AND environment_id = :environment_id "
              "AND problem_id = :problem_id AND provider = :provider AND protocol_name = :protocol_name");
  bind_scope(s, scope);
  s.bind_text(":protocol_name", protocol);
  s.bind_int(":problem_id", *problem_id);
  s.bind_text(":provider", provider);
  return s.step();
}

std::optional<SweepState> TuningDbReader::sweep_state(const DeviceScope& scope, const Problem& p,
                                                      const std::string& space, const std::string& strategy,
                                                      const std::string& protocol) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return std::nullopt;
  Statement s(*conn_,
              "SELECT candidates AS candidates, stored AS stored, complete AS complete, updated_at AS updated_at FROM "
              "sweep WHERE device_id = :device_id AND environment_id = :environment_id AND problem_id = :problem_id "
              "AND space = :space AND strategy = :strategy AND protocol_name = :protocol_name");
  bind_scope(s, scope);
  s.bind_text(":protocol_name", protocol);
  s.bind_int(":problem_id", *problem_id);
  s.bind_text(":space", space);
  s.bind_text(":strategy", strategy);
  if (!s.step()) return std::nullopt;
  SweepState st;
  st.candidates = s.get_int32("candidates");
  st.stored = s.get_int32("stored");
  st.complete = s.get_int("complete") != 0;
  st.updated_at = s.get_text("updated_at");
  return st;
}

std::optional<BaselineRecord> TuningDbReader::baseline(const DeviceScope& scope, const Problem& p,
                                                 const std::string& provider, const std::string& protocol) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return std::nullopt;
  return baseline_by_id(*conn_, scope, *problem_id, provider, protocol);
}

std::optional<WinnerRow> TuningDbReader::winner(const DeviceScope& scope, const Problem& p,
                                          const std::string& protocol) const {
  std::optional<int64_t> problem_id = find_problem(p);
  if (!problem_id) return std::nullopt;
  return winner_by_id(*conn_, scope, *problem_id, protocol);
}

std::vector<WinnerRow> TuningDbReader::winners(const DeviceScope& scope, const std::string& protocol) const {
  const Connection& c = *conn_;
  // Read the winning trials first and complete them afterwards, so only one statement is active.
  std::vector<std::pair<int64_t, TrialRecord>> found;
  {
    Statement s(c, std::string(kTrialSelect) +
                       "JOIN winner w ON w.trial_id = t.id WHERE w.device_id = :device_id AND w.environment_id = "
                       ":environment_id AND w.protocol_name = :protocol_name ORDER BY p.m, p.n, p.k, p.key");
    bind_scope(s, scope);
    s.bind_text(":protocol_name", protocol);
    while (s.step()) found.emplace_back(s.get_int("problem_id"), read_trial(c, s));
  }
  std::vector<WinnerRow> out;
  out.reserve(found.size());
  for (auto& [problem_id, trial] : found)
    out.push_back(complete_winner(c, scope, problem_id, protocol, std::move(trial)));
  return out;
}

std::optional<WinnerRow> TuningDbReader::nearest_winner(const DeviceScope& scope, const Problem& p,
                                                  const std::string& protocol) const {
  if (p.m < 1) DGT_THROW(ErrorKind::kInvalid, "nearest_winner: M = {} is invalid (must be >= 1)", p.m);
  const Connection& c = *conn_;
  Statement s(c, std::string("SELECT p.id AS problem_id, p.m AS m, p.key AS key FROM winner w JOIN problem p ON p.id = "
                             "w.problem_id WHERE w.device_id = :device_id AND w.environment_id = :environment_id AND "
                             "w.protocol_name = :protocol_name AND ") +
                     kFamilyWhere);
  bind_scope(s, scope);
  s.bind_text(":protocol_name", protocol);
  bind_family(s, p);

  struct Candidate {
    int64_t problem_id, m;
    std::string key;
  };
  const std::string own_key = p.key();
  // True when a is the better choice: nearer in log M, then larger M, then p itself, then lower key.
  auto better = [&](const Candidate& a, const Candidate& b) {
    int d = compare_log_distance(a.m, b.m, p.m);
    if (d != 0) return d < 0;
    if (a.m != b.m) return a.m > b.m;
    if ((a.key == own_key) != (b.key == own_key)) return a.key == own_key;
    return a.key < b.key;
  };
  std::optional<Candidate> best;
  while (s.step()) {
    Candidate cand{s.get_int("problem_id"), s.get_int("m"), s.get_text("key")};
    if (cand.m < 1) continue;  // cannot be placed on a log scale; never stored by dgtune
    if (!best || better(cand, *best)) best = std::move(cand);
  }
  if (!best) return std::nullopt;
  return winner_by_id(c, scope, best->problem_id, protocol);
}

namespace {
/// The environment columns of an EnvironmentWinner row (family_rows).
constexpr const char* kEnvironmentColumns =
    "e.id AS environment_id, e.env_key AS env_key, e.driver_version AS driver_version, e.runtime_version AS "
    "runtime_version, e.cublaslt_version AS cublaslt_version, e.nvrtc_version AS nvrtc_version, e.kernel_hash AS "
    "kernel_hash, e.dgtune_version AS dgtune_version, ";

/// EnvironmentWinner rows of p's family on device `device_id`: SELECT `columns` (config_key, median_us, protocol_name)
/// with the environment and problem columns FROM `from_where` (which binds :device_id) AND the family.
std::vector<EnvironmentWinner> family_rows(const Connection& c, const std::string& columns, const std::string& from_where,
                                           int64_t device_id, const Problem& p) {
  Statement s(c, "SELECT " + columns + kEnvironmentColumns + kProblemColumns + " FROM " + from_where + " AND " +
                     kFamilyWhere);
  s.bind_int(":device_id", device_id);
  bind_family(s, p);
  std::vector<EnvironmentWinner> out;
  while (s.step()) {
    EnvironmentWinner w;
    w.problem = read_problem(c, s);
    w.config_key = s.get_text("config_key");
    w.median_us = s.get_real("median_us");
    w.protocol_name = s.get_text("protocol_name");
    w.environment_id = s.get_int("environment_id");
    w.env_key = s.get_text("env_key");
    w.env.driver_version = s.get_int32("driver_version");
    w.env.runtime_version = s.get_int32("runtime_version");
    w.env.cublaslt_version = s.get_int32("cublaslt_version");
    w.env.nvrtc_version = s.get_int32("nvrtc_version");
    w.env.kernel_hash = s.get_text("kernel_hash");
    w.env.dgtune_version = s.get_text("dgtune_version");
    out.push_back(std::move(w));
  }
  return out;
}
}  // namespace

std::vector<EnvironmentWinner> TuningDbReader::environment_winners(int64_t device_id, const Problem& p) const {
  return family_rows(*conn_, "w.config_key AS config_key, w.median_us AS median_us, w.protocol_name AS protocol_name, ",
                     "winner w JOIN problem p ON p.id = w.problem_id JOIN environment e ON e.id = w.environment_id WHERE "
                     "w.device_id = :device_id",
                     device_id, p);
}

std::vector<EnvironmentWinner> TuningDbReader::family_trials(int64_t device_id, const Problem& p) const {
  return family_rows(*conn_, "cf.key AS config_key, t.median_us AS median_us, t.protocol_name AS protocol_name, ",
                     "trial t JOIN problem p ON p.id = t.problem_id JOIN config cf ON cf.id = t.config_id JOIN "
                     "environment e ON e.id = t.environment_id WHERE t.device_id = :device_id AND t.status = 'ok' AND "
                     "t.median_us IS NOT NULL",
                     device_id, p);
}

std::vector<StoredCublasLtAlgo> TuningDbReader::cublaslt_winners(int64_t device_id, const Problem& p) const {
  const Connection& c = *conn_;
  // The heuristic's median of the same problem, environment and protocol rides along (LEFT JOIN: NULL when the
  // sweep stored none): off a tuned M the loader runs the heuristic, so its checks compare the kernel with that.
  Statement s(c, std::string("SELECT b.algo AS algo, b.algo_data AS algo_data, b.workspace_bytes AS "
                             "workspace_bytes, b.median_us AS median_us, h.median_us AS heuristic_us, b.protocol_name "
                             "AS protocol_name, e.id AS environment_id, e.cublaslt_version AS cublaslt_version, ") +
                     kProblemColumns +
                     " FROM baseline b JOIN problem p ON p.id = b.problem_id JOIN environment e ON e.id = "
                     "b.environment_id LEFT JOIN baseline h ON h.device_id = b.device_id AND h.environment_id = "
                     "b.environment_id AND h.problem_id = b.problem_id AND h.protocol_name = b.protocol_name AND "
                     "h.provider = :heuristic_provider AND h.status = 'ok' WHERE b.device_id = :device_id AND "
                     "b.provider = :provider AND b.status = 'ok' AND b.algo_data IS NOT NULL AND b.median_us IS NOT "
                     "NULL AND " + kFamilyWhere);
  s.bind_int(":device_id", device_id);
  s.bind_text(":provider", kProviderCublasTuned);
  s.bind_text(":heuristic_provider", kProviderCublasDefault);
  bind_family(s, p);
  std::vector<StoredCublasLtAlgo> out;
  while (s.step()) {
    StoredCublasLtAlgo a;
    a.problem = read_problem(c, s);
    a.algo = s.get_text("algo");
    a.algo_data = s.get_blob("algo_data");
    a.workspace_bytes = s.get_int("workspace_bytes");
    a.median_us = s.get_real("median_us");
    if (!s.is_null("heuristic_us")) a.heuristic_us = s.get_real("heuristic_us");
    a.protocol_name = s.get_text("protocol_name");
    a.environment_id = s.get_int("environment_id");
    a.cublaslt_version = s.get_int32("cublaslt_version");
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<ExportRow> TuningDbReader::export_rows(int64_t device_id) const {
  const Connection& c = *conn_;
  std::string columns(kTrialSelect);
  columns.resize(columns.find(" FROM trial"));
  Statement s(c, columns +
                     ", w.environment_id AS w_environment_id, w.protocol_name AS w_protocol_name, e.kernel_hash AS "
                     "kernel_hash, e.dgtune_version AS "
                     "dgtune_version FROM winner w JOIN trial t ON t.id = w.trial_id JOIN problem p ON p.id = "
                     "t.problem_id JOIN config c ON c.id = t.config_id JOIN environment e ON e.id = w.environment_id "
                     "WHERE w.device_id = :device_id ORDER BY p.m, p.n, p.k, p.key, w.environment_id, w.protocol_name");
  s.bind_int(":device_id", device_id);
  std::vector<ExportRow> out;
  while (s.step()) {
    ExportRow r;
    r.trial = read_trial(c, s);
    r.environment_id = s.get_int("w_environment_id");
    r.protocol_name = s.get_text("w_protocol_name");
    r.kernel_hash = s.get_text("kernel_hash");
    r.dgtune_version = s.get_text("dgtune_version");
    out.push_back(std::move(r));
  }
  for (ExportRow& r : out) {
    const auto pid = find_problem(r.trial.problem);
    if (!pid) continue;
    const DeviceScope scope{device_id, r.environment_id, ""};
    r.cublas_tuned = baseline_by_id(c, scope, *pid, kProviderCublasTuned, r.protocol_name);
    if (r.trial.problem.is_grouped())
      r.group_loop = baseline_by_id(c, scope, *pid, kProviderCublasDefault, r.protocol_name);
  }
  return out;
}

}  // namespace dgt
