#!/usr/bin/env bash
# One call on the GPU machine (the `device` tool): runs the named steps with per-step timeouts and
# leaves logs and reports under $OUT (at most 8 files come back, so logs are tarred).
#   bash scripts/lab/device_session.sh STEP...
#   steps: env run sweep resume prevwin loader gputests sanitize cube modelsweep clismoke deepseek square
#          v2sweeps compare large export gate gaterecord detect gate10 scaletests scaleperf epitests epiperf
#          epiab epinew (output types and fused epilogues: A/B and re-tune) o256 ncublas pptest ppab ppsweep
#          (kernel v2: 2o, cuBLASLt's kernels, the ping-pong mainloop) blockab ncublock blockx ncufull cublasm
#          (scale modes: block scales A/B, profiles, cuBLASLt's smallest M) clutests uniab (small M and kernel v2:
#          the cluster kernels' uniform loop state, tests and A/B); the case labels below say what each runs.
# A lab script (scripts/lab/README.md): kept so that the reports' commands can be re-run, not supported.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/dgtune-out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
export DGTUNE_CACHE_DIR=${DGTUNE_CACHE_DIR:-/tmp/dgtune-cache}
export DGTUNE_DB=${DGTUNE_DB:-$ROOT/results/tuning.db}
BIN=${DGTUNE_BIN:-$ROOT/build/dgtune}  # DGTUNE_BIN: e.g. an earlier call's binary, for "the unchanged build"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

step() {  # step NAME TIMEOUT CMD...
  local name=$1 t=$2
  shift 2
  local left=$((${DEADLINE:-585} - SECONDS))  # the device tool stops a command at 600 s
  [ "$t" -gt "$left" ] && t=$left
  if [ "$t" -le 5 ]; then echo "=== $name skipped: no time left"; return; fi
  local t0=$SECONDS
  echo "=== $name (timeout ${t}s): $*"
  timeout "$t" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  echo "=== $name rc=$rc $((SECONDS - t0))s"
  tail -n 12 "$LOGS/$name.log"
}

extras_ab() {  # extras_ab NAME SHAPES_FILE "CONFIG..."; compare with the configs as extra sides, both protocols, into $LOGS
  local name=$1 shapes=$2 extra="" c proto
  for c in $3; do extra="$extra --config $c"; done
  for proto in cold-l2 hot-graph; do
    step "$name-$proto" 150 bash -c "$BIN compare --shapes $shapes --db /tmp/$name.db --protocol $proto --rounds 20 --no-copy-limit $extra --format json >$LOGS/$name-$proto.json"
  done
}

