#!/usr/bin/env bash
# Robustness through the dgtune binary, no GPU needed: `sweep` refuses a damaged or newer DB (exit 1, SQLite's
# message, the hint, the file unchanged) before it opens the GPU; `export --format db` writes a deployable copy.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
source "$(dirname "$0")/expect.sh"
printf '64 128 256\n' >"$tmp/ok.txt"

# A damaged DB: an SQLite header, then junk.
{ printf 'SQLite format 3\000'; head -c 8192 /dev/urandom; } >"$tmp/damaged.db"
cp "$tmp/damaged.db" "$tmp/damaged.orig"
expect 1 "file is not a database" "$bin" sweep --shapes "$tmp/ok.txt" --db "$tmp/damaged.db"
expect 1 "run \`dgtune db check --db $tmp/damaged.db\`" "$bin" sweep --shapes "$tmp/ok.txt" --db "$tmp/damaged.db"
cmp -s "$tmp/damaged.db" "$tmp/damaged.orig" || { echo "FAIL: sweep changed the damaged DB"; fail=1; }
ls "$tmp" | grep -q 'damaged.db-' && { echo "FAIL: side files next to the damaged DB"; fail=1; }
expect 1 "file is not a database" "$bin" db check --db "$tmp/damaged.db"

# A DB of a newer schema: refused for writing, both versions named.
if command -v sqlite3 >/dev/null; then
  sqlite3 "$tmp/newer.db" "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (999);"
  cp "$tmp/newer.db" "$tmp/newer.orig"
  expect 1 "has schema version 999, newer than version" "$bin" sweep --shapes "$tmp/ok.txt" --db "$tmp/newer.db"
  cmp -s "$tmp/newer.db" "$tmp/newer.orig" || { echo "FAIL: sweep changed the newer DB"; fail=1; }
fi

# export --format db: a DELETE-journal copy; never over an existing file; needs --out.
expect 2 "export --format db needs --out FILE" "$bin" export --db "$tmp/damaged.db" --format db
if command -v sqlite3 >/dev/null; then
  sqlite3 "$tmp/src.db" "PRAGMA journal_mode=WAL;" >/dev/null
  "$bin" db check --db "$tmp/src.db" >/dev/null 2>&1  # creates nothing: read-only
  "$bin" db prune --db "$tmp/src.db" >/dev/null 2>&1  # a writer: creates the schema in the empty file
  expect 0 "journal_mode=DELETE" "$bin" export --db "$tmp/src.db" --format db --out "$tmp/deploy.db"
  [ "$(sqlite3 "$tmp/deploy.db" 'PRAGMA journal_mode')" = delete ] || { echo "FAIL: copy not in DELETE mode"; fail=1; }
  expect 2 "exists" "$bin" export --db "$tmp/src.db" --format db --out "$tmp/deploy.db"
  expect 2 "holds no winners" "$bin" export --db "$tmp/deploy.db" --format csv  # read (a schema-6 DB), not refused
fi
exit $fail
