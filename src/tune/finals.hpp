// The sweep's finals (docs/measurement.md "Finals"): after a cold-l2 sweep has timed every candidate of a shape one
// at a time (cold-l2-v1), its best few and cuBLASLt's stored algorithms are timed again together in interleaved rounds
// (cold-l2-v2, the protocol `dgtune compare` measures under) and stored under that protocol, so the loader's winner and
// its dgtune-or-cuBLASLt backend are decided by times taken in the same rounds, at the same clocks.
//
// Why: on the H200 the single-side timer's samples of a power-limited shape ran at 855-1980 MHz, and the sweep's pick
// was 0.4-1.5% slower than the best of the same configs timed round-robin on 4 of 6 shapes
// (results/h200/fast-lookahead-2026-12-04.md).
#pragma once

#include <string>
#include <vector>

#include "bench/measure_protocol.hpp"
#include "records/records.hpp"

namespace dgt {

/// A finalist's median may be at most this much above the best candidate's (1.05 = 5%): a config 5% slower
/// one at a time is not a config the rounds would make the winner.
inline constexpr double kFinalsWithin = 1.05;

/// What one shape's finals time: verified trials of the sweep (their configs) and stored cuBLASLt baselines (their
/// 64-byte algorithms), all on the current shape's buffers.
struct FinalsRequest {
  std::vector<TrialRecord> finalists;
  std::vector<BaselineRecord> baselines;  ///< cublaslt-default and/or cublaslt-tuned, each with its algo_data
  int rounds = 20;                        ///< rounds of the interleaved engine, >= 1
};

/// What the finals measured: one record per finalist and per baseline of the request, in the same order, under
/// finals_protocol(rounds). A finalist whose output fails the check after the rounds is kVerifyFailed; a baseline
/// whose algorithm the heuristic no longer returns is left out.
struct FinalsResult {
  std::vector<TrialRecord> trials;
  std::vector<BaselineRecord> baselines;
};

/// The protocol finals are timed and stored under: the engine's cold-l2 (cold-l2-v2) with `rounds` rounds.
MeasureProtocol finals_protocol(int rounds);

/// The finalists of a shape among `trials` (one protocol; TuningDbReader::trials order or any): the ok trials with a
/// timing, fastest first (ties by config key), at most `count`, each within `within` x the fastest median. Empty when
/// count < 1 or no trial is ok.
std::vector<TrialRecord> select_finalists(std::vector<TrialRecord> trials, int count, double within = kFinalsWithin);

/// Adds to `finalists` the configs that earlier finals of the shape stored an ok trial for (`earlier_finals`, trials
/// under finals_protocol's name) and that are not finalists already, each as its trial among `sweep_trials` (the
/// sweep protocol's; a config without one there is skipped). So every finals run times all of the shape's finals
/// configs together again, and its winner never compares times of two runs.
void add_earlier_finalists(std::vector<TrialRecord>& finalists, const std::vector<TrialRecord>& sweep_trials,
                           const std::vector<TrialRecord>& earlier_finals);

/// True for a stored baseline the finals can replay: status ok, a timing and a 64-byte algorithm.
bool finals_can_replay(const BaselineRecord& b);

}  // namespace dgt
