// Symbol visibility of dgtune's public API. The runtime library is built with hidden visibility
// (-fvisibility=hidden): only what is marked DGT_API is exported from libdgtune_runtime.so, so its private copies
// of SQLite, fmt, spdlog and nlohmann/json never meet those of the process that loads it.
#pragma once

#if defined(_WIN32)
#define DGT_API
#else
#define DGT_API __attribute__((visibility("default")))
#endif
