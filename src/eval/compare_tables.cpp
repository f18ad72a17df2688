#include "eval/compare_tables.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "bench/copy_limit_side.hpp"
#include "core/error.hpp"

namespace dgt {

using report::Cell;
using report::Number;

namespace {

std::string fmt_margin(double margin) { return fmt::format("+-{:g}%", margin * 100); }

Cell num(double v, int precision) {
  if (!std::isfinite(v)) return std::monostate{};
  return Number{v, precision};
}

/// The speedup of side 0 (dgtune) over side `y` with its interval; empty when a side is missing.
std::optional<stats::PairedComparison> speedup(const RoundsResult& r, int y, const stats::PairedOptions& opts,
                                               bool drop_flagged) {
  const int x = r.find(kSideDgtune);
  if (x < 0 || y < 0) return std::nullopt;
  const PairedTimes t = r.paired(x, y, drop_flagged);
  if (t.x_us.empty()) return std::nullopt;
  return stats::compare_paired(t.x_us, t.y_us, opts);
}

/// Median SM clock of the side's samples that are not flagged and have a known clock (NaN if none).
double unflagged_clock(const RoundsResult& r, int side) {
  std::vector<double> clocks;
  for (const Sample& x : r.samples)
    if (x.side == side && !x.flagged && x.sm_clock_mhz > 0) clocks.push_back(x.sm_clock_mhz);
  return clocks.empty() ? std::nan("") : stats::median(clocks);
}

/// The verdict rule of stats::compare_paired applied to an interval of a log ratio (< 0: X better).
stats::Verdict verdict_of(const stats::Interval& iv, double log_margin) {
  if (!std::isfinite(iv.lo) || !std::isfinite(iv.hi)) return stats::Verdict::kInconclusive;
  if (-log_margin <= iv.lo && iv.hi <= log_margin) return stats::Verdict::kEquivalent;
  if (iv.hi < 0) return stats::Verdict::kFaster;
  if (iv.lo > 0) return stats::Verdict::kSlower;
  return stats::Verdict::kInconclusive;
}

/// Per-round ln(dgtune / cuBLASLt-tuned) of one stored run.
std::vector<double> log_ratios_vs_tuned(const RoundsResult& r) {
  const PairedTimes t = r.paired(r.find(kSideDgtune), r.find(kProviderCublasTuned));
  return stats::log_ratios(t.x_us, t.y_us);
}

std::string shape_key(const StoredMeasurement& m) { return m.problem.key() + "|" + m.protocol_name; }

const char* kVerdicts[] = {"faster", "slower", "equivalent", "inconclusive"};

report::Table summary_table(const std::string& title, const std::vector<double>& x_tuned,
                            const std::vector<double>& x_default, const std::map<std::string, int>& counts,
                            int not_measured, const std::string& what, bool with_default,
                            const std::vector<double>& copy_fractions = {}) {
  report::Table t;
  t.title = title;
  t.columns = {{"what", "what", false}, {"value", "value", true}};
  auto geo = [](const std::vector<double>& v) -> Cell {
    if (v.empty()) return std::monostate{};
    return Number{stats::geometric_mean(v), 3};
  };
  t.rows.push_back({std::string("geomean " + what), geo(x_tuned)});
  if (with_default) t.rows.push_back({std::string("geomean speedup vs cuBLASLt-default"), geo(x_default)});
  for (const char* v : kVerdicts) {
    auto it = counts.find(v);
    t.rows.push_back({std::string("shapes ") + v, int64_t(it == counts.end() ? 0 : it->second)});
  }
  t.rows.push_back({std::string("shapes not measured"), int64_t(not_measured)});
  if (!copy_fractions.empty()) {
    t.rows.push_back({std::string("geomean copy_fraction (copy-limit us / dgtune us)"), geo(copy_fractions)});
    t.rows.push_back({std::string("min copy_fraction"),
                      Number{*std::min_element(copy_fractions.begin(), copy_fractions.end()), 3}});
  }
  return t;
}

}  // namespace

std::vector<report::Table> compare_tables(const std::vector<CompareShape>& shapes, const stats::PairedOptions& opts,
                                          const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"name", "name", false},
               {"accum", "accum", false},
               {"config", "dgtune config", false},
               {"config_source", "source", false},
               {"dgtune_us", "dgtune us", true},
               {"dgtune_p10_us", "p10", true},
               {"dgtune_p90_us", "p90", true},
               {"cublas_default_us", "cuBLASLt default us", true},
               {"cublas_tuned_us", "cuBLASLt tuned us", true},
               {"cublas_tuned_p10_us", "p10", true},
               {"cublas_tuned_p90_us", "p90", true},
               {"x_tuned", "x tuned", true},
               {"x_tuned_lo", "lo", true},
               {"x_tuned_hi", "hi", true},
               {"verdict", "verdict", false},
               {"x_default", "x default", true},
               {"tflops", "TFLOPS", true},
               {"gbps", "GB/s", true},
               {"copy_us", "copy-limit us", true},
               {"copy_fraction", "copy fraction", true},
               {"clock_mhz", "clock MHz", true},
               {"flagged", "flagged", true},
               {"clock_mhz_unflagged", "clock MHz (unflagged)", true},
               {"dgtune_sm_clock_mhz_median", "dgtune clock MHz", true},
               {"cublas_tuned_sm_clock_mhz_median", "cuBLASLt tuned clock MHz", true},
               {"cublas_default_sm_clock_mhz_median", "cuBLASLt default clock MHz", true},
               {"cublas_tuned_tflops", "cuBLASLt tuned TFLOPS", true},
               {"dgtune_us_unflagged", "dgtune us (unflagged)", true},
               {"x_tuned_unflagged", "x tuned (unflagged)", true},
               {"verdict_unflagged", "verdict (unflagged)", false},
               {"rounds", "rounds", true},
               {"cublas_tuned_algo", "cuBLASLt tuned algo", false},
               {"note", "note", false}};
  std::vector<double> x_tuned, x_default, copy_fractions;
  std::map<std::string, int> counts;
  int not_measured = 0;
  for (const CompareShape& c : shapes) {
    std::vector<Cell> row{c.problem.label(), c.name, std::string(to_string(c.problem.accum)), c.config_key,
                          c.config_source};
    if (!c.result || c.result->find(kSideDgtune) < 0) {
      ++not_measured;
      while (row.size() + 1 < t.columns.size()) row.push_back(std::monostate{});
      row.push_back(c.note.empty() ? std::string("not measured") : c.note);
      t.rows.push_back(std::move(row));
      continue;
    }
    const RoundsResult& r = *c.result;
    const int ours = r.find(kSideDgtune), def = r.find(kProviderCublasDefault), tuned = r.find(kProviderCublasTuned);
    const SideSummary& s = r.sides[size_t(ours)];
    auto median_of = [&](int side) -> Cell { return side < 0 ? Cell{} : num(r.sides[size_t(side)].all.median, 2); };
    row.push_back(num(s.all.median, 2));
    row.push_back(num(s.all.p10, 2));
    row.push_back(num(s.all.p90, 2));
    row.push_back(median_of(def));
    row.push_back(median_of(tuned));
    row.push_back(tuned < 0 ? Cell{} : num(r.sides[size_t(tuned)].all.p10, 2));
    row.push_back(tuned < 0 ? Cell{} : num(r.sides[size_t(tuned)].all.p90, 2));
    const auto vs_tuned = speedup(r, tuned, opts, false);
    const auto vs_default = speedup(r, def, opts, false);
    const auto vs_tuned_unflagged = speedup(r, tuned, opts, true);
    if (vs_tuned) {
      row.push_back(num(vs_tuned->speedup_x_over_y(), 3));
      row.push_back(num(vs_tuned->speedup_x_over_y_lo(), 3));
      row.push_back(num(vs_tuned->speedup_x_over_y_hi(), 3));
      row.push_back(std::string(stats::to_string(vs_tuned->verdict)));
      x_tuned.push_back(vs_tuned->speedup_x_over_y());
      ++counts[stats::to_string(vs_tuned->verdict)];
    } else {
      ++not_measured;
      for (int i = 0; i < 3; ++i) row.push_back(std::monostate{});
      row.push_back(std::string("no cuBLASLt-tuned side"));
    }
    if (vs_default) x_default.push_back(vs_default->speedup_x_over_y());
    row.push_back(vs_default ? num(vs_default->speedup_x_over_y(), 3) : Cell{});
    row.push_back(num(tflops_of(c.problem, s.all.median), 1));
    row.push_back(num(gbps_of(c.problem, s.all.median), 0));
    // The copy limit (compare --copy-limit): its median, and the fraction of it dgtune achieves, a ratio
    // of medians (the side is a bound, not a competitor: no paired interval).
    const int copy = r.find(kSideCopyLimit);
    const double copy_us = copy < 0 ? std::nan("") : r.sides[size_t(copy)].all.median;
    const double fraction = copy_us > 0 && s.all.median > 0 ? copy_us / s.all.median : std::nan("");
    if (std::isfinite(fraction)) copy_fractions.push_back(fraction);
    row.push_back(num(copy_us, 2));
    row.push_back(num(fraction, 3));
    row.push_back(num(s.median_clock_mhz, 0));
    row.push_back(int64_t(s.flagged));
    row.push_back(num(unflagged_clock(r, ours), 0));
    // Each side's median SM clock over all its samples (the probe right after each sample; 0 = unknown), so a
    // side that runs at a lower clock (at the power limit, the faster kernel) shows it.
    auto clock_of = [&](int side) -> Cell {
      if (side < 0 || !(r.sides[size_t(side)].median_clock_mhz > 0)) return Cell{};
      return num(r.sides[size_t(side)].median_clock_mhz, 0);
    };
    row.push_back(clock_of(ours));
    row.push_back(clock_of(tuned));
    row.push_back(clock_of(def));
    row.push_back(tuned < 0 ? Cell{} : num(tflops_of(c.problem, r.sides[size_t(tuned)].all.median), 1));
    row.push_back(s.unflagged ? num(s.unflagged->median, 2) : Cell{});
    row.push_back(vs_tuned_unflagged ? num(vs_tuned_unflagged->speedup_x_over_y(), 3) : Cell{});
    row.push_back(vs_tuned_unflagged ? Cell{std::string(stats::to_string(vs_tuned_unflagged->verdict))}
                                     : Cell{std::string("every round flagged")});
    row.push_back(int64_t(r.rounds));
    row.push_back(c.tuned_algo);
    row.push_back(c.note);
    t.rows.push_back(std::move(row));
  }
  std::vector<report::Table> tables{t};
  // Extra sides (compare --config KEY): every side after the standard three, each against cuBLASLt-tuned
  // and against the loader's choice, paired per round like the main table.
  report::Table x;
  x.title = "extra configs timed in the same rounds (speedup = other side's us / this config's us, paired per round)";
  x.columns = {{"shape", "shape", false},
               {"accum", "accum", false},
               {"config", "config", false},
               {"us", "us", true},
               {"p10_us", "p10", true},
               {"p90_us", "p90", true},
               {"tflops", "TFLOPS", true},
               {"clock_mhz", "clock MHz", true},
               {"flagged", "flagged", true},
               {"x_tuned", "x tuned", true},
               {"x_tuned_lo", "lo", true},
               {"x_tuned_hi", "hi", true},
               {"verdict", "verdict", false},
               {"x_dgtune", "x loader's choice", true},
               {"x_dgtune_lo", "lo", true},
               {"x_dgtune_hi", "hi", true},
               {"check", "check after rounds", false}};
  for (const CompareShape& c : shapes) {
    if (!c.result) continue;
    const RoundsResult& r = *c.result;
    const int ours = r.find(kSideDgtune), tuned = r.find(kProviderCublasTuned);
    for (size_t i = 0; i < r.sides.size(); ++i) {
      const std::string& label = r.sides[i].label;
      if (label == kSideDgtune || label == kProviderCublasTuned || label == kProviderCublasDefault ||
          label == kSideCopyLimit)
        continue;
      const SideSummary& s = r.sides[i];
      std::vector<Cell> row{c.problem.label(),
                            std::string(to_string(c.problem.accum)),
                            label,
                            num(s.all.median, 2),
                            num(s.all.p10, 2),
                            num(s.all.p90, 2),
                            num(tflops_of(c.problem, s.all.median), 1),
                            num(s.median_clock_mhz, 0),
                            int64_t(s.flagged)};
      auto against = [&](int y, bool with_verdict) {
        if (y < 0) {
          for (int k = 0; k < (with_verdict ? 4 : 3); ++k) row.push_back(std::monostate{});
          return;
        }
        const PairedTimes pt = r.paired(int(i), y, false);
        if (pt.x_us.empty()) {
          for (int k = 0; k < (with_verdict ? 4 : 3); ++k) row.push_back(std::monostate{});
          return;
        }
        const auto cmp = stats::compare_paired(pt.x_us, pt.y_us, opts);
        row.push_back(num(cmp.speedup_x_over_y(), 3));
        row.push_back(num(cmp.speedup_x_over_y_lo(), 3));
        row.push_back(num(cmp.speedup_x_over_y_hi(), 3));
        if (with_verdict) row.push_back(std::string(stats::to_string(cmp.verdict)));
      };
      against(tuned, true);
      against(ours, false);
      row.push_back(s.check ? Cell{std::string(s.check->ok ? "ok" : "FAILED")} : Cell{});
      x.rows.push_back(std::move(row));
    }
  }
  if (!x.rows.empty()) tables.push_back(std::move(x));
  tables.push_back(summary_table("summary (" + std::string(stats::to_string(opts.method)) + " interval, " +
                                     std::to_string(int(std::lround(opts.confidence * 100))) + "%, margin " +
                                     fmt_margin(opts.margin) + ")",
                                 x_tuned, x_default, counts, not_measured, "speedup vs cuBLASLt-tuned", true,
                                 copy_fractions));
  return tables;
}

