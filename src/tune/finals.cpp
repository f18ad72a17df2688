#include "tune/finals.hpp"

#include <algorithm>

namespace dgt {

MeasureProtocol finals_protocol(int rounds) {
  MeasureProtocol p = MeasureProtocol::cold_l2();
  p.rounds = rounds;
  return p;
}

std::vector<TrialRecord> select_finalists(std::vector<TrialRecord> trials, int count, double within) {
  std::erase_if(trials, [](const TrialRecord& t) {
    return t.status != TrialStatus::kOk || !t.timing || !(t.timing->median_us > 0);
  });
  if (count < 1 || trials.empty()) return {};
  std::stable_sort(trials.begin(), trials.end(), [](const TrialRecord& a, const TrialRecord& b) {
    if (a.timing->median_us != b.timing->median_us) return a.timing->median_us < b.timing->median_us;
    return a.config.key() < b.config.key();
  });
  const double limit = trials.front().timing->median_us * within;
  std::vector<TrialRecord> out;
  for (TrialRecord& t : trials) {
    if (static_cast<int>(out.size()) == count || t.timing->median_us > limit) break;
    out.push_back(std::move(t));
  }
  return out;
}

void add_earlier_finalists(std::vector<TrialRecord>& finalists, const std::vector<TrialRecord>& sweep_trials,
                           const std::vector<TrialRecord>& earlier_finals) {
  auto listed = [&](const KernelConfig& c) {
    return std::any_of(finalists.begin(), finalists.end(), [&](const TrialRecord& f) { return f.config == c; });
  };
  for (const TrialRecord& e : earlier_finals) {
    if (e.status != TrialStatus::kOk || listed(e.config)) continue;
    auto it = std::find_if(sweep_trials.begin(), sweep_trials.end(), [&](const TrialRecord& t) {
      return t.config == e.config && t.status == TrialStatus::kOk;
    });
    if (it != sweep_trials.end()) finalists.push_back(*it);
  }
}

bool finals_can_replay(const BaselineRecord& b) {
  return b.status == TrialStatus::kOk && b.timing && b.algo_data.size() == 64;
}

}  // namespace dgt
