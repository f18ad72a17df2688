#!/usr/bin/env bash
# End to end on a GPU: sweep a tiny shapes file into a fresh DB, check the winners table (JSON),
# run it again (nothing measured twice), and `dgtune run` one config. Exit 77 without a GPU.
set -u
bin=$1
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no NVIDIA GPU on this machine"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '# tiny smoke\n256 512 1040 name=k-tail\n7 48 80 name=tiny\n1021 1023 1024 accum=fast name=prime\n' >"$tmp/s.txt"
set -o pipefail
"$bin" sweep --shapes "$tmp/s.txt" --db "$tmp/t.db" --max-candidates 6 --max-samples 20 --format json >"$tmp/1.json" || exit 1
"$bin" sweep --shapes "$tmp/s.txt" --db "$tmp/t.db" --max-candidates 6 --max-samples 20 --format json >"$tmp/2.json" || exit 1
python3 - "$tmp/1.json" "$tmp/2.json" <<'PY' || exit 1
import json, sys
first, second = (json.load(open(p))["rows"] for p in sys.argv[1:3])
assert len(first) == 3 and len(second) == 3
for r in first:
    assert r["winner"] and "x" in r["winner"], r
    assert r["median_us"] > 0 and r["tflops"] > 0, r
    assert r["measured_now"] == 6 and r["candidates"] == 6, r
for r in second:
    assert r["measured_now"] == 0, f"resume measured again: {r}"
    assert r["winner"] == next(f["winner"] for f in first if f["shape"] == r["shape"])
big = next(r for r in first if r["name"] == "k-tail")
assert big["x_cublas_default"] is not None and big["x_cublas_tuned"] is not None, big
prime = next(r for r in first if r["name"] == "prime")
assert prime["cublas_tuned_us"] is None and "unsupported" in prime["cublas_tuned_algo"], prime
print("ok: sweep winners, cuBLASLt columns, unsupported recorded, resume measures nothing")
PY
# --strategy model measures only the top-k by the estimate, plus the loader's default config when the cut left it out
# (so 3 or 4 per line); --budget-s stops a shape early (incomplete), and the next run finishes it.
"$bin" sweep --shapes "$tmp/s.txt" --db "$tmp/m.db" --strategy model --top-k 3 --max-samples 20 --no-baseline --format json >"$tmp/m.json" || exit 1
"$bin" sweep --shapes "$tmp/s.txt" --db "$tmp/b.db" --budget-s 0.000001 --max-candidates 5 --max-samples 20 --format json >"$tmp/b1.json" || exit 1
"$bin" sweep --shapes "$tmp/s.txt" --db "$tmp/b.db" --max-candidates 5 --max-samples 20 --format json >"$tmp/b2.json" || exit 1
python3 - "$tmp/m.json" "$tmp/b1.json" "$tmp/b2.json" <<'PY' || exit 1
import json, sys
m, b1, b2 = (json.load(open(p))["rows"] for p in sys.argv[1:4])
assert all(r["candidates"] in (3, 4) and r["measured_now"] == r["candidates"] and r["complete"] == "yes" for r in m), m
assert all(r["complete"] == "incomplete" and r["measured_now"] < 5 for r in b1), b1
assert all(r["complete"] == "yes" and r["measured_now"] + next(x["measured_now"] for x in b1 if x["shape"] == r["shape"]) == 5
           for r in b2), b2
print("ok: model strategy measures top-k (+ the default); budget marks incomplete; the next run completes without re-measuring")
PY
"$bin" run --m 129 --n 65 --k 1040 --config 64x48x128_s6_wg1_sw128_c1x1_rm8_direct_sk1 --db "$tmp/t.db" --cublas --format json >"$tmp/run.json" || exit 1
python3 -c "
import json,sys; t=json.load(open('$tmp/run.json'))['tables']; r=t[0]['rows'][0]
assert r['status']=='ok' and r['median_us']>0, r
assert [b['provider'] for b in t[1]['rows']]==['cublaslt-default','cublaslt-tuned']
print('ok: run', r['config'], r['median_us'], 'us')" || exit 1
# dgtune trace: one traced launch of a split-K config; every CTA records its start and end, the last split of each
# tile its reduction, and the points come in order in every CTA's median.
"$bin" trace --m 129 --n 200 --k 2048 --config 64x48x128_s6_wg1_sw128_c1x1_rm8_tma_sk3_sm0_2g_p1 --format json >"$tmp/trace.json" || exit 1
python3 - "$tmp/trace.json" <<'PY' || exit 1
import json, sys
when, phases = json.load(open(sys.argv[1]))["tables"]
assert "verified" in when["title"], when["title"]
rows = {r["point"]: r for r in when["rows"]}
grid = int(when["title"].split("grid ")[1].split(" ")[0])
assert grid == 3 * 3 * 5, when["title"]  # 3 m-blocks x 5 n-blocks x 3 splits, one unit per CTA
for p in ("start", "setup", "first TMA issued", "first stage full", "mainloop done", "split-K reduced", "end"):
    assert rows[p]["ctas"] == grid, (p, rows[p])
assert rows["stores issued"]["ctas"] == 15, rows["stores issued"]  # one reducing CTA per tile
order = [rows[p]["median_us"] for p in ("start", "setup", "first stage full", "mainloop done", "split-K reduced", "end")]
assert order == sorted(order), order
print("ok: trace", when["title"])
PY
