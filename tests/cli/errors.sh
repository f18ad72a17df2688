#!/usr/bin/env bash
# CLI error paths that need no GPU: every bad input gets exit code 2 and a message naming file:line,
# the operand and the rule; nothing is measured.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
source "$(dirname "$0")/expect.sh"
expect_extra_checks() {
  # Range messages give plain numbers (no 309-digit DBL_MAX).
  if grep -qE '[0-9]{25,}' "$tmp/err" "$tmp/out"; then
    echo "FAIL: $* printed a number of 25+ digits"
    fail=1
  fi
}
lacks() {  # lacks <substring>: the output of the previous expect does not contain it
  if grep -qF -- "$1" "$tmp/err" "$tmp/out"; then
    echo "FAIL: previous output contains: $1"
    fail=1
  else
    echo "ok:   ... and lacks '$1'"
  fi
}

printf '# header\n4096 4096 4096\n64 2112 x7168\n' >"$tmp/bad.txt"
expect 2 "bad.txt:3: field 'K'" "$bin" sweep --shapes "$tmp/bad.txt" --db "$tmp/t.db"

printf '4096 4096 4096\n16 16 7\n33 48 80 ldd=40\n' >"$tmp/tma.txt"
expect 2 "tma.txt:2: operand A: lda = 7 elements = 7 bytes is not a multiple of 16 bytes" "$bin" sweep --shapes "$tmp/tma.txt" --db "$tmp/t.db"
expect 2 "tma.txt:3: operand D: ldd = 40 is smaller than N = 48" "$bin" sweep --shapes "$tmp/tma.txt" --db "$tmp/t.db"
[ -e "$tmp/t.db" ] && { echo "FAIL: a refused sweep created the database"; fail=1; }

expect 2 "--shapes: cannot read shapes file '$tmp/missing.txt': no such file" "$bin" sweep --shapes "$tmp/missing.txt"
# A text input may be a named pipe: it is read once, as cat reads it (a check that opened the pipe and closed it again
# took the writer's open, and the read that followed waited forever for another writer; shapes --experts read the
# config twice). The content is bad input, so the exit code and the message show that it was read, with or without a
# GPU; timeout ends a hang in seconds.
fifo_expect() {  # fifo_expect <content> <want-rc> <want-substring> <cmd...>: the FIFO $tmp/ff gets the content
  local content=$1
  shift
  rm -f "$tmp/ff"
  mkfifo "$tmp/ff"
  printf '%s' "$content" >"$tmp/ff" &
  local writer=$!
  expect "$1" "$2" timeout 10 "${@:3}"
  kill "$writer" 2>/dev/null
  wait "$writer" 2>/dev/null
}
models="$(dirname "$0")/../../configs/models"
fifo_expect $'64 2112 x7168\n' 2 "ff:1: field 'K': 'x7168'" "$bin" sweep --shapes "$tmp/ff" --db "$tmp/t.db"
fifo_expect $'64 2112 x7168\n' 2 "ff:1: field 'K': 'x7168'" "$bin" compare --shapes "$tmp/ff" --db "$tmp/t.db"
fifo_expect $'64 2112 x7168\n' 2 "ff:1: field 'K': 'x7168'" "$bin" gate --record "$tmp/r.json" --shapes "$tmp/ff" --db "$tmp/t.db"
fifo_expect 'not json' 2 "ff:1:2: invalid JSON" "$bin" gate --baseline "$tmp/ff" --db "$tmp/t.db"
fifo_expect '{"block_m": [' 2 "ff:1:14: invalid JSON" "$bin" space --m 128 --n 128 --k 128 --space "$tmp/ff"
fifo_expect "$(cat "$models/deepseek-v3.json")" 0 "experts.down_proj" "$bin" shapes --hf-config "$tmp/ff" --experts --m 64
fifo_expect "$(cat "$models/llama-3.1-70b.json")" 2 "num_attention_heads = 64 is not divisible by --tp 3" "$bin" tune-model --hf-config "$tmp/ff" --tp 3 --db "$tmp/t.db"
expect 2 "field 'K': 'x7168'" "$bin" sweep --shapes <(printf '64 2112 x7168\n') --db "$tmp/t.db"
expect 0 "experts.down_proj" "$bin" shapes --hf-config <(cat "$models/deepseek-v3.json") --experts --m 64
[ -e "$tmp/t.db" ] && { echo "FAIL: a refused command created the database"; fail=1; }
expect 2 "token 'wgX'" "$bin" run --m 128 --n 128 --k 128 --config 128x128x128_s4_wgX_sw128_c1x1_rm8_direct_sk1
expect 2 "operand B: ldb = 7" "$bin" run --m 128 --n 128 --k 7 --lda 16 --config 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1
expect 2 "--format" "$bin" space --m 1 --n 1 --k 16 --format xml
printf '64 128 256\n' >"$tmp/one.txt"
expect 2 "--max-samples = 5 must be >= 1 and >= --min-samples = 10" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/t3.db" --max-samples 5
expect 0 "kernel_hash" "$bin" info
lacks "[usage at"

