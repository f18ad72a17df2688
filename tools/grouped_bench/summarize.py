#!/usr/bin/env python3
"""Merges the grouped_bench.py runs of a grouped report (one per machine start) into the report's JSON and tables.

    summarize.py OUT.json RUN1/grouped-bench.json RUN2/grouped-bench.json [...]

Every problem (by label) present in all runs gets one row with the issue's fields, each the mean over the runs:
  kind, groups, m_per_group or masked_m, n, k, us (cold-l2-v2 median, mean of runs), tflops (isolated-v1, counting
  real rows only), x_loop / x_dense / x_vs (cold-l2-v2, the per-run median of per-round ratios), the same under
  isolated-v1, protocol, configs, checks, and per-run values in `runs`. Then the bars of the grouped-kernel issue:
  masked x_loop geomean per count pattern (route / equal), contiguous isolated TFLOPS against DeepGEMM's published
  H800 numbers, contiguous x_dense. Prints markdown tables on stdout. Exit 1 when a run is missing a problem of
  another or a row is not verified (the rest is still written), 2 for bad arguments.
"""
import json
import math
import sys

# DeepGEMM's published H800 numbers (block scaling), ../shared/anchors.md: (kind, groups, rows per group, N, K).
DEEPGEMM_TFLOPS = {
    ("contiguous", 4, 8192, 4096, 7168): 1346, ("contiguous", 8, 4096, 4096, 7168): 1346,
    ("contiguous", 4, 8192, 7168, 2048): 1214, ("contiguous", 8, 4096, 7168, 2048): 1214,
}


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, nd=3):
    return "-" if x is None else f"{x:.{nd}f}"


def merge(runs):
    labels = [r["label"] for r in runs[0]["rows"]]
    by_run = [{r["label"]: r for r in run["rows"]} for run in runs]
    missing = sorted({lab for m in by_run for lab in m} - set.intersection(*(set(m) for m in by_run)))
    rows = []
    for lab in labels:
        if any(lab not in m for m in by_run):
            continue
        rs = [m[lab] for m in by_run]
        r0 = rs[0]
        iso = [r.get("isolated") or {} for r in rs]
        row = {
            "label": lab, "kind": r0["kind"], "groups": r0["groups"], "n": r0["n"], "k": r0["k"],
            "rows": r0["rows"], "real_rows": r0.get("real_rows"), "m_max": r0.get("m_max"),
            "expected_m": r0.get("expected_m"),
            ("m_per_group" if r0["kind"] == "contiguous" else "masked_m"):
                r0.get("m_per_group") if r0["kind"] == "contiguous" else r0.get("masked_m"),
            "us": mean(r.get("us") for r in rs),
            "tflops": mean(i.get("tflops") for i in iso),
            "tflops_cold": mean(r.get("tflops") for r in rs),
            "x_loop": mean(r.get("x_loop") for r in rs),
            "x_dense": mean(r.get("x_dense") for r in rs),
            "x_vs": mean(r.get("x_vs") for r in rs),
            "x_loop_isolated": mean(i.get("x_loop") for i in iso),
            "x_dense_isolated": mean(i.get("x_dense") for i in iso),
            "x_vs_isolated": mean(i.get("x_vs") for i in iso),
            "protocol": "cold-l2-v2 (us, x_*); %s (tflops, x_*_isolated); mean of %d runs"
                        % ("/".join(sorted({i.get("protocol") or "isolated-v1" for i in iso})), len(rs)),
            "configs": sorted({r.get("config") for r in rs}),
            "dense_configs": sorted({r.get("dense_config") or "" for r in rs}),
            "vs_config": r0.get("vs_config"),
            "verified": all(r.get("verified") for r in rs),
            "runs": [{k: r.get(k) for k in ("config", "dense_config", "us", "tflops", "x_loop", "x_dense", "x_vs",
                                            "grouped_sm_clock_mhz_median", "loop_sm_clock_mhz_median", "check",
                                            "loop_check", "vs_check")}
                     | {"isolated": {k: i.get(k) for k in ("us", "tflops", "x_loop", "x_dense", "x_vs",
                                                           "grouped_sm_clock_mhz_median")}}
                     for r, i in zip(rs, iso)],
        }
        per_group = str(r0.get("m_per_group") or "")
        key = (row["kind"], row["groups"], int(per_group) if per_group.isdigit() else None,
               row["n"], row["k"])
        row["deepgemm_h800_tflops"] = DEEPGEMM_TFLOPS.get(key)
        rows.append(row)
    return rows, missing


def bars(rows):
    out = {}
    for pattern in ("route", "equal"):
        xs = [r["x_loop"] for r in rows if r["kind"] == "masked" and r["label"].endswith(pattern)]
        out[f"masked_x_loop_geomean_{pattern}"] = {"value": geomean(xs), "target": 1.5, "count": len(xs)}
    contig = [r for r in rows if r["kind"] == "contiguous"]
    out["contiguous_x_dense_min"] = {"value": min((r["x_dense"] for r in contig), default=None), "target": 0.95}
    out["contiguous_tflops_vs_deepgemm"] = [
        {"label": r["label"], "tflops": r["tflops"], "deepgemm_h800": r["deepgemm_h800_tflops"]}
        for r in contig if r["deepgemm_h800_tflops"]]
    return out


def tables(rows, b):
    lines = ["| problem | config | us (cold) | TFLOPS (isolated) | x_loop | x_dense | x_vs | verified |",
             "|---|---|--:|--:|--:|--:|--:|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {' / '.join(c.split('_sk')[0] for c in r['configs'])} | {fmt(r['us'], 1)} | "
                     f"{fmt(r['tflops'], 0)} | {fmt(r['x_loop'])} | {fmt(r['x_dense'])} | {fmt(r['x_vs'])} | "
                     f"{'ok' if r['verified'] else 'NO'} |")
    lines += ["", "| bar | target | measured |", "|---|--:|--:|"]
    for pattern in ("route", "equal"):
        v = b[f"masked_x_loop_geomean_{pattern}"]
        lines.append(f"| masked x_loop geomean, {pattern} counts ({v['count']} problems) | >= 1.5 | {fmt(v['value'])} |")
    lines.append(f"| contiguous x_dense, lowest | >= 0.95 | {fmt(b['contiguous_x_dense_min']['value'])} |")
    for t in b["contiguous_tflops_vs_deepgemm"]:
        lines.append(f"| {t['label']} TFLOPS (DeepGEMM H800) | {t['deepgemm_h800']} | {fmt(t['tflops'], 0)} |")
    return "\n".join(lines)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    runs = [json.load(open(p)) for p in argv[2:]]
    rows, missing = merge(runs)
    b = bars(rows)
    doc = {"schema": "dgtune-grouped-report", "runs": [{"file": p, "started": r.get("started"),
                                                       "dgtune_version": r.get("dgtune_version")}
                                                      for p, r in zip(argv[2:], runs)],
           "rows": rows, "bars": b, "missing": missing}
    with open(argv[1], "w") as f:
        json.dump(doc, f, indent=1)
    print(tables(rows, b))
    return 1 if missing or not all(r["verified"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
