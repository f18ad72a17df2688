// Names of measurement protocols as stored with trials, baselines and winners ("cold-l2-v1",
// "hot-graph-v1", ...): "<kind>-v<version>". The kind ("cold-l2", "hot-graph") is what a user tunes
// for (`dgtune sweep --protocol`) and what the loader prefers (dgt::GemmOptions::protocol); the version
// changes when the procedure changes. Plain text, so db/ and loader/ use it without bench/.
#pragma once

#include <string>
#include <string_view>

namespace dgt {

/// The sweep Timer's adaptive single-side cold-L2 protocol (bench/protocol.hpp), and the name given to
/// every trial and baseline stored before schema 7 whose protocol JSON names none.
inline constexpr const char* kSweepTimerProtocol = "cold-l2-v1";

/// The kind of a protocol name: the name without its "-v<digits>" suffix ("hot-graph-v1" ->
/// "hot-graph"). A name without such a suffix is its own kind.
std::string protocol_kind_of(std::string_view protocol_name);

/// Throws Error(kUsage) naming the value and the choices unless `kind` is "cold-l2" or "hot-graph".
void check_protocol_kind(std::string_view kind, std::string_view what);

}  // namespace dgt