# Numbers are decimal only: a leading zero is not octal; prefixes, signs and exponents are refused,
# naming the value; ranges are plain numbers.
expect 0 "for 16x16x112:" "$bin" space --m 16 --n 16 --k 0112 --lda 0112 --ldb 0112 --show kept
expect 2 "--m: '0x10' is not a decimal integer" "$bin" space --m 0x10 --n 16 --k 16
expect 2 "--n: '0b1' is not a decimal integer" "$bin" space --m 16 --n 0b1 --k 16
# Output types and epilogues: values outside the lists, and a config a combination makes illegal.
expect 2 "--d: e5m2 not in {bf16,f32,e4m3}" "$bin" space --m 16 --n 16 --k 16 --d e5m2
expect 2 "--act: silu not in {none,relu,gelu_tanh}" "$bin" space --m 16 --n 16 --k 16 --act silu
expect 2 "--bias: f32 not in {none,bf16}" "$bin" sweep --shapes "$0" --bias f32
expect 2 "R23: the TMA-store epilogue with e4m3 output needs BLOCK_N = 40" "$bin" run --m 64 --n 64 --k 64 --d e4m3 --config 128x40x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1
expect 2 "P3: TMA-store epilogue needs D rows of 16-byte multiples; ldd = 72 e4m3 elements" "$bin" run --m 64 --n 72 --k 64 --d e4m3 --config 128x64x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_1g_p1
expect 2 "--k: '+16' is not a decimal integer" "$bin" space --m 16 --n 16 --k +16
expect 2 "--m: '1e2' is not a decimal integer" "$bin" space --m 1e2 --n 16 --k 16
expect 2 "--m: 'abc' is not a decimal integer" "$bin" space --m abc --n 16 --k 16
expect 2 "--lda: -16 is out of range: want an integer >= 1" "$bin" space --m 16 --n 16 --k 16 --lda -16
expect 2 "--m: 0 is out of range: want an integer from 1 to 2147483647" "$bin" space --m 0 --n 16 --k 16
expect 2 "--n: 2147483648 is out of range: want an integer from 1 to 2147483647" "$bin" space --m 1 --n 2147483648 --k 16
expect 2 "--device: -1 is out of range: want an integer from 0 to 2147483647" "$bin" info --device -1
expect 2 "--top-k: 0 is out of range: want an integer from 1 to 2147483647" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/t4.db" --top-k 0
expect 2 "--budget-s: -1 is out of range: want a number >= 0" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/t4.db" --budget-s -1
expect 2 "--budget-s: '0x10' is not a decimal number" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/t4.db" --budget-s 0x10
expect 2 "--target-rse: 2 is out of range: want a number from 0 to 1" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/t4.db" --target-rse 2
expect 2 "--seed: '-1' is not a decimal integer" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/t4.db" --seed -1
[ -e "$tmp/t4.db" ] && { echo "FAIL: a refused sweep created the database"; fail=1; }

# --log-level: case-insensitive, anything else is an error that is printed; errors print at every level;
# accepted after the subcommand too; debug adds the source location of an error, other levels do not.
expect 2 "--log-level: loud not in {trace,debug,info,warn,error}" "$bin" --log-level loud sweep --shapes "$tmp/bad.txt" --db "$tmp/t.db"
expect 2 "bad.txt:3: field 'K'" "$bin" --log-level ERROR sweep --shapes "$tmp/bad.txt" --db "$tmp/t.db"
expect 2 "bad.txt:3: field 'K'" "$bin" sweep --shapes "$tmp/bad.txt" --db "$tmp/t.db" --log-level error
lacks ".cpp:"
expect 2 ".cpp:" "$bin" run --m 128 --n 128 --k 128 --config 128x128x128_s4_wgX_sw128_c1x1_rm8_direct_sk1 --log-level debug
expect 2 "--log-level: loud not in" "$bin" info --log-level loud

# --version (no GPU needed, also after a subcommand): dgtune, kernel-source hash (the one `info` reports),
# CUDA runtime and NVRTC versions.
expect 0 "kernel source hash: " "$bin" --version
hash=$(sed -n 's/^kernel source hash: //p' "$tmp/out")
"$bin" info --format csv | grep -qx "kernel_hash,$hash" || { echo "FAIL: --version hash '$hash' differs from info's"; fail=1; }
expect 0 "NVRTC: " "$bin" --version
expect 0 "CUDA runtime: " "$bin" --version
expect 0 "dgtune " "$bin" space --version

# run takes sweep's timing flags (checked before the GPU is opened); one baseline switch, old spellings hidden.
expect 2 "--max-samples = 5 must be >= 1 and >= --min-samples = 10" "$bin" run --m 128 --n 128 --k 128 --config 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1 --max-samples 5
expect 0 "--baseline,--no-baseline" "$bin" run --help
lacks "--cublas"
expect 0 "--target-rse" "$bin" run --help
expect 0 "--baseline,--no-baseline" "$bin" sweep --help

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

# Scale modes: --scale on space and run, scale= in shapes files; the block modes' rules R21/R22.
expect 0 "for 4096x4096x4096 block:" "$bin" space --m 4096 --n 4096 --k 4096 --scale block --show rejected
# A BLOCK_K = 256 candidate with the 2g mainloop is refused for block scaling only (kept per-tensor), naming R21
# (BLOCK_K 256 runs block scales only with 1g: two granule buffers per k-block).
grep -qE '^64x64x256_s2_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 .*R21: scale mode block needs promote accumulation and BLOCK_K = 128' "$tmp/out" \
  && echo "ok:   ... BLOCK_K 256 with 2g rejected by R21" || { echo "FAIL: space --scale block lacks R21 for BLOCK_K 256 2g"; fail=1; }
