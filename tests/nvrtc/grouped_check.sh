#!/usr/bin/env bash
# ctest nvrtc_grouped_compiles: the grouped kernels' spill and SASS checks (GroupedCompiles.*) with cuobjdump found
# (or installed) as for nvrtc_sass; without one the spill checks still run and the SASS checks are reported skipped.
#   tests/nvrtc/grouped_check.sh path/to/dgtune_nvrtc_tests
set -uo pipefail
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
tool=$(ensure_cuobjdump)
if [ -n "$tool" ]; then
  export PATH="$(nvdisasm_dir_for "$tool"):$PATH" DGT_CUOBJDUMP=$tool
fi
exec "$BIN" --gtest_filter='GroupedCompiles.*'
