#!/usr/bin/env bash
# Kernel v2 validation on the GPU machine, with the build/ carried from the build machine (no
# package registry there). Results and logs go to $OUT. Steps (default: tests bench):
#   tests  ctest -L gpu in build/ (edge shapes incl. the 2g / TMA-store / fast-P keys, split-K, loader,
#          default space incl. the all-ones K = 65536 fast check, memcheck, racecheck, CLI smoke)
#   bench  `dgtune run --cublas` for the one-group (1g) and two-group (2g) kernels, both accumulation
#          modes, on 4096^3, 8192^3, 4096x7168x16384, 4096x2112x7168, 4096x24576x1536; one JSON per run
#          and a summary $OUT/kernel-v2-bench.json (ratio = cuBLASLt-tuned us / ours, same buffers)
#   quick  bench on 4096^3 only
# Usage: OUT=/some/dir bash scripts/lab/kernel_v2_gpu.sh [tests] [bench|quick]
#   CTEST_ARGS="-E sanitize" to leave out steps of ctest; each step stops at its timeout (the device tool
#   stops a command at 600 s: run `tests` and `bench` in separate calls if both do not fit).
# Note: `dgtune run` times candidates one after the other (each with its own cuBLASLt measurement), not
# round-robin, so clocks can differ between rows; sm_clock_mhz is recorded per row. Compare ratios.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/kernel-v2-out}
mkdir -p "$OUT/logs" "$OUT/bench"
export DGTUNE_CACHE_DIR=${DGTUNE_CACHE_DIR:-/tmp/dgtune-cache}
DB=${KERNEL_V2_DB:-/tmp/kernel-v2.db}
BIN=$ROOT/build/dgtune
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests bench)

{
  echo "commit $commit"
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv 2>&1
} >"$OUT/env.txt"

# "label key" per accumulation mode: the old schedule (1g) and the new one (2g) on the same tile, plus
# the BLOCK_N variants the notes point at (TMA store at any BLOCK_N % 8).
PROMOTE_CONFIGS=(
  "1g-128x128-tma 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1"
  "2g-128x128-tma 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
  "1g-128x128-direct 128x128x128_s7_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1"
  "2g-128x144-tma 128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
  "2g-128x96-tma 128x96x128_s7_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
)
FAST_CONFIGS=(
  "1g-128x128-tma-p16 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"
  "2g-128x128-tma-p1 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
  "1g-128x176-tma-p16 128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"
)

run_bench() {  # run_bench SHAPE...
  local shape accum entry label key m n k f
  for shape in "$@"; do
    IFS=x read -r m n k <<<"$shape"
    for accum in promote fast; do
      local -n configs=$([ $accum = promote ] && echo PROMOTE_CONFIGS || echo FAST_CONFIGS)
      for entry in "${configs[@]}"; do
        label=${entry%% *}
        key=${entry#* }
        f="$OUT/bench/${shape}_${accum}_${label}.json"
        echo "=== $shape $accum $label ($key)"
        if ! timeout 240 "$BIN" run --m "$m" --n "$n" --k "$k" --accum "$accum" --config "$key" --cublas --db "$DB" \
          --format json >"$f" 2>"$OUT/logs/${shape}_${accum}_${label}.log"; then
          echo "    rc=$? (see logs/${shape}_${accum}_${label}.log)"
        fi
      done
    done
  done
  python3 - "$OUT" "$commit" <<'PY'
import glob, json, os, sys
out, commit = sys.argv[1], sys.argv[2]
rows = []
for f in sorted(glob.glob(os.path.join(out, "bench", "*.json"))):
    shape, accum, label = os.path.basename(f)[:-5].split("_", 2)
    try:
        tables = json.load(open(f))["tables"]
    except Exception as e:  # failed run: keep a row that says so
        rows.append({"shape": shape, "accum": accum, "label": label, "status": f"no output ({e})"})
        continue
    t = tables[0]["rows"][0]
    base = {b["provider"]: b for b in tables[1]["rows"]} if len(tables) > 1 else {}
    tuned = base.get("cublaslt-tuned", {})
    row = {"shape": shape, "accum": accum, "label": label, "config": t.get("config"), "status": t.get("status"),
           "median_us": t.get("median_us"), "tflops": t.get("tflops"), "sm_clock_mhz": t.get("sm_clock_mhz"),
           "max_rel_err": t.get("max_rel_err"), "diff": t.get("diff"), "registers": t.get("registers"),
           "cublas_tuned_us": tuned.get("median_us"), "cublas_tuned_max_rel_err": tuned.get("max_rel_err"),
           "cublas_tuned_diff": tuned.get("diff"), "cublas_algo": tuned.get("algo")}
    if row["median_us"] and row["cublas_tuned_us"]:
        row["x_cublas_tuned"] = round(row["cublas_tuned_us"] / row["median_us"], 4)
    rows.append(row)
json.dump({"commit": commit, "rows": rows}, open(os.path.join(out, "kernel-v2-bench.json"), "w"), indent=1)
print(f"{'shape':>18} {'accum':>7} {'label':>20} {'us':>9} {'TF':>7} {'MHz':>6} {'cublas us':>9} {'x':>6} status")
for r in rows:
    print(f"{r['shape']:>18} {r['accum']:>7} {r['label']:>20} {r.get('median_us') or 0:9.1f} {r.get('tflops') or 0:7.0f} "
          f"{r.get('sm_clock_mhz') or 0:6.0f} {r.get('cublas_tuned_us') or 0:9.1f} {r.get('x_cublas_tuned') or 0:6.3f} {r.get('status')}")
PY
}

for s in "${steps[@]}"; do
  case $s in
    tests)
      echo "=== ctest -L gpu ${CTEST_ARGS:-}"
      # shellcheck disable=SC2086
      timeout "${TESTS_TIMEOUT:-580}" bash scripts/test.sh -L gpu ${CTEST_ARGS:-} >"$OUT/logs/gpu-tests.log" 2>&1
      echo "ctest rc=$?"
      grep -E "tests passed|tests failed|Failed|Passed|Skipped|\*\*\*" "$OUT/logs/gpu-tests.log" | tail -n 30 ;;
    bench)
      run_bench 4096x4096x4096 8192x8192x8192 4096x7168x16384 4096x2112x7168 4096x24576x1536 ;;
    quick)
      run_bench 4096x4096x4096 ;;
    *) echo "unknown step $s (tests, bench, quick)" ;;
  esac
done
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >"$OUT/logs/clocks-end.csv" 2>&1
tar -C "$OUT" -czf "$OUT/logs.tgz" logs bench 2>/dev/null && rm -rf "$OUT/logs" "$OUT/bench"
echo "commit $commit; files in $OUT: $(ls "$OUT")"