grep -qE '_2o_p1 .*R22: scale mode block runs with the 1g or 2g mainloop, not 2o' "$tmp/out" \
  && echo "ok:   ... 2o rejected by R22" || { echo "FAIL: space --scale block lacks R22 for 2o"; fail=1; }
"$bin" space --m 4096 --n 4096 --k 4096 --show rejected >"$tmp/pt.txt"
grep -qE 'R2[12]:' "$tmp/pt.txt" && { echo "FAIL: per-tensor space rejects by R21/R22"; fail=1; }
# Per-tensor keeps BLOCK_K 256 candidates; under block scaling only 1g ones are kept.
"$bin" space --m 4096 --n 4096 --k 4096 --show kept >"$tmp/pt-kept.txt"
grep -qE '^[0-9]+x[0-9]+x256_' "$tmp/pt-kept.txt" || { echo "FAIL: per-tensor space keeps no BLOCK_K 256 candidate"; fail=1; }
"$bin" space --m 4096 --n 4096 --k 4096 --scale block --show kept >"$tmp/blk-kept.txt"
grep -qE '^[0-9]+x[0-9]+x256_.*_2g_' "$tmp/blk-kept.txt" && { echo "FAIL: space --scale block keeps a BLOCK_K 256 2g candidate"; fail=1; }
grep -qE '^[0-9]+x[0-9]+x256_.*_1g_' "$tmp/blk-kept.txt" || { echo "FAIL: space --scale block keeps no BLOCK_K 256 1g candidate"; fail=1; }
grep -qE '_2o_' "$tmp/blk-kept.txt" && { echo "FAIL: space --scale block keeps a 2o candidate"; fail=1; }
expect 0 "for 4096x4096x4096 block1d1d:" "$bin" space --m 4096 --n 4096 --k 4096 --scale block1d1d --show rejected
expect 0 "R21: scale mode block1d1d" "$bin" space --m 4096 --n 4096 --k 4096 --scale block1d1d --show rejected
expect 0 "for 4096x4096x4096 channel:" "$bin" space --m 4096 --n 4096 --k 4096 --scale channel --show kept
lacks "R21"
expect 2 "--scale: blocks not in {tensor,per-tensor,channel,block,block1d1d}" "$bin" space --m 128 --n 128 --k 128 --scale blocks
expect 2 "scale mode block needs accum = promote" "$bin" space --m 128 --n 128 --k 128 --scale block --accum fast
expect 2 "R21: scale mode block needs promote accumulation and BLOCK_K = 128" "$bin" run --m 128 --n 128 --k 256 --scale block --config 64x128x256_s2_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1
# run --grouped (MoE grouped problems): the spec's and the grouped rules' refusals come before the GPU.
G128=128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1
expect 2 "--m, --n and --k are required (or --grouped SPEC)" "$bin" run --config $G128
expect 2 "--grouped: m_max=100 must be a positive multiple of 128 (rule G5" "$bin" run --grouped "kind=masked groups=2 masked_m=1 m_max=100 256 256" --config $G128
expect 2 "--grouped: masked_m has 3 counts, groups=2" "$bin" run --grouped "kind=masked groups=2 masked_m=1,2,3 256 256" --config $G128
# compare --grouped: the grouped kernel's config is required and checked, and the specs, before the GPU.
expect 2 "--grouped needs exactly one --config KEY" "$bin" compare --grouped "kind=masked groups=2 masked_m=1,2 256 256"
expect 2 "G2: grouped kernels cluster along N only" "$bin" compare --grouped "kind=masked groups=2 masked_m=1,2 256 256" --config 128x128x128_s4_wg2_sw128_c2x1_rm8_direct_sk1_sm0_1g_p1
expect 2 "--grouped: masked_m has 3 counts, groups=2" "$bin" compare --grouped "kind=masked groups=2 masked_m=1,2,3 256 256" --config $G128
expect 2 "--dense-config requires --grouped" "$bin" compare --dense-config $G128
# compare --grouped --vs-config: the second grouped config needs --grouped, and is checked like --config (a malformed
# key, then the grouped rules), before the GPU.
expect 2 "--vs-config requires --grouped" "$bin" compare --vs-config $G128
expect 2 "--vs-config requires --grouped" "$bin" compare --shapes "$tmp/one.txt" --vs-config $G128
expect 2 "--vs-config: config key '128x128x128_s5_wgX_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1': token 'wgX'" "$bin" compare --grouped "kind=masked groups=2 masked_m=1,2 256 256" --config $G128 --vs-config 128x128x128_s5_wgX_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1
expect 2 "--vs-config 128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p1 cannot run --grouped 'masked G2" "$bin" compare --grouped "kind=masked groups=2 masked_m=1,2 256 256" --config $G128 --vs-config 128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p1
expect 2 "G3: grouped kernels run mainloop 1g or 2g" "$bin" compare --grouped "kind=masked groups=2 masked_m=1,2 256 256" --config $G128 --vs-config 128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p1
expect 2 "G2: grouped kernels cluster along N only" "$bin" compare --grouped "kind=contiguous groups=2 m_per_group=1 256 256" --grouped "kind=masked groups=2 masked_m=1,2 256 256" --config $G128 --vs-config 128x128x128_s5_wg2_sw128_c2x1_rm8_direct_sk1_sm0_2g_p1
# compare and gate --shapes with grouped lines: a bad grouped line names file:line and the rule, and the options that
# do not apply to grouped lines name the line, the flag and why, before the GPU (and nothing is created).
printf '128 512 1024\nkind=masked groups=4 masked_m=200,0,256,17 m_max=256 expected_m=128 512 1024 scale=block\n' >"$tmp/gmix.txt"
printf '64 64 64\nkind=masked groups=4 masked_m=300,0,256,17 m_max=256 512 1024\n' >"$tmp/gbad.txt"
expect 2 "gbad.txt:2: masked_m: group 0 has 300 rows > m_max=256 (masked_m[g] <= M_max)" "$bin" compare --shapes "$tmp/gbad.txt" --db "$tmp/gc.db"
expect 2 "gbad.txt:2: masked_m: group 0 has 300 rows > m_max=256 (masked_m[g] <= M_max)" "$bin" gate --record "$tmp/gr.json" --shapes "$tmp/gbad.txt" --db "$tmp/gc.db"
expect 2 "gmix.txt:2: a grouped (MoE) line (masked G4 masked_m=200,0,256,17 m_max=256 expected_m=128 N512 K1024 block): --save stores the dense sides" "$bin" compare --shapes "$tmp/gmix.txt" --db "$tmp/gc.db" --save "$tmp/gs.db"
expect 2 "gmix.txt:2: a grouped (MoE) line (masked G4 masked_m=200,0,256,17 m_max=256 expected_m=128 N512 K1024 block): --config times extra dense configs" "$bin" compare --shapes "$tmp/gmix.txt" --db "$tmp/gc.db" --config $G128
expect 2 "gmix.txt:2: a grouped (MoE) line (masked G4 masked_m=200,0,256,17 m_max=256 expected_m=128 N512 K1024 block): --m-grid measures dense problems" "$bin" compare --shapes "$tmp/gmix.txt" --db "$tmp/gc.db" --m-grid
expect 2 "gmix.txt:2: a grouped (MoE) line (masked G4 masked_m=200,0,256,17 m_max=256 expected_m=128 N512 K1024 block): --search screens the dense cost model's top K" "$bin" gate --record "$tmp/gr.json" --shapes "$tmp/gmix.txt" --db "$tmp/gc.db" --search 4
expect 2 "gmix.txt:2: a grouped problem: --d, --bias and --act do not apply" "$bin" compare --shapes "$tmp/gmix.txt" --db "$tmp/gc.db" --act relu
for f in gc.db gs.db gr.json; do [ -e "$tmp/$f" ] && { echo "FAIL: a refused grouped compare/gate created $f"; fail=1; }; done
expect 2 "--grouped: unknown field 'colour'" "$bin" run --grouped "kind=contiguous groups=2 m_per_group=1 256 256 colour=red" --config $G128
expect 2 "G2: grouped kernels cluster along N only" "$bin" run --grouped "kind=contiguous groups=2 m_per_group=1 256 256" --config 128x128x128_s5_wg2_sw128_c2x1_rm8_direct_sk1_sm0_2g_p1
expect 2 "G3: grouped kernels run mainloop 1g or 2g" "$bin" run --grouped "kind=contiguous groups=2 m_per_group=1 256 256" --config 128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_pp_p1
expect 2 "--grouped takes N and K from its SPEC" "$bin" run --m 128 --grouped "kind=contiguous groups=2 m_per_group=1 256 256" --config $G128
printf '128 7168 2048 scale=block\n128 7168 2048 scale=block accum=fast\n' >"$tmp/scale-fast.txt"
expect 2 "scale-fast.txt:2: scale mode block needs accum = promote" "$bin" sweep --shapes "$tmp/scale-fast.txt" --db "$tmp/s.db"
lacks "scale-fast.txt:1:"
printf '128 7168 2048 scale=blocks\n' >"$tmp/scale-bad.txt"
expect 2 "scale-bad.txt:1: field 'scale': 'blocks' is not a valid value (expected tensor, channel, block or block1d1d)" "$bin" sweep --shapes "$tmp/scale-bad.txt" --db "$tmp/s.db"
[ -e "$tmp/s.db" ] && { echo "FAIL: a refused sweep created the database"; fail=1; }

