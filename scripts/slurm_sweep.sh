#!/usr/bin/env bash
#SBATCH --job-name=dgtune-shard
#SBATCH --array=0-3
#SBATCH --ntasks=1
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=16
#SBATCH --time=08:00:00
#SBATCH --output=dgtune-shard-%A_%a.log
#
# scripts/slurm_sweep.sh: one `dgtune sweep` spread over the nodes of a Slurm cluster, one shard of the shapes
# file per array task, each into its own DB, then ONE merge of the shard DBs (README "Several machines").
# Slurm is the engine: it places, runs, retries and orders the jobs; dgtune only sweeps a shard
# (`dgtune sweep --shard i/n`, problem j of the file goes to shard j mod n) and merges (`dgtune db merge`).
# The header above is for the array tasks (one GPU each; the sweep compiles on the task's cores); edit it, or
# override any line on the sbatch command line.
#
# Usage (on a login node; the build and OUTDIR on a file system every node sees):
#
#   SHAPES=configs/shapes/deepseek-v3.txt OUTDIR=/scratch/$USER/ds3 SHARDS=8 scripts/slurm_sweep.sh submit [SWEEP OPTIONS]
#       Copies SHAPES to $OUTDIR/shapes.txt (every task reads the same bytes), submits the array job
#       (--array=0-(SHARDS-1), logs $OUTDIR/shard-I.log) and the merge job with --dependency=afterok:<array>
#       (it starts only when EVERY task exited 0; --kill-on-invalid-dep cancels it when one fails, so a partial
#       merge is never written by accident). Prints both job ids. SWEEP OPTIONS go to every `dgtune sweep`
#       (e.g. --strategy model --top-k 16).
#
#   SHAPES=... OUTDIR=... sbatch [--array=0-7] scripts/slurm_sweep.sh [task] [SWEEP OPTIONS]
#       The array alone, by hand (the header's --array unless given). Then the merge, by hand:
#   OUTDIR=... scripts/slurm_sweep.sh merge        (or: sbatch --dependency=afterok:JOBID --wrap "scripts/slurm_sweep.sh merge")
#
#   A failed task: fix the cause and run the same shard again; its DB resumes (stored trials are not measured
#   again): SHARDS=8 SHAPES=$OUTDIR/shapes.txt OUTDIR=... sbatch --array=5 scripts/slurm_sweep.sh; then merge.
#
# Modes:
#   task   (the default; what each array task runs) shard I = $SLURM_ARRAY_TASK_ID of N = $SLURM_ARRAY_TASK_COUNT:
#            $DGTUNE_SWEEP_BIN sweep --shapes $SHAPES --shard I/N --db $OUTDIR/shard-I.db [SWEEP OPTIONS]
#          and, when it exits 0, the marker $OUTDIR/shard-I.done (the shapes file's sha256). A shard with no
#          problem (N larger than the file's problems) exits 0 with no DB.
#   merge  checks that shards 0..N-1 are all done with the same shapes file, then
#            $DGTUNE_BIN db merge $OUTDIR/shard-0.db ... -o $MERGED_DB      (one DB: export --format db)
#          and `db check` on the result. Run it once; it refuses an existing output.
#   submit see above.
#
# Environment:
#   SHAPES            shapes file (task, submit)
#   OUTDIR            the run's directory: shard DBs, markers, logs, merged DB (all modes; created by task/submit)
#   SHARDS            submit: the number of shards (default 4). task: the total N when the array is not exactly
#                     0..N-1 (a rerun of some shards); else N = SLURM_ARRAY_TASK_COUNT. merge: default
#                     $OUTDIR/shards (written by the first task; every task and merge checks it)
#   MERGED_DB         merge output (default $OUTDIR/merged.db; must not exist)
#   DGTUNE_BIN        the dgtune binary (default: $SLURM_SUBMIT_DIR/build/dgtune, else build/dgtune beside this
#                     script, else dgtune on PATH; submit passes the resolved absolute path to the jobs)
#   DGTUNE_SWEEP_BIN  the binary of the sweep step only (default $DGTUNE_BIN). The CPU test
#                     tests/cli/slurm_sweep.sh points it at build/tests/dgtune_fake_sweep, which takes the same
#                     `sweep --shapes --shard --db` flags and runs the real sweep loop with a fake measurer.
#   SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_MAX: set by Slurm (task)
#   DGTUNE_CACHE_DIR  the cubin cache, as for dgtune (a node-local disk avoids file locks over NFS)
#
# Exit codes: 0 ok; 2 a missing or bad variable or argument (the message names it and the rule); 1 a failed
# step (merge, a shard not done); a task exits with its sweep's code (130 interrupted, 1 error).
set -uo pipefail

