// The tables of `dgtune trace`: when each trace point was reached across CTAs, and the phases inside each CTA.
#pragma once

#include <vector>

#include "eval/kernel_trace.hpp"
#include "report/table.hpp"

namespace dgt {

/// Two tables: (1) per point, how many CTAs reached it and min / median / max us from the first CTA's start
/// (%globaltimer, one clock for all SMs); (2) per phase, the median and max cycles inside a CTA (%clock64) and
/// those in us at the median SM clock of the CTAs (each CTA's cycles over its ns from start to end).
std::vector<report::Table> trace_tables(const KernelTrace& t);

}  // namespace dgt