# dgtune gate / history / db: bad input exits 2 before any GPU or DB is touched; db commands need no GPU.
expect 2 "exactly one of --record FILE" "$bin" gate --db "$tmp/g.db"
printf 'not json' >"$tmp/bad-base.json"
expect 2 "bad-base.json:1:2: invalid JSON" "$bin" gate --baseline "$tmp/bad-base.json" --db "$tmp/g.db"
printf '{"schema_version": 7}' >"$tmp/v7.json"
expect 2 "schema_version 7" "$bin" gate --baseline "$tmp/v7.json" --db "$tmp/g.db"
expect 2 "needs --shapes FILE" "$bin" gate --record "$tmp/r.json" --db "$tmp/g.db"
expect 2 "--threshold" "$bin" gate --baseline "$tmp/v7.json" --threshold -5
touch "$tmp/a.db"
expect 2 "At least 2 required" "$bin" db merge "$tmp/a.db" -o "$tmp/c.db"
expect 2 "cannot read tuning database (--db) '$tmp/missing.db': no such file (db prune never creates one)" "$bin" db prune --db "$tmp/missing.db" --dry-run
# A fresh DB from schema.sql and the migrations numbered above its version (python3's sqlite3), as dgtune
# makes new files, so the db commands run without a GPU.
if python3 - "$tmp/s.db" "$(dirname "$0")/../../src/db" <<'PY'
import glob, os, re, sqlite3, sys
db, src = sys.argv[1], sys.argv[2]
schema = open(os.path.join(src, "schema.sql")).read()
c = sqlite3.connect(db)
c.executescript(schema)
base = int(re.search(r"INSERT INTO schema_version \(version\) VALUES \((\d+)\)", schema).group(1))
for f in sorted(glob.glob(os.path.join(src, "migrations", "*.sql"))):
    v = int(os.path.basename(f)[:4])
    if v > base:
        c.executescript(open(f).read())
        c.execute("UPDATE schema_version SET version = ?", (v,))