RoundsResult rounds_from_stored(const StoredMeasurement& m) {
  RoundsResult r;
  r.protocol = m.protocol_json;
  r.rounds = m.rounds;
  r.reference_clock_mhz = m.reference_clock_mhz;
  r.clock_floor_mhz = m.clock_floor_mhz;
  int sides = 0;
  for (const StoredSide& s : m.sides) sides = std::max(sides, s.index + 1);
  r.labels.assign(size_t(sides), "");
  for (const StoredSide& s : m.sides) {
    // TuningDbReader::latest_measurements refuses such rows; a StoredMeasurement built elsewhere is checked too.
    if (s.index < 0) DGT_THROW(ErrorKind::kInvalid, "stored measurement {}: side index {} is negative", m.id, s.index);
    r.labels[size_t(s.index)] = s.label;
  }
  for (const StoredSample& x : m.samples) {
    if (x.side < 0 || x.side >= sides)
      DGT_THROW(ErrorKind::kInvalid, "stored measurement {}: sample of unknown side {}", m.id, x.side);
    r.samples.push_back(Sample{x.side, x.round, x.position, x.time_us, x.sm_clock_mhz, x.flagged});
  }
  summarise(r);
  for (const StoredSide& s : m.sides) r.sides[size_t(s.index)].check = s.check;
  return r;
}

