// Input files the user names (--shapes, --space, --baseline, a --db opened read-only): one rule for all
// of them. A file that is missing, a directory, a device or unreadable is bad input (Error(kUsage),
// exit 2), the same for every flag; only a failure while writing output is an I/O error (exit 1).
#pragma once

#include <string>
#include <string_view>

namespace dgt {

/// Checks that `path` can be read as the input `what` (e.g. "shapes file", "--db"): it exists, is a
/// regular file or a pipe (so `--shapes <(...)` works; a directory or a device such as /dev/zero is
/// refused, never read forever) and opens for reading; a pipe is only checked for read permission, never opened (a
/// named pipe's writer would be used up by the check, and the one read of the content would wait forever). Throws
/// Error(kUsage) "cannot read WHAT 'PATH': REASON" otherwise, the path escaped (core/escape.hpp).
void require_input_file(const std::string& path, std::string_view what);

/// require_input_file() for an input that must be a regular file, a tuning DB: a FIFO is refused too (SQLite would
/// block forever reading one), named as what it is. Opens nothing, so a FIFO cannot block the check itself.
void require_regular_input_file(const std::string& path, std::string_view what);

/// require_input_file(), then the whole content, from one open (a pipe can be read once). A read error part-way is
/// Error(kUsage) as well.
std::string read_input_file(const std::string& path, std::string_view what);

}  // namespace dgt
