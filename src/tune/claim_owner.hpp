// Who claims a candidate in the tuning DB (TuningDb::claim_trial) and when such a claim is stale, so
// that concurrent sweeps share the work and a killed sweep's claims are taken over.
#pragma once

#include <chrono>
#include <string>

namespace dgt {

/// Claims of a process on another host cannot be checked: they are taken over this long after they were
/// made (a candidate takes seconds to measure; sharing one SQLite file across hosts is not advised anyway).
inline constexpr std::chrono::minutes kForeignClaimLease{30};

/// This process as a claim owner: "host=H boot=B pid=P start=S" (B: the kernel's boot id, S: the process
/// start time in clock ticks since boot, so a reused pid or a reboot never looks like the same owner).
std::string this_process_owner();

/// True when the owner of a claim is gone: on this host (same boot) when no process has that pid and start
/// time, or it is a zombie; after a reboot always; on another host when `claimed_at` (ISO 8601 UTC, as
/// stored) is older than kForeignClaimLease; an owner text that does not parse is stale.
bool claim_is_stale(const std::string& owner, const std::string& claimed_at);

}  // namespace dgt
