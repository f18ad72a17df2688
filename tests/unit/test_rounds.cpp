// The host half of the measurement engine (bench/rounds, bench/measure_protocol) with fake sides.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "bench/measure_protocol.hpp"
#include "bench/rounds.hpp"
#include "stats/stats.hpp"
#include "core/error.hpp"

namespace dgt {
namespace {

/// The dgt::Error `f` throws, or nullopt when it throws none.
template <class F>
std::optional<Error> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

/// A side's time and clock as a function of (side, round); records what the runner asked.
class FakeSource : public SampleSource {
 public:
  using Fn = std::function<RawSample(int side, int round)>;
  FakeSource(int k, Fn fn) : k_(k), fn_(std::move(fn)) {}
  int side_count() const override { return k_; }
  std::string side_label(int side) const override { return "side" + std::to_string(side); }
  void prepare() override {
    EXPECT_TRUE(orders.empty()) << "prepare after a round";
    ++prepared;
  }
  std::vector<RawSample> run_round(std::span<const int> order) override {
    EXPECT_EQ(prepared, 1);
    orders.emplace_back(order.begin(), order.end());
    std::vector<RawSample> out;
    for (int s : order) out.push_back(fn_(s, static_cast<int>(orders.size()) - 1));
    return out;
  }
  int prepared = 0;
  std::vector<std::vector<int>> orders;

