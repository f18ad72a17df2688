#!/usr/bin/env bash
# README command 1: install what is missing, build, and sweep configs/shapes/smoke.txt on GPU 0 into
# results/tuning.db, printing the winners table. Extra arguments go to `dgtune sweep`.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build
if ! gpu_present; then
  say "no NVIDIA GPU found (nvidia-smi -L failed): dgtune sweep needs an sm_90 GPU (H100/H200). The build is ready in $BUILD."
  exit 1
fi
cd "$ROOT"
exec "$BUILD/dgtune" sweep --shapes "${DGTUNE_SHAPES:-configs/shapes/smoke.txt}" --db "${DGTUNE_DB:-results/tuning.db}" --device "${DGTUNE_DEVICE:-0}" "$@"
