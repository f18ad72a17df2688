// The text of `dgtune export` (also written by `dgtune tune-model`).
#pragma once

#include <string>

namespace dgt::cli {

/// The winners of device `device` (row id or hardware key; empty: the DB's only device) of the DB at `path`, opened
/// read-only, as `format` ("table" | "csv" | "json" | "md" | "cpp") with `columns` ("short" | "all"; empty: short for
/// table and md, all for csv and json). Throws Error(kUsage) for a bad combination or device, Error(kSqlite) for a DB
/// that cannot be read.
std::string export_text(const std::string& path, const std::string& device, const std::string& format,
                        const std::string& columns);

}  // namespace dgt::cli