me=slurm_sweep.sh
die() {
  local rc=$1
  shift
  echo "$me: error: $*" >&2
  exit "$rc"
}
say() { echo "$me: $*" >&2; }

# A decimal count (digits only, at most 9 of them: no sign, no 0x, no spaces); prints its value.
# Leading zeros are decimal, as for dgtune's counts. $1 names the variable in the error.
decimal() {
  local name=$1 value=$2
  [[ $value =~ ^[0-9]{1,9}$ ]] ||
    die 2 "$name='$value' is not a decimal integer (digits 0-9 only, at most 9: no sign, no 0x prefix, no spaces)"
  echo $((10#$value))
}

need() { [ -n "${!1:-}" ] || die 2 "$1 is not set: $2"; }

# The dgtune binary: DGTUNE_BIN (a path or a name on PATH), else the defaults listed at the top.
dgtune_bin() {
  local b
  if [ -n "${DGTUNE_BIN:-}" ]; then
    b=$DGTUNE_BIN
    [[ $b == */* ]] || b=$(command -v -- "$b") || die 2 "DGTUNE_BIN='$DGTUNE_BIN': no such command on PATH"
    [ -f "$b" ] && [ -x "$b" ] || die 2 "DGTUNE_BIN='$DGTUNE_BIN' is not an executable file"
  elif [ -n "${SLURM_SUBMIT_DIR:-}" ] && [ -x "$SLURM_SUBMIT_DIR/build/dgtune" ]; then
    b=$SLURM_SUBMIT_DIR/build/dgtune
  elif [ -x "$(dirname -- "$0")/../build/dgtune" ]; then
    b=$(dirname -- "$0")/../build/dgtune
  elif b=$(command -v dgtune); then
    :
  else
    die 2 "no dgtune binary: set DGTUNE_BIN (tried \$SLURM_SUBMIT_DIR/build/dgtune, build/dgtune beside $0, dgtune on PATH)"
  fi
  readlink -f -- "$b"
}

sweep_bin() {
  if [ -n "${DGTUNE_SWEEP_BIN:-}" ]; then
    [ -f "$DGTUNE_SWEEP_BIN" ] && [ -x "$DGTUNE_SWEEP_BIN" ] ||
      die 2 "DGTUNE_SWEEP_BIN='$DGTUNE_SWEEP_BIN' is not an executable file"
    echo "$DGTUNE_SWEEP_BIN"
  else
    dgtune_bin
  fi
}

sha256_of() { sha256sum <"$1" | cut -d' ' -f1; }

# Writes VALUE to FILE unless FILE exists (the first task wins: write a temporary file, then ln, which fails
# when FILE exists, atomically also on NFS); then FILE must hold VALUE. Several arrays in one OUTDIR with
# different shard counts or shapes files would mix shards that do not add up to one file.
record_once() {
  local file=$1 value=$2 what=$3 tmp
  tmp="$file.$$.$RANDOM.tmp"
  printf '%s\n' "$value" >"$tmp" || die 1 "cannot write $tmp"
  # A file system without hard links: mv -n (no-clobber; not atomic, but the check below still catches a mix).
  ln "$tmp" "$file" 2>/dev/null || [ -e "$file" ] || mv -n "$tmp" "$file"
  rm -f "$tmp"
  local have
  have=$(cat "$file" 2>/dev/null) || die 1 "cannot read $file"
  [ "$have" = "$value" ] || die 2 "$what ($file holds '$have'; this task has '$value')"
}

task() {
  local arg
  for arg in "$@"; do
    case $arg in
      --shard | --shard=* | --shapes | --shapes=* | --db | --db=*)
        die 2 "sweep option '$arg' is set by this script (--shapes \$SHAPES --shard I/N --db \$OUTDIR/shard-I.db); drop it" ;;
    esac
  done
  need SLURM_ARRAY_TASK_ID "run this mode as a Slurm array task (sbatch --array=0-N-1 $0) or set it by hand"
  local id n
  id=$(decimal SLURM_ARRAY_TASK_ID "$SLURM_ARRAY_TASK_ID") || exit
  if [ -n "${SHARDS:-}" ]; then
    n=$(decimal SHARDS "$SHARDS") || exit
  else
    need SLURM_ARRAY_TASK_COUNT "it is set by Slurm for array tasks (Slurm 18.08 or newer); set SHARDS=N instead"
    n=$(decimal SLURM_ARRAY_TASK_COUNT "$SLURM_ARRAY_TASK_COUNT") || exit
    # Shard I of N needs the array to be exactly 0..N-1: --array=1-4 would sweep no shard 0 and compute a shard
    # 4 of 4, --array=0-14:2 would give 8 tasks numbered up to 14.
    local min max
    if [ -n "${SLURM_ARRAY_TASK_MIN:-}" ]; then
      min=$(decimal SLURM_ARRAY_TASK_MIN "$SLURM_ARRAY_TASK_MIN") || exit
      [ "$min" -eq 0 ] ||
        die 2 "SLURM_ARRAY_TASK_MIN=$min: the array must be 0..N-1 (sbatch --array=0-$((n - 1))); to run some shards of N again, set SHARDS=N"
    fi
    if [ -n "${SLURM_ARRAY_TASK_MAX:-}" ]; then
      max=$(decimal SLURM_ARRAY_TASK_MAX "$SLURM_ARRAY_TASK_MAX") || exit
      [ "$max" -eq $((n - 1)) ] ||
        die 2 "SLURM_ARRAY_TASK_MAX=$max with SLURM_ARRAY_TASK_COUNT=$n: the array must be 0..N-1 without gaps or steps (sbatch --array=0-$((n - 1))); to run some shards of N again, set SHARDS=N"
    fi
  fi
  [ "$n" -ge 1 ] || die 2 "the shard count is 0: there must be at least one shard"
  [ "$id" -lt "$n" ] ||
    die 2 "SLURM_ARRAY_TASK_ID=$id is not below the shard count $n (shards are 0..$((n - 1)); the array must be --array=0-$((n - 1)))"
  need SHAPES "the shapes file every task sweeps its shard of"
  [ -f "$SHAPES" ] && [ -r "$SHAPES" ] || die 2 "SHAPES='$SHAPES' is not a readable file"
  need OUTDIR "the directory of the shard DBs (on a file system every node sees)"
  mkdir -p -- "$OUTDIR" || die 1 "cannot create OUTDIR='$OUTDIR'"
  local bin sha db=$OUTDIR/shard-$id.db
  bin=$(sweep_bin) || exit
  sha=$(sha256_of "$SHAPES") || die 1 "cannot read SHAPES='$SHAPES'"
  record_once "$OUTDIR/shards" "$n" \
    "OUTDIR='$OUTDIR' holds the shards of a run with another shard count: use a new OUTDIR, or set SHARDS to that count to rerun shards of that run"
  record_once "$OUTDIR/shapes.sha256" "$sha" \
    "SHAPES='$SHAPES' is not the file the other shards of OUTDIR='$OUTDIR' split (sha256 differs): every task must read the same file (submit snapshots it into OUTDIR)"
  rm -f -- "$OUTDIR/shard-$id.done"
  say "shard $id/$n on $(hostname): $bin sweep --shapes $SHAPES --shard $id/$n --db $db $*"
  "$bin" sweep --shapes "$SHAPES" --shard "$id/$n" --db "$db" "$@"
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    say "shard $id/$n failed (exit $rc); after fixing the cause run it again, it resumes its DB: SHARDS=$n SHAPES=$SHAPES OUTDIR=$OUTDIR sbatch --array=$id $me"
    exit "$rc"
  fi
  printf '%s\n' "$sha" >"$OUTDIR/shard-$id.done.tmp" && mv -f -- "$OUTDIR/shard-$id.done.tmp" "$OUTDIR/shard-$id.done" ||
    die 1 "cannot write $OUTDIR/shard-$id.done"
  if [ -f "$db" ]; then say "shard $id/$n done: $db"; else say "shard $id/$n done: no problem in this shard, no DB"; fi
}

merge() {
  [ $# -eq 0 ] || die 2 "merge takes no arguments (got: $*); it reads OUTDIR, SHARDS and MERGED_DB"
  need OUTDIR "the directory the shard tasks wrote"
  [ -d "$OUTDIR" ] || die 2 "OUTDIR='$OUTDIR' is not a directory"
  local n
  if [ -n "${SHARDS:-}" ]; then
    n=$(decimal SHARDS "$SHARDS") || exit
  elif [ -f "$OUTDIR/shards" ]; then
    n=$(decimal "$OUTDIR/shards" "$(cat "$OUTDIR/shards")") || exit
  else
    die 2 "SHARDS is not set and $OUTDIR/shards does not exist (no shard task has started in OUTDIR='$OUTDIR')"
  fi
  [ "$n" -ge 1 ] || die 2 "SHARDS=0: there must be at least one shard"
  local out=${MERGED_DB:-$OUTDIR/merged.db}
  [ ! -e "$out" ] || die 2 "the merge output '$out' exists; remove it or set MERGED_DB to a new file"
  local bin
  bin=$(dgtune_bin) || exit
  local i missing=() dbs=() empty=() shas=()
  for ((i = 0; i < n; i++)); do
    if [ ! -f "$OUTDIR/shard-$i.done" ]; then
      missing+=("$i")
      continue
    fi
    shas+=("$(cat "$OUTDIR/shard-$i.done")")
    if [ -f "$OUTDIR/shard-$i.db" ]; then dbs+=("$OUTDIR/shard-$i.db"); else empty+=("$i"); fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local list
    list=$(IFS=,; echo "${missing[*]}")
    die 1 "shards ${missing[*]} of $n are not done (no $OUTDIR/shard-I.done: failed, running or never run); run them (SHARDS=$n SHAPES=... OUTDIR=$OUTDIR sbatch --array=$list $me), then merge again"
  fi
  local distinct
  distinct=$(printf '%s\n' "${shas[@]}" | sort -u | wc -l)
  [ "$distinct" -eq 1 ] || die 1 "the shards of $OUTDIR split different shapes files (sha256 in shard-I.done differ); they do not add up to one sweep"
  [ ${#dbs[@]} -ge 1 ] || die 1 "no shard of $OUTDIR stored a DB"
  if [ ${#dbs[@]} -eq 1 ]; then
    # db merge takes two or more; one DB is copied as export --format db does (claims dropped).
    say "merge: one shard DB (${dbs[0]}); copying it to $out"
    "$bin" export --db "${dbs[0]}" --format db --out "$out" || die 1 "copying ${dbs[0]} to $out failed"
  else
    say "merge: $bin db merge ${dbs[*]} -o $out"
    "$bin" db merge "${dbs[@]}" -o "$out" || die 1 "db merge of the ${#dbs[@]} shard DBs of $OUTDIR failed"
  fi
  local check
  check=$("$bin" db check --db "$out" 2>&1) || { echo "$check" >&2; die 1 "db check --db $out found a problem (above)"; }
  say "merged $n shards into $out (${#dbs[@]} DBs${empty:+; shards without a problem: ${empty[*]}}); winners: $bin export --db $out"
}

submit() {
  command -v sbatch >/dev/null || die 1 "sbatch not found: run submit on a Slurm login node"
  need SHAPES "the shapes file to split"
  [ -f "$SHAPES" ] && [ -r "$SHAPES" ] || die 2 "SHAPES='$SHAPES' is not a readable file"
  need OUTDIR "the run's directory (on a file system every node sees)"
  local n
  n=$(decimal SHARDS "${SHARDS:-4}") || exit
  [ "$n" -ge 1 ] || die 2 "SHARDS=0: there must be at least one shard"
  mkdir -p -- "$OUTDIR" || die 1 "cannot create OUTDIR='$OUTDIR'"
  local outdir self bin
  outdir=$(readlink -f -- "$OUTDIR")
  self=$(readlink -f -- "$0")
  bin=$(dgtune_bin) || exit
  local sweep=${DGTUNE_SWEEP_BIN:-$bin}
  # The tasks read a snapshot, so editing SHAPES while the array waits in the queue changes nothing.
  if [ -e "$outdir/shapes.txt" ]; then
    cmp -s -- "$SHAPES" "$outdir/shapes.txt" ||
      die 2 "OUTDIR='$OUTDIR' already holds another run's shapes.txt; use a new OUTDIR"
  else
    cp -- "$SHAPES" "$outdir/shapes.txt" || die 1 "cannot copy SHAPES to $outdir/shapes.txt"
  fi
  local array merge_job
  array=$(SHAPES=$outdir/shapes.txt OUTDIR=$outdir SHARDS=$n DGTUNE_BIN=$bin DGTUNE_SWEEP_BIN=$sweep \
    sbatch --parsable --export=ALL --array=0-$((n - 1)) --output="$outdir/shard-%a.log" "$self" task "$@") ||
    die 1 "sbatch of the shard array failed"
  array=${array%%;*}
  merge_job=$(OUTDIR=$outdir SHARDS=$n DGTUNE_BIN=$bin \
    sbatch --parsable --export=ALL --dependency=afterok:"$array" --kill-on-invalid-dep=yes \
    --job-name=dgtune-merge --ntasks=1 --cpus-per-task=2 --time=01:00:00 --output="$outdir/merge.log" \
    --wrap="$(printf '%q merge' "$self")") ||
    die 1 "sbatch of the merge job failed (the array $array is queued: merge by hand later, OUTDIR=$outdir $self merge)"
  merge_job=${merge_job%%;*}
  echo "array job $array: $n shards of $SHAPES into $outdir/shard-I.db (logs $outdir/shard-I.log)"
  echo "merge job $merge_job: after every shard exits 0, into ${MERGED_DB:-$outdir/merged.db} (log $outdir/merge.log)"
}

mode=task
case "${1:-}" in
  task | merge | submit)
    mode=$1
    shift
    ;;
  -h | --help)
    sed -n '2,/^set -uo/p' "$0" | sed '$d'
    exit 0
    ;;
  "" | -*) ;;  # no mode: a task (what sbatch runs); options are the sweep's
  *) die 2 "unknown mode '$1' (want task, merge or submit; --help)" ;;
esac
"$mode" "$@"