 private:
  int k_;
  Fn fn_;
};

TEST(RoundOrder, PermutationsAndPeriod) {
  EXPECT_EQ(round_order(1, 0), std::vector<int>({0}));
  EXPECT_EQ(round_order(1, 7), std::vector<int>({0}));
  EXPECT_EQ(round_order(2, 0), std::vector<int>({0, 1}));
  EXPECT_EQ(round_order(2, 1), std::vector<int>({1, 0}));
  EXPECT_EQ(round_order(2, 2), std::vector<int>({0, 1}));
  EXPECT_EQ(round_order(3, 0), std::vector<int>({0, 1, 2}));
  EXPECT_EQ(round_order(3, 1), std::vector<int>({1, 2, 0}));  // a rotation
  EXPECT_EQ(round_order(3, 3), std::vector<int>({2, 1, 0}));  // odd K: mirrored half
  EXPECT_EQ(round_order(4, 0), std::vector<int>({0, 1, 3, 2}));
  EXPECT_EQ(round_order_period(1), 1);
  EXPECT_EQ(round_order_period(4), 4);
  EXPECT_EQ(round_order_period(5), 10);
  EXPECT_THROW(round_order(0, 0), Error);
  for (int k = 1; k <= 9; ++k)
    for (int r = 0; r < 3 * round_order_period(k); ++r) {
      std::vector<int> o = round_order(k, r);
      std::sort(o.begin(), o.end());
      for (int i = 0; i < k; ++i) ASSERT_EQ(o[static_cast<size_t>(i)], i) << "k " << k << " round " << r;
    }
}

TEST(RoundOrder, BalancedPositionsAndPredecessors) {
  for (int k = 2; k <= 9; ++k) {
    const int period = round_order_period(k);
    std::map<std::pair<int, int>, int> at_position, follows;
    for (int r = 0; r < period; ++r) {
      const std::vector<int> o = round_order(k, r);
      for (int i = 0; i < k; ++i) {
        ++at_position[{o[static_cast<size_t>(i)], i}];
        if (i > 0) ++follows[{o[static_cast<size_t>(i - 1)], o[static_cast<size_t>(i)]}];
      }
    }
    // Every side at every position equally often; every ordered pair adjacent equally often.
    for (int s = 0; s < k; ++s)
      for (int pos = 0; pos < k; ++pos) EXPECT_EQ((at_position[{s, pos}]), period / k) << "k " << k;
    EXPECT_EQ(follows.size(), static_cast<size_t>(k * (k - 1))) << "k " << k;
    for (const auto& [pair, n] : follows)
      EXPECT_EQ(n, period / k) << "k " << k << " " << pair.first << "->" << pair.second;
  }
  // 20 rounds of 3 sides: nobody always first; first places split 7/7/6.
  std::map<int, int> first;
  for (int r = 0; r < 20; ++r) ++first[round_order(3, r)[0]];
  EXPECT_EQ(first[0], 7);
  EXPECT_EQ(first[1], 7);
  EXPECT_EQ(first[2], 6);
}

TEST(Rounds, CountsOrderAndAlignment) {
  FakeSource src(3, [](int side, int round) { return RawSample{10.0 * (side + 1) + 0.01 * round, 1980}; });
  RoundsOptions opts;
  opts.rounds = 20;
  opts.reference_clock_mhz = 1980;
  RoundsResult r = run_rounds(src, opts);
  EXPECT_EQ(src.prepared, 1);
  ASSERT_EQ(src.orders.size(), 20u);
  EXPECT_EQ(r.rounds, 20);
  EXPECT_EQ(r.labels, std::vector<std::string>({"side0", "side1", "side2"}));
  ASSERT_EQ(r.samples.size(), 60u);
  for (int round = 0; round < 20; ++round) {
    EXPECT_EQ(src.orders[static_cast<size_t>(round)], round_order(3, round));
    std::set<int> seen;
    for (int i = 0; i < 3; ++i) {
      const Sample& s = r.samples[static_cast<size_t>(round * 3 + i)];
      EXPECT_EQ(s.round, round);
      EXPECT_EQ(s.position, i);
      EXPECT_EQ(s.side, round_order(3, round)[static_cast<size_t>(i)]);
      seen.insert(s.side);
    }
    EXPECT_EQ(seen.size(), 3u);
    for (int side = 0; side < 3; ++side) {
      EXPECT_EQ(r.at(round, side).side, side);
      EXPECT_DOUBLE_EQ(r.at(round, side).time_us, 10.0 * (side + 1) + 0.01 * round);
    }
  }
  for (const SideSummary& s : r.sides) {
    EXPECT_EQ(s.samples, 20);
    EXPECT_EQ(s.flagged, 0);
    ASSERT_TRUE(s.unflagged.has_value());
    EXPECT_DOUBLE_EQ(s.unflagged->median, s.all.median);
    EXPECT_DOUBLE_EQ(s.median_clock_mhz, 1980);
  }
  EXPECT_NEAR(r.sides[1].all.median, 20.095, 1e-9);
  PairedTimes p = r.paired(0, 2);
  ASSERT_EQ(p.rounds.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(p.rounds[i], static_cast<int>(i));
    EXPECT_DOUBLE_EQ(p.y_us[i] - p.x_us[i], 20.0);
  }
  EXPECT_EQ(r.find("side2"), 2);
  EXPECT_EQ(r.find("nope"), -1);
  EXPECT_THROW(r.at(20, 0), Error);
  EXPECT_THROW(r.paired(0, 3), Error);
}

TEST(Rounds, ClockFlagAtThreeQuarters) {
  // Reference 2000 MHz -> floor 1500: 1499.9 is flagged, exactly 1500 is not, 0 (unknown) is not.
  const std::vector<double> clocks = {1980, 1499.9, 1500, 0, 1200};
  FakeSource src(1, [&](int, int round) { return RawSample{5.0, clocks[static_cast<size_t>(round)]}; });
  RoundsOptions opts;
  opts.rounds = 5;
  opts.reference_clock_mhz = 2000;
  RoundsResult r = run_rounds(src, opts);
  EXPECT_DOUBLE_EQ(r.clock_floor_mhz, 1500);
  std::vector<bool> flags;
  for (const Sample& s : r.samples) flags.push_back(s.flagged);
  EXPECT_EQ(flags, std::vector<bool>({false, true, false, false, true}));
  EXPECT_EQ(r.sides[0].flagged, 2);
  EXPECT_DOUBLE_EQ(r.sides[0].min_clock_mhz, 1200);
  EXPECT_DOUBLE_EQ(r.sides[0].median_clock_mhz, (1499.9 + 1500) / 2);  // median of the 4 known clocks

  // Unknown reference clock: nothing can be flagged.
  FakeSource src2(1, [&](int, int round) { return RawSample{5.0, clocks[static_cast<size_t>(round)]}; });
  opts.reference_clock_mhz = 0;
  RoundsResult r2 = run_rounds(src2, opts);
  EXPECT_EQ(r2.clock_floor_mhz, 0);
  EXPECT_EQ(r2.sides[0].flagged, 0);

  // Another floor fraction.
  FakeSource src3(1, [&](int, int round) { return RawSample{5.0, clocks[static_cast<size_t>(round)]}; });
  opts.reference_clock_mhz = 2000;
  opts.clock_floor = 0.5;
  EXPECT_EQ(run_rounds(src3, opts).sides[0].flagged, 0);
}

TEST(Rounds, SummariesWithAndWithoutFlagged) {
  // Side 0: 10 us at full clock, 30 us in the 4 throttled rounds. Side 1 never throttled, 20 us.
  auto throttled = [](int round) { return round % 5 == 1; };
  FakeSource src(2, [&](int side, int round) {
    if (side == 1) return RawSample{20.0, 1900};
    return throttled(round) ? RawSample{30.0, 1000} : RawSample{10.0, 1900};
  });
  RoundsOptions opts;
  opts.rounds = 20;
  opts.reference_clock_mhz = 1980;
  RoundsResult r = run_rounds(src, opts);
  const SideSummary& s0 = r.sides[0];
  EXPECT_EQ(s0.samples, 20);
  EXPECT_EQ(s0.flagged, 4);
  EXPECT_DOUBLE_EQ(s0.all.median, 10.0);
  EXPECT_DOUBLE_EQ(s0.all.p90, 30.0);  // 4 of 20 samples at 30: p90 is one
  ASSERT_TRUE(s0.unflagged.has_value());
  EXPECT_DOUBLE_EQ(s0.unflagged->p90, 10.0);
  Timing all = s0.timing(false), kept = s0.timing(true);
  EXPECT_EQ(all.samples, 20);
  EXPECT_EQ(kept.samples, 16);
  EXPECT_DOUBLE_EQ(kept.p90_us, 10.0);
  EXPECT_TRUE(all.throttled);
  EXPECT_FALSE(r.sides[1].timing().throttled);

  // Pairing without flagged rounds drops the rounds where EITHER side was flagged.
  EXPECT_EQ(r.paired(0, 1, false).rounds.size(), 20u);
  PairedTimes p = r.paired(1, 0, true);
  EXPECT_EQ(p.rounds.size(), 16u);
  for (int round : p.rounds) EXPECT_FALSE(throttled(round));
  for (double x : p.y_us) EXPECT_DOUBLE_EQ(x, 10.0);

  // Every sample of a side flagged: no unflagged summary; timing(true) falls back to all samples.
  FakeSource hot(1, [](int, int) { return RawSample{7.0, 500}; });
  RoundsResult h = run_rounds(hot, opts);
  EXPECT_EQ(h.sides[0].flagged, 20);
  EXPECT_FALSE(h.sides[0].unflagged.has_value());
  EXPECT_EQ(h.sides[0].timing(true).samples, 20);
  EXPECT_DOUBLE_EQ(h.sides[0].timing(true).median_us, 7.0);
}

TEST(Rounds, PairedFeedsTheStatistics) {
  // Side 0 takes 0.9x side 1's time in every round, with drift shared by both sides in a round.
  FakeSource src(2, [](int side, int round) {
    const double drift = 1.0 + 0.05 * ((round * 7) % 5);
    return RawSample{(side == 0 ? 9.0 : 10.0) * drift * (1 + 0.001 * ((round * 3 + side) % 4)), 1980};
  });
  RoundsOptions opts;
  opts.reference_clock_mhz = 1980;
  RoundsResult r = run_rounds(src, opts);
  PairedTimes p = r.paired(0, 1);
  stats::PairedComparison c = stats::compare_paired(p.x_us, p.y_us);
  EXPECT_EQ(c.verdict, stats::Verdict::kFaster);
  EXPECT_NEAR(c.speedup_x_over_y(), 10.0 / 9.0, 0.01);
}

TEST(Rounds, ErrorsAndJson) {
  FakeSource none(0, [](int, int) { return RawSample{}; });
  EXPECT_THROW(run_rounds(none, {}), Error);
  FakeSource one(1, [](int, int) { return RawSample{1, 1}; });
  RoundsOptions bad;
  bad.rounds = 0;
  EXPECT_THROW(run_rounds(one, bad), Error);

  class Short : public FakeSource {
   public:
    Short() : FakeSource(2, [](int, int) { return RawSample{1, 1}; }) {}
    std::vector<RawSample> run_round(std::span<const int>) override { return {RawSample{}}; }
  } short_source;
  EXPECT_THROW(run_rounds(short_source, {}), Error);

  FakeSource src(2, [](int side, int) { return RawSample{side == 0 ? 4.0 : 5.0, 1000}; });
  RoundsOptions opts;
  opts.rounds = 3;
  opts.reference_clock_mhz = 1980;
  RoundsResult r = run_rounds(src, opts);
  r.protocol = MeasureProtocol::hot_graph().to_json();
  r.sides[1].check = Verification{true, 1e-3, 1e-6, 0, 0};
  auto j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j.at("protocol").at("name"), "hot-graph-v1");
  EXPECT_EQ(j.at("rounds"), 3);
  EXPECT_DOUBLE_EQ(j.at("clock_floor_mhz").get<double>(), 0.75 * 1980);
  ASSERT_EQ(j.at("sides").size(), 2u);
  EXPECT_EQ(j.at("sides")[0].at("label"), "side0");
  EXPECT_EQ(j.at("sides")[0].at("flagged"), 3);
  EXPECT_TRUE(j.at("sides")[0].at("unflagged").is_null());
  EXPECT_TRUE(j.at("sides")[0].at("check").is_null());
  EXPECT_EQ(j.at("sides")[1].at("check").at("ok"), true);
  EXPECT_DOUBLE_EQ(j.at("sides")[1].at("median_us").get<double>(), 5.0);
  ASSERT_EQ(j.at("samples").size(), 6u);
  EXPECT_EQ(j.at("samples")[0].at("flagged"), true);
  EXPECT_EQ(j.at("samples")[3].at("round"), 1);
}

TEST(Rounds, RebuiltFromStoredSamples) {
  // What `compare --between` does with a DB's sample rows: any order, a round missing for one side.
  FakeSource src(2, [](int side, int round) {
    return RawSample{side == 0 ? 10.0 + round : 20.0 + round, round == 2 ? 900.0 : 1900.0};
  });
  RoundsOptions opts;
  opts.rounds = 6;
  opts.reference_clock_mhz = 1980;
  const RoundsResult live = run_rounds(src, opts);

  RoundsResult stored;
  stored.protocol = MeasureProtocol::cold_l2().to_json();
  stored.rounds = live.rounds;
  stored.reference_clock_mhz = live.reference_clock_mhz;
  stored.clock_floor_mhz = live.clock_floor_mhz;
  stored.labels = live.labels;
  stored.samples.assign(live.samples.rbegin(), live.samples.rend());
  summarise(stored);
  for (int s = 0; s < 2; ++s) {
    EXPECT_DOUBLE_EQ(stored.sides[static_cast<size_t>(s)].all.median, live.sides[static_cast<size_t>(s)].all.median);
    EXPECT_EQ(stored.sides[static_cast<size_t>(s)].flagged, 1);
    EXPECT_EQ(stored.side_times(s), live.side_times(s));
  }
  EXPECT_EQ(live.side_times(0), std::vector<double>({10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(live.side_times(1, true), std::vector<double>({20, 21, 23, 24, 25}));
  EXPECT_EQ(stored.paired(0, 1, true).rounds, std::vector<int>({0, 1, 3, 4, 5}));

  // Side 1's sample of round 4 lost: that round drops out of the pairing only.
  std::erase_if(stored.samples, [](const Sample& x) { return x.side == 1 && x.round == 4; });
  summarise(stored);
  EXPECT_EQ(stored.sides[1].samples, 5);
  EXPECT_EQ(stored.find_sample(4, 1), nullptr);
  EXPECT_THROW(stored.at(4, 1), Error);
  EXPECT_EQ(stored.paired(0, 1).rounds, std::vector<int>({0, 1, 2, 3, 5}));
  EXPECT_EQ(stored.side_times(0).size(), 6u);
  EXPECT_THROW(stored.side_times(2), Error);
}

TEST(MeasureProtocol, NamesJsonAndValidation) {
  EXPECT_EQ(MeasureProtocol::cold_l2().name(), "cold-l2-v2");
  EXPECT_EQ(MeasureProtocol::hot_graph().name(), "hot-graph-v1");
  EXPECT_EQ(MeasureProtocol::cold_l2_adaptive().to_json().find("cold-l2-v1") != std::string::npos,
            true);  // the sweep's timer is unchanged
  EXPECT_EQ(parse_protocol_kind("hot-graph"), ProtocolKind::kHotGraph);
  EXPECT_EQ(parse_protocol_kind("cold-l2"), ProtocolKind::kColdL2);
  try {
    parse_protocol_kind("warm");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("cold-l2, hot-graph or isolated"), std::string::npos);
  }

  auto cold = nlohmann::json::parse(MeasureProtocol::cold_l2().to_json());
  EXPECT_EQ(cold.at("name"), "cold-l2-v2");
  EXPECT_EQ(cold.at("kind"), "cold-l2");
  EXPECT_EQ(cold.at("version"), 2);
  EXPECT_EQ(cold.at("flush"), "write+read");
  EXPECT_EQ(cold.at("rounds"), 20);
  EXPECT_EQ(cold.at("order"), "williams");
  EXPECT_DOUBLE_EQ(cold.at("clock_floor_fraction").get<double>(), 0.75);
  EXPECT_FALSE(cold.contains("graph_launches"));
  auto hot = nlohmann::json::parse(MeasureProtocol::hot_graph().to_json());
  EXPECT_EQ(hot.at("name"), "hot-graph-v1");
  EXPECT_EQ(hot.at("graph_launches"), 20);
  EXPECT_EQ(hot.at("l2"), "warm");
  EXPECT_FALSE(hot.contains("flush"));

  MeasureProtocol p = MeasureProtocol::hot_graph();
  p.rounds = 31;
  p.graph_launches = 7;
  p.clock_floor = 0.6;
  MeasureProtocol q = MeasureProtocol::from_json(p.to_json());
  EXPECT_EQ(q.kind, ProtocolKind::kHotGraph);
  EXPECT_EQ(q.rounds, 31);
  EXPECT_EQ(q.graph_launches, 7);
  EXPECT_DOUBLE_EQ(q.clock_floor, 0.6);
  EXPECT_EQ(q.to_json(), p.to_json());
  EXPECT_EQ(MeasureProtocol::from_json(MeasureProtocol::cold_l2().to_json()).to_json(),
            MeasureProtocol::cold_l2().to_json());
  // cold-l2-v1 (the sweep's adaptive timer) has no "kind": it is read back by its name.
  EXPECT_TRUE(MeasureProtocol::from_json(MeasureProtocol::cold_l2_adaptive().to_json()).adaptive);
  EXPECT_THROW(MeasureProtocol::from_json(R"({"name":"cold-l2-v3"})"), Error);
  EXPECT_THROW(MeasureProtocol::from_json(R"({"kind":"cold-l2","version":1})"), Error);
  // A field of the wrong type is a dgt::Error naming the JSON, not nlohmann's exception.
  for (const char* bad :
       {R"({"kind":"cold-l2","version":2,"rounds":"many"})", R"({"kind":"cold-l2","version":3,"tail_kernels":"x"})",
        R"({"kind":"cold-l2","version":"2"})"}) {
    const auto e = error_of([&] { MeasureProtocol::from_json(bad); });
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->kind(), ErrorKind::kInvalid);
    EXPECT_NE(std::string(e->what()).find("wrong type"), std::string::npos) << e->what();
  }
  EXPECT_THROW(MeasureProtocol::from_json("not json"), Error);

  EXPECT_NO_THROW(MeasureProtocol::cold_l2().validate());
  MeasureProtocol b = MeasureProtocol::cold_l2();
  b.rounds = 0;
  EXPECT_THROW(b.validate(), Error);
  b = MeasureProtocol::hot_graph();
  b.graph_launches = 0;
  EXPECT_THROW(b.validate(), Error);
  b = MeasureProtocol::cold_l2();
  b.clock_floor = 1.5;
  EXPECT_THROW(b.validate(), Error);
}

// cold-l2-v3 is cold-l2-v2 with a queue tail; v2's JSON (stored with every measurement) does not change.
TEST(MeasureProtocol, ColdL2V3QueueTail) {
  const MeasureProtocol v3 = MeasureProtocol::cold_l2_v3();
  EXPECT_EQ(v3.name(), "cold-l2-v3");
  EXPECT_EQ(v3.version(), 3);
  EXPECT_EQ(v3.tail_kernels, 32);
  auto j = nlohmann::json::parse(v3.to_json());
  EXPECT_EQ(j.at("name"), "cold-l2-v3");
  EXPECT_EQ(j.at("version"), 3);
  EXPECT_EQ(j.at("tail_kernels"), 32);
  EXPECT_DOUBLE_EQ(j.at("tail_kernel_us").get<double>(), 1.0);
  EXPECT_EQ(j.at("flush"), "write+read");
  EXPECT_FALSE(nlohmann::json::parse(MeasureProtocol::cold_l2().to_json()).contains("tail_kernels"));
  EXPECT_EQ(MeasureProtocol::from_json(v3.to_json()).to_json(), v3.to_json());
  EXPECT_EQ(MeasureProtocol::from_json(v3.to_json()).name(), "cold-l2-v3");
  // A stored v3 JSON with another tail keeps it; a version this build does not know is refused, naming both.
  MeasureProtocol t = MeasureProtocol::from_json(R"({"kind":"cold-l2","version":3,"tail_kernels":8})");
  EXPECT_EQ(t.tail_kernels, 8);
  EXPECT_EQ(t.name(), "cold-l2-v3");
  const auto v4 = error_of([] { MeasureProtocol::from_json(R"({"kind":"cold-l2","version":4})"); });
  ASSERT_TRUE(v4);
  EXPECT_NE(std::string(v4->what()).find("cold-l2-v2 and cold-l2-v3"), std::string::npos) << v4->what();
  // A v3 JSON whose tail is 0 is v2 in all but name: refused rather than read as v2, naming the field.
  const auto tail0 = error_of([] { MeasureProtocol::from_json(R"({"kind":"cold-l2","version":3,"tail_kernels":0})"); });
  ASSERT_TRUE(tail0);
  EXPECT_EQ(tail0->kind(), ErrorKind::kInvalid);
  EXPECT_NE(std::string(tail0->what()).find("tail_kernels = 0"), std::string::npos) << tail0->what();

  EXPECT_NO_THROW(v3.validate());
  MeasureProtocol b = v3;
  b.tail_kernels = 5000;
  EXPECT_THROW(b.validate(), Error);
  b = v3;
  b.tail_kernel_us = 0;
  EXPECT_THROW(b.validate(), Error);
  b = MeasureProtocol::hot_graph();
  b.tail_kernels = 4;
  EXPECT_THROW(b.validate(), Error);  // the tail is cold-l2's
  b = MeasureProtocol::cold_l2_adaptive();
  b.tail_kernels = 4;
  EXPECT_THROW(b.validate(), Error);  // and the engine's, not the sweep timer's
}

TEST(MeasureProtocol, NamedByKindOrVersion) {
  EXPECT_EQ(MeasureProtocol::named("cold-l2").name(), "cold-l2-v2");  // the kind: today's default version
  EXPECT_EQ(MeasureProtocol::named("cold-l2-v2").name(), "cold-l2-v2");
  EXPECT_EQ(MeasureProtocol::named("cold-l2-v3").name(), "cold-l2-v3");
  EXPECT_EQ(MeasureProtocol::named("hot-graph-v1").name(), "hot-graph-v1");
  EXPECT_EQ(MeasureProtocol::named("isolated").name(), "isolated-v1");
  for (const char* bad : {"cold-l2-v1", "cold-l2-v4", "warm", ""}) {
    const auto e = error_of([&] { MeasureProtocol::named(bad); });
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e->what()).find("cold-l2-v3"), std::string::npos) << e->what();
  }
  // --between's filter: a kind selects every version, a name only itself.
  EXPECT_TRUE(protocol_selected("cold-l2", "cold-l2-v3"));
  EXPECT_TRUE(protocol_selected("cold-l2", "cold-l2-v2"));
  EXPECT_FALSE(protocol_selected("cold-l2", "hot-graph-v1"));
  EXPECT_TRUE(protocol_selected("cold-l2-v3", "cold-l2-v3"));
  EXPECT_FALSE(protocol_selected("cold-l2-v3", "cold-l2-v2"));
  EXPECT_FALSE(protocol_selected("cold-l2-v2", "cold-l2-v3"));
  EXPECT_TRUE(protocol_selected("", "hot-graph-v1"));
}

}  // namespace
}  // namespace dgt
