#include "bench/rounds.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace dgt {

int round_order_period(int sides) {
  if (sides <= 1) return 1;
  return sides % 2 == 0 ? sides : 2 * sides;
}

std::vector<int> round_order(int sides, int round) {
  if (sides < 1) DGT_THROW(ErrorKind::kInternal, "round_order: {} sides", sides);
  if (round < 0) DGT_THROW(ErrorKind::kInternal, "round_order: round {}", round);
  // Williams' first row: 0, 1, K-1, 2, K-2, ...
  std::vector<int> first;
  first.reserve(static_cast<size_t>(sides));
  first.push_back(0);
  for (int lo = 1, hi = sides - 1; static_cast<int>(first.size()) < sides;) {
    first.push_back(lo++);
    if (static_cast<int>(first.size()) < sides) first.push_back(hi--);
  }
  const int r = round % round_order_period(sides);
  std::vector<int> order(first.size());
  for (size_t i = 0; i < first.size(); ++i) order[i] = (first[i] + r) % sides;
  if (r >= sides) std::reverse(order.begin(), order.end());  // odd K: the mirrored half
  return order;
}

Timing SideSummary::timing(bool drop_flagged) const {
  const SampleStats& s = drop_flagged && unflagged ? *unflagged : all;
  Timing t;
  t.median_us = s.median;
  t.p10_us = s.p10;
  t.p90_us = s.p90;
  t.rse = s.rse;
  t.samples = drop_flagged && unflagged ? samples - flagged : samples;
  t.sm_clock_mhz = median_clock_mhz;
  t.throttled = flagged > 0;
  return t;
}

const Sample* RoundsResult::find_sample(int round, int side) const {
  const size_t k = labels.size();
  const size_t begin = static_cast<size_t>(std::max(round, 0)) * k;
  for (size_t i = begin; i < begin + k && i < samples.size(); ++i)
    if (samples[i].side == side && samples[i].round == round) return &samples[i];
  for (const Sample& s : samples)  // not round-major (read back from elsewhere)
    if (s.side == side && s.round == round) return &s;
  return nullptr;
}

const Sample& RoundsResult::at(int round, int side) const {
  const Sample* s = find_sample(round, side);
  if (!s)
    DGT_THROW(ErrorKind::kInternal, "RoundsResult: no sample of side {} in round {} ({} rounds, {} sides)", side, round,
              rounds, labels.size());
  return *s;
}

int RoundsResult::find(const std::string& label) const {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) return static_cast<int>(i);
  return -1;
}

std::vector<double> RoundsResult::side_times(int side, bool drop_flagged) const {
  if (side < 0 || side >= side_count())
    DGT_THROW(ErrorKind::kInternal, "RoundsResult: side {} of {}", side, side_count());
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const Sample* s = find_sample(r, side);
    if (s && !(drop_flagged && s->flagged)) t.push_back(s->time_us);
  }
  return t;
}

PairedTimes RoundsResult::paired(int x, int y, bool drop_flagged) const {
  for (int s : {x, y})
    if (s < 0 || s >= side_count()) DGT_THROW(ErrorKind::kInternal, "RoundsResult: side {} of {}", s, side_count());
  PairedTimes p;
  for (int r = 0; r < rounds; ++r) {
    const Sample* a = find_sample(r, x);
    const Sample* b = find_sample(r, y);
    if (!a || !b) continue;
    if (drop_flagged && (a->flagged || b->flagged)) continue;
    p.rounds.push_back(r);
    p.x_us.push_back(a->time_us);
    p.y_us.push_back(b->time_us);
  }
  return p;
}

