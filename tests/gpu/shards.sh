#!/usr/bin/env bash
# Shards on a GPU: configs/shapes/smoke.txt swept whole and as two shards (`--shard 0/2`, `1/2`) merged with
# `dgtune db merge` hold the same (problem, config, status) set. Exit 77 (ctest SKIP) without a GPU.
set -u
bin=$1 shapes=$2
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no NVIDIA GPU on this machine"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--shapes "$shapes" --max-candidates 6 --max-samples 20 --no-baseline)
"$bin" sweep "${common[@]}" --db "$tmp/full.db" >/dev/null 2>"$tmp/full.log" || { cat "$tmp/full.log"; exit 1; }
for i in 0 1; do
  "$bin" sweep "${common[@]}" --shard "$i/2" --db "$tmp/s$i.db" >/dev/null 2>"$tmp/s$i.log" || { cat "$tmp/s$i.log"; exit 1; }
done
"$bin" db merge "$tmp/s0.db" "$tmp/s1.db" -o "$tmp/merged.db" >/dev/null || exit 1
python3 - "$tmp/full.db" "$tmp/merged.db" <<'PY' || exit 1
import sqlite3, sys
q = "SELECT p.key, c.key, t.status FROM trial t JOIN config c ON c.id=t.config_id JOIN problem p ON p.id=t.problem_id"
full, merged = (set(sqlite3.connect(x).execute(q)) for x in sys.argv[1:3])
assert full, "the full sweep stored nothing"
assert full == merged, sorted(full ^ merged)
print(f"ok: two shards merged hold the same {len(full)} (problem, config, status) rows as one full sweep")
PY
