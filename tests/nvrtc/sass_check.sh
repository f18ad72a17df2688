#!/usr/bin/env bash
# ctest nvrtc_sass: finds (or installs, see scripts/common.sh ensure_cuobjdump) cuobjdump and runs the
# SASS checks of dgtune_nvrtc_tests. Exit 77 (ctest SKIP) only when no cuobjdump can be obtained.
#   tests/nvrtc/sass_check.sh path/to/dgtune_nvrtc_tests
set -uo pipefail
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
set +e
tool=$(ensure_cuobjdump)
if [ -z "$tool" ]; then
  echo "SKIP: no cuobjdump on PATH, in the CUDA toolkit or installable with pip (nvidia-cuda-cuobjdump); set DGT_CUOBJDUMP" >&2
  exit 77
fi
echo "using cuobjdump: $tool" >&2
DGT_CUOBJDUMP=$tool exec "$BIN" --gtest_filter='Sass.*'