void summarise(RoundsResult& r) {
  r.sides.assign(r.labels.size(), SideSummary{});
  for (size_t s = 0; s < r.labels.size(); ++s) {
    SideSummary& sum = r.sides[s];
    sum.label = r.labels[s];
    std::vector<double> all, kept, clocks;
    for (const Sample& x : r.samples) {
      if (x.side != static_cast<int>(s)) continue;
      all.push_back(x.time_us);
      if (!x.flagged) kept.push_back(x.time_us);
      if (x.sm_clock_mhz > 0) clocks.push_back(x.sm_clock_mhz);
    }
    sum.samples = static_cast<int>(all.size());
    sum.flagged = static_cast<int>(all.size() - kept.size());
    sum.all = sample_stats(all);
    if (!kept.empty()) sum.unflagged = sample_stats(kept);
    if (!clocks.empty()) {
      sum.median_clock_mhz = sample_stats(clocks).median;
      sum.min_clock_mhz = *std::min_element(clocks.begin(), clocks.end());
    }
  }
}

RoundsResult run_rounds(SampleSource& source, const RoundsOptions& opts) {
  const int k = source.side_count();
  if (k < 1) DGT_THROW(ErrorKind::kInternal, "run_rounds: no sides");
  if (opts.rounds < 1) DGT_THROW(ErrorKind::kUsage, "rounds = {} must be >= 1", opts.rounds);
  RoundsResult r;
  r.rounds = opts.rounds;
  r.reference_clock_mhz = opts.reference_clock_mhz;
  r.clock_floor_mhz = opts.reference_clock_mhz > 0 ? opts.clock_floor * opts.reference_clock_mhz : 0.0;
  for (int s = 0; s < k; ++s) r.labels.push_back(source.side_label(s));
  r.samples.reserve(static_cast<size_t>(k) * static_cast<size_t>(opts.rounds));

  source.prepare();
  for (int round = 0; round < opts.rounds; ++round) {
    const std::vector<int> order = side_order(opts.order, k, round);
    const std::vector<RawSample> raw = source.run_round(order);
    if (raw.size() != order.size())
      DGT_THROW(ErrorKind::kInternal, "sample source returned {} samples for {} sides", raw.size(), order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      Sample s;
      s.side = order[i];
      s.round = round;
      s.position = static_cast<int>(i);
      s.time_us = raw[i].time_us;
      s.sm_clock_mhz = raw[i].sm_clock_mhz;
      s.flagged = r.below_clock_floor(s.sm_clock_mhz);
      r.samples.push_back(s);
    }
  }
  summarise(r);
  return r;
}

namespace {
nlohmann::json stats_json(const SampleStats& s) {
  return {{"median_us", s.median}, {"p10_us", s.p10}, {"p90_us", s.p90}, {"rse", s.rse}};
}
}  // namespace

std::string RoundsResult::to_json() const {
  nlohmann::json j;
  j["protocol"] = protocol.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(protocol);
  j["rounds"] = rounds;
  j["reference_clock_mhz"] = reference_clock_mhz;
  j["clock_floor_mhz"] = clock_floor_mhz;
  nlohmann::json sj = nlohmann::json::array();
  for (const SideSummary& s : sides) {
    nlohmann::json o = stats_json(s.all);
    o["label"] = s.label;
    o["samples"] = s.samples;
    o["flagged"] = s.flagged;
    o["unflagged"] = s.unflagged ? stats_json(*s.unflagged) : nlohmann::json(nullptr);
    o["median_clock_mhz"] = s.median_clock_mhz;
    o["min_clock_mhz"] = s.min_clock_mhz;
    if (s.check)
      o["check"] = {{"ok", s.check->ok},
                    {"max_rel_err", s.check->max_rel_err},
                    {"diff", s.check->diff},
                    {"nan_count", s.check->nan_count},
                    {"pad_touched", s.check->pad_touched}};
    else
      o["check"] = nullptr;
    sj.push_back(std::move(o));
  }
  j["sides"] = std::move(sj);
  nlohmann::json samples_j = nlohmann::json::array();
  for (const Sample& s : samples)
    samples_j.push_back({{"side", s.side},
                         {"round", s.round},
                         {"position", s.position},
                         {"time_us", s.time_us},
                         {"sm_clock_mhz", s.sm_clock_mhz},
                         {"flagged", s.flagged}});
  j["samples"] = std::move(samples_j);
  return j.dump();
}

}  // namespace dgt