c.commit()
PY
then
  expect 0 "integrity_check, foreign keys and dgtune's invariants hold" "$bin" db check --db "$tmp/s.db"
  expect 0 "devices (hardware identities)" "$bin" db devices --db "$tmp/s.db"
  expect 0 "--dry-run (nothing removed)" "$bin" db prune --db "$tmp/s.db" --dry-run
  expect 2 "are the same file" "$bin" db merge "$tmp/s.db" "$tmp/s.db" -o "$tmp/m.db"
  cp "$tmp/s.db" "$tmp/s2.db"
  expect 0 "rows in output" "$bin" db merge "$tmp/s.db" "$tmp/s2.db" -o "$tmp/m.db"
  expect 2 "exists" "$bin" db merge "$tmp/s.db" "$tmp/s2.db" -o "$tmp/m.db"
  expect 2 "no gate history for shape" "$bin" history --shape 64x64x64 --db "$tmp/s.db"
fi

# compare --config: a bad key is refused before the GPU is opened (exit 2, naming the rule).
printf '128 128 128\n' >"$tmp/cfg.txt"
expect 2 "config key 'bogus'" "$bin" compare --shapes "$tmp/cfg.txt" --config bogus

# A table that cannot be written (full disk, closed pipe) is an I/O error: exit 1, never 0.
if [ -w /dev/full ]; then
  "$bin" space --m 4096 --n 4096 --k 4096 --format json >/dev/full 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 1 ] && grep -q "could not write the output" "$tmp/err"; then
    echo "ok: space >/dev/full -> rc 1"
  else
    echo "FAIL: space >/dev/full -> rc $rc (want 1 and 'could not write the output')"
    fail=1
  fi
fi

