#!/usr/bin/env bash
# The worker process on a GPU (README "Crashing and hanging candidates"): a sweep with one trapping and one
# spinning candidate (DGTUNE_TEST_FAULT, test builds only) stores them as crashed and timeout and measures the
# others; `--devices all` stores the same (problem, config, status) set as a plain sweep; `--in-process` stops at
# the trapping candidate with its trial stored. Exit 77 (ctest SKIP) without a GPU.
set -u
bin=$1
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no NVIDIA GPU on this machine"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DGTUNE_CACHE_DIR="$tmp/cache"
printf '256 512 1024 name=faults\n' >"$tmp/s.txt"
common=(--shapes "$tmp/s.txt" --max-candidates 8 --max-samples 20 --no-baseline)
"$bin" sweep "${common[@]}" --db "$tmp/plain.db" >/dev/null 2>"$tmp/plain.log" || { cat "$tmp/plain.log"; exit 1; }
keys() { python3 -c "import sqlite3,sys; print('\n'.join(r[0] for r in sqlite3.connect(sys.argv[1]).execute(
  \"SELECT c.key FROM trial t JOIN config c ON c.id=t.config_id WHERE t.status='ok' ORDER BY c.key\")))" "$1"; }
mapfile -t ok_keys < <(keys "$tmp/plain.db")
[ "${#ok_keys[@]}" -ge 4 ] || { echo "FAIL: only ${#ok_keys[@]} ok trials in the plain sweep"; exit 1; }
trap_key=${ok_keys[1]} spin_key=${ok_keys[3]}
echo "faulty candidates: trap $trap_key, spin $spin_key"

# 1. Worker processes: both faults stored, a new worker each time, every other candidate measured, exit 0.
start=$(date +%s)
DGTUNE_TEST_FAULT="trap:$trap_key,spin:$spin_key" "$bin" sweep "${common[@]}" --db "$tmp/faults.db" >/dev/null \
  2>"$tmp/faults.log"
rc=$?
echo "sweep with faults: exit $rc in $(( $(date +%s) - start )) s"
grep -E "crashed|hung|timeout|new worker" "$tmp/faults.log" | head -20
[ $rc -eq 0 ] || { cat "$tmp/faults.log"; echo "FAIL: exit $rc"; exit 1; }
python3 - "$tmp/plain.db" "$tmp/faults.db" "$trap_key" "$spin_key" <<'PY' || exit 1
import sqlite3, sys
plain, faults, trap_key, spin_key = sys.argv[1:5]
q = "SELECT c.key, t.status, t.error FROM trial t JOIN config c ON c.id=t.config_id"
p = {k: s for k, s, e in sqlite3.connect(plain).execute(q)}
f = {k: (s, e) for k, s, e in sqlite3.connect(faults).execute(q)}
assert set(p) == set(f), (sorted(p), sorted(f))
assert f[trap_key][0] == "crashed", f[trap_key]
assert f[spin_key][0] == "timeout", f[spin_key]
assert "watchdog" in f[spin_key][1] or "did not answer" in f[spin_key][1], f[spin_key]
for k in p:
    if k not in (trap_key, spin_key):
        assert f[k][0] == p[k], (k, f[k], p[k])
print(f"ok: trap -> crashed ({f[trap_key][1][:90]}); spin -> timeout ({f[spin_key][1][:90]}); {len(p) - 2} others as in the plain sweep")
PY
grep -q "starting a new worker" "$tmp/faults.log" || { echo "FAIL: no worker restart logged"; exit 1; }

# 2. --devices all on this machine: the same (problem, config, status) set as the plain sweep.
"$bin" sweep "${common[@]}" --devices all --db "$tmp/all.db" >/dev/null 2>"$tmp/all.log" || { cat "$tmp/all.log"; exit 1; }
python3 - "$tmp/plain.db" "$tmp/all.db" <<'PY' || exit 1
import sqlite3, sys
q = "SELECT p.key, c.key, t.status FROM trial t JOIN config c ON c.id=t.config_id JOIN problem p ON p.id=t.problem_id"
a, b = (set(sqlite3.connect(x).execute(q)) for x in sys.argv[1:3])
assert a == b, (a ^ b)
print(f"ok: --devices all stored the same {len(a)} (problem, config, status) rows as a plain sweep")
PY

# 3. In process: the trapping candidate ends the run (exit 1) with its trial stored and a resume hint.
DGTUNE_TEST_FAULT="trap:$trap_key" "$bin" sweep "${common[@]}" --in-process --db "$tmp/inproc.db" >/dev/null \
  2>"$tmp/inproc.log"
rc=$?
[ $rc -eq 1 ] || { cat "$tmp/inproc.log"; echo "FAIL: --in-process with a trap exited $rc, expected 1"; exit 1; }
grep -q "Run the same command again" "$tmp/inproc.log" || { cat "$tmp/inproc.log"; echo "FAIL: no resume hint"; exit 1; }
st=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT t.status FROM trial t JOIN config c ON c.id=t.config_id WHERE c.key=?\", (sys.argv[2],)).fetchone()[0])" "$tmp/inproc.db" "$trap_key")
[ "$st" = crashed ] || { echo "FAIL: in-process trap stored as '$st'"; exit 1; }
echo "ok: --in-process stops at the trap with the trial stored as crashed"
