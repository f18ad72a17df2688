// Default locations, from the environment.
#pragma once

#include <string>

namespace dgt {

/// Cubin cache directory: $DGTUNE_CACHE_DIR, else $XDG_CACHE_HOME/dgtune, else ~/.cache/dgtune,
/// else /tmp/dgtune-cache.
std::string default_cache_dir();

/// Tuning database: `explicit_path` if non-empty, else $DGTUNE_DB, else results/tuning.db.
std::string resolve_db_path(const std::string& explicit_path);

}  // namespace dgt
