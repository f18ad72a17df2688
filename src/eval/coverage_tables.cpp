#include "eval/coverage_tables.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "records/records.hpp"

namespace dgt {

using report::Cell;
using report::Number;

namespace {

Cell num(double v, int precision) {
  if (!std::isfinite(v)) return std::monostate{};
  return Number{v, precision};
}

Cell opt(const std::optional<double>& v, int precision) { return v ? num(*v, precision) : Cell{}; }

/// A finite value, or nothing (an interval end at 0 or infinity when too few rounds bound it stays a number only
/// when finite, as compare prints it).
std::optional<double> finite(double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; }

/// Speedup of side x over side y (y us / x us, paired per round) with its interval; nothing when a side is missing or
/// no round holds both.
std::optional<stats::PairedComparison> speedup(const RoundsResult& r, int x, int y, const stats::PairedOptions& opts) {
  if (x < 0 || y < 0) return std::nullopt;
  const PairedTimes t = r.paired(x, y);
  if (t.x_us.empty()) return std::nullopt;
  return stats::compare_paired(t.x_us, t.y_us, opts);
}

CoverageRatios ratios_of(const RoundsResult& r, const stats::PairedOptions& opts) {
  const int dispatch = r.find(kSideDispatch), kernel = r.find(kSideDgtune), tuned = r.find(kProviderCublasTuned),
            def = r.find(kProviderCublasDefault);
  CoverageRatios x;
  if (const auto s = speedup(r, dispatch, tuned, opts)) {
    x.x_dispatch = finite(s->speedup_x_over_y());
    x.x_lo = finite(s->speedup_x_over_y_lo());
    x.x_hi = finite(s->speedup_x_over_y_hi());
  }
  if (const auto s = speedup(r, dispatch, def, opts)) x.x_dispatch_default = finite(s->speedup_x_over_y());
  if (const auto s = speedup(r, kernel, tuned, opts)) {
    x.x_kernel = finite(s->speedup_x_over_y());
    x.x_kernel_lo = finite(s->speedup_x_over_y_lo());
    x.x_kernel_hi = finite(s->speedup_x_over_y_hi());
  }
  return x;
}

}  // namespace

std::vector<report::Table> coverage_tables(const std::vector<CoverageShape>& shapes, const stats::PairedOptions& opts,
                                           const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"shape", "shape", false},
               {"n", "N", true},
               {"k", "K", true},
               {"m", "M", true},
               {"scale", "scale", false},
               {"accum", "accum", false},
               {"d", "D", false},
               {"bias", "bias", false},
               {"act", "act", false},
               {"protocol", "protocol", false},
               {"model", "model", false},
               {"grid_seed", "grid seed", true},
               {"nk_tuned", "N,K tuned", false},
               {"source", "source", false},
               {"backend", "backend", false},
               {"config", "dgtune config", false},
               {"cublaslt_algo", "dispatched cuBLASLt algo", false},
               {"probe", "ladder probe", false},
               {"cublas_tuned_algo", "cuBLASLt tuned algo", false},
               {"cublas_default_algo", "cuBLASLt default algo", false},
               {"dispatch_us", "dispatch us", true},
               {"kernel_us", "kernel us", true},
               {"cublas_tuned_us", "cuBLASLt tuned us", true},
               {"cublas_default_us", "cuBLASLt default us", true},
               {"x_dispatch", "x dispatch", true},
               {"x_lo", "lo", true},
               {"x_hi", "hi", true},
               {"x_dispatch_default", "x dispatch vs default", true},
               {"x_kernel", "x kernel", true},
               {"x_kernel_lo", "lo", true},
               {"x_kernel_hi", "hi", true},
               {"clock_mhz", "clock MHz", true},
               {"flagged", "flagged", true},
               {"rounds", "rounds", true},
               {"note", "note", false}};
  std::vector<CoverageSummaryInput> summary;
  for (const CoverageShape& c : shapes) {
    const Problem& p = c.problem;
    std::vector<Cell> row{fmt::format("{}x{}x{}", p.m, p.n, p.k),
                          p.n,
                          p.k,
                          p.m,
                          std::string(to_string(p.scale)),
                          std::string(to_string(p.accum)),
                          std::string(to_string(p.d)),
                          std::string(to_string(p.bias)),
                          std::string(to_string(p.act)),
                          c.protocol,
                          c.model,
                          c.grid_seed,
                          c.source.empty() ? Cell{} : Cell{c.source != "default"},  // empty: the loader failed
                          c.source,
                          c.backend,
                          c.config_key,
                          c.cublaslt_algo,
                          c.probe,
                          c.tuned_algo,
                          c.default_algo};
    CoverageSummaryInput in{p.n,
                            p.k,
                            to_string(p.scale),
                            to_string(p.accum),
                            to_string(p.d),
                            to_string(p.bias),
                            to_string(p.act),
                            c.model,
                            c.protocol,
                            c.backend,
                            {}};
    std::string note = c.note;
    if (c.result) {
      const RoundsResult& r = *c.result;
      auto median_of = [&](const char* label) -> Cell {
        const int i = r.find(label);
        return i < 0 ? Cell{} : num(r.sides[size_t(i)].all.median, 2);
      };
      in.x = ratios_of(r, opts);
      const int dispatch = r.find(kSideDispatch);
      row.push_back(median_of(kSideDispatch));
      row.push_back(median_of(kSideDgtune));
      row.push_back(median_of(kProviderCublasTuned));
      row.push_back(median_of(kProviderCublasDefault));
      row.push_back(opt(in.x.x_dispatch, 3));
      row.push_back(opt(in.x.x_lo, 3));
      row.push_back(opt(in.x.x_hi, 3));
      row.push_back(opt(in.x.x_dispatch_default, 3));
      row.push_back(opt(in.x.x_kernel, 3));
      row.push_back(opt(in.x.x_kernel_lo, 3));
      row.push_back(opt(in.x.x_kernel_hi, 3));
      row.push_back(dispatch < 0 ? Cell{} : num(r.sides[size_t(dispatch)].median_clock_mhz, 0));
      row.push_back(dispatch < 0 ? Cell{} : Cell{int64_t(r.sides[size_t(dispatch)].flagged)});
      row.push_back(int64_t(r.rounds));
      if (note.empty() && !in.x.x_dispatch) note = "no ratio: a side is missing";
    } else {
      while (row.size() + 1 < t.columns.size()) row.push_back(std::monostate{});
      if (note.empty()) note = "not measured";
    }
    row.push_back(note);
    t.rows.push_back(std::move(row));
    summary.push_back(std::move(in));
  }
  return {t, coverage_summary(
                 summary, fmt::format("per problem and protocol: x = cuBLASLt-tuned us / us (dispatch: dgt::Gemm::run; "
                                      "kernel: the dgtune kernel of its choice); slower = the {}% interval lies "
                                      "below 1; shares over the rows with a ratio",
                                      int(std::lround(opts.confidence * 100))))};
}

