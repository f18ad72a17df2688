#!/usr/bin/env bash
# How a GPU CI runner uses `dgtune gate`, the CI performance gate. Two jobs:
#
#   record   (on the main branch, after a sweep or on a schedule): measure now and store the baseline file
#            as a CI artifact/cache entry.
#   check    (on every change): measure the change's build against that baseline; the exit code is the verdict:
#            0 pass, 3 regression (or a candidate that no longer verifies), 1 error (outranks a regression; the
#            log names the shapes), 2 bad input (e.g. a baseline recorded on other hardware).
#
# Usage: scripts/gate_ci_example.sh record|check [BASELINE.json]
# Environment: DGTUNE (binary, default build/dgtune), DGTUNE_DB (tuning DB the loader's choice is read from),
# GATE_SHAPES (default configs/shapes/deepseek-v3.txt), GATE_HISTORY (a persistent path on the runner, so the
# history survives workspace cleanups), GATE_OUT (reports directory, default gate-out).
set -euo pipefail
usage() { echo "usage: $0 record|check [BASELINE.json]   (environment: see the comment at the top of $0)"; }
# The arguments first: --help, a missing or unknown mode create nothing (no reports directory, no history folder).
case "${1:-}" in
  record | check) ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

mode=$1
baseline=${2:-gate-baseline.json}
dgtune=${DGTUNE:-build/dgtune}
shapes=${GATE_SHAPES:-configs/shapes/deepseek-v3.txt}
history=${GATE_HISTORY:-$HOME/.cache/dgtune/gate-history.db}
out=${GATE_OUT:-gate-out}
mkdir -p "$out" "$(dirname "$history")"

case "$mode" in
  record)
    # 20 interleaved rounds per shape under the cold-L2 protocol (the default); --protocol hot-graph for
    # serving stacks that replay CUDA graphs. The baseline holds every per-round sample.
    "$dgtune" gate --record "$baseline" --shapes "$shapes" --rounds 20 --format md | tee "$out/record.md"
    ;;
  check)
    set +e
    "$dgtune" gate --baseline "$baseline" --shapes "$shapes" \
      --threshold 5 --confidence 0.95 \
      --junit "$out/gate-junit.xml" --markdown "$out/gate-summary.md" \
      --history "$history" --format table
    rc=$?
    set -e
    # Slow drift across many small changes: the series of one shape over every gate run on this runner.
    "$dgtune" history --history "$history" --shape 128x2112x7168 --format csv > "$out/history-decode.csv" 2>/dev/null || true
    case $rc in
      0) echo "gate: pass" ;;
      3) echo "gate: performance regression (see $out/gate-summary.md; post it as the PR comment)" ;;
      1) echo "gate: error while measuring (the log names the shapes); the result is not a verdict" ;;
      2) echo "gate: bad input (baseline from other hardware, bad shapes file or flags)" ;;
    esac
    exit $rc
    ;;
esac
