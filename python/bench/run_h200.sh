#!/usr/bin/env bash
# What runs on the H200 for the PyTorch package (its GPU tests and its benchmark), from the repository root:
#
#   bash python/bench/run_h200.sh [WHEEL_DIR|-] [STEPS]
#
# WHEEL_DIR: an unpacked dgtune wheel (the folder holding dgtune/, with dgtune/lib/libdgtune_torch.so and
#   dgtune/bin/dgtune); it goes first on PYTHONPATH. "-" or nothing: the installed dgtune.
# STEPS: comma-separated, default "env,tests,hostcost,bench": env (versions, nvidia-smi, import check), tests (the GPU
#   pytest suite with DGTUNE_REQUIRE_GPU=1; or its halves tests-a: correctness + bitwise, tests-b: the rest),
#   hostcost (the host-cost mode), bench (the block benchmark), moe (moe_layer.py: a DeepSeek-V3 MoE layer's two
#   grouped GEMMs through dgtune and through deep_gemm or the per-expert torch._scaled_mm loop; not in the default).
#   One device call runs at most 10 minutes: split the steps over calls, e.g. "env,tests-a", then "tests-b",
#   then "hostcost,bench" (bench alone may need BENCH_MODELS=deepseek-v3 and then llama-3.1-70b).
#
# Environment:
#   OUT               where everything goes (the device call's $OUT; default ./out-h200)
#   PYTHON            the interpreter (default python3)
#   BENCH_DB          dgtune.load DB for the benchmark: PATH, or "MODEL=PATH MODEL=PATH" (deepseek-v3, llama-3.1-70b)
#   BENCH_BUNDLE      kernel bundle(s), the same form
#   BENCH_MODELS      default "deepseek-v3,llama-3.1-70b";  BENCH_M_LIST default the issue's 11 M values
#   BENCH_MODES       default "graph,eager";  BENCH_REPEATS default 7;  BENCH_REPLAYS default 20
#   BENCH_ARGS        extra arguments for pytorch_block.py
#   TESTS_DB          $DGTUNE_DB for the tests (default none: the loader's defaults)
#   PYTEST_ARGS       extra pytest arguments (e.g. "-k 'not compile'" or "-x")
#   MOE_ARGS          extra arguments for moe_layer.py (e.g. "--modes decode --decode-tokens 64,128")
#   T_TESTS, T_HOSTCOST, T_BENCH, T_MOE   per-step time limits in seconds (defaults 540, 120, 540, 540); T_PER_TEST 300
#   (per test, with pytest-timeout)
#
# Every step runs under `timeout`, its exit code goes to $OUT/exit_codes.txt, a failed step does not stop the next
# one, and the script exits with the first nonzero step code (0 when all passed).
set -u
WHEEL_DIR=${1:--}
STEPS=${2:-env,tests,hostcost,bench}
OUT=${OUT:-./out-h200}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

if [ "$WHEEL_DIR" != "-" ]; then
  WHEEL_DIR=$(cd "$WHEEL_DIR" && pwd) || { echo "no such wheel dir: $1" >&2; exit 2; }
  export PYTHONPATH="$WHEEL_DIR${PYTHONPATH:+:$PYTHONPATH}"
  [ -x "$WHEEL_DIR/dgtune/bin/dgtune" ] && export DGTUNE_CLI="${DGTUNE_CLI:-$WHEEL_DIR/dgtune/bin/dgtune}"
fi
# The tests import their helpers from python/tests/gpu; the repository's python/ must not shadow the wheel's dgtune.
cd "$REPO"

first_fail=0
record() {  # step rc seconds
  echo "$1 rc=$2 seconds=$3" >>"$OUT/exit_codes.txt"
  echo "== step $1: rc=$2 in $3 s"
  if [ "$2" != 0 ] && [ "$first_fail" = 0 ]; then first_fail=$2; fi
}
run_step() {  # name limit cmd...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  echo "== step $name (limit ${limit}s): $*"
  timeout --kill-after=20 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  record "$name" "$rc" "$(( $(date +%s) - t0 ))"
  tail -n 40 "$OUT/$name.log"
}
want() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

