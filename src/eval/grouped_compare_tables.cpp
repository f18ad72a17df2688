#include "eval/grouped_compare_tables.hpp"

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
/// or, under isolated-v1 (sides not run together), the ratio of the medians and no interval.
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

std::vector<report::Table> grouped_compare_tables(const std::vector<GroupedCompareShape>& shapes,
                                                  const stats::PairedOptions& opts, const std::string& title) {
  bool any_vs = false;
  for (const GroupedCompareShape& c : shapes) any_vs = any_vs || !c.vs_config_key.empty();
  report::Table t;
  t.title = title;
  t.columns = {{"problem", "problem", false},     {"kind", "kind", false},
               {"groups", "G", true},             {"rows", "m_per_group / masked_m", false},
               {"m_max", "M_max", true},          {"expected_m", "expected_m", true},
               {"real_rows", "sum m_g", true},    {"n", "N", true},
               {"k", "K", true},                  {"scale", "scale", false},
               {"accum", "accum", false},         {"config", "grouped config", false},
               {"us", "grouped us", true},        {"tflops", "TFLOPS", true},
               {"loop_us", "loop us", true},      {"x_loop", "x loop", true},
               {"x_loop_lo", "lo", true},         {"x_loop_hi", "hi", true},
               {"dense_config", "dense config", false},
               {"dense_us", "dense us", true},    {"x_dense", "x dense", true},
               {"x_dense_lo", "lo", true},        {"x_dense_hi", "hi", true}};
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
  for (const GroupedCompareShape& c : shapes) {
    const GroupedProblem& g = c.problem;
    const RoundsResult& r = c.result;
    const bool isolated = c.protocol_name.rfind("isolated", 0) == 0;
    const SideSummary& gs = r.sides.at(kGroupedSideGrouped);
    const Ratio xl = ratio_of(r, kGroupedSideLoop, isolated, opts), xd = ratio_of(r, kGroupedSideDense, isolated, opts);
    // The grouped-vs side: the fourth side of the engine, when this shape has one.
    const bool has_vs = !c.vs_config_key.empty() && r.side_count() > kGroupedSideVs;
    const Ratio xv = has_vs ? ratio_of(r, kGroupedSideVs, isolated, opts) : Ratio{};
    const double us = gs.all.median;
    auto opt_num = [](double v, bool have, int precision) -> report::Cell {
      return have ? report::Cell(report::Number{v, precision}) : report::Cell();
    };
    const bool masked = g.kind == GroupKind::kMasked;
    std::vector<report::Cell> row{
        g.label(), std::string(to_string(g.kind)), int64_t(g.groups), join(g.rows),
        masked ? report::Cell(g.m_max) : report::Cell(), masked ? report::Cell(g.expected_m) : report::Cell(),
        g.real_rows(), g.n, g.k, std::string(to_string(g.scale)), std::string(to_string(g.accum)), c.config_key,
        num(us, 2), us > 0 ? num(g.flops() / (us * 1e-6) / 1e12, 1) : report::Cell(),
        num(r.sides.at(kGroupedSideLoop).all.median, 2), num(xl.x, 3), opt_num(xl.lo, xl.paired, 3),
        opt_num(xl.hi, xl.paired, 3), c.dense_config_key, num(r.sides.at(kGroupedSideDense).all.median, 2),
        num(xd.x, 3), opt_num(xd.lo, xd.paired, 3), opt_num(xd.hi, xd.paired, 3)};
    const SideSummary* vs = has_vs ? &r.sides.at(kGroupedSideVs) : nullptr;
    if (any_vs)
      row.insert(row.end(), {vs ? report::Cell(c.vs_config_key) : report::Cell(),
                             vs ? num(vs->all.median, 2) : report::Cell(), opt_num(xv.x, has_vs, 3),
                             opt_num(xv.lo, xv.paired, 3), opt_num(xv.hi, xv.paired, 3)});
    row.insert(row.end(), {num(gs.median_clock_mhz, 0), num(r.sides.at(kGroupedSideLoop).median_clock_mhz, 0),
                           num(r.sides.at(kGroupedSideDense).median_clock_mhz, 0)});
    if (any_vs) row.push_back(vs ? num(vs->median_clock_mhz, 0) : report::Cell());
    row.insert(row.end(), {check_text(gs.check), check_text(r.sides.at(kGroupedSideLoop).check)});
    if (any_vs) row.push_back(vs ? report::Cell(check_text(vs->check)) : report::Cell());
    row.insert(row.end(), {int64_t(c.loop_calls), int64_t(c.loop_padded), c.loop_algos, c.protocol_name,
                           int64_t(r.rounds)});
    t.rows.push_back(std::move(row));
  }
  return {t};
}

}  // namespace dgt