# compare and export: bad arguments exit 2 and name the rule; nothing creates a database.
touch "$tmp/empty.db"
expect 2 "compare needs exactly one of --shapes FILE (measure now), --grouped SPEC (a grouped GEMM, measured now) and --between A.db B.db" "$bin" compare
expect 2 "--shapes excludes --between" "$bin" compare --shapes "$tmp/one.txt" --between "$tmp/empty.db" "$tmp/empty.db"
expect 2 "--between: At least 2 required but received 1" "$bin" compare --between "$tmp/empty.db"
expect 2 "--device-a requires --between" "$bin" compare --shapes "$tmp/one.txt" --device-a 1
expect 2 "--rounds requires --shapes" "$bin" compare --between "$tmp/empty.db" "$tmp/empty.db" --rounds 5
expect 2 "--save requires --shapes" "$bin" compare --between "$tmp/empty.db" "$tmp/empty.db" --save "$tmp/s.db"
expect 2 "--protocol: warm not in {cold-l2,cold-l2-v2,cold-l2-v3,hot-graph,hot-graph-v1,isolated,isolated-v1,isolated-v2}" "$bin" compare --shapes "$tmp/one.txt" --protocol warm
expect 2 "--protocol: cold-l2-v1 not in" "$bin" compare --shapes "$tmp/one.txt" --protocol cold-l2-v1
expect 2 "--protocol isolated / --side-order / --gap-us: --m-grid measures the standard protocols only" "$bin" compare --shapes "$tmp/one.txt" --m-grid --protocol isolated-v1
expect 2 "--save: --side-order reversed / --gap-us 0 are protocol-study variants of cold-l2-v3" "$bin" compare --shapes "$tmp/one.txt" --protocol cold-l2-v3 --side-order reversed --save "$tmp/study.db"
expect 2 "--protocol: isolated not in" "$bin" gate --record "$tmp/g.json" --shapes "$tmp/one.txt" --protocol isolated
# compare's protocol-study options (docs/measurement.md "The protocol study"): bad values and combinations name the option and the rule.
expect 2 "--side-order: up not in {williams,fixed,reversed}" "$bin" compare --shapes "$tmp/one.txt" --side-order up
expect 2 "--gap-us: -1 is out of range: want a number from 0 to" "$bin" compare --shapes "$tmp/one.txt" --gap-us -1
expect 2 "--side-order requires --shapes" "$bin" compare --between "$tmp/empty.db" "$tmp/empty.db" --side-order fixed
expect 2 "isolated-v1 runs one side at a time, sample after sample" "$bin" compare --shapes "$tmp/one.txt" --protocol isolated --gap-us 200
expect 2 "--launches 5: only --protocol isolated" "$bin" compare --shapes "$tmp/one.txt" --launches 5
expect 2 "--launches 5: only --protocol isolated (isolated-v1) launches a kernel several times per sample; isolated-v2 times one launch after each zero fill" "$bin" compare --shapes "$tmp/one.txt" --protocol isolated-v2 --launches 5
expect 2 "--save: isolated-v2 measurements are not stored" "$bin" compare --shapes "$tmp/one.txt" --protocol isolated-v2 --save "$tmp/study.db"
expect 2 "isolated-v2 runs one side at a time, sample after sample; it has no round order and no gap" "$bin" compare --shapes "$tmp/one.txt" --protocol isolated-v2 --gap-us 100
expect 2 "--protocol isolated / --side-order / --gap-us: --m-grid measures the standard protocols only" "$bin" compare --shapes "$tmp/one.txt" --m-grid --protocol isolated-v2
expect 2 "--save: --side-order reversed / --gap-us 0 are protocol-study variants of cold-l2-v2" "$bin" compare --shapes "$tmp/one.txt" --side-order reversed --save "$tmp/study.db"
expect 2 "--save: isolated-v1 measurements are not stored" "$bin" compare --shapes "$tmp/one.txt" --protocol isolated --save "$tmp/study.db"
expect 2 "--m-grid measures the standard protocols only" "$bin" compare --shapes "$tmp/one.txt" --m-grid --gap-us 100
# sweep --protocol: what to tune for; --rounds only with hot-graph (the cold-l2 timer is adaptive).
expect 2 "--protocol: bogus not in {cold-l2,hot-graph}" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/p.db" --protocol bogus
expect 2 "--rounds = 5 applies to --protocol hot-graph only" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/p.db" --rounds 5
expect 2 "--rounds: 0" "$bin" sweep --shapes "$tmp/one.txt" --db "$tmp/p.db" --protocol hot-graph --rounds 0
[ -e "$tmp/p.db" ] && { echo "FAIL: a refused sweep --protocol created the database"; fail=1; }
expect 2 "--margin: -1 is out of range: want a number from 0 to 100" "$bin" compare --shapes "$tmp/one.txt" --margin -1
expect 2 "--rounds: 0 is out of range: want an integer from 1 to 100000" "$bin" compare --shapes "$tmp/one.txt" --rounds 0
expect 2 "--interval: t not in {sign,wilcoxon}" "$bin" compare --shapes "$tmp/one.txt" --interval t
expect 2 "bad.txt:3: field 'K'" "$bin" compare --shapes "$tmp/bad.txt" --db "$tmp/c.db"
expect 2 "is the --db file, which compare opens read-only" "$bin" compare --shapes "$tmp/one.txt" --db "$tmp/empty.db" --save "$tmp/empty.db"
expect 2 "--between: cannot read tuning database '$tmp/nope-a.db': no such file" "$bin" compare --between "$tmp/nope-a.db" "$tmp/nope-b.db"
# compare --m-grid (the coverage measurement): its flags only with it, never with --between, --save or --config.
expect 2 "--between excludes --m-grid" "$bin" compare --m-grid --between "$tmp/empty.db" "$tmp/empty.db"
expect 2 "--shapes excludes --between" "$bin" compare --shapes "$tmp/one.txt" --m-grid --between "$tmp/empty.db" "$tmp/empty.db"
expect 2 "--grid-seed requires --m-grid" "$bin" compare --shapes "$tmp/one.txt" --grid-seed 7
expect 2 "--per-octave: 0 is out of range: want an integer from 1 to 64" "$bin" compare --shapes "$tmp/one.txt" --m-grid --per-octave 0
expect 2 "--per-octave requires --m-grid" "$bin" compare --shapes "$tmp/one.txt" --per-octave 3
expect 2 "--model requires --m-grid" "$bin" compare --shapes "$tmp/one.txt" --model llama
expect 2 "--shard requires --m-grid" "$bin" compare --shapes "$tmp/one.txt" --shard 0/2
expect 2 "--grid-seed: -1 is out of range: want an integer >= 0" "$bin" compare --shapes "$tmp/one.txt" --m-grid --grid-seed -1
expect 2 "shard index 2 is not below the shard count 2" "$bin" compare --shapes "$tmp/one.txt" --m-grid --shard 2/2
expect 2 "--grid-m requires --m-grid" "$bin" compare --shapes "$tmp/one.txt" --grid-m 300
expect 2 "--grid-m: 0 is out of range: want an integer >= 1" "$bin" compare --shapes "$tmp/one.txt" --m-grid --grid-m 300,0
expect 2 "--save excludes --m-grid" "$bin" compare --shapes "$tmp/one.txt" --m-grid --save "$tmp/s.db"
expect 2 "--config excludes --m-grid" "$bin" compare --shapes "$tmp/one.txt" --m-grid --config 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1
expect 2 "--copy-limit: --m-grid does not time the copy limit" "$bin" compare --shapes "$tmp/one.txt" --m-grid --copy-limit --db "$tmp/c.db"
expect 2 "bad.txt:3: field 'K'" "$bin" compare --shapes "$tmp/bad.txt" --m-grid --db "$tmp/c.db"
expect 0 "--grid-seed" "$bin" compare --help
expect 2 "--format: xml not in {table,csv,json,md,cpp,db,bundle}" "$bin" export --format xml
expect 2 "cannot read tuning database (--db) '$tmp/c.db': no such file (export never creates one)" "$bin" export --db "$tmp/c.db"
[ -e "$tmp/c.db" ] && { echo "FAIL: compare or export created the database"; fail=1; }

