// Default locations, from the environment.
#pragma once

#include <string>
#include <vector>

namespace dgt {

/// The preferred cubin cache directory: the first of cache_dir_candidates("") ($DGTUNE_CACHE_DIR, else
/// $XDG_CACHE_HOME/dgtune, else ~/.cache/dgtune, else <temp dir>/dgtune-cache-<uid>), usable or not.
std::string default_cache_dir();

/// The cubin cache directories to try, in order, without duplicates: `requested` (else $DGTUNE_CACHE_DIR),
/// $XDG_CACHE_HOME/dgtune, $HOME/.cache/dgtune, then <temp dir>/dgtune-cache-<uid> (per user, so one user's
/// files never block another's). Unset or empty variables are skipped, and so are a relative $XDG_CACHE_HOME and
/// $HOME (the XDG base directory rule: a relative value is invalid; it would put folders in the working directory).
std::vector<std::string> cache_dir_candidates(const std::string& requested);

/// The first of cache_dir_candidates(requested) that can be created and written (a probe file is created
/// and removed). When it is not the first, logs ONE warning naming the unusable directory, why, and the
/// one used. Throws Error(kIo) listing every directory tried and why when none is usable.
std::string usable_cache_dir(const std::string& requested);

/// The CLI's tuning database: `explicit_path` if non-empty, else $DGTUNE_DB, else results/tuning.db below the
/// working directory; made absolute (not resolving symbolic links), so every message names the file exactly.
std::string resolve_db_path(const std::string& explicit_path);

/// The run-time loader's tuning database: `explicit_path` if non-empty, else $DGTUNE_DB, else "" (no DB: the
/// loader runs untuned, default configs). Never a path below the working directory: an application's working
/// directory says nothing about where its tuning data is. Made absolute like resolve_db_path().
std::string loader_db_path(const std::string& explicit_path);

/// Absolute path of the running executable (/proc/self/exe resolved), for starting copies of it (the
/// sweep's worker processes). Throws Error(kIo) when /proc is not readable.
std::string this_executable_path();

}  // namespace dgt
