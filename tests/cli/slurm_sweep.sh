#!/usr/bin/env bash
# scripts/slurm_sweep.sh on the CPU: every array task run with fake SLURM_ARRAY_* variables and
# the fake sweep (tests/fake/fake_sweep.cpp: the real sweep loop and --shard parsing, a deterministic fake
# measurer) through the script's DGTUNE_SWEEP_BIN hook, then the merge with the real `dgtune db merge`. The merged
# DB must hold the same (problem, config, status) set and winners as one full fake sweep of the same file, read
# with python3's sqlite3 (not dgtune's code). Then the script's errors, an empty shard, one shard, reruns and
# `submit` against a fake sbatch that records its arguments.
#
#   tests/cli/slurm_sweep.sh path/to/dgtune path/to/dgtune_fake_sweep
set -u
bin=$(readlink -f "$1")
fake=$(readlink -f "$2")
script=$(readlink -f "$(dirname "$0")/../../scripts/slurm_sweep.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
source "$(dirname "$0")/expect.sh"

lacks() {  # the last command's output must not hold $1
  if grep -qF -- "$1" "$tmp/err" "$tmp/out"; then
    echo "FAIL: output holds: $1"
    fail=1
  fi
}
check() {  # check <description> <command...>: a condition that must hold
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

# (problem key, config key, status) rows and winners of a DB, sorted, one per line.
trial_set() {
  python3 - "$1" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for r in sorted(c.execute("SELECT p.key, c.key, t.status FROM trial t JOIN problem p ON p.id = t.problem_id "
                          "JOIN config c ON c.id = t.config_id")):
    print(*r)
EOF
}
winner_set() {
  python3 - "$1" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for r in sorted(c.execute("SELECT p.key, c.key FROM winner w JOIN problem p ON p.id = w.problem_id "
                          "JOIN config c ON c.id = w.config_id")):
    print(*r)
EOF
}
problems_of() {
  python3 - "$1" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for (k,) in sorted(c.execute("SELECT DISTINCT p.key FROM trial t JOIN problem p ON p.id = t.problem_id")):
    print(k)
EOF
}

# 5 distinct problems, a repeated one (line 4 = line 2) and a comment.
cat >"$tmp/shapes.txt" <<'EOF'
# five problems
64 576 7168
128 2112 7168
64 576 7168 name=again
4096 4096 4096
256 7168 2048 scale=channel
512 512 512 accum=fast
EOF

# One task of the array: the script as Slurm runs it (array 0..N-1), with the fake sweep.
task() {  # task <outdir> <id> <n> [sweep options...]
  local out=$1 id=$2 n=$3
  shift 3
  env -u SHARDS SHAPES="$tmp/shapes.txt" OUTDIR="$out" DGTUNE_BIN="$bin" DGTUNE_SWEEP_BIN="$fake" \
    SLURM_ARRAY_TASK_ID="$id" SLURM_ARRAY_TASK_COUNT="$n" SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=$((n - 1)) \
    bash "$script" "$@"
}

# ---- one full sweep, the reference -------------------------------------------------------------------------
expect 0 "6 shapes" "$fake" sweep --shapes "$tmp/shapes.txt" --db "$tmp/full.db" --max-candidates 3
trial_set "$tmp/full.db" >"$tmp/full.trials"
winner_set "$tmp/full.db" >"$tmp/full.winners"
check "the full sweep stored 5 problems x 3 candidates" [ "$(wc -l <"$tmp/full.trials")" -eq 15 ]
check "the full sweep has 5 winners" [ "$(wc -l <"$tmp/full.winners")" -eq 5 ]

# ---- two and three shards, each task then the merge ----------------------------------------------------------
for n in 2 3; do
  out=$tmp/run$n
  for ((i = 0; i < n; i++)); do
    expect 0 "shard $i/$n of $tmp/shapes.txt: " task "$out" "$i" "$n" --max-candidates 3
    check "shard $i/$n wrote its done marker" [ -f "$out/shard-$i.done" ]
  done
  # Disjoint: no problem in two shard DBs, and together every problem of the file.
  for ((i = 0; i < n; i++)); do problems_of "$out/shard-$i.db"; done | sort >"$tmp/shard-problems"
  check "$n shards: 5 problems, none twice" [ "$(sort -u "$tmp/shard-problems" | wc -l)" -eq 5 ] 
  check "$n shards: no problem in two shards" [ "$(wc -l <"$tmp/shard-problems")" -eq 5 ]
  expect 0 "merged $n shards into $out/merged.db" env OUTDIR="$out" DGTUNE_BIN="$bin" bash "$script" merge
  trial_set "$out/merged.db" >"$tmp/merged.trials"
  winner_set "$out/merged.db" >"$tmp/merged.winners"
  check "$n shards merged: the same (problem, config, status) set as one full sweep" \
    cmp -s "$tmp/full.trials" "$tmp/merged.trials"
  check "$n shards merged: the same winners as one full sweep" cmp -s "$tmp/full.winners" "$tmp/merged.winners"
  # A second merge refuses to overwrite its output.
  expect 2 "the merge output '$out/merged.db' exists" env OUTDIR="$out" DGTUNE_BIN="$bin" bash "$script" merge
done

# Shard 1 of 3 holds problems 1 and 4 (file order; line 4 repeats problem 0): 128x2112x7168 and 512^3 fast.
problems_of "$tmp/run3/shard-1.db" >"$tmp/p1"
check "shard 1/3 holds 2 problems" [ "$(wc -l <"$tmp/p1")" -eq 2 ]
check "shard 1/3 holds 128x2112x7168" grep -q "^128x2112x7168" "$tmp/p1"
check "shard 1/3 holds 512x512x512" grep -q "^512x512x512" "$tmp/p1"

# A task run again resumes its DB: nothing is measured twice (the fake's log says REMEASURED otherwise).
expect 0 "shard 1/3" task "$tmp/run3" 1 3 --max-candidates 3 --log "$tmp/rerun.log"
check "a rerun task measured nothing again" [ ! -s "$tmp/rerun.log" ]

# ---- more shards than problems: the empty shard exits 0 without a DB, the merge skips it ---------------------
out=$tmp/run7
for ((i = 0; i < 7; i++)); do task "$out" "$i" 7 --max-candidates 3 >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: shard $i/7"; cat "$tmp/err"; fail=1; }; done
expect 0 "shard 6/7 done: no problem in this shard, no DB" task "$out" 6 7 --max-candidates 3
expect 0 "0 of 5 problems: nothing to sweep" task "$out" 5 7 --max-candidates 3
check "an empty shard has no DB" [ ! -e "$out/shard-5.db" ]
expect 0 "shards without a problem: 5 6" env OUTDIR="$out" DGTUNE_BIN="$bin" bash "$script" merge
trial_set "$out/merged.db" >"$tmp/merged.trials"
check "7 shards (2 empty) merged: the full sweep's set" cmp -s "$tmp/full.trials" "$tmp/merged.trials"

# ---- one shard: copied with export --format db --------------------------------------------------------------
out=$tmp/run1
expect 0 "shard 0/1" task "$out" 0 1 --max-candidates 3
expect 0 "one shard DB" env OUTDIR="$out" DGTUNE_BIN="$bin" bash "$script" merge
trial_set "$out/merged.db" >"$tmp/merged.trials"
check "1 shard: the full sweep's set" cmp -s "$tmp/full.trials" "$tmp/merged.trials"

# ---- the merge refuses an incomplete or mixed run --------------------------------------------------------------
out=$tmp/partial
expect 0 "shard 0/3" task "$out" 0 3 --max-candidates 3
expect 1 "shards 1 2 of 3 are not done" env OUTDIR="$out" DGTUNE_BIN="$bin" bash "$script" merge
lacks "merged"
check "a refused merge wrote no output" [ ! -e "$out/merged.db" ]
expect 1 "sbatch --array=1,2" env OUTDIR="$out" DGTUNE_BIN="$bin" bash "$script" merge
# Rerun of some shards of 3: the array is 1..2 (count 2), SHARDS=3 says the total.
# --array=0-2:2 (tasks 0 and 2, count 2) is not 0..N-1 either.
expect 2 "SLURM_ARRAY_TASK_MAX=2 with SLURM_ARRAY_TASK_COUNT=2" env SHAPES="$tmp/shapes.txt" OUTDIR="$out" \
  DGTUNE_BIN="$bin" DGTUNE_SWEEP_BIN="$fake" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0 \
  SLURM_ARRAY_TASK_MAX=2 bash "$script" --max-candidates 3
expect 2 "SLURM_ARRAY_TASK_MIN=1: the array must be 0..N-1" env SHAPES="$tmp/shapes.txt" OUTDIR="$out" \
  DGTUNE_BIN="$bin" DGTUNE_SWEEP_BIN="$fake" SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=1 \
  bash "$script" --max-candidates 3
for i in 1 2; do
  expect 0 "shard $i/3" env SHARDS=3 SHAPES="$tmp/shapes.txt" OUTDIR="$out" DGTUNE_BIN="$bin" \
    DGTUNE_SWEEP_BIN="$fake" SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=1 \
    SLURM_ARRAY_TASK_MAX=2 bash "$script" --max-candidates 3
done
expect 0 "merged 3 shards" env OUTDIR="$out" DGTUNE_BIN="$bin" bash "$script" merge
trial_set "$out/merged.db" >"$tmp/merged.trials"
check "shards rerun with SHARDS=3 merged: the full sweep's set" cmp -s "$tmp/full.trials" "$tmp/merged.trials"
# Another shard count or another shapes file in the same OUTDIR is refused before sweeping.
expect 2 "holds the shards of a run with another shard count" task "$out" 0 2 --max-candidates 3
cp "$tmp/shapes.txt" "$tmp/edited.txt"
echo "1024 1024 1024" >>"$tmp/edited.txt"
expect 2 "is not the file the other shards of OUTDIR='$out' split" env SHAPES="$tmp/edited.txt" OUTDIR="$out" \
  DGTUNE_BIN="$bin" DGTUNE_SWEEP_BIN="$fake" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=3 bash "$script"

# ---- bad or missing variables and arguments: exit 2, naming the variable and the rule ------------------------
ok_env=(SHAPES="$tmp/shapes.txt" OUTDIR="$tmp/bad" DGTUNE_BIN="$bin" DGTUNE_SWEEP_BIN="$fake")
expect 2 "SLURM_ARRAY_TASK_ID is not set" env -u SLURM_ARRAY_TASK_ID "${ok_env[@]}" SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "SLURM_ARRAY_TASK_COUNT is not set" env -u SLURM_ARRAY_TASK_COUNT -u SHARDS "${ok_env[@]}" SLURM_ARRAY_TASK_ID=0 bash "$script"
expect 2 "SLURM_ARRAY_TASK_ID='x1' is not a decimal integer" env "${ok_env[@]}" SLURM_ARRAY_TASK_ID=x1 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "SLURM_ARRAY_TASK_ID='-1' is not a decimal integer" env "${ok_env[@]}" SLURM_ARRAY_TASK_ID=-1 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "SLURM_ARRAY_TASK_COUNT='0x2' is not a decimal integer" env "${ok_env[@]}" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=0x2 bash "$script"
expect 2 "SLURM_ARRAY_TASK_ID=2 is not below the shard count 2" env "${ok_env[@]}" SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "the shard count is 0" env "${ok_env[@]}" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=0 bash "$script"
expect 2 "SHAPES is not set" env -u SHAPES OUTDIR="$tmp/bad" DGTUNE_BIN="$bin" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "SHAPES='$tmp/nope.txt' is not a readable file" env "${ok_env[@]}" SHAPES="$tmp/nope.txt" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "OUTDIR is not set" env -u OUTDIR SHAPES="$tmp/shapes.txt" DGTUNE_BIN="$bin" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "DGTUNE_SWEEP_BIN='$tmp/nope' is not an executable file" env "${ok_env[@]}" DGTUNE_SWEEP_BIN="$tmp/nope" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "DGTUNE_BIN='$tmp/shapes.txt' is not an executable file" env -u DGTUNE_SWEEP_BIN SHAPES="$tmp/shapes.txt" OUTDIR="$tmp/bad" DGTUNE_BIN="$tmp/shapes.txt" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 bash "$script"
expect 2 "sweep option '--shard' is set by this script" env "${ok_env[@]}" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 bash "$script" --shard 0/2
expect 2 "sweep option '--db=x.db' is set by this script" env "${ok_env[@]}" SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 bash "$script" --db=x.db
expect 2 "unknown mode 'sweep'" bash "$script" sweep
expect 2 "merge takes no arguments" env OUTDIR="$tmp/run2" bash "$script" merge extra
expect 2 "OUTDIR='$tmp/none' is not a directory" env OUTDIR="$tmp/none" DGTUNE_BIN="$bin" bash "$script" merge
expect 2 "SHARDS='two' is not a decimal integer" env OUTDIR="$tmp/run2" SHARDS=two DGTUNE_BIN="$bin" bash "$script" merge
check "no bad-input task created a shard DB" [ ! -e "$tmp/bad/shard-0.db" ]
# A sweep option the sweep refuses: the task exits with the sweep's code and writes no done marker.
expect 2 "--max-candidates" task "$tmp/badopt" 0 2 --max-candidates -3
check "a failed task wrote no done marker" [ ! -e "$tmp/badopt/shard-0.done" ]

# ---- the real dgtune sweep reads --shard the same way (no GPU needed for these) --------------------------------
printf '64 64 64\n128 128 128\n' >"$tmp/two.txt"
expect 2 "--shard: '2/2': shard index 2 is not below the shard count 2" "$bin" sweep --shapes "$tmp/two.txt" --shard 2/2 --db "$tmp/real.db"
expect 2 "shard count '0x2' is not a decimal integer" "$bin" sweep --shapes "$tmp/two.txt" --shard 1/0x2 --db "$tmp/real.db"
expect 2 "'1': no '/' between the shard index and the shard count" "$bin" sweep --shapes "$tmp/two.txt" --shard 1 --db "$tmp/real.db"
expect 0 "shard 2/3 of $tmp/two.txt: 0 of 2 problems: nothing to sweep" "$bin" sweep --shapes "$tmp/two.txt" --shard 2/3 --db "$tmp/real.db"
check "dgtune sweep: a refused or empty shard created no DB" [ ! -e "$tmp/real.db" ]

# ---- submit: the two sbatch calls, against a fake sbatch that records its arguments and environment ---------
mkdir -p "$tmp/fakebin"
cat >"$tmp/fakebin/sbatch" <<EOF
#!/usr/bin/env bash
n=\$(ls "$tmp/sbatch-calls" 2>/dev/null | wc -l)
mkdir -p "$tmp/sbatch-calls"
{ printf '%s\n' "\$@"; echo "ENV SHAPES=\${SHAPES:-} SHARDS=\${SHARDS:-} DGTUNE_BIN=\${DGTUNE_BIN:-}"; } >"$tmp/sbatch-calls/\$n"
echo "\$((4242 + n));cluster"
EOF
chmod +x "$tmp/fakebin/sbatch"
expect 0 "array job 4242: 3 shards" env PATH="$tmp/fakebin:$PATH" SHAPES="$tmp/shapes.txt" OUTDIR="$tmp/sub" SHARDS=3 \
  DGTUNE_BIN="$bin" bash "$script" submit --strategy model --top-k 4
check "submit: merge job 4243 reported" grep -qF "merge job 4243: after every shard exits 0" "$tmp/out"
check "submit: the array is 0-2" grep -qx -- "--array=0-2" "$tmp/sbatch-calls/0"
check "submit: the array runs this script's task mode with the sweep options" \
  bash -c "grep -qx -- '$script' '$tmp/sbatch-calls/0' && grep -qx task '$tmp/sbatch-calls/0' && grep -qx -- --top-k '$tmp/sbatch-calls/0'"
check "submit: the tasks read the snapshot and know the total" \
  grep -qF "ENV SHAPES=$tmp/sub/shapes.txt SHARDS=3 DGTUNE_BIN=$bin" "$tmp/sbatch-calls/0"
check "submit: the merge waits for the whole array" grep -qx -- "--dependency=afterok:4242" "$tmp/sbatch-calls/1"
check "submit: the merge job runs merge mode" grep -q -- "--wrap=.*slurm_sweep.sh merge" "$tmp/sbatch-calls/1"
check "submit: SHAPES snapshot in OUTDIR" cmp -s "$tmp/shapes.txt" "$tmp/sub/shapes.txt"
expect 2 "already holds another run's shapes.txt" env PATH="$tmp/fakebin:$PATH" SHAPES="$tmp/edited.txt" \
  OUTDIR="$tmp/sub" DGTUNE_BIN="$bin" bash "$script" submit
expect 2 "SHARDS='0x3' is not a decimal integer" env PATH="$tmp/fakebin:$PATH" SHAPES="$tmp/shapes.txt" \
  OUTDIR="$tmp/sub2" SHARDS=0x3 DGTUNE_BIN="$bin" bash "$script" submit

exit $fail