# scripts/gate_ci_example.sh reads its arguments before it creates anything (it made gate-out/ before printing its
# usage).
ci_script="$(cd "$(dirname "$0")/../.." && pwd)/scripts/gate_ci_example.sh"
for args in "--help" "-h" "" "bogus"; do
  want=2
  case "$args" in -h | --help) want=0 ;; esac
  # shellcheck disable=SC2086
  GATE_OUT="$tmp/ci-out" GATE_HISTORY="$tmp/ci-history/h.db" bash "$ci_script" $args >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" = "$want" ] && grep -q "usage:" "$tmp/out" "$tmp/err" && [ ! -e "$tmp/ci-out" ] && [ ! -e "$tmp/ci-history" ]; then
    echo "ok: gate_ci_example.sh $args -> $rc, usage printed, nothing created"
  else
    echo "FAIL: gate_ci_example.sh $args -> rc $rc (want $want); created: $(ls "$tmp" | grep ci- | tr '\n' ' ')"
    fail=1
  fi
done

if ! nvidia-smi -L >/dev/null 2>&1; then
  printf '64 128 256\n' >"$tmp/ok.txt"
  expect 1 "no CUDA device" "$bin" sweep --shapes "$tmp/ok.txt" --db "$tmp/t2.db"
  # The flags parse (old and new spellings); then the missing GPU stops it.
  expect 1 "no CUDA device" "$bin" sweep --shapes "$tmp/ok.txt" --db "$tmp/t2.db" --no-baseline --min-samples 5 --max-samples 20 --target-rse 0.02 --seed 7
  expect 1 "no CUDA device" "$bin" run --m 128 --n 128 --k 128 --config 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1 --baseline --min-samples 5 --max-samples 20 --target-rse 0.02 --seed 7 --device 0
  expect 1 "no CUDA device" "$bin" run --m 128 --n 128 --k 128 --config 128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1 --cublas
  expect 1 "no CUDA device" "$bin" run --grouped "kind=masked groups=4 masked_m=200,0,256,17 4096 7168 scale=block" --config 128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1
  lacks ".cpp:"
  # compare --grouped with every grouped flag (a valid --vs-config): past every input check, stopped by the GPU.
  expect 1 "no CUDA device" "$bin" compare --grouped "kind=contiguous groups=8 m_per_group=skew:1:32768 4096 7168 scale=block" --config $G128 --dense-config 128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1 --vs-config 128x128x128_s6_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1 --protocol isolated --rounds 3 --launches 2 --format json
  expect 1 "no CUDA device" "$bin" compare --shapes "$tmp/ok.txt" --db "$tmp/c.db" --protocol hot-graph --rounds 5
  expect 1 "no CUDA device" "$bin" compare --shapes "$tmp/ok.txt" --db "$tmp/c.db" --m-grid --grid-seed 7 --per-octave 1 --shard 1/3 --no-copy-limit --protocol hot-graph --format json
  expect 1 "no CUDA device" "$bin" sweep --shapes "$tmp/ok.txt" --db "$tmp/t2.db" --protocol hot-graph --rounds 3
  # compare and gate on grouped lines (alone and beside dense ones): past every input check, stopped by the GPU.
  expect 1 "no CUDA device" "$bin" compare --shapes "$tmp/gmix.txt" --db "$tmp/c.db" --protocol isolated --rounds 3 --format json
  expect 1 "no CUDA device" "$bin" compare --shapes "$tmp/gmix.txt" --db "$tmp/c.db" --protocol isolated-v2 --format json
  expect 1 "no CUDA device" "$bin" compare --grouped "kind=contiguous groups=4 m_per_group=8192 4096 7168 scale=block" --config $G128 --protocol isolated-v2 --rounds 4
  expect 1 "no CUDA device" "$bin" gate --record "$tmp/gr.json" --shapes "$tmp/gmix.txt" --db "$tmp/c.db" --protocol hot-graph
  [ -e "$tmp/gr.json" ] && { echo "FAIL: gate --record without a GPU wrote its baseline"; fail=1; }
  [ -e "$tmp/c.db" ] && { echo "FAIL: compare created the database"; fail=1; }
  # tune-model: the shapes are made and checked, then the missing GPU stops it before any file is written.
  mkdir -p "$tmp/tm"
  expect 1 "no CUDA device" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/llama-3.1-70b.json" --tp 8 --out-dir "$tmp/tm" --db "$tmp/tm/t.db"
  expect 1 "no CUDA device" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --ep 8 --experts --m-sum 8192 --expected-m 3,40 --grouped-top-k 4 --out-dir "$tmp/tm" --db "$tmp/tm/t.db"
  [ -n "$(ls -A "$tmp/tm")" ] && { echo "FAIL: tune-model without a GPU wrote $(ls "$tmp/tm")"; fail=1; }
