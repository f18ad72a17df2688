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

# An empty file: db prune and db migrate refuse it as export does (they never create a DB), and it stays empty.
: >"$tmp/empty.db"
expect 1 "is not a dgtune tuning database (the file is empty)" "$bin" db prune --db "$tmp/empty.db"
expect 1 "is not a dgtune tuning database (the file is empty)" "$bin" db migrate --db "$tmp/empty.db"
expect 1 "is not a dgtune tuning database" "$bin" export --db "$tmp/empty.db"
[ -s "$tmp/empty.db" ] && { echo "FAIL: db prune or migrate wrote into the empty file"; fail=1; }
ls "$tmp" | grep -q 'empty.db-' && { echo "FAIL: side files next to the empty DB"; fail=1; }

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
  # A WAL-mode DB of schema.sql, brought to this dgtune's version by db migrate (db prune or migrate never create the
  # schema in a file without it: they refuse it, unchanged).
  sqlite3 "$tmp/src.db" "PRAGMA journal_mode=WAL;" >/dev/null
  cp "$tmp/src.db" "$tmp/src.orig"
  expect 1 "is not a dgtune tuning database (it has no schema_version table)" "$bin" db prune --db "$tmp/src.db"
  cmp -s "$tmp/src.db" "$tmp/src.orig" || { echo "FAIL: db prune changed an SQLite file without dgtune's schema"; fail=1; }
  sqlite3 "$tmp/src.db" <"$(dirname "$0")/../../src/db/schema.sql"
  expect 0 "$tmp/src.db: " "$bin" db migrate --db "$tmp/src.db"
  expect 0 "journal_mode=DELETE" "$bin" export --db "$tmp/src.db" --format db --out "$tmp/deploy.db"
  [ "$(sqlite3 "$tmp/deploy.db" 'PRAGMA journal_mode')" = delete ] || { echo "FAIL: copy not in DELETE mode"; fail=1; }
  expect 2 "exists" "$bin" export --db "$tmp/src.db" --format db --out "$tmp/deploy.db"
  expect 2 "holds no winners" "$bin" export --db "$tmp/deploy.db" --format csv  # read (a schema-6 DB), not refused
  # Damaged inside (the b-tree header of page 3 overwritten; the file's header is fine, so it opens): SQLite's
  # quick_check fails, so nothing writes it or exports from it (exit 1, the file byte for byte as it was); db check
  # fails on it too.
  cp "$tmp/deploy.db" "$tmp/hurt.db"
  printf 'XXXXXXXX' | dd of="$tmp/hurt.db" bs=1 seek=8192 conv=notrunc 2>/dev/null
  cp "$tmp/hurt.db" "$tmp/hurt.orig"
  for cmd in "db prune" "db prune --dry-run" "db migrate" "export" "sweep --shapes $tmp/ok.txt"; do
    # shellcheck disable=SC2086
    expect 1 "is damaged: SQLite's quick_check reports" "$bin" $cmd --db "$tmp/hurt.db"
    cmp -s "$tmp/hurt.db" "$tmp/hurt.orig" || { echo "FAIL: $cmd changed the damaged DB"; fail=1; }
  done
  expect 1 "run \`dgtune db check --db $tmp/hurt.db\`" "$bin" db merge "$tmp/hurt.db" "$tmp/deploy.db" -o "$tmp/m.db"
  [ -e "$tmp/m.db" ] && { echo "FAIL: db merge wrote a merge of a damaged DB"; fail=1; }
  expect 1 "$tmp/hurt.db" "$bin" db check --db "$tmp/hurt.db"
fi
exit $fail
