// dgtune_kernel_ab --grouped: a kernel change timed on grouped (MoE) problems the way kernel_ab times dense ones: one
// grouped config compiled from the old kernels/ tree, from every --variant tree and from this build's embedded sources,
// all loaded in one process and timed round-robin on the same operands under the interleaved engine, each output
// verified per group (with the sentinel rows kept) after the rounds, and each output compared bitwise with the old one.
#pragma once

#include <string>
#include <vector>

#include "jit/compiler.hpp"

namespace dgt {

struct GroupedAbArgs {
  std::string old_kernels;            ///< the old kernels/ directory
  std::vector<std::string> variants;  ///< NAME=DIR: more kernels/ trees, each a side between "old" and "new"
  std::vector<std::string> problems;  ///< grouped problems in parse_grouped_problem's text form
  std::string config;                 ///< the grouped config key (required)
  std::string protocol = "cold-l2";   ///< cold-l2 or hot-graph
  int rounds = 20;
  std::string out;  ///< JSON document path; empty: none
  jit::CompileOptions new_edits;  ///< the post-compile edits of the new side (the others compile without any)
};

/// Runs the grouped A/B and prints one line per problem (each side's median us and clock, new/old speedup with its
/// 95% interval, bitwise equality). Returns 1 when an output fails verification, else 0. Throws Error(kUsage) for a
/// missing --config, a malformed problem or a config that breaks a grouped rule for a problem (before the GPU is
/// opened), and the device's errors.
int run_grouped_ab(const GroupedAbArgs& a);

}  // namespace dgt