fi
# An output named like a DB that does not exist yet is that DB (refused by name before the GPU, nothing written).
expect 2 "it is the same file as --db" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/llama-3.1-70b.json" --tp 8 --out-dir "$tmp" --db "$tmp/llama-3.1-70b-tp8.shapes.txt"
[ -e "$tmp/llama-3.1-70b-tp8.shapes.txt" ] && { echo "FAIL: tune-model wrote over its --db"; fail=1; }
# tune-model refuses what `dgtune shapes` refuses (before the GPU), and an output directory that is missing.
expect 2 "llama-3.1-70b.json: num_attention_heads = 64 is not divisible by --tp 3" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/llama-3.1-70b.json" --tp 3 --db "$tmp/tm3.db"
expect 2 "--out-dir" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/qwen3-32b.json" --out-dir "$tmp/nope" --db "$tmp/tm3.db"
expect 2 "scale mode block needs accum = promote" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --accum fast --db "$tmp/tm3.db"
# --experts: the routed experts' rules name the config and the field; the ladder flags need --experts.
expect 2 "deepseek-v3.json: --ep 3 does not divide the 256 routed experts" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --ep 3 --experts --db "$tmp/tm3.db"
expect 2 "routed experts at M_sum = 4000: M_sum 4000 is not a multiple of 128" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --ep 8 --experts --m-sum 4000 --db "$tmp/tm3.db"
expect 2 "LlamaForCausalLM has no routed experts" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/llama-3.1-70b.json" --experts --db "$tmp/tm3.db"
expect 2 "--m-sum requires --experts" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --m-sum 4096 --db "$tmp/tm3.db"
expect 2 "--grouped-top-k requires --experts" "$bin" tune-model --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --grouped-top-k 4 --db "$tmp/tm3.db"
expect 2 "--expected-m requires --experts" "$bin" shapes --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --expected-m 4
[ -e "$tmp/tm3.db" ] && { echo "FAIL: a refused tune-model created the database"; fail=1; }
# The rule an M_sum breaks is the one named: 128 is a multiple of 128 but below top_k x 128.
expect 2 "M_sum 128 is below the smallest padded total, top_k x 128 = 1024" "$bin" shapes --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --ep 8 --experts --m-sum 128
lacks "must be a multiple"

# Lists refuse an empty entry (CLI11's own split would drop it silently), naming the option and the entry.
expect 2 "--m: '1,,2': entry 2 of 3 is empty" "$bin" shapes --hf-config "$(dirname "$0")/../../configs/models/llama-3.1-70b.json" --m 1,,2
expect 2 "--m-sum: '4096,': entry 2 of 2 is empty" "$bin" shapes --hf-config "$(dirname "$0")/../../configs/models/deepseek-v3.json" --ep 8 --experts --m-sum 4096,
expect 2 "--m: '0x10' is not a decimal integer" "$bin" shapes --hf-config "$(dirname "$0")/../../configs/models/llama-3.1-70b.json" --m 1,0x10
expect 0 "64 10240 8192 name=Llama.qkv_proj.tp1" "$bin" shapes --hf-config "$(dirname "$0")/../../configs/models/llama-3.1-70b.json" --m 1,064 --m 2
[ "$(grep -c '^[0-9]* 10240 8192 ' "$tmp/out")" = 3 ] || { echo "FAIL: --m 1,064 --m 2 is not the three M 1, 64, 2"; fail=1; }
printf '64 128 256\n' >"$tmp/grid.txt"
expect 2 "--grid-m: '5,,7': entry 2 of 3 is empty" "$bin" compare --shapes "$tmp/grid.txt" --db "$tmp/grid.db" --m-grid --grid-m 5,,7
# --grid-m replaces the grid --per-octave draws: the two together are refused, naming both.
expect 2 "--per-octave excludes --grid-m" "$bin" compare --shapes "$tmp/grid.txt" --db "$tmp/grid.db" --m-grid --grid-m 5 --per-octave 3

# An unknown command is named, with the commands it could have been.
expect 2 "unknown command 'bogus' for dgtune (expected one of: sweep, info," "$bin" bogus
expect 2 "unknown command 'frob' for dgtune db (expected one of: check, devices, migrate, prune, merge)" "$bin" db frob
expect 2 "unknown command 'frob' for dgtune db" "$bin" --log-level warn db frob --db x.db
expect 2 "A subcommand is required" "$bin" db

# history --history names --history when it cannot read that DB.
expect 2 "cannot read history database (--history) '$tmp/nosuch.db': no such file (history never creates one)" "$bin" history --shape 64x64x64 --history "$tmp/nosuch.db"
lacks "(--db)"

# info prints the runtime and cuBLASLt versions as --version does (13.1.0, not 130100), with or without a GPU.
"$bin" --version >"$tmp/version.txt"
lt=$(sed -n 's/^cuBLASLt: //p' "$tmp/version.txt")
rt=$(sed -n 's/^CUDA runtime: \([0-9.]*\) (static)$/\1/p' "$tmp/version.txt")
"$bin" info --format csv >"$tmp/info.csv"
grep -qx "cublaslt_version,$lt" "$tmp/info.csv" || { echo "FAIL: info's cublaslt_version is not --version's '$lt'"; fail=1; }
grep -qx "runtime_version,$rt" "$tmp/info.csv" || { echo "FAIL: info's runtime_version is not --version's '$rt'"; fail=1; }
exit $fail
