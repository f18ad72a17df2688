#include "space/grouped_rules.hpp"

#include <fmt/format.h>

#include "space/resource_model.hpp"

namespace dgt {

std::string grouped_rule_violation(const KernelConfig& c) {
  if (128 % c.block_m != 0)
    return fmt::format("G1: a grouped kernel's BLOCK_M must divide 128 (got {}): 128-row segments hold whole m-blocks",
                       c.block_m);
  if (c.cluster_m != 1)
    return fmt::format("G2: grouped kernels cluster along N only (cluster {}x{}): B multicast across m-blocks could "
                       "cross groups",
                       c.cluster_m, c.cluster_n);
  if (c.split_k > 1) return fmt::format("G3: grouped kernels do not split K (split_k {})", c.split_k);
  if (c.mainloop != Mainloop::k1g && c.mainloop != Mainloop::k2g)
    return "G3: grouped kernels run mainloop 1g or 2g (2o and pp issue k-blocks before the skip test)";
  // The kernel's R26 static_assert refuses a grouped swap-AB kernel; its groups are rows of A and D, which the
  // transposed problem would put on the kernel's N side.
  if (c.swap_ab) return "G6: grouped kernels do not swap A and B (the groups are rows of A and D)";
  return {};
}

std::string grouped_config_violation(const KernelConfig& c, const GroupedProblem& g) {
  if (std::string v = grouped_rule_violation(c); !v.empty()) return v;
  return config_rule_violation(c, g.dense_view());
}

}  // namespace dgt
