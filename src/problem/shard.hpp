// `dgtune sweep --shard i/n`: which problems of a shapes file one of n machines sweeps.
//
// The rule: number the DISTINCT problems of the file 0, 1, 2, ... in file order (a problem is its
// Problem::key(); a line whose problem an earlier line already holds takes that line's number); problem j goes
// to shard j mod n. Every problem is in exactly one shard, and a repeated line follows its first occurrence,
// so two shards never sweep the same problem.
//
// Why round-robin over file order and not a hash of the problem key: the wall time of a job array is its
// slowest task, and round-robin gives every shard floor(P/n) or ceil(P/n) of the P problems (35 shapes hashed
// into 8 shards give the largest shard 7.6 and the smallest 1.7 on average, by a simulation of uniform hashing;
// round-robin gives 5 and 4); shape files are written in order
// of size (deepseek-v3.txt by M), so round-robin also spreads the large shapes over the shards. The price:
// editing the file moves later problems to other shards, so every task of one array must read the same file
// (scripts/slurm_sweep.sh snapshots it and records its sha256; nothing is lost either way, since `db merge`
// unions the shard DBs, but a problem may be measured twice or resume in another shard's DB).
#pragma once

#include <string>
#include <vector>

#include "problem/shapes_file.hpp"

namespace dgt {

/// Shard `index` of `count` (0 <= index < count, count >= 1). {0, 1} is the whole file.
struct Shard {
  int index = 0;
  int count = 1;
  bool whole() const { return count == 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }  ///< "i/n"
};

/// Parses "i/n": two decimal integers (digits 0-9 only; leading zeros are decimal, "010" is 10, as for every
/// count of the CLI) with 0 <= i < n and 1 <= n <= 2^31-1. Throws Error(kUsage) naming the value (escaped)
/// and the rule, e.g. "'4/4': shard index 4 is not below the shard count 4 (want i/n with 0 <= i < n, ...)".
Shard parse_shard(const std::string& text);

/// What one shard gets from a shapes file.
struct ShardSelection {
  Shard shard;
  std::vector<ShapeEntry> entries;  ///< this shard's lines, in file order (a repeated problem keeps its lines)
  int problems = 0;                 ///< distinct problems in this shard
  int total_problems = 0;           ///< distinct problems in the whole file
  /// One line for the sweep log: "shard 1/4 of FILE: 9 of 35 problems (file lines 2, 6, ...)" or, for an
  /// empty shard, "... 0 of 2 problems: nothing to sweep (the file has fewer problems than shards)".
  std::string summary(const std::string& file) const;
};

/// The rule at the top of this file applied to `all` (a parsed shapes file, in file order). Pure and
/// deterministic: the same entries and shard give the same selection on every machine.
ShardSelection select_shard(const std::vector<ShapeEntry>& all, const Shard& shard);

}  // namespace dgt
