// What a tuning session measures with: DB and cache paths, the device, the protocol and the input seed.
// Shared by the in-process session (tune/session.hpp), the device bench and the worker process.
#pragma once

#include <cstdint>
#include <string>

#include "bench/measure_protocol.hpp"

namespace dgt {

struct SessionOptions {
  std::string db_path;           ///< resolved by the caller (resolve_db_path)
  std::string db_flag = "--db";  ///< how the user named db_path ("--db", "$DGTUNE_DB"), for messages
  std::string cache_dir;         ///< empty = default_cache_dir()
  int device = 0;
  /// What candidates and baselines are timed under (`dgtune sweep --protocol`):
  ///   kColdL2: the adaptive single-side Timer with `protocol` (stored as "cold-l2-v1"; every trial stored
  ///            before sweeps had a choice was timed so, which keeps their resume valid);
  ///   kHotGraph: the interleaved engine's hot-graph protocol (bench/device_sides.hpp) with one side and
  ///            `hot_graph_rounds` rounds: warm-up, a CUDA graph of graph_launches back-to-back launches,
  ///            time per launch = replay / graph_launches, warm L2; a candidate's output is verified again
  ///            after a replay (stored as "hot-graph-v1").
  /// Trials, baselines, sweep states and winners are stored per protocol name.
  ProtocolKind kind = ProtocolKind::kColdL2;
  MeasureProtocol protocol = MeasureProtocol::cold_l2_adaptive();  ///< kColdL2: the Timer's settings (cold-l2-v1)
  int hot_graph_rounds = 10;  ///< kHotGraph: rounds (samples) per candidate and per cuBLASLt algorithm, >= 1

  /// The engine protocol of kHotGraph (MeasureProtocol::hot_graph() with hot_graph_rounds rounds).
  MeasureProtocol hot_graph() const;
  /// The protocol name trials are stored and resumed under: "cold-l2-v1" or "hot-graph-v1".
  std::string protocol_name() const;
  /// The protocol JSON stored with every trial and baseline (MeasureProtocol::to_json() of cold-l2-v1 or hot-graph-v1).
  std::string protocol_json() const;
  uint64_t seed = 20261129;  ///< input fill seed (per problem: seed ^ hash(problem key))
  int compile_threads = 0;   ///< 0 = all cores
};

}  // namespace dgt
