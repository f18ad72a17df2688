#include "eval/grouped_compare.hpp"

#include "eval/grouped_compare_tables.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "eval/grouped_measure.hpp"
#include "space/grouped_rules.hpp"
#include "stats/stats.hpp"

namespace dgt {

std::vector<report::Table> run_grouped_compare(const GroupedCompareOptions& o) {
  for (const GroupedProblem& g : o.problems) {
    if (const std::string v = grouped_config_violation(o.config, g); !v.empty())
      DGT_THROW(ErrorKind::kUsage, "--config {} cannot run {}: {}", o.config.key(), g.label(), v);
    if (o.vs_config)
      if (const std::string v = grouped_config_violation(*o.vs_config, g); !v.empty())
        DGT_THROW(ErrorKind::kUsage, "--vs-config {} cannot run {}: {}", o.vs_config->key(), g.label(), v);
  }
  GroupedMeasurer measurer(o.device, o.cache_dir, o.protocol, o.seed);
  const DeviceInfo& device = measurer.device();
  GroupedSides sides;
  sides.config = o.config;
  sides.dense_config = o.dense_config;
  sides.vs_config = o.vs_config;
  std::vector<GroupedCompareShape> shapes;
  for (const GroupedProblem& g : o.problems) shapes.push_back(measurer.measure(g, sides));
  return grouped_compare_tables(
      shapes, paired_options(o.stats),
      fmt::format("dgtune compare --grouped on {} ({}): the grouped kernel against one cuBLASLt call per group (loop) "
                  "and the dgtune dense kernel over the total M (dense){}; x = other us / grouped us",
                  device.name, o.protocol.name(),
                  o.vs_config ? fmt::format(", and the grouped kernel of {} (grouped-vs)", o.vs_config->key()) : ""));
}

}  // namespace dgt
