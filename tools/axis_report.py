#!/usr/bin/env python3
"""How much each tuning axis contributed, per shape, from the trials of one exhaustive sweep.

For every problem in the DB and every axis, the best time among trials that keep that axis at its
baseline value (cluster 1x1, BLOCK_K 128, swizzle 128 B, raster m with group 8, direct epilogue,
no split-K, all SMs, two consumer warpgroups, BLOCK_N a multiple of 16) is compared with the best
time overall: "+12.3%" means the shape would be 12.3% slower without that axis. Times come from one
run, so the ratios are inside one run.

  python3 tools/axis_report.py --db tuning.db [--shapes FILE] > table.md
"""
import argparse
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dgtune_shapes  # noqa: E402

AXES = [
    ("cluster", "c.cluster_m = 1 AND c.cluster_n = 1", "cluster 1x1"),
    ("block_k", "c.block_k = 128", "BLOCK_K 128"),
    ("swizzle", "c.swizzle = 128", "swizzle 128 B"),
    ("raster", "c.raster = 'm' AND c.group_size = 8", "raster m, group 8"),
    ("epilogue", "c.epilogue = 'direct'", "direct epilogue"),
    ("split_k", "c.split_k = 1", "no split-K"),
    ("sms", "c.sms = 0", "all SMs"),
    ("block_n_8", "c.block_n % 16 = 0", "BLOCK_N multiple of 16"),
    ("stages", "c.num_stages >= 4", ">= 4 stages"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--shapes", help="only problems of this shapes file (their M N K)")
    a = ap.parse_args()
    wanted = None
    if a.shapes:
        try:
            wanted = {(s.m, s.n, s.k) for s in dgtune_shapes.load(a.shapes)}
        except dgtune_shapes.ShapesFileError as e:
            sys.exit(f"axis_report.py: {e}")
    db = sqlite3.connect(a.db)
    problems = db.execute("SELECT id, m, n, k, accum FROM problem ORDER BY m, n, k").fetchall()
    print("| shape | best us | best config | " + " | ".join(t for _, _, t in AXES) + " |")
    print("|---|--:|---|" + "--:|" * len(AXES))
    totals = {name: [] for name, _, _ in AXES}
    for pid, m, n, k, accum in problems:
        if wanted is not None and (m, n, k) not in wanted:
            continue
        base = "FROM trial t JOIN config c ON c.id = t.config_id WHERE t.problem_id = ? AND t.status = 'ok'"
        best = db.execute(f"SELECT min(t.median_us) {base}", (pid,)).fetchone()[0]
        if best is None:
            continue
        key = db.execute(f"SELECT c.key {base} ORDER BY t.median_us LIMIT 1", (pid,)).fetchone()[0]
        cells = []
        for name, cond, _ in AXES:
            r = db.execute(f"SELECT min(t.median_us) {base} AND {cond}", (pid,)).fetchone()[0]
            gain = (r / best - 1) * 100 if r else float("nan")
            totals[name].append(gain)
            cells.append(f"+{gain:.1f}%" if gain > 0.05 else "0")
        label = f"{m}x{n}x{k}" + ("" if accum == "promote" else " " + accum)
        print(f"| {label} | {best:.2f} | `{key}` | " + " | ".join(cells) + " |")
    print("| **max over shapes** | | | " + " | ".join(f"+{max(v):.1f}%" if v else "-" for v in totals.values()) + " |")
    print("| **shapes where the axis wins** | | | " +
          " | ".join(str(sum(1 for g in v if g > 0.05)) for v in totals.values()) + " |")


if __name__ == "__main__":
    main()
