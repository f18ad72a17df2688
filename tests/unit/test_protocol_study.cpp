// The protocol study's host side (docs/measurement.md "The protocol study"): the fixed and
// reversed side orders, the gap and the isolated-v1 protocol in MeasureProtocol's JSON and checks, compare's
// refusals, and the per-side SM clock columns of compare's table. No GPU, no timing.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/measure_protocol.hpp"
#include "bench/rounds.hpp"
#include "bench/side_order.hpp"
#include "core/error.hpp"
#include "eval/compare_run.hpp"
#include "eval/compare_tables.hpp"

namespace dgt {
namespace {

std::string message_of(const std::function<void()>& f, ErrorKind want) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(SideOrder, FixedAndReversedAreTheSamePermutationEveryRound) {
  for (int k = 1; k <= 5; ++k) {
    std::vector<int> up(static_cast<size_t>(k));
    std::iota(up.begin(), up.end(), 0);
    const std::vector<int> down(up.rbegin(), up.rend());
    for (int round = 0; round < 12; ++round) {
      EXPECT_EQ(side_order(SideOrder::kFixed, k, round), up) << k << " " << round;
      EXPECT_EQ(side_order(SideOrder::kReversed, k, round), down) << k << " " << round;
      EXPECT_EQ(side_order(SideOrder::kWilliams, k, round), round_order(k, round));
    }
  }
  // compare's sides: dgtune (0), cuBLASLt-tuned (1), default (2), copy limit (3). fixed: dgtune runs first and
  // cuBLASLt-tuned right after it; reversed: cuBLASLt-tuned runs right before dgtune, which is last.
  EXPECT_EQ(side_order(SideOrder::kFixed, 4, 7), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(side_order(SideOrder::kReversed, 4, 7), (std::vector<int>{3, 2, 1, 0}));
  EXPECT_THROW(side_order(SideOrder::kFixed, 0, 0), Error);
  EXPECT_THROW(side_order(SideOrder::kReversed, 2, -1), Error);
}

TEST(SideOrder, NamesParseAndRefusalsNameTheOption) {
  for (SideOrder o : {SideOrder::kWilliams, SideOrder::kFixed, SideOrder::kReversed})
    EXPECT_EQ(parse_side_order(to_string(o)), o);
  const std::string m = message_of([] { parse_side_order("random"); }, ErrorKind::kUsage);
  EXPECT_TRUE(has(m, "--side-order 'random'")) << m;
  EXPECT_TRUE(has(m, "williams")) << m;
  EXPECT_TRUE(has(m, "fixed")) << m;
  EXPECT_TRUE(has(m, "reversed")) << m;
}

/// A source whose side times depend only on the side; records the orders it was asked for.
class OrderSource : public SampleSource {
 public:
  explicit OrderSource(int k) : k_(k) {}
  int side_count() const override { return k_; }
  std::string side_label(int side) const override { return "s" + std::to_string(side); }
  void prepare() override {}
  std::vector<RawSample> run_round(std::span<const int> order) override {
    orders.emplace_back(order.begin(), order.end());
    std::vector<RawSample> out;
    for (int s : order) out.push_back({10.0 + s, 1900.0 - 10 * s});
    return out;
  }
  std::vector<std::vector<int>> orders;

 private:
  int k_;
};

TEST(SideOrder, TheRoundRunnerFollowsTheOrderAndRecordsPositions) {
  for (SideOrder o : {SideOrder::kFixed, SideOrder::kReversed}) {
    OrderSource src(3);
    RoundsOptions opts;
    opts.rounds = 4;
    opts.order = o;
    const RoundsResult r = run_rounds(src, opts);
    ASSERT_EQ(src.orders.size(), 4u);
    for (const auto& ord : src.orders) EXPECT_EQ(ord, side_order(o, 3, 0));
    for (const Sample& s : r.samples) EXPECT_EQ(s.position, o == SideOrder::kFixed ? s.side : 2 - s.side);
    EXPECT_DOUBLE_EQ(r.sides[1].median_clock_mhz, 1890);
  }
  OrderSource src(3);
  (void)run_rounds(src, RoundsOptions{});  // the default stays Williams
  EXPECT_EQ(src.orders[1], round_order(3, 1));
}

TEST(ProtocolStudy, StandardJsonIsUnchangedAndVariantsAreRecorded) {
  // The standard protocols' JSON (stored with every measurement) does not change: no "gap_us", order williams.
  for (const MeasureProtocol& p : {MeasureProtocol::cold_l2(), MeasureProtocol::hot_graph()}) {
    const auto j = nlohmann::json::parse(p.to_json());
    EXPECT_FALSE(j.contains("gap_us"));
    EXPECT_EQ(j.at("order"), "williams");
    EXPECT_FALSE(j.contains("launches_per_sample"));
    EXPECT_TRUE(p.is_standard());
  }
  MeasureProtocol v = MeasureProtocol::cold_l2();
  v.order = SideOrder::kReversed;
  v.gap_us = 200;
  EXPECT_FALSE(v.is_standard());
  EXPECT_EQ(v.name(), "cold-l2-v2");  // same procedure, same name: the JSON tells the variant
  const auto j = nlohmann::json::parse(v.to_json());
  EXPECT_EQ(j.at("order"), "reversed");
  EXPECT_DOUBLE_EQ(j.at("gap_us").get<double>(), 200);
  const MeasureProtocol back = MeasureProtocol::from_json(v.to_json());
  EXPECT_EQ(back.order, SideOrder::kReversed);
  EXPECT_DOUBLE_EQ(back.gap_us, 200);
  EXPECT_EQ(back.to_json(), v.to_json());
  EXPECT_THROW(MeasureProtocol::from_json(R"({"kind":"cold-l2","version":2,"order":"sideways"})"), Error);

  MeasureProtocol bad = MeasureProtocol::hot_graph();
  bad.gap_us = -1;
  EXPECT_TRUE(has(message_of([&] { bad.validate(); }, ErrorKind::kUsage), "gap_us = -1"));
  bad.gap_us = std::nan("");
  EXPECT_THROW(bad.validate(), Error);
}

TEST(ProtocolStudy, IsolatedProtocolNameAndRecordFields) {
  const MeasureProtocol p = MeasureProtocol::isolated();
  EXPECT_EQ(p.kind, ProtocolKind::kIsolated);
  EXPECT_EQ(p.name(), "isolated-v1");
  EXPECT_EQ(MeasureProtocol::of(ProtocolKind::kIsolated).name(), "isolated-v1");
  EXPECT_EQ(parse_protocol_kind("isolated"), ProtocolKind::kIsolated);
  EXPECT_STREQ(to_string(ProtocolKind::kIsolated), "isolated");
  EXPECT_NO_THROW(p.validate());
  const auto j = nlohmann::json::parse(p.to_json());
  for (const char* key : {"name", "kind", "version", "rounds", "launches_per_sample", "warmup", "flush",
                          "flush_factor_l2", "l2", "clock_probe_us", "clock_floor_fraction", "lead_in_us", "order",
                          "timer", "statistic"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.at("name"), "isolated-v1");
  EXPECT_EQ(j.at("kind"), "isolated");
  EXPECT_EQ(j.at("version"), 1);
  EXPECT_EQ(j.at("launches_per_sample"), 20);
  EXPECT_EQ(j.at("flush"), "write+read");
  EXPECT_FALSE(j.contains("graph_launches"));
  EXPECT_FALSE(j.contains("gap_us"));
  MeasureProtocol q = p;
  q.launches_per_sample = 7;
  q.rounds = 9;
  const MeasureProtocol back = MeasureProtocol::from_json(q.to_json());
  EXPECT_EQ(back.kind, ProtocolKind::kIsolated);
  EXPECT_EQ(back.launches_per_sample, 7);
  EXPECT_EQ(back.rounds, 9);
  EXPECT_EQ(back.to_json(), q.to_json());
  EXPECT_THROW(MeasureProtocol::from_json(R"({"kind":"isolated","version":3})"), Error);
  // Rounds settings do not apply; launches_per_sample >= 1.
  q = p;
  q.order = SideOrder::kFixed;
  EXPECT_TRUE(has(message_of([&] { q.validate(); }, ErrorKind::kUsage), "no round order and no gap"));
  q = p;
  q.gap_us = 50;
  EXPECT_THROW(q.validate(), Error);
  q = p;
  q.launches_per_sample = 0;
  EXPECT_TRUE(has(message_of([&] { q.validate(); }, ErrorKind::kUsage), "launches_per_sample = 0"));
}

// isolated-v2: DeepGEMM's benchmark procedure (a zero fill of 8e9 bytes, then one launch, 30 warm-up samples, 30 timed).
TEST(ProtocolStudy, IsolatedV2IsOneLaunchAfterAZeroFill) {
  const MeasureProtocol p = MeasureProtocol::named("isolated-v2");
  EXPECT_EQ(p.kind, ProtocolKind::kIsolated);
  EXPECT_EQ(p.version(), 2);
  EXPECT_EQ(p.name(), "isolated-v2");
  EXPECT_EQ(p.fill_bytes, 8000000000);
  EXPECT_EQ(p.launches_per_sample, 1);
  EXPECT_EQ(p.warmup, 30);
  EXPECT_EQ(p.rounds, 30);
  EXPECT_NO_THROW(p.validate());
  // "isolated" stays isolated-v1, whose JSON has no fill.
  EXPECT_EQ(MeasureProtocol::named("isolated").name(), "isolated-v1");
  EXPECT_FALSE(nlohmann::json::parse(MeasureProtocol::isolated().to_json()).contains("fill_bytes"));
  const auto j = nlohmann::json::parse(p.to_json());
  EXPECT_EQ(j.at("name"), "isolated-v2");
  EXPECT_EQ(j.at("version"), 2);
  EXPECT_EQ(j.at("fill_bytes"), 8000000000);
  EXPECT_EQ(j.at("flush"), "zero fill of fill_bytes");
  EXPECT_EQ(j.at("launches_per_sample"), 1);
  EXPECT_FALSE(j.contains("flush_factor_l2"));
  MeasureProtocol q = p;
  q.fill_bytes = 4000000000;
  q.rounds = 12;
  const MeasureProtocol back = MeasureProtocol::from_json(q.to_json());
  EXPECT_EQ(back.name(), "isolated-v2");
  EXPECT_EQ(back.fill_bytes, 4000000000);
  EXPECT_EQ(back.rounds, 12);
  EXPECT_EQ(back.warmup, 30);
  EXPECT_EQ(back.to_json(), q.to_json());
  EXPECT_TRUE(has(message_of([] { MeasureProtocol::from_json(R"({"kind":"isolated","version":2,"fill_bytes":0})"); },
                             ErrorKind::kInvalid),
                  "fill_bytes = 0"));
  // One launch per sample; a fill belongs to isolated-v2 alone.
  q = p;
  q.launches_per_sample = 2;
  EXPECT_TRUE(has(message_of([&] { q.validate(); }, ErrorKind::kUsage), "one launch per sample")) << "launches 2";
  MeasureProtocol c = MeasureProtocol::cold_l2();
  c.fill_bytes = 1 << 20;
  EXPECT_TRUE(has(message_of([&] { c.validate(); }, ErrorKind::kInternal), "isolated-v2's alone"));
  EXPECT_TRUE(has(message_of([&] { check_compare_protocol(p, true); }, ErrorKind::kUsage), "--save: isolated-v2"));
  EXPECT_EQ(protocol_detail(p), "samples per side of one launch after a zero fill of 8 GB, sides one at a time");
}

TEST(ProtocolStudy, CompareRefusesWhatCannotBeStoredOrHasNoRounds) {
  EXPECT_NO_THROW(check_compare_protocol(MeasureProtocol::cold_l2(), true));
  EXPECT_NO_THROW(check_compare_protocol(MeasureProtocol::hot_graph(), true));
  EXPECT_NO_THROW(check_compare_protocol(MeasureProtocol::isolated(), false));
  MeasureProtocol v = MeasureProtocol::cold_l2();
  v.order = SideOrder::kFixed;
  EXPECT_NO_THROW(check_compare_protocol(v, false));  // measured and printed, not saved
  std::string m = message_of([&] { check_compare_protocol(v, true); }, ErrorKind::kUsage);
  EXPECT_TRUE(has(m, "--save: --side-order fixed")) << m;
  v = MeasureProtocol::hot_graph();
  v.gap_us = 200;
  m = message_of([&] { check_compare_protocol(v, true); }, ErrorKind::kUsage);
  EXPECT_TRUE(has(m, "--gap-us 200")) << m;
  EXPECT_TRUE(has(m, "hot-graph-v1")) << m;
  m = message_of([&] { check_compare_protocol(MeasureProtocol::isolated(), true); }, ErrorKind::kUsage);
  EXPECT_TRUE(has(m, "--save: isolated-v1")) << m;
  MeasureProtocol iso = MeasureProtocol::isolated();
  iso.order = SideOrder::kReversed;
  m = message_of([&] { check_compare_protocol(iso, false); }, ErrorKind::kUsage);
  EXPECT_TRUE(has(m, "--side-order reversed")) << m;
  EXPECT_TRUE(has(m, "isolated-v1 runs one side at a time")) << m;
  // The title says which variant ran.
  EXPECT_EQ(protocol_detail(MeasureProtocol::cold_l2()), "rounds");
  v = MeasureProtocol::cold_l2();
  v.order = SideOrder::kReversed;
  v.gap_us = 200;
  EXPECT_EQ(protocol_detail(v), "rounds, reversed side order, 200 us gap before every sample");
  EXPECT_TRUE(has(protocol_detail(MeasureProtocol::isolated()), "20 back-to-back launches"));
}

const report::Cell& cell(const report::Table& t, size_t row, const std::string& key) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].id == key) return t.rows.at(row).at(i);
  throw std::runtime_error("no column " + key);
}

double number(const report::Cell& c) {
  const auto* n = std::get_if<report::Number>(&c);
  return n ? n->value : std::nan("");
}

TEST(ProtocolStudy, CompareReportsEachSidesMedianClockAndCublasTflops) {
  StoredMeasurement m;
  m.problem = Problem::dense(8192, 8192, 8192);
  m.protocol_name = "cold-l2-v2";
  m.rounds = 5;
  m.reference_clock_mhz = 1980;
  m.clock_floor_mhz = 1485;
  m.sides = {{0, "dgtune", "config", "k", "", "db", 0, std::nullopt},
             {1, kProviderCublasTuned, "provider", "", "", kProviderCublasTuned, 32, std::nullopt}};
  for (int r = 0; r < 5; ++r) {
    m.samples.push_back({0, r, r % 2, 800.0, 1500.0 + r, false});  // dgtune: clocks 1500..1504
    m.samples.push_back({1, r, 1 - r % 2, 820.0, 1600.0 + 2 * r, false});
  }
  CompareShape c;
  c.problem = m.problem;
  c.result = rounds_from_stored(m);
  const report::Table t = compare_tables({c}, stats::PairedOptions{}, "t").at(0);
  EXPECT_DOUBLE_EQ(number(cell(t, 0, "dgtune_sm_clock_mhz_median")), 1502);
  EXPECT_DOUBLE_EQ(number(cell(t, 0, "cublas_tuned_sm_clock_mhz_median")), 1604);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(cell(t, 0, "cublas_default_sm_clock_mhz_median")));
  EXPECT_NEAR(number(cell(t, 0, "cublas_tuned_tflops")), 2.0 * 8192 * 8192 * 8192 / 820e-6 / 1e12, 0.1);
  EXPECT_NEAR(number(cell(t, 0, "x_tuned")), 820.0 / 800.0, 1e-9);
}

}  // namespace
}  // namespace dgt