StoredMeasurement stored_from_compare(const CompareShape& c, const std::string& protocol_name, int heuristic_count) {
  if (!c.result) DGT_THROW(ErrorKind::kInternal, "stored_from_compare: {} has no result", c.problem.label());
  const RoundsResult& r = *c.result;
  StoredMeasurement m;
  m.problem = c.problem;
  m.protocol_name = protocol_name;
  m.protocol_json = r.protocol;
  m.rounds = r.rounds;
  m.reference_clock_mhz = r.reference_clock_mhz;
  m.clock_floor_mhz = r.clock_floor_mhz;
  for (int i = 0; i < r.side_count(); ++i) {
    StoredSide s;
    s.index = i;
    s.label = r.labels[size_t(i)];
    if (s.label == kSideDgtune) {
      s.kind = "config";
      s.config_key = c.config_key;
      s.source = c.config_source;
    } else {
      // cuBLASLt or the copy limit: not one of our configs (the schema knows config and provider only).
      s.kind = "provider";
      s.source = s.label;
      s.algo = s.label == kProviderCublasTuned ? c.tuned_algo : "";
      s.heuristic_count = s.label == kSideCopyLimit ? 0 : heuristic_count;
    }
    if (size_t(i) < r.sides.size()) s.check = r.sides[size_t(i)].check;
    m.sides.push_back(std::move(s));
  }
  for (const Sample& x : r.samples)
    m.samples.push_back(StoredSample{x.side, x.round, x.position, x.time_us, x.sm_clock_mhz, x.flagged});
  return m;
}