for s in "$@"; do
  case $s in
    env)
      step env 60 bash -c "pwd; git log --oneline -1; nvidia-smi; ldd $BIN; $BIN info" ;;
    run)
      step run 180 "$BIN" run --m 4096 --n 4096 --k 4096 --config 128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1 --cublas ;;
    sweep)  # README command 1, JSON table on stdout, progress on stderr
      "$BIN" info --format json >"$OUT/info.json" 2>&1
      step sweep 420 bash -c "bash scripts/sweep.sh --format json >$OUT/smoke-sweep.json" ;;
    resume)  # the same command again: must measure nothing
      step resume 120 bash -c "bash scripts/sweep.sh --format md >$OUT/smoke-sweep.md" ;;
    loader)
      step loader 180 "$ROOT/build/dgtune_loader_example" --db "$DGTUNE_DB" ;;
    gputests)
      step gputests 500 bash scripts/test.sh -L gpu -E "${GPU_EXCLUDE:-sanitize}" -V ;;
    newtests)  # the GPU tests added or changed since the last call
      step newtests 300 bash scripts/test.sh -R "gpu_Compare|gpu_Gate|gpu_Loader|gpu_DefaultSpace|gpu_Engine" -V ;;
    sanitize)
      step sanitize 300 bash scripts/test.sh -R sanitize -V ;;
    cube)  # exhaustive 4096^3 over the default space: cold JIT cache, then warm (fresh DB both times)
      printf '4096 4096 4096\n' >/tmp/cube.txt
      rm -rf /tmp/cold-cache /tmp/cube-*.db
      for temp in cold warm; do
        t0=$(date +%s.%N)
        step "cube-$temp" 300 env DGTUNE_CACHE_DIR=/tmp/cold-cache "$BIN" sweep --shapes /tmp/cube.txt --db /tmp/cube-$temp.db --format json
        t1=$(date +%s.%N)
        echo "cube-$temp wall $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s" | tee -a "$OUT/cube-times.txt"
        sed -n '/^{/,$p' "$LOGS/cube-$temp.log" >"$OUT/cube-$temp.json"
      done ;;
    modelsweep)  # --strategy model on DeepSeek-V3 into a fresh DB: only the top 16 per shape are measured
      step modelsweep 240 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3.txt --db /tmp/model.db --strategy model --top-k 16 --max-samples 40 --format json >$OUT/deepseek-model-sweep.json" ;;
    prevwin)  # restructure: the earlier smoke winners measured again in this machine start, next to the fresh sweep
      python3 scripts/lab/prev_winner_check.py list results/h200/smoke-sweep-final.json >/tmp/prev.txt
      step prevwin 240 bash -c 'while read m n k a c; do '"$BIN"' run --m $m --n $n --k $k --accum $a --config $c --db /tmp/prev.db --format json | tr -d "\n"; echo; done </tmp/prev.txt >'"$OUT"'/prev-winners.jsonl'
      [ -f "$OUT/smoke-sweep.json" ] && python3 scripts/lab/prev_winner_check.py report "$OUT/smoke-sweep.json" "$OUT/prev-winners.jsonl" | tee "$OUT/prev-winners.md" ;;
    clismoke)
      step clismoke 120 bash scripts/test.sh -R cli_sweep_smoke -V ;;
    deepseek)
      step deepseek 540 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3.txt --max-samples 40 --format json >$OUT/deepseek-sweep.json" ;;
    square)
      step square 420 bash -c "$BIN sweep --shapes configs/shapes/square.txt --max-samples 40 --format json >$OUT/square-sweep.json" ;;
    v2sweeps)  # kernel v2 default space, exhaustive, into the session DB (results in logs.tgz)
      step v2deepseek 240 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3.txt --max-samples 40 --format json >$LOGS/deepseek-sweep.json"
      step v2square 180 bash -c "$BIN sweep --shapes configs/shapes/square.txt --max-samples 40 --format json >$LOGS/square-sweep.json" ;;
    compare)  # compare and protocols: the loader's choice vs cuBLASLt in interleaved rounds, both protocols, samples saved
      step compare-cold 150 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3.txt --db $DGTUNE_DB --save /tmp/compare.db --format json >$LOGS/compare-cold.json"
      step compare-hot 150 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3.txt --db $DGTUNE_DB --protocol hot-graph --save /tmp/compare.db --format json >$LOGS/compare-hot.json"
      cp /tmp/compare.db "$OUT/compare.db" 2>/dev/null ;;
    large)  # kernel v2: large shapes, both modes: the winner, 1g and 2g 128x128 TMA-store and cuBLASLt round-robin
      { grep -E '^ *4096 ' configs/shapes/deepseek-v3.txt; grep -vE '^ *#|^ *$' configs/shapes/square.txt; } | sed 's/#.*//' >/tmp/large.txt
      sed 's/$/ accum=fast/' /tmp/large.txt >>/tmp/large.txt.fast && cat /tmp/large.txt.fast >>/tmp/large.txt
      step large 200 bash -c "$BIN compare --shapes /tmp/large.txt --db $DGTUNE_DB --config 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1 --config 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 --save /tmp/large.db --format json >$LOGS/compare-large.json" ;;
    fastsweep)  # kernel v2: the large shapes in fast mode, exhaustive, into the session DB
      { grep -E '^ *(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -vE '^ *#|^ *$' configs/shapes/square.txt; } | sed 's/#.*//; s/$/ accum=fast/' >/tmp/large-fast.txt
      step fastsweep 200 bash -c "$BIN sweep --shapes /tmp/large-fast.txt --max-samples 40 --format json >$LOGS/fast-sweep.json" ;;
    large2)  # kernel v2, second machine start: promote and fast, the winner, 2g and 2o (epilogue overlap) and cuBLASLt round-robin
      { grep -E '^ *(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -vE '^ *#|^ *$' configs/shapes/square.txt; } | sed 's/#.*//' >/tmp/large2.txt
      sed 's/$/ accum=fast/' /tmp/large2.txt >/tmp/large2f.txt && cat /tmp/large2f.txt >>/tmp/large2.txt
      step large2 220 bash -c "$BIN compare --shapes /tmp/large2.txt --db $DGTUNE_DB --config 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 --config 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1 --save /tmp/large2.db --format json >$LOGS/compare-large2.json" ;;
    twice)  # compare and protocols: two compares of the unchanged DB in one machine start
      step twice-a 120 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3.txt --db $DGTUNE_DB --format json >$LOGS/compare-twice-a.json"
      step twice-b 120 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3.txt --db $DGTUNE_DB --format json >$LOGS/compare-twice-b.json" ;;
    overlap)  # the 2o mainloop: edge shapes, bitwise 2o == 2g, sanitizers (the Sanitize test has 2o keys)
      step overlap 200 "$ROOT/build/tests/dgtune_gpu_tests" "--gtest_filter=Overlap.*:EdgeShapes.*:SplitK.*:Sanitize.*"
      step overlap-memcheck 150 bash tests/gpu/sanitize.sh memcheck "$ROOT/build/tests/dgtune_gpu_tests"
      step overlap-racecheck 150 bash tests/gpu/sanitize.sh racecheck "$ROOT/build/tests/dgtune_gpu_tests" ;;
    gate3)  # CI gate: record on smoke, then three checks of the unchanged build
      step gate-record 120 "$BIN" gate --record "$LOGS/gate-baseline.json" --shapes configs/shapes/smoke.txt
      for i in 1 2 3; do step gate-check-$i 120 "$BIN" gate --baseline "$LOGS/gate-baseline.json" --junit "$LOGS/gate-junit-$i.xml" --markdown "$LOGS/gate-$i.md"; done ;;
    examples)  # compare and protocols: the loader example from the DB and from the exported header pick the same configs
      for shape in "4096 4096 4096" "4096 7168 16384" "8192 2112 7168"; do
        step "example-db-${shape// /x}" 120 "$ROOT/build/dgtune_loader_example" --db "$DGTUNE_DB" --tuned $shape --untuned 777 1000 528
        step "example-table-${shape// /x}" 120 "$ROOT/build/dgtune_loader_example_table" --tuned $shape --untuned 777 1000 528
      done ;;
    gaterecord)  # CI gate: a baseline of deepseek-v3 + square (the false-alarm and detection runs use it)
      cat configs/shapes/deepseek-v3.txt configs/shapes/square.txt >"$LOGS/gate-shapes.txt"
      step gate-record 300 bash -c "$BIN gate --record $LOGS/gate-baseline-ds.json --shapes $LOGS/gate-shapes.txt --history $LOGS/gate-history.db --format json >$LOGS/gate-record.json" ;;
    detect)  # CI gate: replace winners by slower configs (3 bands), gate each, measure the true slowdowns
      base=${GATE_BASELINE:-$LOGS/gate-baseline-ds.json}
      det=$LOGS/det
      step detect-plan 60 python3 scripts/lab/gate_detection.py plan "$base" "$DGTUNE_DB" "$det"
      for band in lo mid hi; do
        step "detect-gate-$band" 150 bash -c "$BIN gate --baseline $base --db $det/band-$band.db --history $det/history.db --format json >$det/gate-$band.json"
      done
      step detect-truth 300 python3 scripts/lab/gate_detection.py truth "$det" "$BIN" "$DGTUNE_DB"
      python3 scripts/lab/gate_detection.py report "$det" >"$OUT/detection.md" 2>&1
      rm -f "$det"/band-*.db  # copies of the tuning DB: too big to bring back
      head -12 "$OUT/detection.md" ;;
    gate10)  # CI gate: ten checks of the unchanged build against a baseline recorded in another machine start
      base=${GATE_BASELINE:-results/h200/raw/gate-baseline-ds.json}
      for i in 1 2 3 4 5 6 7 8 9 10; do
        step "gate10-$i" 120 bash -c "$BIN gate --baseline $base --history $LOGS/gate-history.db --junit $LOGS/gate10-junit-$i.xml --markdown $LOGS/gate10-$i.md --format json >$LOGS/gate10-$i.json"
      done
      step history 30 "$BIN" history --shape 8192x8192x8192 --history "$LOGS/gate-history.db" ;;
    ncu7)  # kernel v2: where the 8192^3 promote winner and the worst fast winner spend their time (no .ncu-rep kept)
      sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
      step ncu-8192-promote 150 ncu --clock-control none -k regex:fp8_gemm --launch-skip 3 --launch-count 1 $sec "$BIN" run --db /tmp/ncu.db --m 8192 --n 8192 --k 8192 --config 128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1
      step ncu-8192x24576x1536-fast 150 ncu --clock-control none -k regex:fp8_gemm --launch-skip 3 --launch-count 1 $sec "$BIN" run --db /tmp/ncu.db --m 8192 --n 24576 --k 1536 --accum fast --config 128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p8 ;;
    gatetest)
      step gatetest 300 bash scripts/test.sh -R "gpu_Gate" -V ;;
    hotsweep)  # compare and protocols: tune for hot-graph (winners per protocol) on a copy of the DB, then compare under hot-graph
      cp "$DGTUNE_DB" /tmp/hot.db
      step hotsweep 240 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3.txt --db /tmp/hot.db --protocol hot-graph --max-candidates 64 --format json >$OUT/hot-sweep.json"
      step hotcompare 150 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3.txt --db /tmp/hot.db --protocol hot-graph --format json >$OUT/hot-compare.json"
      step hotexport 30 bash -c "$BIN export --db /tmp/hot.db --format csv >$LOGS/hot-export.csv" ;;
    robust)  # robustness on the GPU: SIGINT + resume, two sweeps on one DB and a cold cache, a read-only deployed DB
      printf '2048 2048 2048\n1024 1024 1024\n' >/tmp/r.txt
      rm -rf /tmp/r.db* /tmp/c.db* /tmp/cc /tmp/deploy
      printf '4096 4096 4096\n8192 8192 4096\n' >/tmp/r2.txt
      step robust-int 120 bash -c "$BIN sweep --shapes /tmp/r2.txt --db /tmp/i.db & pid=\$!; sleep 6; kill -INT \$pid; wait \$pid; echo exit=\$?; python3 scripts/lab/db_counts.py /tmp/i.db"
      step robust-resume 120 bash -c "timeout 20 $BIN sweep --shapes /tmp/r2.txt --db /tmp/i.db 2>&1 | grep -E 'already stored|measured'"
      step robust-smoke 120 bash -c "$BIN sweep --shapes /tmp/r.txt --db /tmp/r.db --max-candidates 40 >/dev/null 2>&1"
      step robust-two 200 bash -c "for i in 1 2; do $BIN sweep --shapes /tmp/r.txt --db /tmp/c.db --cache-dir /tmp/cc --max-candidates 40 >$LOGS/robust-s\$i.log 2>&1 & done; wait; python3 scripts/lab/db_counts.py /tmp/c.db; grep -c locked $LOGS/robust-s1.log $LOGS/robust-s2.log; grep -h 'candidates\\|elsewhere' $LOGS/robust-s1.log $LOGS/robust-s2.log | tail -4"
      mkdir -p /tmp/deploy
      step robust-deploy 120 bash -c "$BIN export --db /tmp/r.db --format db --out /tmp/deploy/tuned.db && chmod -R a-w /tmp/deploy && chmod a+rx /tmp/deploy && DGTUNE_DB=/tmp/deploy/tuned.db setpriv --reuid=65534 --regid=65534 --clear-groups env DGTUNE_CACHE_DIR=/tmp/nc HOME=/tmp $ROOT/build/dgtune_loader_example --db /tmp/deploy/tuned.db; echo rc=\$?; ls -la /tmp/deploy" ;;
    scaletests)  # scale modes: scale-mode GPU tests, loader/compare, memcheck of the scale shapes
      step scaletests 300 bash scripts/test.sh -R "gpu_ScaleModes|gpu_Sanitize|gpu_Loader|gpu_Compare|gpu_Protocol" -V
      step memcheck 200 bash -c "cd build && ctest -R gpu_sanitize_memcheck --output-on-failure" ;;
    scaleperf)  # scale modes: tune block and channel modes (model top 16) and compare with cuBLASLt's scaled GEMMs
      for mode in block channel; do
        step "sweep-$mode" 200 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3-$mode.txt --db /tmp/$mode.db --strategy model --top-k 16 --format json >$OUT/sweep-$mode.json"
        step "compare-$mode" 150 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3-$mode.txt --db /tmp/$mode.db --format json >$OUT/compare-$mode.json"
      done ;;
    blockab)  # scale modes: block scales through shared memory. $ROOT/build/dgtune-old (the previous commit) and this
      # binary each tune the block set (model top 16) into their own DB and compare it with cuBLASLt; both also
      # time the same configs as extra sides (BLOCK_AB_CONFIGS, legal in both), so the ratios compare like for like
      OLD=$ROOT/build/dgtune-old
      f=configs/shapes/deepseek-v3-block.txt
      extra=""; for c in ${BLOCK_AB_CONFIGS:-}; do extra="$extra --config $c"; done
      for side in ${BLOCK_AB_SIDES:-new old}; do
        b=$BIN; [ "$side" = old ] && b=$OLD
        step "sweep-$side-block" 240 bash -c "$b sweep --shapes $f --db /tmp/block-$side.db --strategy model --top-k ${BLOCK_TOPK:-16} --format json >$OUT/sweep-$side-block.json"
        step "compare-$side-block" 200 bash -c "$b compare --shapes $f --db /tmp/block-$side.db --rounds ${BLOCK_ROUNDS:-10} --no-copy-limit $extra --format json >$OUT/compare-$side-block.json"
      done ;;
    ncublock)  # scale modes: block mode next to per-tensor with the same config (ncu), and the cuBLASLt block kernel's profile
      sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats"
      cfg=${NCU_BLOCK_CONFIG:-128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1}
      for sc in block tensor; do
        step "ncu-$sc" 150 ncu --clock-control none -k regex:fp8_gemm --launch-skip 3 --launch-count 1 $sec "$BIN" run --db /tmp/ncu.db --m 4096 --n 7168 --k 16384 --scale $sc --config $cfg
      done
      printf '4096 7168 16384 scale=block\n' >/tmp/ncb.txt
      step ncu-cublas-block 150 ncu --clock-control none -k "regex:^(?!dgt_|fp8_gemm).+" --launch-count 40 $sec --print-summary per-kernel "$BIN" compare --shapes /tmp/ncb.txt --db /tmp/ncu.db --rounds 2 --no-copy-limit ;;
    blockx)  # scale modes: cluster / direct-epilogue variants of the block-mode 128x128 tile on the slowest large shapes,
      # and where the block kernel's memory time goes (ncu memory workload + SASS stall sampling)
      printf '%s\n' "4096 2112 7168 scale=block" "4096 7168 16384 scale=block" "4096 4096 7168 scale=block" "8192 4096 7168 scale=block" "8192 2112 7168 scale=block" "8192 576 7168 scale=block" >/tmp/bx.txt
      extra=""; for c in ${BLOCKX_CONFIGS:-128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x128x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1 128x128x128_s5_wg2_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 128x128x128_s6_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1 128x128x128_s6_wg2_sw128_c2x1_rm8_direct_sk1_sm0_2g_p1}; do extra="$extra --config $c"; done
      step blockx 200 bash -c "$BIN compare --shapes /tmp/bx.txt --db /tmp/bx.db --rounds 10 --no-copy-limit $extra --format json >$OUT/blockx.json"
      sec="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters"
      for sc in block tensor; do
        step "ncumem-$sc" 150 ncu --clock-control none -k regex:fp8_gemm --launch-skip 3 --launch-count 1 $sec "$BIN" run --db /tmp/ncu.db --m 4096 --n 7168 --k 16384 --scale $sc --config 128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1
      done ;;
    ncufull)  # scale modes: full ncu sets (all details) of the block and per-tensor kernels with the same config, into $OUT
      cfg=${NCU_BLOCK_CONFIG:-128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1}
      for sc in block tensor; do
        step "ncufull-$sc" 200 bash -c "ncu --clock-control none -k regex:fp8_gemm --launch-skip 3 --launch-count 1 --set full --print-details all $BIN run --db /tmp/ncu.db --m 4096 --n 7168 --k 16384 --scale $sc --config $cfg >$OUT/ncufull-$sc.txt 2>&1"
      done ;;
    cublasm)  # scale modes: the smallest M for which cuBLASLt's block-scaled heuristic returns an algorithm
      printf '%s\n' "1 2112 7168 scale=block" "2 2112 7168 scale=block" "4 2112 7168 scale=block" "8 2112 7168 scale=block" "16 2112 7168 scale=block" "32 2112 7168 scale=block" >/tmp/cm.txt
      step cublasm 120 bash -c "$BIN compare --shapes /tmp/cm.txt --db /tmp/cm.db --rounds 2 --no-copy-limit --config 64x64x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 --format json >$OUT/cublasm.json" ;;
    epitests)  # output types and fused epilogues, the GPU tests (exact values, edge shapes, split-K, cuBLASLt, loader)
      step epitests 420 bash -c "cd build && ./tests/dgtune_gpu_tests --gtest_filter='Epilogues.*:Loader.EveryOutputAndEpilogueThroughTheOptionsStruct'" ;;
    epiab)  # output types and fused epilogues: the epilogue change A/B. $ROOT/build/dgtune-old (previous commit) tunes (model top 16) and
      # compares; the new binary compares the same DB (same configs), then tunes its own DB and compares again
      OLD=$ROOT/build/dgtune-old
      for set in ${EPI_SETS:-gelu e4m3out}; do
        f=configs/shapes/deepseek-v3-$set.txt
        step "sweep-old-$set" 120 bash -c "$OLD sweep --shapes $f --db /tmp/epi-old.db --strategy model --top-k 16 --format json >$OUT/sweep-old-$set.json"
        step "compare-old-$set" 150 bash -c "$OLD compare --shapes $f --db /tmp/epi-old.db --rounds ${EPI_ROUNDS:-10} --no-copy-limit --format json >$OUT/compare-old-$set.json"
        step "compare-newsame-$set" 150 bash -c "$BIN compare --shapes $f --db /tmp/epi-old.db --rounds ${EPI_ROUNDS:-10} --no-copy-limit --format json >$OUT/compare-newsame-$set.json"
        step "sweep-new-$set" 120 bash -c "$BIN sweep --shapes $f --db /tmp/epi-new.db --strategy model --top-k 16 --format json >$OUT/sweep-new-$set.json"
        step "compare-new-$set" 150 bash -c "$BIN compare --shapes $f --db /tmp/epi-new.db --rounds ${EPI_ROUNDS:-10} --no-copy-limit --format json >$OUT/compare-new-$set.json"
      done ;;
    epinew)  # output types and fused epilogues: tune (model top 16) and compare the epilogue sets with this binary only (another machine start)
      for set in ${EPI_SETS:-gelu e4m3out}; do
        f=configs/shapes/deepseek-v3-$set.txt
        step "sweep-new-$set" 120 bash -c "$BIN sweep --shapes $f --db /tmp/epi-new.db --strategy model --top-k 16 --format json >$OUT/sweep-new-$set.json"
        step "compare-new-$set" 150 bash -c "$BIN compare --shapes $f --db /tmp/epi-new.db --rounds ${EPI_ROUNDS:-10} --no-copy-limit --format json >$OUT/compare-new-$set.json"
      done ;;
    o256)  # kernel v2: 2o (epilogue overlap) with BLOCK_K 256 next to the stored winners, the 19 large shapes, both modes
      { grep -E '^(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -E '^[0-9]' configs/shapes/square.txt; } >/tmp/large19.txt
      sed 's/$/ accum=fast/' /tmp/large19.txt >/tmp/large19-fast.txt
      for mode in ${O256_MODES:-fast promote}; do
        f=/tmp/large19.txt; [ "$mode" = fast ] && f=/tmp/large19-fast.txt
        step "o256-$mode" 240 bash -c "$BIN compare --shapes $f --db $DGTUNE_DB --rounds ${O256_ROUNDS:-10} --no-copy-limit --config 128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1 --config 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2o_p1 --format json >$OUT/o256-$mode.json"
      done ;;
    ncublas)  # which kernels cuBLASLt runs (names encode tile, cluster, schedule) on the fast short-K shapes, and ours
      printf '4096 32768 512 accum=fast\n' >/tmp/nc1.txt
      printf '4096 24576 1536 accum=fast\n' >/tmp/nc2.txt
      for i in 1 2; do
        step "ncublas-$i" 150 ncu --clock-control none -k "regex:^(?!dgt_|fp8_gemm).+" --launch-count 300 --section SpeedOfLight --print-summary per-kernel "$BIN" compare --shapes /tmp/nc$i.txt --db $DGTUNE_DB --rounds 2 --no-copy-limit
      done ;;
    pptest)  # kernel v2: the ping-pong mainloop against the reference and bitwise against 1g, plus 2o and fast edge shapes
      step pptest 150 bash -c "cd build && ./tests/dgtune_gpu_tests --gtest_filter='${PP_TESTS:-Pingpong.*:Overlap.*:EdgeShapes.FastAccumulationAndE5M2}'" ;;
    ppab)  # kernel v2: pp next to the loader's choice of /tmp/pp.db (step ppsweep first) and cuBLASLt FAST_ACCUM, K <= 2048 shapes
      { grep -E '^(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -E '^[0-9]' configs/shapes/square.txt; } |
        awk '$3 <= 2048 {print $1, $2, $3, "accum=fast"}' >/tmp/shortk-fast.txt
      step ppab 240 bash -c "$BIN compare --shapes /tmp/shortk-fast.txt --db /tmp/pp.db --rounds ${PP_ROUNDS:-20} --no-copy-limit --config 128x176x128_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16 --config 128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16 --config 64x256x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16 --config 128x160x128_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16 --config 128x128x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p8 --format json >$OUT/ppab.json" ;;
    ppsweep)  # kernel v2: fast mode re-tuned with pp in the space (model top 16 on a copy of the DB), then compared, 19 shapes
      cp "$DGTUNE_DB" /tmp/pp.db
      { grep -E '^(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -E '^[0-9]' configs/shapes/square.txt; } |
        awk '{print $1, $2, $3, "accum=fast"}' >/tmp/large19-fast.txt
      awk '$3 <= 2048' /tmp/large19-fast.txt >/tmp/shortk-fast2.txt
      step ppsweep 200 bash -c "$BIN sweep --shapes /tmp/shortk-fast2.txt --db /tmp/pp.db --strategy model --top-k ${PP_TOPK:-16} --format json >$OUT/ppsweep.json"
      step ppcompare 200 bash -c "$BIN compare --shapes /tmp/large19-fast.txt --db /tmp/pp.db --rounds ${PP_ROUNDS:-20} --no-copy-limit --format json >$OUT/ppcompare-fast.json" ;;
    epiperf)  # output types and fused epilogues: bias + GELU and e4m3 output + amax, tuned (model top 16) and compared with cuBLASLt's epilogues
      for set in gelu e4m3out; do
        step "sweep-$set" 200 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3-$set.txt --db /tmp/epi.db --strategy model --top-k 16 --format json >$OUT/sweep-$set.json"
        step "compare-$set" 150 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3-$set.txt --db /tmp/epi.db --rounds ${EPI_ROUNDS:-10} --no-copy-limit --format json --save /tmp/epi-samples.db >$OUT/compare-$set.json"
      done ;;
    export)
      step export 60 bash -c "$BIN export --db $DGTUNE_DB --format json --out $LOGS/export.json && $BIN export --db $DGTUNE_DB --format cpp --out $LOGS/dgtune_tuned.hpp" ;;
    gate)  # CI gate: record a baseline on the smoke set and check the unchanged build against it
      step gate-record 120 "$BIN" gate --record "$LOGS/gate-baseline.json" --shapes configs/shapes/smoke.txt
      step gate-check 120 "$BIN" gate --baseline "$LOGS/gate-baseline.json" --junit "$LOGS/gate-junit.xml" --markdown "$LOGS/gate.md" ;;
    workers)  # robustness and multi-GPU: trapping/spinning candidates in worker processes, shards merged, a Gemm per device
      step workers 400 bash scripts/test.sh -R "gpu_WorkerFaults|gpu_Shards|gpu_Loader" -V ;;
    multi1|multiN)  # multi-GPU: deepseek-v3 ($MULTI_ARGS, default model top 8) with a fresh DB and a cold cache on one GPU / on every GPU
      devs=0; [ "$s" = multiN ] && devs=all
      rm -rf "/tmp/cache-$s" "/tmp/$s.db"
      t0=$(date +%s.%N)
      step "$s" 560 env DGTUNE_CACHE_DIR="/tmp/cache-$s" "$BIN" sweep --shapes configs/shapes/deepseek-v3.txt --db "/tmp/$s.db" ${MULTI_ARGS:---strategy model --top-k 8} --devices "$devs" --format json
      t1=$(date +%s.%N)
      echo "$s devices=$devs wall $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s" | tee -a "$OUT/multi-times.txt"
      sed -n '/^{/,$p' "$LOGS/$s.log" >"$OUT/$s.json"
      cp "/tmp/$s.db" "$OUT/$s.db" ;;
    spread)  # multi-GPU: one config's time on each GPU of the node, alternating devices twice
      n=$(nvidia-smi -L | wc -l)
      for rep in 1 2; do for d in $(seq 0 $((n - 1))); do
        step "spread-$rep-gpu$d" 60 "$BIN" run --device "$d" --m 4096 --n 7168 --k 2048 --config 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0 --format json
        grep -o '"median_us": *[0-9.]*' "$LOGS/spread-$rep-gpu$d.log" | head -1 | sed "s/^/rep $rep gpu $d /" | tee -a "$OUT/spread.txt"
      done; done ;;
    samerun)  # multi-GPU: both winners of each shape whose 1-GPU and 2-GPU winners differ, timed alternately in one machine start
      grep -v '^#' results/h200x2/raw/samerun-pairs.txt | while read -r m n k c1 cn; do
        for rep in 1 2; do for which in 1 n; do
          cfg=$c1; [ $which = n ] && cfg=$cn
          us=$("$BIN" run --m "$m" --n "$n" --k "$k" --config "$cfg" --format json --db /tmp/samerun.db 2>>"$LOGS/samerun.err" | grep -o '"median_us": *[0-9.]*' | head -1 | grep -o '[0-9.]*$')
          echo "$m $n $k run$which rep$rep $cfg $us" | tee -a "$OUT/samerun.txt"
        done; done
      done ;;
    smallm)  # small M (decode): one config at M = 1..64 (one m-block, same grid): does a mostly out-of-bounds A box cost time?
      for cfg in 64x16x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1; do
        for m in 1 2 8 16 32 48 56 63 64 1 64; do
          us=$("$BIN" run --m "$m" --n 2112 --k 7168 --config "$cfg" --format json --db /tmp/smallm.db 2>>"$LOGS/smallm.err" | grep -o '"median_us": *[0-9.]*' | head -1 | grep -o '[0-9.]*$')
          echo "$m 2112 7168 $cfg $us" | tee -a "$OUT/smallm.txt"
        done
      done ;;
    hotworker)  # robustness: a hot-graph sweep through the worker process (protocol options cross the pipe)
      step hotworker 120 bash -c "$BIN sweep --shapes configs/shapes/smoke.txt --protocol hot-graph --rounds 5 --max-candidates 3 --db /tmp/hot.db --format json >$OUT/hotworker.json" ;;
    smallperf)  # small M (decode): decode shapes + wave tails, tuned (model top 16) then compared cold and hot with the copy limit
      step sweep-smallm 150 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3-small-m.txt --db /tmp/smallm.db --strategy model --top-k 16 --format json >$OUT/sweep-smallm.json"
      for proto in cold-l2 hot-graph; do
        step "compare-smallm-$proto" 150 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3-small-m.txt --db /tmp/smallm.db --protocol $proto --format json >$OUT/compare-smallm-$proto.json"
      done ;;
    smallexh)  # small M (decode): decode shapes + wave tails, exhaustive sweeps for each protocol, then compares (copy limit on)
      step sweep-smallm-cold 260 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3-small-m.txt --db /tmp/smallx.db --format json >$OUT/sweepx-smallm-cold.json"
      step sweep-smallm-hot 260 bash -c "$BIN sweep --shapes configs/shapes/deepseek-v3-small-m.txt --db /tmp/smallx.db --protocol hot-graph --format json >$OUT/sweepx-smallm-hot.json"
      for proto in cold-l2 hot-graph; do
        step "comparex-smallm-$proto" 100 bash -c "$BIN compare --shapes configs/shapes/deepseek-v3-small-m.txt --db /tmp/smallx.db --protocol $proto --format json >$OUT/comparex-smallm-$proto.json"
      done
      gzip -c /tmp/smallx.db >"$OUT/smallx.db.gz" ;;
    smalldiag)  # small M (decode): where the small-M winners' time goes (ncu full set + SASS stall samples), cuBLASLt's and the
      # copy kernel's durations for the same shapes, and split-K / tile scans of one config family (dgtune run timer)
      while read -r m n k cfg; do
        tag="${m}x${n}x${k}"
        step "ncu-$tag" 120 ncu --clock-control none -k regex:fp8_gemm --launch-skip 5 --launch-count 1 --set full --import-source no -o "$LOGS/ncu-$tag" -f "$BIN" run --db /tmp/diag.db --m "$m" --n "$n" --k "$k" --config "$cfg"
        [ -f "$LOGS/ncu-$tag.ncu-rep" ] && { ncu -i "$LOGS/ncu-$tag.ncu-rep" --page details --print-details all >"$OUT/ncu-$tag.txt" 2>&1; ncu -i "$LOGS/ncu-$tag.ncu-rep" --page source --print-source sass --csv >"$LOGS/ncusrc-$tag.csv" 2>&1; rm -f "$LOGS/ncu-$tag.ncu-rep"; }
        printf '%s %s %s\n' "$m" "$n" "$k" >/tmp/one.txt
        step "ncu-others-$tag" 90 ncu --clock-control none -k "regex:^(?!fp8_gemm|dgt_(flush|clock|fill|compare|ref)).+" --launch-count 60 --section SpeedOfLight --section LaunchStats --print-summary per-kernel "$BIN" compare --shapes /tmp/one.txt --db /tmp/diag.db --rounds 2
      done <<'SHAPES'