report::Table coverage_summary(const std::vector<CoverageSummaryInput>& rows, const std::string& title) {
  report::Table t;
  t.title = title;
  t.columns = {{"n", "N", true},
               {"k", "K", true},
               {"scale", "scale", false},
               {"accum", "accum", false},
               {"d", "D", false},
               {"bias", "bias", false},
               {"act", "act", false},
               {"model", "model", false},
               {"protocol", "protocol", false},
               {"grid_m", "grid M", true},
               {"count", "with ratio", true},
               {"geomean_x_dispatch", "geomean x dispatch", true},
               {"min_x_dispatch", "min", true},
               {"share_slower", "share slower", true},
               {"share_below_1", "share x < 1", true},
               {"geomean_x_dispatch_default", "geomean x vs default", true},
               {"geomean_x_kernel", "geomean x kernel", true},
               {"min_x_kernel", "min", true},
               {"share_kernel_slower", "share slower", true},
               {"share_kernel_below_1", "share x < 1", true},
               {"cublaslt_dispatched", "cuBLASLt dispatched", true}};
  using Key = std::tuple<int64_t, int64_t, std::string, std::string, std::string, std::string, std::string, std::string,
                         std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const CoverageSummaryInput*>> groups;
  for (const CoverageSummaryInput& r : rows) {
    const Key key{r.n, r.k, r.scale, r.accum, r.d, r.bias, r.act, r.model, r.protocol};
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(&r);
  }
  for (const Key& key : order) {
    const auto& g = groups.at(key);
    std::vector<double> dispatch, dispatch_default, kernel;
    int64_t slower = 0, below = 0, kernel_slower = 0, kernel_below = 0, lt = 0;
    for (const CoverageSummaryInput* r : g) {
      lt += r->backend == "cublaslt";
      if (r->x.x_dispatch) {
        dispatch.push_back(*r->x.x_dispatch);
        slower += r->x.x_hi && *r->x.x_hi < 1;
        below += *r->x.x_dispatch < 1;
      }
      if (r->x.x_dispatch_default) dispatch_default.push_back(*r->x.x_dispatch_default);
      if (r->x.x_kernel) {
        kernel.push_back(*r->x.x_kernel);
        kernel_slower += r->x.x_kernel_hi && *r->x.x_kernel_hi < 1;
        kernel_below += *r->x.x_kernel < 1;
      }
    }
    // Ratios are positive and finite (ratios_of keeps only finite ones; times are > 0), as geometric_mean needs.
    auto geo = [](const std::vector<double>& v) -> Cell {
      return v.empty() ? Cell{} : Cell{Number{stats::geometric_mean(v), 3}};
    };
    auto lowest = [](const std::vector<double>& v) -> Cell {
      return v.empty() ? Cell{} : Cell{Number{*std::min_element(v.begin(), v.end()), 3}};
    };
    auto share = [](int64_t part, const std::vector<double>& of) -> Cell {
      return of.empty() ? Cell{} : Cell{Number{double(part) / double(of.size()), 3}};
    };
    const auto& [n, k, scale, accum, d, bias, act, model, protocol] = key;
    t.rows.push_back({n,
                      k,
                      scale,
                      accum,
                      d,
                      bias,
                      act,
                      model,
                      protocol,
                      int64_t(g.size()),
                      int64_t(dispatch.size()),
                      geo(dispatch),
                      lowest(dispatch),
                      share(slower, dispatch),
                      share(below, dispatch),
                      geo(dispatch_default),
                      geo(kernel),
                      lowest(kernel),
                      share(kernel_slower, kernel),
                      share(kernel_below, kernel),
                      lt});
  }
  return t;
}

}  // namespace dgt
