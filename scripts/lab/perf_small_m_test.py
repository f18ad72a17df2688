#!/usr/bin/env python3
"""scripts/lab/perf_small_m.py on synthetic `dgtune compare --format json` outputs (a lab test, not in ctest):
the filter (M <= 128 and the three tail shapes only), the row fields, the geomeans and minima per
protocol and group, not-measured shapes, and exit 2 for a file of the other protocol."""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "lab", "perf_small_m.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def row(shape, us, x, copy_us, tuned_us=None, clock=1755.0):
    return {"shape": shape, "name": "n" + shape, "accum": "promote", "config": "cfg", "config_source": "db",
            "dgtune_us": us, "dgtune_p10_us": us, "dgtune_p90_us": us, "cublas_default_us": None,
            "cublas_tuned_us": tuned_us if tuned_us is not None else us * x, "x_tuned": x, "x_tuned_lo": x - 0.01,
            "x_tuned_hi": x + 0.01, "verdict": "faster" if x > 1 else "slower", "tflops": 1.5,
            "gbps": 3000.0, "copy_us": copy_us, "copy_fraction": None if copy_us is None else copy_us / us,
            "clock_mhz": clock, "note": ""}


def compare_doc(protocol, rows):
    title = (f"dgtune compare shapes.txt on NVIDIA H200 ({protocol}, 20 rounds; db results/tuning.db; "
             "speedup = cuBLASLt-tuned us / dgtune us)")
    return {"tables": [{"title": title, "rows": rows}, {"title": "summary", "rows": []}]}


cold_rows = [row("1x7168x2048", 10.0, 0.8, 5.0), row("64x576x7168", 8.0, 1.25, 4.0),
             row("128x2112x7168", 20.0, 1.1, 10.0, clock=1980.0),
             row("129x2112x7168", 20.0, 9.0, 1.0),       # M > 128, not a tail shape: dropped
             row("4096x4096x4096", 100.0, 9.0, 1.0),     # dropped
             row("4096x576x7168", 40.0, 0.95, 20.0),     # tail
             row("8192x576x7168 ld=7168,7168,640", 80.0, 1.1, None),  # tail (padded D), copy limit off
             {"shape": "32x7168x16384", "name": "x", "accum": "promote", "dgtune_us": None, "note": "verify_failed"}]
hot_rows = [row("1x7168x2048", 5.0, 0.5, 2.5), row("64x576x7168", 4.0, 1.6, 1.0),
            row("4096x2112x7168", 90.0, 1.02, 30.0)]

with tempfile.TemporaryDirectory() as d:
    cold, hot = os.path.join(d, "cold.json"), os.path.join(d, "hot.json")
    json.dump(compare_doc("cold-l2-v2", cold_rows), open(cold, "w"))
    json.dump(compare_doc("hot-graph-v1", hot_rows), open(hot, "w"))
    p = subprocess.run([sys.executable, SCRIPT, "--cold", cold, "--hot", hot, "--date", "2026-11-29",
                        "--out-dir", d], capture_output=True, text=True)
    check(p.returncode == 0, f"exit 0 (got {p.returncode}: {p.stderr})")
    out = os.path.join(d, "perf-small-m-2026-11-29.json")
    check(os.path.exists(out), "writes perf-small-m-<date>.json in --out-dir")
    doc = json.load(open(out))
    rows = doc["rows"]
    got = sorted((r["protocol"], r["shape"]) for r in rows)
    want = sorted([("cold-l2", "1x7168x2048"), ("cold-l2", "64x576x7168"), ("cold-l2", "128x2112x7168"),
                   ("cold-l2", "4096x576x7168"), ("cold-l2", "8192x576x7168 ld=7168,7168,640"),
                   ("hot-graph", "1x7168x2048"), ("hot-graph", "64x576x7168"), ("hot-graph", "4096x2112x7168")])
    check(got == want, f"filtered rows {got}")
    fields = {"shape", "accum", "median_us", "tflops", "cublas_tuned_us", "x_cublas_tuned", "sm_clock_mhz",
              "protocol", "copy_fraction"}
    for r in rows:
        check(fields <= set(r), f"row {r['shape']} has every field of the small-M data file")
    by = {(r["protocol"], r["shape"]): r for r in rows}
    r = by[("cold-l2", "128x2112x7168")]
    check(r["median_us"] == 20.0 and abs(r["cublas_tuned_us"] - 22.0) < 1e-12 and r["x_cublas_tuned"] == 1.1, "values copied")
    check(r["sm_clock_mhz"] == 1980.0, "sm_clock_mhz from clock_mhz")
    check(abs(r["copy_fraction"] - 0.5) < 1e-12, "copy_fraction")
    check(by[("cold-l2", "8192x576x7168 ld=7168,7168,640")]["copy_fraction"] is None, "no copy side: null")
    s = doc["summary"]
    cs = s["cold-l2"]["m<=128"]
    check(cs["shapes"] == 3, f"cold small-M shape count {cs['shapes']}")
    check(abs(cs["geomean_x_cublas_tuned"] - (0.8 * 1.25 * 1.1) ** (1 / 3)) < 1e-12,
          f"cold geomean {cs['geomean_x_cublas_tuned']}")
    check(cs["min_x_cublas_tuned"] == 0.8 and cs["min_shape"] == "1x7168x2048", "cold min and its shape")
    check(abs(cs["geomean_copy_fraction"] - 0.5) < 1e-12, "cold geomean copy fraction (all 0.5)")
    check(cs["not_measured"] == 1, "the verify_failed M <= 128 shape counts as not measured")
    ct = s["cold-l2"]["tail"]
    check(ct["shapes"] == 2 and abs(ct["geomean_x_cublas_tuned"] - math.sqrt(0.95 * 1.1)) < 1e-12, "cold tail")
    check(abs(ct["geomean_copy_fraction"] - 0.5) < 1e-12 and ct["min_copy_fraction"] == 0.5,
          "tail copy fraction over the shapes that have one")
    hs = s["hot-graph"]["m<=128"]
    check(abs(hs["geomean_x_cublas_tuned"] - math.sqrt(0.5 * 1.6)) < 1e-12, f"hot geomean ({hs})")
    check(abs(hs["min_copy_fraction"] - 0.25) < 1e-12, "hot min copy fraction 1/4")
    check("| 64x576x7168 | promote | hot-graph |" in p.stdout, "markdown rows on stdout")
    check("| cold-l2 | m<=128 | 3 | 1.032 |" in p.stdout, f"markdown summary on stdout:\n{p.stdout}")

    # Swapped inputs: the titles name the other protocol -> exit 2, nothing written.
    os.remove(out)
    p = subprocess.run([sys.executable, SCRIPT, "--cold", hot, "--hot", cold, "--date", "2026-11-29",
                        "--out-dir", d], capture_output=True, text=True)
    check(p.returncode == 2 and "does not name protocol cold-l2" in p.stderr, f"swapped files: {p.stderr}")
    check(not os.path.exists(out), "nothing written on bad input")
    p = subprocess.run([sys.executable, SCRIPT, "--cold", os.path.join(d, "missing.json"), "--hot", hot,
                        "--out-dir", d], capture_output=True, text=True)
    check(p.returncode == 2, "missing file: exit 2")

sys.exit(1 if failures else 0)