1 2112 7168 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1
1 576 7168 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1
128 2112 7168 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1
128 7168 16384 128x64x256_s4_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1
64 4096 7168 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1
SHAPES
      for cfg in ${SCAN_CONFIGS:-64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x16x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 128x32x128_s10_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x32x128_s10_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1}; do
        for shp in "1 2112 7168" "64 2112 7168" "128 2112 7168" "128 7168 16384"; do
          set -- $shp
          us=$("$BIN" run --m "$1" --n "$2" --k "$3" --config "$cfg" --format json --db /tmp/scan.db 2>>"$LOGS/scan.err" | grep -o '"median_us": *[0-9.]*' | head -1 | grep -o '[0-9.]*$')
          echo "$1 $2 $3 $cfg $us" | tee -a "$OUT/scan.txt"
        done
      done ;;
    decodetests)  # small M (decode): decode A stages and the split-K fence change (commit ccfb6eb, reverted after decodeab measured
      # no gain; the steps are kept with the binary they ran): the GPU tests they touch
      step decodetests 300 bash -c "cd build && ./tests/dgtune_gpu_tests --gtest_filter='${DECODE_TESTS:-DecodeStages.*:SplitK.*:EdgeShapes.*:Overlap.*}'" ;;
    decodeab)  # small M (decode), binary of ccfb6eb: decode A stages (M <= 8) with deeper rings next to the earlier winners' rings, cuBLASLt in the
      # same rounds, both protocols; build/dgtune-old (the commit before) runs the configs that fit full stages
      grep -E '^1 ' configs/shapes/deepseek-v3-small-m.txt >/tmp/m1.txt
      new_cfgs="64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x128_s32_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x32x128_s32_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x64x128_s24_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x128_s24_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x256_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x128x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x16x128_s32_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1"
      old_cfgs="64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x64x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x16x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1"
      for proto in cold-l2 hot-graph; do
        extra=""; for c in $new_cfgs; do extra="$extra --config $c"; done
        step "decodeab-$proto" 150 bash -c "$BIN compare --shapes /tmp/m1.txt --db /tmp/dab.db --protocol $proto --rounds 10 $extra --format json >$OUT/decodeab-$proto.json"
        if [ -x "$ROOT/build/dgtune-old" ]; then
          extra=""; for c in $old_cfgs; do extra="$extra --config $c"; done
          step "decodeab-old-$proto" 150 bash -c "$ROOT/build/dgtune-old compare --shapes /tmp/m1.txt --db /tmp/dab-old.db --protocol $proto --rounds 10 $extra --format json >$OUT/decodeab-old-$proto.json"
        fi
      done ;;
    m128c)  # small M (decode): M = 128 decode shapes with BLOCK_M 64 tiles in a 2x1 cluster (B multicast to both m-blocks, the
      # tile and cluster cuBLASLt's fastest kernel uses on 128x7168x16384), next to the previous winners, both protocols
      grep -E '^128 ' configs/shapes/deepseek-v3-small-m.txt >/tmp/m128.txt
      cfgs="64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x64x256_s4_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x32x128_s10_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x56x128_s9_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x48x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x64x128_s12_wg1_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1 64x64x128_s12_wg1_sw128_c2x1_rm8_tma_sk2_sm0_2g_p1 64x64x256_s6_wg1_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1 64x32x128_s12_wg1_sw128_c2x1_rm8_tma_sk2_sm0_2g_p1 64x128x128_s8_wg1_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1 64x128x256_s4_wg1_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1 64x96x128_s10_wg1_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1 64x128x128_s8_wg1_sw128_c2x2_rm8_tma_sk1_sm0_2g_p1 64x48x128_s12_wg1_sw128_c2x1_rm8_tma_sk4_sm0_2g_p1"
      extra=""; for c in $cfgs; do extra="$extra --config $c"; done
      for proto in cold-l2 hot-graph; do
        step "m128c-$proto" 150 bash -c "$BIN compare --shapes /tmp/m128.txt --db /tmp/m128.db --protocol $proto --rounds 10 $extra --format json >$OUT/m128c-$proto.json"
      done ;;
    bigc)  # kernel v2: clusters (B or A multicast) on the 8192^3 / 4096^3 winners' tiles: less L2 traffic per FLOP where the
      # clock is power-limited; promote and fast, 20 rounds
      printf '%s\n' "8192 8192 8192" "4096 4096 4096" >/tmp/bigp.txt
      printf '%s\n' "8192 8192 8192 accum=fast" "4096 4096 4096 accum=fast" >/tmp/bigf.txt
      pc="128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1 128x128x256_s3_wg2_sw128_c2x1_rm8_tma_sk1_sm0_1g_p1 128x128x256_s3_wg2_sw128_c1x2_rm8_tma_sk1_sm0_1g_p1 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x128x128_s6_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1 128x128x128_s6_wg2_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 128x144x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_2g_p1"
      fc="128x176x256_s2_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p8 128x176x256_s2_wg2_sw128_c2x1_rm8_tma_sk1_sm0_1g_p8 128x128x256_s3_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p8 128x128x256_s3_wg2_sw128_c2x1_rm8_tma_sk1_sm0_1g_p8 128x128x256_s3_wg2_sw128_c1x2_rm8_tma_sk1_sm0_1g_p8"
      extra=""; for c in $pc; do extra="$extra --config $c"; done
      step bigc-promote 200 bash -c "$BIN compare --shapes /tmp/bigp.txt --db /tmp/big.db --rounds 20 --no-copy-limit $extra --format json >$OUT/bigc-promote.json"
      extra=""; for c in $fc; do extra="$extra --config $c"; done
      step bigc-fast 150 bash -c "$BIN compare --shapes /tmp/bigf.txt --db /tmp/big.db --rounds 20 --no-copy-limit $extra --format json >$OUT/bigc-fast.json" ;;
    trace)  # small M and kernel v2: `dgtune trace` (per-CTA phase timestamps of one launch) of the small-M winners and two large
      # shapes, cold and warm L2, into $OUT/trace.txt
      # TRACE_LIST="M N K CONFIG;M N K CONFIG;..." replaces the default list.
      default_traces="1 2112 7168 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1;1 2112 7168 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1;1 576 7168 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1;1 7168 16384 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1;64 4096 7168 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1;128 2112 7168 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1;128 7168 16384 128x64x256_s4_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1;4096 4096 4096 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1;4096 2112 7168 128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1"
      tr ';' '\n' <<<"${TRACE_LIST:-$default_traces}" | while read -r m n k cfg; do
        [ -z "$cfg" ] && continue
        for l2 in cold warm; do
          step "trace-$m-$n-$k-$l2" 60 bash -c "$BIN trace --m $m --n $n --k $k --config $cfg --l2 $l2 >>$OUT/trace.txt 2>&1; echo >>$OUT/trace.txt"
        done
      done ;;
    spacetests)  # after a default-space change: every default-space candidate verified (DefaultSpace), split-K and edges
      step spacetests 300 bash -c "cd build && ./tests/dgtune_gpu_tests --gtest_filter='DefaultSpace.*:SplitK.*:EdgeShapes.*'" ;;
    bk256ab)  # small M (decode): the BLOCK_K 256 split-K winners next to the previous session's BLOCK_K 128 winners of the same
      # shapes, same rounds (extra sides), both protocols
      printf '%s\n' "1 2112 7168" "1 576 7168" "64 2112 7168" "64 576 7168" "128 576 7168" >/tmp/bk.txt
      cfgs="64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x48x128_s12_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x48x128_s12_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1"
      extra=""; for c in $cfgs; do extra="$extra --config $c"; done
      for proto in cold-l2 hot-graph; do
        step "bk256ab-$proto" 150 bash -c "$BIN compare --shapes /tmp/bk.txt --db /tmp/bk.db --protocol $proto --rounds 20 --no-copy-limit $extra --format json >$OUT/bk256ab-$proto.json"
      done ;;
    divab)  # small M (decode): the scheduler's fast division (host-computed multiply-high divisors) A/B: build/dgtune-old (the
      # commit before) and the new binary alternately, twice each, on decode winners and 4096^3; x vs cuBLASLt-tuned
      printf '%s\n' "1 2112 7168" "1 576 7168" "64 2112 7168" "128 2112 7168" "1 4096 7168" "64 4096 7168" "128 4096 7168" "4096 4096 4096" >/tmp/div.txt
      cfgs="64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x32x128_s10_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
      extra=""; for c in $cfgs; do extra="$extra --config $c"; done
      for rep in 1 2; do
        for side in old new; do
          bin=$BIN; [ $side = old ] && bin=$ROOT/build/dgtune-old
          for proto in cold-l2 hot-graph; do
            step "divab-$side-$proto-$rep" 90 bash -c "$bin compare --shapes /tmp/div.txt --db /tmp/div-$side.db --protocol $proto --rounds 20 --no-copy-limit $extra --format json >$OUT/divab-$side-$proto-$rep.json"
          done
        done
      done ;;
    preab)  # small M (decode): early TMA issue before setmaxnreg.dec + split-K partials read 4 splits per round. build/dgtune-old
      # (266afb4, the commit before) and the new binary alternately on the 21 decode shapes; the stored winners' configs
      # as extra sides (x vs cuBLASLt-tuned of the same run). PREAB_REPS (default 1) rounds of old,new per protocol.
      grep -vE '^(#|4096|8192)' configs/shapes/deepseek-v3-small-m.txt >/tmp/pre.txt
      cfgs="64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x96x128_s10_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x128x128_s5_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x120x128_s9_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x40x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1 128x72x128_s8_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1 128x32x128_s10_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x64x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1"
      extra=""; for c in $cfgs; do extra="$extra --config $c"; done
      for rep in $(seq 1 "${PREAB_REPS:-1}"); do
        for proto in cold-l2 hot-graph; do
          for side in old new; do
            bin=$BIN; [ $side = old ] && bin=$ROOT/build/dgtune-old
            step "preab-$side-$proto-$rep" 120 bash -c "$bin compare --shapes /tmp/pre.txt --db /tmp/pre-$side.db --protocol $proto --rounds 20 --no-copy-limit $extra --format json >$LOGS/preab-$side-$proto-$rep.json"
          done
        done
      done ;;
    cltests)  # small M (decode): the cluster-split and split-K GPU tests first (a hang is cut by the step timeout)
      step cltests 150 bash -c "cd build && ./tests/dgtune_gpu_tests --gtest_filter='ClusterSplit.*:SplitK.*'" ;;
    clusterab)  # small M (decode): cluster splits (sk<S>c, partials through distributed shared memory) next to the same
      # configs' workspace splits and the stored sk1 winners, same rounds, both protocols
      printf '%s\n' "1 2112 7168" "1 576 7168" "64 2112 7168" "64 576 7168" "128 576 7168" "128 2112 7168" "1 4096 7168" "64 4096 7168" "128 4096 7168" >/tmp/cl.txt
      cfgs="64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1 64x32x256_s9_wg1_sw128_c1x1_rm8_tma_sk4_sm0_2g_p1 64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk4c_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1 64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1 64x48x256_s6_wg1_sw128_c1x1_rm8_tma_sk3c_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1 64x64x256_s5_wg1_sw128_c1x1_rm8_tma_sk3c_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
      extras_ab clusterab /tmp/cl.txt "$cfgs" ;;
    mcprobe)  # small M (decode): A-multicast clusters (1x2, 1x4; 2x2 with BLOCK_M 64 on M = 128) on the long-K / wide-N decode
      # shapes, next to the c1x1 winners, cold and hot (ncu: cuBLASLt runs 4x2 clusters on 128x7168x16384)
      printf '%s\n' "1 7168 16384" "64 7168 16384" "128 7168 16384" "1 4096 7168" "64 4096 7168" "128 4096 7168" "128 2112 7168" "64 24576 1536" "128 24576 1536" >/tmp/mc.txt
      cfgs="64x56x128_s12_wg1_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 64x56x128_s12_wg1_sw128_c1x4_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x4_rm8_tma_sk1_sm0_2g_p1 64x120x128_s9_wg1_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x4_rm8_tma_sk1_sm0_2g_p1 64x96x128_s10_wg1_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 64x64x128_s12_wg1_sw128_c2x2_rm8_tma_sk1_sm0_2g_p1 64x112x128_s9_wg1_sw128_c2x2_rm8_tma_sk1_sm0_2g_p1 128x72x128_s8_wg2_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 128x56x128_s9_wg2_sw128_c1x4_rm8_tma_sk1_sm0_2g_p1 128x64x128_s8_wg2_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 128x64x128_s8_wg2_sw128_c1x4_rm8_tma_sk1_sm0_2g_p1 128x32x128_s10_wg1_sw128_c1x4_rm8_tma_sk1_sm0_2g_p1 64x120x128_s9_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x56x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x72x128_s8_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1 128x64x128_s8_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 64x32x128_s12_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 128x32x128_s10_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
      extras_ab mcprobe /tmp/mc.txt "$cfgs" ;;
    ncupp)  # kernel v2: the fast 4096x24576x1536 winner (pp 128x160) and cuBLASLt's fastest kernel there (nvjet 176x128,
      # 5 stages, non-cooperative), the same ncu sections, one launch each (no .ncu-rep kept)
      secs="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
      pp=128x160x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16
      step ncupp-ours 120 ncu --clock-control none -k regex:fp8_gemm --launch-skip 5 --launch-count 1 $secs "$BIN" run --db /tmp/ncupp.db --m 4096 --n 24576 --k 1536 --accum fast --config $pp
      step ncupp-cublas 150 ncu --clock-control none -k "regex:nvjet_sm90_qqtst_176x128_128x5_1x2_h_bz_TNN" --launch-skip 3 --launch-count 1 $secs "$BIN" run --db /tmp/ncupp.db --m 4096 --n 24576 --k 1536 --accum fast --config $pp --baseline ;;
    ppcab)  # kernel v2: pp in 2-CTA multicast clusters (B across 2x1, A across 1x2) next to the same tiles without a
      # cluster and cuBLASLt FAST_ACCUM, the K <= 2048 fast shapes, same rounds (an empty DB: the loader's default too)
      { grep -E '^(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -E '^[0-9]' configs/shapes/square.txt; } |
        awk '$3 <= 2048 {print $1, $2, $3, "accum=fast"}' >/tmp/shortk-fast.txt
      extra=""
      for t in 128x128x128_s5 128x144x128_s4 128x160x128_s4; do
        for c in c1x1 c2x1 c1x2; do extra="$extra --config ${t}_wg2_sw128_${c}_rm8_tma_sk1_sm0_pp_p16"; done
      done
      step ppcab 300 bash -c "$BIN compare --shapes /tmp/shortk-fast.txt --db /tmp/ppc.db --rounds ${PP_ROUNDS:-20} --no-copy-limit $extra --format json >$OUT/ppcab.json" ;;
    ppring)  # kernel v2: pp with its output staged through a ring of 2 column bands (deeper k-block rings at 144..176
      # columns), next to the stored pp winners' tiles, cuBLASLt FAST_ACCUM, the K <= 2048 fast shapes, same rounds.
      # With $ROOT/build/dgtune-old (whole-tile staging) the same compare runs again with that binary.
      { grep -E '^(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -E '^[0-9]' configs/shapes/square.txt; } |
        awk '$3 <= 2048 {print $1, $2, $3, "accum=fast"}' >/tmp/shortk-fast.txt
      extra=""
      for k in 128x176x128_s5_wg2_sw128_c1x1 128x176x128_s5_wg2_sw128_c2x1 128x160x128_s5_wg2_sw128_c1x1 128x160x128_s4_wg2_sw128_c1x1 128x144x128_s6_wg2_sw128_c1x1 128x128x128_s5_wg2_sw128_c1x1; do
        extra="$extra --config ${k}_rm8_tma_sk1_sm0_pp_p16"
      done
      step ppring 200 bash -c "$BIN compare --shapes /tmp/shortk-fast.txt --db /tmp/ppr.db --rounds ${PP_ROUNDS:-20} --no-copy-limit $extra --format json >$OUT/ppring.json"
      if [ -x "$ROOT/build/dgtune-old" ]; then
        old_extra=$(echo "$extra" | sed 's/ --config 128x1[67][06]x128_s5[^ ]*//g; s/ --config 128x144x128_s6[^ ]*//g')  # these need the ring
        step ppring-old 150 bash -c "$ROOT/build/dgtune-old compare --shapes /tmp/shortk-fast.txt --db /tmp/ppr-old.db --rounds ${PP_ROUNDS:-20} --no-copy-limit $old_extra --format json >$OUT/ppring-old.json"
      fi ;;
    ringab)  # kernel v2: the band-ring epilogue for every TMA-store kernel with more than 2 bands (binary of 957bc17,
      # reverted after this A/B) against $ROOT/build/dgtune-old (ring for pp only, c344bea), the 19 large shapes in both modes: the stored winners ($DGTUNE_DB)
      # and the affected tiles as extra sides, each binary in its own process (ratios to cuBLASLt compared)
      { grep -E '^ *(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -vE '^ *#|^ *$' configs/shapes/square.txt; } | sed 's/#.*//' >/tmp/rab.txt
      sed 's/$/ accum=fast/' /tmp/rab.txt >/tmp/rabf.txt
      xp="--config 128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1 --config 128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 --config 128x136x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
      xf="--config 128x176x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16 --config 128x144x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p16"
      for b in new old; do
        bin=$BIN; [ $b = old ] && bin=$ROOT/build/dgtune-old
        [ -x "$bin" ] || continue
        step "ringab-$b-promote" 120 bash -c "$bin compare --shapes /tmp/rab.txt --db $DGTUNE_DB --rounds ${RING_ROUNDS:-10} --no-copy-limit $xp --format json >$OUT/ringab-$b-promote.json"
        step "ringab-$b-fast" 120 bash -c "$bin compare --shapes /tmp/rabf.txt --db $DGTUNE_DB --rounds ${RING_ROUNDS:-10} --no-copy-limit $xf --format json >$OUT/ringab-$b-fast.json"
      done ;;
    largecmp)  # kernel v2: the stored winners ($DGTUNE_DB, or /tmp/pp.db after ppsweep when LARGE_DB says so) of the 19
      # large shapes against cuBLASLt-tuned, promote and fast, 20 rounds (the perf-large rows)
      { grep -E '^ *(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -vE '^ *#|^ *$' configs/shapes/square.txt; } | sed 's/#.*//' >/tmp/lc.txt
      sed 's/$/ accum=fast/' /tmp/lc.txt >/tmp/lcf.txt
      step largecmp-promote 150 bash -c "$BIN compare --shapes /tmp/lc.txt --db ${LARGE_DB:-$DGTUNE_DB} --rounds 20 --no-copy-limit --format json >$OUT/largecmp-promote.json"
      step largecmp-fast 150 bash -c "$BIN compare --shapes /tmp/lcf.txt --db ${LARGE_DB:-$DGTUNE_DB} --rounds 20 --no-copy-limit --format json >$OUT/largecmp-fast.json" ;;
    flat68)  # small M (decode): tuned t(68) vs t(132) (exhaustive), then compared in interleaved rounds
      step sweep-flat68 150 bash -c "$BIN sweep --shapes configs/shapes/flatness-68-132.txt --db /tmp/flat.db --format json >$OUT/sweep-flat68.json"
      step compare-flat68 60 bash -c "$BIN compare --shapes configs/shapes/flatness-68-132.txt --db /tmp/flat.db --format json >$OUT/compare-flat68.json" ;;
    clutests)  # small M and kernel v2, first after the 2026-12-01 cluster-kernel change (split_k.cuh convergence barrier, early
      # producer exit in cluster kernels; not run on a GPU when it landed): every test with a cluster kernel, then the
      # sanitizers (their key list has cluster splits and pp clusters); a hang is cut by the step timeout
      step clutests 200 bash -c "cd build && ./tests/dgtune_gpu_tests --gtest_filter='ClusterSplit.*:SplitK.*:Pingpong.*:EdgeShapes.*'"
      step clusanitize 300 bash scripts/test.sh -R sanitize -V ;;
    uniab)  # small M and kernel v2: the cluster kernels with uniform loop state (this binary) against $ROOT/build/dgtune-old (b21863b,
      # R2URs before every QGMMA of the cluster splits and every TMA issue of cluster kernels), alternately, twice per
      # protocol: the decode shapes that cluster splits win, the cluster configs as extra sides (x vs cuBLASLt-tuned of
      # the same process), and the fast short-K shapes with pp in 2x1 clusters
      printf '%s\n' "1 2112 7168" "1 576 7168" "64 2112 7168" "64 576 7168" "128 576 7168" "128 2112 7168" "1 4096 7168" "64 4096 7168" >/tmp/uni.txt
      { grep -E '^(4096|8192) ' configs/shapes/deepseek-v3.txt; grep -E '^[0-9]' configs/shapes/square.txt; } |
        awk '$3 <= 2048 {print $1, $2, $3, "accum=fast"}' >/tmp/uni-fast.txt
      ucfgs="64x48x256_s7_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1 64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk4c_sm0_2g_p1 64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk3c_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1 64x64x256_s5_wg1_sw128_c1x1_rm8_tma_sk3c_sm0_2g_p1 64x32x256_s8_wg1_sw128_c1x1_rm8_tma_sk2c_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1 64x64x256_s6_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
      fcfgs="128x160x128_s4_wg2_sw128_c2x1_rm8_tma_sk1_sm0_pp_p16 128x176x128_s5_wg2_sw128_c2x1_rm8_tma_sk1_sm0_pp_p16 128x160x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_pp_p16"
      ux=""; for c in $ucfgs; do ux="$ux --config $c"; done
      fx=""; for c in $fcfgs; do fx="$fx --config $c"; done
      for rep in 1 2; do
        for side in new old; do
          bin=$BIN; [ $side = old ] && bin=$ROOT/build/dgtune-old
          [ -x "$bin" ] || { echo "=== uniab: no $bin"; continue; }
          for proto in cold-l2 hot-graph; do
            step "uniab-$side-$proto-$rep" 100 bash -c "$bin compare --shapes /tmp/uni.txt --db /tmp/uni-$side.db --protocol $proto --rounds 20 --no-copy-limit $ux --format json >$LOGS/uniab-$side-$proto-$rep.json"
          done
          step "uniab-$side-fast-$rep" 120 bash -c "$bin compare --shapes /tmp/uni-fast.txt --db /tmp/uni-$side.db --rounds 20 --no-copy-limit $fx --format json >$LOGS/uniab-$side-fast-$rep.json"
        done
      done ;;
    *) echo "unknown step $s" ;;
  esac
done
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >"$LOGS/clocks-end.csv" 2>&1
[ -f "$DGTUNE_DB" ] && cp "$DGTUNE_DB" "$OUT/tuning.db"
tar -C "$OUT" -czf "$OUT/logs-$(date +%H%M%S).tgz" logs && rm -rf "$LOGS"  # one archive per invocation: a second one in the same call must not overwrite the first
echo "commit $commit; files in $OUT: $(ls "$OUT")"
