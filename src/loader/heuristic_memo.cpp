#include "loader/heuristic_memo.hpp"

#include <iterator>

namespace dgt {

const CublasLtAlgoBytes* HeuristicMemo::pick(int64_t m, int64_t* from_m) const {
  auto hi = picks_.lower_bound(m);
  if (hi != picks_.end() && hi->first == m) {
    if (from_m) *from_m = m;
    return &hi->second;
  }
  if (hi == picks_.end() || hi == picks_.begin()) return nullptr;  // m beyond the recorded M: no bracket
  auto lo = std::prev(hi);
  if (lo->second != hi->second) return nullptr;
  if (from_m) *from_m = hi->first;
  return &hi->second;
}

}  // namespace dgt
