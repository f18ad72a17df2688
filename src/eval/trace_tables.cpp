#include "eval/trace_tables.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "stats/stats.hpp"

namespace dgt {

namespace {

report::Cell us(double ns) { return report::Number{ns / 1000.0, 2}; }


}  // namespace

std::vector<report::Table> trace_tables(const KernelTrace& t) {
  const int ctas = t.traced_ctas;
  unsigned long long t0 = ~0ull, t_end = 0;
  for (int b = 0; b < ctas; ++b)
    if (t.ns(b, 0)) t0 = std::min(t0, t.ns(b, 0)), t_end = std::max(t_end, t.ns(b, 7));
  if (t0 == ~0ull) DGT_THROW(ErrorKind::kInternal, "the traced launch recorded no CTA");

  // When each point was reached, from the first CTA's start (globaltimer, all SMs on one clock).
  report::Table when;
  when.title = fmt::format("dgtune trace {} {} on {} ({} L2, grid {} CTAs{}, output {})", t.problem.label(),
                           t.config_key, t.device_name, t.cold_l2 ? "cold" : "warm", t.grid,
                           t.grid > kTraceMaxCtas ? fmt::format(", first {} traced", kTraceMaxCtas) : "",
                           t.verified ? "verified" : "WRONG");
  when.columns = {{"point", "point", false}, {"ctas", "CTAs"}, {"min_us", "min us"}, {"median_us", "median us"},
                  {"max_us", "max us"}};
  for (int i = 0; i < kTracePoints; ++i) {
    std::vector<double> v_ns;
    for (int b = 0; b < ctas; ++b)
      if (t.ns(b, i)) v_ns.push_back(double(t.ns(b, i) - t0));
    if (v_ns.empty()) {
      when.rows.push_back({std::string(kTracePointNames[i]), int64_t{0}, {}, {}, {}});
      continue;
    }
    when.rows.push_back({std::string(kTracePointNames[i]), int64_t(v_ns.size()),
                         us(*std::min_element(v_ns.begin(), v_ns.end())), us(stats::median(v_ns)),
                         us(*std::max_element(v_ns.begin(), v_ns.end()))});
  }

  // Phases inside each CTA from its own cycle counter (finer than globaltimer), in cycles and in us at the
  // SM clock the CTA ran at (its cycles over its nanoseconds from start to end).
  struct Phase {
    const char* name;
    int from, to;
  };
  // The producer issues the first unit's first k-blocks before its setmaxnreg.dec (kernels/gemm/producer.cuh),
  // so the finer start points run: setup, first unit, first empty slot (no wait), first TMA issued, registers.
  const Phase phases[] = {{"setup (barriers, sync)", 0, 1},       {"setup to first TMA issue", 1, 2},
                          {"  setup to first unit computed", 1, 9}, {"  to first empty slot", 9, 10},
                          {"  to first TMA issued (early k-blocks)", 10, 2},
                          {"  to producer registers released", 2, 8},
                          {"setup to consumer registers granted", 1, 11},
                          {"first TMA issue to stage full", 2, 3}, {"mainloop (first full to last k-block)", 3, 4},
                          {"split-K reduction", 4, 5},            {"epilogue (to stores issued)", 5, 6},
                          {"stores issued to end (the CTA's later units too)", 6, 7},
                          {"whole CTA (start to end)", 0, 7}};
  std::vector<double> ghz;
  for (int b = 0; b < ctas; ++b)
    if (t.ns(b, 0) && t.ns(b, 7) > t.ns(b, 0))
      ghz.push_back(double(t.cycles(b, 7) - t.cycles(b, 0)) / double(t.ns(b, 7) - t.ns(b, 0)));
  const double clock_ghz = stats::median_or_zero(ghz);
  report::Table phase;
  phase.title = fmt::format("phases per CTA (%clock64; us at the median SM clock of the CTAs, {:.0f} MHz); kernel span "
                            "{:.2f} us from the first CTA start to the last CTA end",
                            clock_ghz * 1000, double(t_end - t0) / 1000);
  phase.columns = {{"phase", "phase", false}, {"ctas", "CTAs"}, {"median_cycles", "median cycles"},
                   {"max_cycles", "max cycles"}, {"median_us", "median us"}, {"max_us", "max us"}};
  for (const Phase& ph : phases) {
    std::vector<double> d;
    for (int b = 0; b < ctas; ++b) {
      int from = ph.from;
      // A CTA that is not the last split records no reduction point's successors: skip what it lacks;
      // without split-K "reduced" is never recorded, so the epilogue starts at "mainloop done".
      if (from == 5 && !t.cycles(b, 5)) from = 4;
      if (!t.cycles(b, from) || !t.cycles(b, ph.to)) continue;
      // Points of one CTA come from one SM's clock; a pair stamped by two threads can be out of order (a
      // producer point after a consumer one): such a negative phase is left out, not wrapped.
      const int64_t cycles = int64_t(t.cycles(b, ph.to)) - int64_t(t.cycles(b, from));
      if (cycles < 0) continue;
      d.push_back(double(cycles));
    }
    if (d.empty()) {
      phase.rows.push_back({std::string(ph.name), int64_t{0}, {}, {}, {}, {}});
      continue;
    }
    const double med = stats::median(d), mx = *std::max_element(d.begin(), d.end());
    phase.rows.push_back({std::string(ph.name), int64_t(d.size()), int64_t(med), int64_t(mx),
                          clock_ghz > 0 ? report::Cell(us(med / clock_ghz)) : report::Cell{},
                          clock_ghz > 0 ? report::Cell(us(mx / clock_ghz)) : report::Cell{}});
  }
  return {when, phase};
}

}  // namespace dgt
