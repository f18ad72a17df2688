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
  echo "SKIP: no cuobjdump + nvdisasm on PATH, in the CUDA toolkit or installable with pip (nvidia-cuda-cuobjdump," \
    "nvidia-cuda-nvdisasm); set DGT_CUOBJDUMP" >&2
  exit 77
fi
dis=$(nvdisasm_dir_for "$tool")
echo "using cuobjdump: $tool, nvdisasm in $dis" >&2
PATH="$dis:$PATH" DGT_CUOBJDUMP=$tool exec "$BIN" --gtest_filter='Sass.*'
