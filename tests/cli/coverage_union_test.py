#!/usr/bin/env python3
"""scripts/coverage_union.py on hand-written dgtune-coverage documents (no GPU): rows of several files united on
(shape, scale, accum, d, bias, act, protocol, model) with the later file's row kept, one rows table per protocol, the
summary recomputed with hand-computed values, the output valid against docs/schemas/dgtune-coverage.schema.json; a
document of another kind and an output that is an input are refused with exit 2, nothing written. jsonschema is
required (a missing one fails the test, as for json_schemas_test.py).

Usage: coverage_union_test.py REPO_ROOT
"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_packages import require  # noqa: E402

jsonschema = require("jsonschema")


def row(m, x, protocol="cold-l2-v2", x_hi=None, backend="dgtune", model="deepseek-v3"):
    """A grid row of 2112 x 7168 at M = m whose dispatch has x = x (interval [x, x_hi or x]), the kernel alone 0.9 x."""
    return {"shape": f"{m}x2112x7168", "n": 2112, "k": 7168, "m": m, "scale": "per-tensor", "accum": "promote",
            "d": "bf16", "bias": "none", "act": "none", "protocol": protocol, "model": model, "grid_seed": 20261202,
            "nk_tuned": True, "source": "ladder", "backend": backend, "config": "c", "cublaslt_algo": "",
            "dispatch_us": 10 / x if x else None, "kernel_us": None, "cublas_tuned_us": 10.0, "cublas_default_us": 11.0,
            "x_dispatch": x, "x_lo": x, "x_hi": x if x_hi is None else x_hi,
            "x_dispatch_default": 1.1 * x if x else None, "x_kernel": 0.9 * x if x else None,
            "x_kernel_lo": 0.9 * x if x else None, "x_kernel_hi": 0.9 * x if x else None, "clock_mhz": 1980.0,
            "flagged": 0, "rounds": 20, "note": "" if x else "verify_failed: dispatch before timing"}


def doc(rows):
    return {"schema": "dgtune-coverage", "schema_version": 1,
            "tables": [{"title": "t", "rows": rows},
                       {"title": "summary (ignored by the union)", "rows": [{"n": 1, "grid_m": 99}]}]}


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = sys.argv[1]
    script = os.path.join(root, "scripts", "coverage_union.py")
    with open(os.path.join(root, "docs", "schemas", "dgtune-coverage.schema.json")) as f:
        schema = json.load(f)
    failures = []

    def check(cond, what):
        print(("ok:   " if cond else "FAIL: ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        a, b, c = (os.path.join(tmp, n) for n in ("a.json", "b.json", "c.json"))
        # a: M = 3, 5 (cold); b: M = 5 again (wins over a's), 7 failed (no ratio), one hot-graph row; c: another kind.
        with open(a, "w") as f:
            json.dump(doc([row(3, 2.0, backend="cublaslt"), row(5, 9.0)]), f)
        with open(b, "w") as f:
            json.dump(doc([row(5, 0.5, x_hi=0.8), row(7, None), row(6, 4.0), row(1, 1.0),
                           row(3, 1.5, protocol="hot-graph-v1")]), f)
        with open(c, "w") as f:
            json.dump({"schema": "dgtune-compare", "schema_version": 1, "tables": []}, f)
        out = os.path.join(tmp, "u.json")
        p = subprocess.run([sys.executable, script, a, b, "-o", out], capture_output=True, text=True)
        check(p.returncode == 0, f"union of two files exits 0 ({p.stderr.strip()[-300:]})")
        with open(out) as f:
            u = json.load(f)
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(u))
        check(not errors, f"the union validates against dgtune-coverage.schema.json {[e.message for e in errors[:3]]}")
        titles = [t["title"] for t in u["tables"]]
        check(len(u["tables"]) == 3 and "protocol cold-l2-v2" in titles[0] and "protocol hot-graph-v1" in titles[1],
              f"one rows table per protocol, then the summary: {titles}")
        cold = u["tables"][0]["rows"]
        check([r["m"] for r in cold] == [1, 3, 5, 6, 7], f"cold rows united and sorted by M: {[r['m'] for r in cold]}")
        check(next(r for r in cold if r["m"] == 5)["x_dispatch"] == 0.5, "M = 5: the later file's row wins")
        summary = {r["protocol"]: r for r in u["tables"][2]["rows"]}
        s = summary["cold-l2-v2"]
        # Hand-computed: x_dispatch of M = 1, 3, 5, 6 = 1, 2, 0.5, 4 (M = 7 has none): geomean (1 * 2 * 0.5 * 4)^(1/4)
        # = 4^(1/4) = sqrt(2); min 0.5; x_hi < 1 at M = 5 only: share 1/4; x < 1 at M = 5: 1/4.
        check(s["grid_m"] == 5 and s["count"] == 4, f"grid_m 5, count 4: {s['grid_m']}, {s['count']}")
        check(abs(s["geomean_x_dispatch"] - math.sqrt(2)) < 1e-12, f"geomean x_dispatch = sqrt(2): {s['geomean_x_dispatch']}")
        check(s["min_x_dispatch"] == 0.5, "min x_dispatch 0.5")
        check(s["share_slower"] == 0.25 and s["share_below_1"] == 0.25, "shares 1/4")
        check(abs(s["geomean_x_dispatch_default"] - 1.1 * math.sqrt(2)) < 1e-12, "geomean x vs default 1.1 sqrt(2)")
        check(abs(s["geomean_x_kernel"] - 0.9 * math.sqrt(2)) < 1e-12 and abs(s["min_x_kernel"] - 0.45) < 1e-12,
              "kernel: geomean 0.9 sqrt(2), min 0.45")
        # x_kernel = 0.9, 1.8, 0.45, 3.6: below 1 (and its interval, a point) at M = 1 and 5.
        check(s["share_kernel_slower"] == 0.5 and s["share_kernel_below_1"] == 0.5, "kernel shares 1/2")
        check(s["cublaslt_dispatched"] == 1, "a's cold M = 3 row (cuBLASLt) is kept: b's M = 3 is hot-graph")
        h = summary["hot-graph-v1"]
        check(h["count"] == 1 and abs(h["geomean_x_dispatch"] - 1.5) < 1e-12, "hot-graph: its own summary row")

        before = os.listdir(tmp)
        p = subprocess.run([sys.executable, script, a, c, "-o", os.path.join(tmp, "v.json")], capture_output=True,
                           text=True)
        check(p.returncode == 2 and "not a dgtune-coverage document" in p.stderr and os.listdir(tmp) == before,
              f"another document kind: exit 2, nothing written ({p.returncode}: {p.stderr.strip()})")
        p = subprocess.run([sys.executable, script, a, b, "-o", a], capture_output=True, text=True)
        check(p.returncode == 2 and "is the input" in p.stderr, f"-o an input: exit 2 ({p.stderr.strip()})")
        p = subprocess.run([sys.executable, script, a], capture_output=True, text=True)
        check(p.returncode == 0 and json.loads(p.stdout)["tables"][1]["rows"][0]["cublaslt_dispatched"] == 1,
              "one file to stdout; its cuBLASLt row counted")
    print(f"coverage_union: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
