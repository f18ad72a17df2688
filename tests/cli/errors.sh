#!/usr/bin/env bash
# CLI error paths that need no GPU: every bad input gets exit code 2 and a message naming file:line,
# the operand and the rule; nothing is measured.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect <want-rc> <want-substring> <cmd...>
  local want_rc=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" != "$want_rc" ] || ! grep -qF -- "$want" "$tmp/err" "$tmp/out"; then
    echo "FAIL: $* -> rc $rc (want $want_rc), output lacks: $want"
    sed 's/^/    /' "$tmp/err" "$tmp/out" | head -20
    fail=1
  else
    echo "ok: $* -> rc $rc, '$want'"
  fi
}

printf '# header\n4096 4096 4096\n64 2112 x7168\n' >"$tmp/bad.txt"
expect 2 "bad.txt:3: field 'K'" "$bin" sweep --shapes "$tmp/bad.txt" --db "$tmp/t.db"

printf '4096 4096 4096\n16 16 7\n33 48 80 ldd=40\n' >"$tmp/tma.txt"
expect 2 "tma.txt:2: operand A: lda = 7 elements = 7 bytes is not a multiple of 16 bytes" "$bin" sweep --shapes "$tmp/tma.txt" --db "$tmp/t.db"
expect 2 "tma.txt:3: operand D: ldd = 40 is smaller than N = 48" "$bin" sweep --shapes "$tmp/tma.txt" --db "$tmp/t.db"
[ -e "$tmp/t.db" ] && { echo "FAIL: a refused sweep created the database"; fail=1; }

expect 2 "File does not exist" "$bin" sweep --shapes "$tmp/missing.txt"
expect 2 "token 'wgX'" "$bin" run --m 128 --n 128 --k 128 --config 128x128x128_s4_wgX_sw128_c1x1_rm8_direct_sk1
expect 2 "operand B: ldb = 7" "$bin" run --m 128 --n 128 --k 7 --lda 16 --config 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1
expect 2 "--format" "$bin" space --m 1 --n 1 --k 16 --format xml
printf '64 128 256\n' >"$tmp/one.txt"
expect 2 "--max-samples = 5 must be >= 1 and >= --min-samples = 10" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/t3.db" --max-samples 5
expect 0 "kernel_hash" "$bin" info

# space: the 4096^3 budget table as JSON.
"$bin" space --m 4096 --n 4096 --k 4096 --format json >"$tmp/space.json" || { echo "FAIL: space"; fail=1; }
python3 - "$tmp/space.json" <<'PY' || fail=1
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
kept = [r for r in rows if r["verdict"] == "kept"]
rej = [r for r in rows if r["verdict"] == "rejected"]
assert len(kept) >= 200, len(kept)
assert all(r["smem_total"] <= 232448 for r in kept)
assert all(r["reason"] for r in rej), "every rejected row has a reason"
r = next(r for r in kept if r["config"] == "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1")
assert r["smem_total"] == 5 * 16384 * 2 + 32768 + 80 + 1024 and r["smem_a"] == 81920 and r["smem_barriers"] == 80, r
t = next(r for r in kept if r["config"] == "128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1")
assert t["smem_staging"] == 32768 and t["smem_total"] == 6 * 32768 + 32768 + 96 + 1024, t
d = next(r for r in kept if r["config"] == "128x128x128_s7_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1")
assert d["smem_staging"] == 0, d
assert {r["grid"] for r in kept} >= {"tiles", "one-group", "direct-epilogue", "clusters", "k-and-swizzle", "raster", "grid"}
print(f"ok: space json: {len(kept)} kept, {len(rej)} rejected")
PY

if ! nvidia-smi -L >/dev/null 2>&1; then
  printf '64 128 256\n' >"$tmp/ok.txt"
  expect 1 "no CUDA device" "$bin" sweep --shapes "$tmp/ok.txt" --db "$tmp/t2.db"
fi
exit $fail
