#!/usr/bin/env bash
# The timing-protocol study in one device call (docs/measurement.md "The protocol study"): does compare's
# round protocol favour one side? Run from the repository root with the built build/dgtune, on one H200:
#
#   bash tools/protocol_study/study.sh            # writes under $OUT (default ./protocol-study-out)
#
# 8192x8192x8192 and 4096x7168x16384, promote and fast, all four in one shapes file, measured by `dgtune compare`
# under cold-l2-v2 in these variants (one compare call each, most important first):
#   williams (the protocol as it is), reversed, fixed (--side-order), williams + gap, isolated-v1, reversed + gap,
#   fixed + gap (--gap-us $GAP_US), williams again (a control: the run-to-run move of the ratio with nothing changed).
# Each call's JSON and log go to $OUT/<variant>.json / .log; summary.py then writes $OUT/summary.md and
# $OUT/summary.json: per shape and variant the ratio (x = cuBLASLt-tuned us / dgtune us), its move vs williams in
# percent, each side's median SM clock, TFLOPS and cuBLASLt's algorithm (re-screened per call: a change of algorithm
# between variants shows there).
#
# The dgtune side is the loader's choice from $DB (default: results/tuning.db): with the tuning DB of main's sweeps
# carried along it is the stored winner, as in the issue's ratios; without one every shape runs the default config,
# which is enough for the question (does the protocol treat the two sides alike?) but not for the issue's ratios.
# The summary names the config and its source per shape. No sweep runs here: a sweep of these four shapes would
# spend the budget on NVRTC.
#
# Budget: about 6 minutes on one H200. Rounds: $ROUNDS (default 40, a multiple of the Williams period 4 of compare's
# four sides); each call is cut at $CALL_LIMIT_S seconds, and no new call starts after $TOTAL_LIMIT_S seconds.
set -u
BIN=${BIN:-build/dgtune}
OUT=${OUT:-protocol-study-out}
DB=${DB:-results/tuning.db}
ROUNDS=${ROUNDS:-40}
GAP_US=${GAP_US:-200}
ISO_SAMPLES=${ISO_SAMPLES:-20}
ISO_LAUNCHES=${ISO_LAUNCHES:-20}
CALL_LIMIT_S=${CALL_LIMIT_S:-90}
TOTAL_LIMIT_S=${TOTAL_LIMIT_S:-330}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "no dgtune binary at $BIN (build first, or set BIN)" >&2; exit 2; }

shapes="$OUT/shapes.txt"
cat > "$shapes" <<'SHAPES'
# The protocol study's shapes: the two largest of the kernel-v3 large-shape set in both accumulation modes.
8192 8192  8192   accum=promote name=cube-8k-promote
8192 8192  8192   accum=fast    name=cube-8k-fast
4096 7168  16384  accum=promote name=dsv3-4096x7168x16384-promote
4096 7168  16384  accum=fast    name=dsv3-4096x7168x16384-fast
SHAPES

{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "dgtune: $("$BIN" --version 2>&1 | head -1)"
  echo "db: $DB $( [ -f "$DB" ] && echo present || echo 'missing: default configs')"
  echo "rounds: $ROUNDS, gap: $GAP_US us, isolated: $ISO_SAMPLES samples x $ISO_LAUNCHES launches"
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv 2>&1
} > "$OUT/environment.txt"

start=$(date +%s)
# The GPU's SM clock and power draw every 20 ms for the whole study (nvidia-smi's own sampling; its readings lag
# the kernels by up to one sampling period), so each variant's clock and power can be read from the timestamps
# in calls.txt.
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 20 \
    > "$OUT/power.csv" 2>/dev/null &
power_pid=$!
run_variant() {  # NAME ARGS...
  local name=$1
  shift
  local now=$(( $(date +%s) - start ))
  if [ "$now" -ge "$TOTAL_LIMIT_S" ]; then
    echo "skipped $name: ${now}s spent (TOTAL_LIMIT_S=$TOTAL_LIMIT_S)" | tee -a "$OUT/skipped.txt"
    return
  fi
  local t0=$(date +%s) t0_iso=$(date -u +%FT%T.%3N)
  timeout "$CALL_LIMIT_S" "$BIN" compare --shapes "$shapes" --db "$DB" --format json "$@" \
      > "$OUT/$name.json" 2> "$OUT/$name.log"
  local rc=$?
  echo "$name: rc $rc, $(( $(date +%s) - t0 )) s, $t0_iso .. $(date -u +%FT%T.%3N): dgtune compare $*" | tee -a "$OUT/calls.txt"
}

run_variant williams       --rounds "$ROUNDS"
run_variant reversed       --rounds "$ROUNDS" --side-order reversed
run_variant fixed          --rounds "$ROUNDS" --side-order fixed
run_variant williams-gap   --rounds "$ROUNDS" --gap-us "$GAP_US"
run_variant isolated       --protocol isolated --rounds "$ISO_SAMPLES" --launches "$ISO_LAUNCHES"
run_variant reversed-gap   --rounds "$ROUNDS" --side-order reversed --gap-us "$GAP_US"
run_variant fixed-gap      --rounds "$ROUNDS" --side-order fixed --gap-us "$GAP_US"
run_variant williams-again --rounds "$ROUNDS"

kill "$power_pid" 2>/dev/null
python3 "$HERE/summary.py" "$OUT" | tee "$OUT/summary.md"
echo "total $(( $(date +%s) - start )) s" | tee -a "$OUT/calls.txt"
