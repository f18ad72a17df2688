#include "tune/session_options.hpp"

#include "records/protocol_name.hpp"

namespace dgt {

MeasureProtocol SessionOptions::hot_graph() const {
  MeasureProtocol p = MeasureProtocol::hot_graph();
  p.rounds = hot_graph_rounds;
  return p;
}

std::string SessionOptions::protocol_name() const {
  return kind == ProtocolKind::kColdL2 ? std::string(kSweepTimerProtocol) : hot_graph().name();
}

std::string SessionOptions::protocol_json() const {
  return kind == ProtocolKind::kColdL2 ? protocol.to_json() : hot_graph().to_json();
}

}  // namespace dgt