: >"$OUT/exit_codes.txt"
echo "steps=$STEPS wheel=$WHEEL_DIR out=$OUT repo=$REPO commit=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null)" \
  | tee "$OUT/run.txt"

if want env; then
  run_step env 120 bash -c "
    nvidia-smi; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
    $PYTHON - <<'PY'
import sys, torch
print('python', sys.version)
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())
import dgtune
from dgtune import _native
print('dgtune', dgtune.__file__, getattr(dgtune, '__version__', None))
print('native available', _native.available(), _native.load_error(), _native.lib_path())
if _native.available():
    print('native version', _native.require().version())
    print('stats', dgtune.stats())
sys.exit(0 if _native.available() else 3)
PY"
fi

# pytest-timeout (in the H200 image) bounds each test, so one hang cannot eat the step.
per_test_timeout=()
$PYTHON -c "import pytest_timeout" >/dev/null 2>&1 && per_test_timeout=(--timeout "${T_PER_TEST:-300}")
gpu_tests() {  # step-name files...
  local name=$1; shift
  export DGTUNE_REQUIRE_GPU=1
  # shellcheck disable=SC2086
  run_step "$name" "${T_TESTS:-540}" env ${TESTS_DB:+DGTUNE_DB=$TESTS_DB} $PYTHON -m pytest "$@" \
    -p no:cacheprovider -rfEs --durations=25 "${per_test_timeout[@]}" --junitxml="$OUT/junit-$name.xml" \
    -o junit_family=xunit1 ${PYTEST_ARGS:-}
}
T=$REPO/python/tests/gpu
want tests && gpu_tests tests "$T"
# The same suite in two halves, for device calls of at most 10 minutes each.
want tests-a && gpu_tests tests-a "$T/test_gpu_correctness.py" "$T/test_gpu_bitwise.py" "$T/test_gpu_c_api.py"
want tests-b && gpu_tests tests-b "$T/test_gpu_opcheck.py" "$T/test_gpu_errors.py" "$T/test_gpu_graphs.py" \
  "$T/test_gpu_compile.py" "$T/test_gpu_nn.py" "$T/test_gpu_patch.py" "$T/test_gpu_tune.py"

bench_common=()
for d in ${BENCH_DB:-}; do bench_common+=(--db "$d"); done
for b in ${BENCH_BUNDLE:-}; do bench_common+=(--bundle "$b"); done

if want hostcost; then
  run_step hostcost "${T_HOSTCOST:-120}" $PYTHON "$HERE/pytorch_block.py" --host-cost-only \
    --out "$OUT/hostcost.json" --md "$OUT/hostcost.md"
fi

if want bench; then
  # shellcheck disable=SC2086
  run_step bench "${T_BENCH:-540}" $PYTHON "$HERE/pytorch_block.py" "${bench_common[@]}" \
    --models "${BENCH_MODELS:-deepseek-v3,llama-3.1-70b}" \
    ${BENCH_M_LIST:+--m-list "$BENCH_M_LIST"} --modes "${BENCH_MODES:-graph,eager}" \
    --repeats "${BENCH_REPEATS:-7}" --replays "${BENCH_REPLAYS:-20}" \
    --out "$OUT/bench.json" --md "$OUT/bench.md" ${BENCH_ARGS:-}
fi

if want moe; then
  # Exit 1 when a path fails verification or cannot run; the JSON holds what was measured up to then.
  # shellcheck disable=SC2086
  run_step moe "${T_MOE:-540}" $PYTHON "$HERE/moe_layer.py" --json "$OUT/moe.json" ${MOE_ARGS:-}
fi

nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >"$OUT/smi-end.csv" 2>&1
echo "== exit codes"; cat "$OUT/exit_codes.txt"
exit "$first_fail"
