#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test (ctest). Without a GPU the GPU
# tests report SKIPPED (exit code 77). Extra arguments go to ctest (e.g. -L unit).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build
if have_build_deps; then  # not on the GPU machine (no registry there: prebuilt builds only)
  ensure_numpy
  ensure_test_python_packages
  ensure_torch_env
fi
export DGT_TOOLS_DIR
gpu_present || say "no NVIDIA GPU: GPU tests will be skipped"
cd "$BUILD"
exec ctest --output-on-failure "$@"
