// The tuned problem family the serving-path and bundle GPU tests share: a temporary directory and a DB with real
// winners (swept on this GPU) of N = 1536, K = 1024 at three M, with cuBLASLt's tuned algorithms stored beside them.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "harness.hpp"
#include "tune/session.hpp"

namespace dgt::test {

/// A fresh directory under /tmp, removed with everything in it at destruction.
struct TempDir {
  std::string path;
  explicit TempDir(const char* prefix = "dgtune-test") {
    std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

constexpr int64_t kFamilyN = 1536, kFamilyK = 1024;

/// DIR/tuning.db with winners of the (kFamilyN, kFamilyK) family at M = 1 (split-K: the family's scratch), 256 and
/// 1024, each measured now with cuBLASLt's tuned algorithm stored beside it. Returns the path.
inline std::string tuned_family_db(const std::string& dir) {
  const std::string path = dir + "/tuning.db";
  SessionOptions so;
  so.db_path = path;
  so.protocol.max_seconds = 0.1;
  TuningSession session(so);
  const std::pair<int64_t, const char*> winners[] = {{1, "64x64x128_s12_wg1_sw128_c1x1_rm8_direct_sk4_sm0"},
                                                     {256, "64x32x128_s4_wg1_sw128_c1x1_rm8_direct_sk1_sm0"},
                                                     {1024, "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0"}};
  for (const auto& [m, key] : winners) {
    std::optional<std::pair<BaselineRecord, BaselineRecord>> baselines;
    const TrialRecord t =
        session.run_one(Problem::dense(m, kFamilyN, kFamilyK), KernelConfig::parse_key(key), true, &baselines);
    EXPECT_EQ(t.status, TrialStatus::kOk) << t.error;
  }
  return path;
}

}  // namespace dgt::test
