#include "eval/grouped_compare_tables.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "records/records.hpp"

namespace dgt {

namespace {

report::Cell num(double v, int precision) { return report::Number{v, precision}; }

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

/// Speedup of the grouped kernel over side `y` (y us / grouped us): paired rounds' median ratio with its interval,
/// or, under isolated-v1/v2 (sides not run together), the ratio of the medians and no interval.
struct Ratio {
  double x = 0, lo = 0, hi = 0;
  bool paired = false;
};

Ratio ratio_of(const RoundsResult& r, int y, bool isolated, const stats::PairedOptions& opts) {
  Ratio out;
  const double g = r.sides[kGroupedSideGrouped].all.median, o = r.sides[size_t(y)].all.median;
  if (isolated) {
    out.x = g > 0 ? o / g : 0;
    return out;
  }
  const PairedTimes t = r.paired(kGroupedSideGrouped, y);
  if (t.x_us.empty()) return out;
  const stats::PairedComparison c = stats::compare_paired(t.x_us, t.y_us, opts);
  out.x = c.speedup_x_over_y();
  out.lo = c.speedup_x_over_y_lo();
  out.hi = c.speedup_x_over_y_hi();
  out.paired = true;
  return out;
}

std::string check_text(const std::optional<Verification>& v) {
  if (!v) return "not checked";
  if (v->ok) return "ok";
  return fmt::format("FAILED: max_rel_err {:.3g}, diff {:.3g}, {} NaN/Inf, {} rows' elements written that must keep the "
                     "sentinel",
                     v->max_rel_err, v->diff, v->nan_count, v->pad_touched);
}

}  // namespace

bool GroupedCompareShape::verified() const {
  if (!measured()) return false;
  const std::optional<Verification>& check = result.sides.at(kGroupedSideGrouped).check;
  return check && check->ok;
}

std::string GroupedCompareShape::status() const {
  if (!measured()) return "error";
  if (!verified()) return "verify_failed";
  const std::optional<Verification>& loop = result.sides.at(kGroupedSideLoop).check;
  return loop && !loop->ok ? "error" : "ok";
}

std::vector<report::Table> grouped_compare_tables(const std::vector<GroupedCompareShape>& shapes,
                                                  const stats::PairedOptions& opts, const std::string& title) {
  bool any_vs = false, with_choice = false;
  for (const GroupedCompareShape& c : shapes) {
    any_vs = any_vs || !c.vs_config_key.empty();
    with_choice = with_choice || !c.config_source.empty();
  }
  report::Table t;
  t.title = title;
  t.columns = {{"problem", "problem", false}};
  // A shapes file's lines say how the loader chose their config; `compare --grouped` (one explicit config) keeps the
  // table it always had.
  if (with_choice) t.columns.push_back({"name", "name", false});
  t.columns.insert(t.columns.end(), {{"kind", "kind", false},
                                     {"groups", "G", true},
                                     {"rows", "m_per_group / masked_m", false},
                                     {"m_max", "M_max", true},
                                     {"expected_m", "expected_m", true},
                                     {"real_rows", "sum m_g", true},
                                     {"n", "N", true},
                                     {"k", "K", true},
                                     {"scale", "scale", false},
                                     {"accum", "accum", false},
                                     {"config", "grouped config", false}});
  if (with_choice)
    t.columns.insert(t.columns.end(), {{"config_source", "source", false}, {"tuned_key", "tuned key", false}});
  t.columns.insert(t.columns.end(), {{"us", "grouped us", true},
                                     {"tflops", "TFLOPS", true},
                                     {"loop_us", "loop us", true},
                                     {"x_loop", "x loop", true},
                                     {"x_loop_lo", "lo", true},
                                     {"x_loop_hi", "hi", true},
                                     {"dense_config", "dense config", false},
                                     {"dense_us", "dense us", true},
                                     {"x_dense", "x dense", true},
                                     {"x_dense_lo", "lo", true},
                                     {"x_dense_hi", "hi", true}});
  // The grouped-vs columns only when a shape has that side: without --vs-config the table is the three-side table.
  if (any_vs)
    t.columns.insert(t.columns.end(), {{"vs_config", "vs config", false},
                                       {"vs_us", "vs us", true},
                                       {"x_vs", "x vs", true},
                                       {"x_vs_lo", "lo", true},
                                       {"x_vs_hi", "hi", true}});
  t.columns.insert(t.columns.end(), {{"grouped_sm_clock_mhz_median", "grouped MHz", true},
                                     {"loop_sm_clock_mhz_median", "loop MHz", true},
                                     {"dense_sm_clock_mhz_median", "dense MHz", true}});
  if (any_vs) t.columns.push_back({"vs_sm_clock_mhz_median", "vs MHz", true});
  t.columns.insert(t.columns.end(), {{"check", "grouped check", false}, {"loop_check", "loop check", false}});
  if (any_vs) t.columns.push_back({"vs_check", "vs check", false});
  t.columns.insert(t.columns.end(), {{"loop_calls", "loop calls", true},
                                     {"loop_padded", "loop padded", true},
                                     {"loop_algos", "loop algorithms", false},
                                     {"protocol", "protocol", false},
                                     {"rounds", "rounds", true}});
  if (with_choice) t.columns.push_back({"note", "note", false});
  const report::Cell none;
  for (const GroupedCompareShape& c : shapes) {
    const GroupedProblem& g = c.problem;
    const RoundsResult& r = c.result;
    const bool measured = c.measured();
    const bool isolated = c.protocol_name.rfind("isolated", 0) == 0;
    const bool has_dense = measured && r.side_count() > kGroupedSideDense;
    // The grouped-vs side: the fourth side of the engine, when this shape has one.
    const bool has_vs = measured && !c.vs_config_key.empty() && r.side_count() > kGroupedSideVs;
    const Ratio xl = measured ? ratio_of(r, kGroupedSideLoop, isolated, opts) : Ratio{};
    const Ratio xd = has_dense ? ratio_of(r, kGroupedSideDense, isolated, opts) : Ratio{};
    const Ratio xv = has_vs ? ratio_of(r, kGroupedSideVs, isolated, opts) : Ratio{};
    const SideSummary* gs = measured ? &r.sides.at(kGroupedSideGrouped) : nullptr;
    const SideSummary* ls = measured ? &r.sides.at(kGroupedSideLoop) : nullptr;
    const SideSummary* ds = has_dense ? &r.sides.at(kGroupedSideDense) : nullptr;
    const SideSummary* vs = has_vs ? &r.sides.at(kGroupedSideVs) : nullptr;
    const double us = gs ? gs->all.median : 0;
    auto opt_num = [](double v, bool have, int precision) -> report::Cell {
      return have ? report::Cell(report::Number{v, precision}) : report::Cell();
    };
    auto median = [&](const SideSummary* side) { return side ? num(side->all.median, 2) : none; };
    auto clock = [&](const SideSummary* side) { return side ? num(side->median_clock_mhz, 0) : none; };
    auto checked = [&](const SideSummary* side) { return side ? report::Cell(check_text(side->check)) : none; };
    const bool masked = g.kind == GroupKind::kMasked;
    std::vector<report::Cell> row{g.label()};
    if (with_choice) row.push_back(c.name);
    row.insert(row.end(), {std::string(to_string(g.kind)), int64_t(g.groups), join(g.rows),
                           masked ? report::Cell(g.m_max) : none, masked ? report::Cell(g.expected_m) : none,
                           g.real_rows(), g.n, g.k, std::string(to_string(g.scale)), std::string(to_string(g.accum)),
                           c.config_key});
    if (with_choice) row.insert(row.end(), {c.config_source, c.tuned_key});
    row.insert(row.end(), {median(gs), us > 0 ? num(g.flops() / (us * 1e-6) / 1e12, 1) : none, median(ls),
                           opt_num(xl.x, measured, 3), opt_num(xl.lo, xl.paired, 3), opt_num(xl.hi, xl.paired, 3),
                           c.dense_config_key.empty() ? none : report::Cell(c.dense_config_key), median(ds),
                           opt_num(xd.x, has_dense, 3), opt_num(xd.lo, xd.paired, 3), opt_num(xd.hi, xd.paired, 3)});
    if (any_vs)
      row.insert(row.end(), {vs ? report::Cell(c.vs_config_key) : none, median(vs), opt_num(xv.x, has_vs, 3),
                             opt_num(xv.lo, xv.paired, 3), opt_num(xv.hi, xv.paired, 3)});
    row.insert(row.end(), {clock(gs), clock(ls), clock(ds)});
    if (any_vs) row.push_back(clock(vs));
    row.insert(row.end(), {checked(gs), checked(ls)});
    if (any_vs) row.push_back(checked(vs));
    row.insert(row.end(), {int64_t(c.loop_calls), int64_t(c.loop_padded), c.loop_algos, c.protocol_name,
                           measured ? report::Cell(int64_t(r.rounds)) : none});
    if (with_choice) row.push_back(c.note);
    t.rows.push_back(std::move(row));
  }
  return {t};
}

report::Table grouped_summary_table(const std::vector<GroupedCompareShape>& shapes, const stats::PairedOptions& opts) {
  report::Table t;
  t.title = "grouped lines: summary (x_loop = per-group cuBLASLt loop us / grouped us, above 1: the grouped kernel "
            "faster; TFLOPS over real rows; lines not measured or not verified count in neither)";
  t.columns = {{"what", "what", false}, {"value", "value", true}};
  int verified = 0;
  std::vector<double> masked_x;
  for (const GroupedCompareShape& c : shapes) {
    if (!c.verified()) continue;
    ++verified;
    if (c.problem.kind != GroupKind::kMasked) continue;
    const bool isolated = c.protocol_name.rfind("isolated", 0) == 0;
    const double x = ratio_of(c.result, kGroupedSideLoop, isolated, opts).x;
    if (x > 0) masked_x.push_back(x);
  }
  t.rows.push_back({std::string("grouped lines measured and verified"), int64_t(verified)});
  t.rows.push_back({std::string("grouped lines not measured or not verified"), int64_t(shapes.size()) - verified});
  const bool any_masked = !masked_x.empty();
  t.rows.push_back({std::string("geomean x_loop, masked lines"),
                    any_masked ? num(stats::geometric_mean(masked_x), 3) : report::Cell()});
  t.rows.push_back({std::string("min x_loop, masked lines"),
                    any_masked ? num(*std::min_element(masked_x.begin(), masked_x.end()), 3) : report::Cell()});
  t.rows.push_back({std::string("masked lines in the geomean"), int64_t(masked_x.size())});
  // Contiguous lines by family (G, N, K, scale, accum), families in the order of their first line, lines in file
  // order: the TFLOPS at each total M, so a point between the tuned ones is read beside them.
  std::vector<std::string> families;
  std::map<std::string, std::vector<const GroupedCompareShape*>> by_family;
  for (const GroupedCompareShape& c : shapes) {
    if (!c.verified() || c.problem.kind != GroupKind::kContiguous) continue;
    const GroupedProblem& g = c.problem;
    const std::string family = fmt::format("contiguous G{} N{} K{} {} {}", g.groups, g.n, g.k, to_string(g.scale),
                                           to_string(g.accum));
    auto [it, fresh] = by_family.try_emplace(family);
    if (fresh) families.push_back(family);
    it->second.push_back(&c);
  }
  for (const std::string& family : families)
    for (const GroupedCompareShape* c : by_family[family]) {
      const double us = c->result.sides.at(kGroupedSideGrouped).all.median;
      t.rows.push_back({fmt::format("TFLOPS {} M_sum {} ({})", family, c->problem.total_rows(),
                                    c->config_source.empty() ? "explicit" : c->config_source),
                        us > 0 ? num(c->problem.flops() / (us * 1e-6) / 1e12, 1) : report::Cell()});
    }
  return t;
}

}  // namespace dgt