std::vector<report::Table> between_tables(const std::vector<StoredMeasurement>& a,
                                          const std::vector<StoredMeasurement>& b, const stats::PairedOptions& opts,
                                          const std::string& title) {
  std::map<std::string, const StoredMeasurement*> by_key_b;
  for (const StoredMeasurement& m : b) by_key_b[shape_key(m)] = &m;
  std::set<std::string> matched;
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"protocol", "protocol", false},
               {"config_a", "A config", false},
               {"config_b", "B config", false},
               {"a_dgtune_us", "A dgtune us", true},
               {"b_dgtune_us", "B dgtune us", true},
               {"a_cublas_tuned_us", "A cuBLASLt tuned us", true},
               {"b_cublas_tuned_us", "B cuBLASLt tuned us", true},
               {"a_x_tuned", "A x tuned", true},
               {"a_verdict", "A verdict", false},
               {"b_x_tuned", "B x tuned", true},
               {"b_verdict", "B verdict", false},
               {"change", "B/A x tuned", true},
               {"change_lo", "lo", true},
               {"change_hi", "hi", true},
               {"verdict", "B vs A", false},
               {"b_tflops", "B TFLOPS", true},
               {"a_clock_mhz", "A clock MHz", true},
               {"b_clock_mhz", "B clock MHz", true},
               {"note", "note", false}};
  std::vector<double> changes;
  std::map<std::string, int> counts;
  int not_measured = 0;
  const double log_margin = std::log1p(opts.margin);
  for (const StoredMeasurement& ma : a) {
    auto it = by_key_b.find(shape_key(ma));
    if (it == by_key_b.end()) continue;
    matched.insert(shape_key(ma));
    const StoredMeasurement& mb = *it->second;
    const RoundsResult ra = rounds_from_stored(ma), rb = rounds_from_stored(mb);
    auto config_of = [](const StoredMeasurement& m) {
      for (const StoredSide& s : m.sides)
        if (s.label == kSideDgtune) return s.config_key + " (" + s.source + ")";
      return std::string();
    };
    std::vector<Cell> row{ma.problem.label(), ma.protocol_name, config_of(ma), config_of(mb)};
    auto median = [](const RoundsResult& r, const char* label) -> Cell {
      const int i = r.find(label);
      return i < 0 || r.sides[size_t(i)].samples == 0 ? Cell{} : num(r.sides[size_t(i)].all.median, 2);  // no samples: no time
    };
    row.push_back(median(ra, kSideDgtune));
    row.push_back(median(rb, kSideDgtune));
    row.push_back(median(ra, kProviderCublasTuned));
    row.push_back(median(rb, kProviderCublasTuned));
    const auto sa = speedup(ra, ra.find(kProviderCublasTuned), opts, false);
    const auto sb = speedup(rb, rb.find(kProviderCublasTuned), opts, false);
    row.push_back(sa ? num(sa->speedup_x_over_y(), 3) : Cell{});
    row.push_back(sa ? Cell{std::string(stats::to_string(sa->verdict))} : Cell{});
    row.push_back(sb ? num(sb->speedup_x_over_y(), 3) : Cell{});
    row.push_back(sb ? Cell{std::string(stats::to_string(sb->verdict))} : Cell{});
    if (sa && sb) {
      const std::vector<double> la = log_ratios_vs_tuned(ra), lb = log_ratios_vs_tuned(rb);
      // Shift of ln(dgtune/tuned) from A to B; a negative shift = B's dgtune gained on cuBLASLt-tuned.
      const double shift = stats::hodges_lehmann_shift(la, lb);
      const stats::Interval iv = stats::shift_interval(la, lb, opts.confidence);
      const stats::Verdict v = verdict_of(iv, log_margin);
      row.push_back(num(std::exp(-shift), 3));
      row.push_back(num(std::isfinite(iv.hi) ? std::exp(-iv.hi) : 0.0, 3));
      row.push_back(std::isfinite(iv.lo) ? num(std::exp(-iv.lo), 3) : Cell{});
      row.push_back(std::string(stats::to_string(v)));
      changes.push_back(std::exp(-shift));
      ++counts[stats::to_string(v)];
      const int ib = rb.find(kSideDgtune);
      row.push_back(num(tflops_of(mb.problem, rb.sides[size_t(ib)].all.median), 1));
      row.push_back(num(ra.sides[size_t(ra.find(kSideDgtune))].median_clock_mhz, 0));
      row.push_back(num(rb.sides[size_t(ib)].median_clock_mhz, 0));
      row.push_back(std::string());
    } else {
      ++not_measured;
      while (row.size() + 1 < t.columns.size()) row.push_back(std::monostate{});
      row.push_back(std::string("a side is missing in one DB"));
    }
    t.rows.push_back(std::move(row));
  }
  report::Table only;
  only.title = "stored in one DB only (not compared)";
  only.columns = {{"shape", "shape", false}, {"protocol", "protocol", false}, {"db", "db", false}};
  for (const StoredMeasurement& m : a)
    if (!matched.count(shape_key(m))) only.rows.push_back({m.problem.label(), m.protocol_name, std::string("A")});
  for (const StoredMeasurement& m : b)
    if (!matched.count(shape_key(m))) only.rows.push_back({m.problem.label(), m.protocol_name, std::string("B")});
  return {t,
          summary_table("summary: B vs A, change of dgtune's speedup over cuBLASLt-tuned (Moses interval, " +
                            std::to_string(int(std::lround(opts.confidence * 100))) + "%, margin " +
                            fmt_margin(opts.margin) + ")",
                        changes, {}, counts, not_measured, "B/A x tuned", false),
          only};
}

}  // namespace dgt
