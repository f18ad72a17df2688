#!/usr/bin/env bash
# Runs the small-shape GPU test under compute-sanitizer (tool $1: memcheck | racecheck).
# Exit 77 (ctest SKIP) without a GPU or without compute-sanitizer.
set -u
tool=$1 bin=$2
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no NVIDIA GPU on this machine"; exit 77; fi
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -z "$san" ]; then echo "SKIP: compute-sanitizer not found"; exit 77; fi
exec "$san" --tool "$tool" --error-exitcode 1 "$bin" --gtest_filter='Sanitize.*'
