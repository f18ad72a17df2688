// The GPU-free parts of the serving path (docs/loader.md "Serving"): the capture rule's decision, the M a warm-up
// resolves, the loader's shape keys and the per-thread tensor-map cache.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "launch/tensor_map_cache.hpp"
#include "loader/capture_rule.hpp"
#include "loader/shape_key.hpp"
#include "problem/model_gemms.hpp"

namespace dgt {
namespace {

TEST(CaptureRule, OutsideCaptureEveryMissResolves) {
  for (bool warmed : {false, true})
    for (CaptureMiss policy : {CaptureMiss::kCublasLt, CaptureMiss::kError})
      EXPECT_EQ(miss_action(false, warmed, false, policy), MissAction::kResolve);
}

TEST(CaptureRule, InsideCaptureOnlyAWarmedFamilyResolves) {
  EXPECT_EQ(miss_action(true, true, false, CaptureMiss::kError), MissAction::kResolveFromWarmFamily);
  EXPECT_EQ(miss_action(true, true, false, CaptureMiss::kCublasLt), MissAction::kResolveFromWarmFamily);
  // Not warmed: the policy decides.
  EXPECT_EQ(miss_action(true, false, false, CaptureMiss::kCublasLt), MissAction::kCublasLtHeuristic);
  EXPECT_EQ(miss_action(true, false, false, CaptureMiss::kError), MissAction::kRefuse);
  // Warmed, but this M needs a kernel or scratch the warm-up did not prepare: treated as not warmed.
  EXPECT_EQ(miss_action(true, true, true, CaptureMiss::kCublasLt), MissAction::kCublasLtHeuristic);
  EXPECT_EQ(miss_action(true, true, true, CaptureMiss::kError), MissAction::kRefuse);
}

TEST(WarmMValues, DefaultLadderJoinedWithTheTunedM) {
  const std::vector<int64_t> ladder = default_m_ladder();
  const std::vector<int64_t> ms = warm_m_values({}, {200, 64, 200, 20000});
  // Every ladder value, plus 200 and 20000 once each (64 is on the ladder), ascending.
  EXPECT_EQ(ms.size(), ladder.size() + 2);
  EXPECT_TRUE(std::is_sorted(ms.begin(), ms.end()));
  EXPECT_EQ(ms.front(), 1);
  EXPECT_EQ(ms.back(), 20000);
  EXPECT_EQ(std::count(ms.begin(), ms.end(), 200), 1);
  EXPECT_EQ(std::count(ms.begin(), ms.end(), 16384), 1);
}

TEST(WarmMValues, RequestedListReplacesTheLadder) {
  EXPECT_EQ(warm_m_values({5, 3, 5}, {3, 7}), (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(warm_m_values({1}, {}), (std::vector<int64_t>{1}));
}

TEST(WarmMValues, RefusesAnMOutsideTheRange) {
  try {
    warm_m_values({4, 0}, {});
    FAIL() << "M = 0 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("M = 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(warm_m_values({int64_t(1) << 31}, {}), Error);
}

TEST(ShapeKey, EveryTypedFieldRoundTrips) {
  Problem p = Problem::dense(77, 2112, 7168);
  p.lda = 7296, p.ldb = 7168, p.ldd = 2120;
  for (DType a : {DType::kE4M3, DType::kE5M2})
    for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3})
      for (ScaleMode s : {ScaleMode::kPerTensor, ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d})
        for (Accum acc : {Accum::kPromote, Accum::kFast})
          for (Bias b : {Bias::kNone, Bias::kBF16})
            for (Act act : {Act::kNone, Act::kRelu, Act::kGeluTanh}) {
              Problem q = p;
              q.a = a, q.b = a == DType::kE4M3 ? DType::kE5M2 : DType::kE4M3, q.d = d, q.scale = s, q.accum = acc;
              q.bias = b, q.act = act;
              const ShapeKey key = shape_key_of(q);
              EXPECT_EQ(make_problem(key), q) << q.key();
              EXPECT_EQ(key.family().m, 0);
              EXPECT_EQ(make_problem(key.family()).n, q.n);
            }
  // Two problems that differ only in M share a family, and differ as shapes.
  Problem q = p;
  q.m = 78;
  EXPECT_EQ(shape_key_of(p).family(), shape_key_of(q).family());
  EXPECT_FALSE(shape_key_of(p) == shape_key_of(q));
  EXPECT_NE(ShapeKeyHash{}(shape_key_of(p)), ShapeKeyHash{}(shape_key_of(q)));
}

// A map made by an encoder that writes `tag` into the first bytes, so a test can see which call made it.
CUtensorMap tagged(uint64_t tag) {
  CUtensorMap m{};
  std::memcpy(&m, &tag, sizeof tag);
  return m;
}
uint64_t tag_of(const CUtensorMap& m) {
  uint64_t t;
  std::memcpy(&t, &m, sizeof t);
  return t;
}

TEST(TensorMapCache, SameKeyEncodesOnceOtherKeysEncodeAgain) {
  const uint64_t owner = next_tensor_map_owner_id(), other = next_tensor_map_owner_id();
  ASSERT_NE(owner, 0u);
  ASSERT_NE(owner, other);
  int encodes = 0;
  auto enc = [&](uint64_t tag) {
    return [&encodes, tag] {
      ++encodes;
      return tagged(tag);
    };
  };
  alignas(64) char buf[4][64];
  CUtensorMap out;
  cached_tensor_map(owner, 0, buf[0], out, enc(10));
  EXPECT_EQ(tag_of(out), 10u);
  cached_tensor_map(owner, 0, buf[0], out, enc(11));  // hit: the first map, no encode
  EXPECT_EQ(tag_of(out), 10u);
  EXPECT_EQ(encodes, 1);
  cached_tensor_map(owner, 0, buf[1], out, enc(12));  // another base address
  EXPECT_EQ(tag_of(out), 12u);
  cached_tensor_map(owner, 1, buf[0], out, enc(13));  // another operand slot
  EXPECT_EQ(tag_of(out), 13u);
  cached_tensor_map(other, 0, buf[0], out, enc(14));  // another plan
  EXPECT_EQ(tag_of(out), 14u);
  EXPECT_EQ(encodes, 4);
  // Rotating over 8 buffers of 4 plans with 3 operands each stays in the cache (a serving loop's pattern).
  std::vector<uint64_t> owners;
  for (int i = 0; i < 4; ++i) owners.push_back(next_tensor_map_owner_id());
  alignas(64) static char bufs[8][256];
  for (int round = 0; round < 2; ++round)
    for (uint64_t o : owners)
      for (int slot = 0; slot < 3; ++slot)
        for (auto& b : bufs) cached_tensor_map(o, slot, b, out, enc(o * 100 + slot));
  EXPECT_LE(encodes, 4 + 96 + 24) << "most of the second round should hit (a collision re-encodes)";
  // Every hit returns its own key's map.
  for (uint64_t o : owners)
    for (int slot = 0; slot < 3; ++slot)
      for (auto& b : bufs) {
        cached_tensor_map(o, slot, b, out, enc(o * 100 + slot));
        EXPECT_EQ(tag_of(out), o * 100 + slot);
      }
}

TEST(TensorMapCache, OwnerZeroNeverCachesAndAThrowingEncodeCachesNothing) {
  int encodes = 0;
  alignas(64) char buf[64];
  CUtensorMap out;
  for (int i = 0; i < 3; ++i)
    cached_tensor_map(0, 0, buf, out, [&] {
      ++encodes;
      return tagged(1);
    });
  EXPECT_EQ(encodes, 3);
  const uint64_t owner = next_tensor_map_owner_id();
  EXPECT_THROW(cached_tensor_map(owner, 2, buf, out, []() -> CUtensorMap { throw std::runtime_error("bad"); }),
               std::runtime_error);
  cached_tensor_map(owner, 2, buf, out, [&] {
    ++encodes;
    return tagged(7);
  });
  EXPECT_EQ(encodes, 4);
  EXPECT_EQ(tag_of(out), 7u);
}

}  // namespace
}  // namespace dgt
