#!/usr/bin/env bash
# Copies a Release build without object files and static libraries (what the GPU machine needs:
# executables, CTest files, generated sources) so that it fits the device tool's 64 MiB carry limit.
#   bash scripts/lab/slim_build.sh [BUILD [DEST]]    default: build -> build-gpu
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=${1:-$ROOT/build}
DEST=${2:-$ROOT/build-gpu}
rm -rf "$DEST"
mkdir -p "$DEST"
(cd "$SRC" && find . -type f ! -name '*.o' ! -name '*.a' ! -name '*.d' ! -path './CMakeFiles/*/*.o' -print0 |
  xargs -0 -I{} cp --parents {} "$DEST/")
# The CTest files name the build directory by its absolute path: keep the original path reachable.
echo "$(cd "$SRC" && pwd)" >"$DEST/.original_build_dir"
du -sh "$DEST"
