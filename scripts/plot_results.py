#!/usr/bin/env python3
"""Plots from dgtune JSON: speedup bars with intervals (compare) and a roofline (compare or sweep).

    dgtune compare --shapes S --format json > cold.json
    python3 scripts/plot_results.py cold.json [hot.json ...] --out-dir plots \
        [--peak-tflops 1979] [--bandwidth-gbps 4800]

speedup.png: per shape, dgtune's speedup over cuBLASLt-tuned (x_tuned) with its interval [x_tuned_lo,
x_tuned_hi], one bar group per input file (e.g. cold-l2 and hot-graph), the +-margin band shaded.
roofline.png: TFLOPS against arithmetic intensity (FLOP per byte of A, B read once and D written once:
TFLOPS*1e3 / GB/s) for every row with tflops and gbps (compare rows or sweep winners), under the FP8
dense peak and the copy bandwidth given (measure the bandwidth on the machine; the defaults are H200
datasheet numbers). Needs matplotlib.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows_of(path):
    """The per-shape rows of a dgtune JSON document (first table of {"tables": [...]}, or {"rows": [...]})."""
    with open(path) as f:
        doc = json.load(f)
    table = doc["tables"][0] if "tables" in doc else doc
    return table.get("title", os.path.basename(path)), table["rows"]


def label(row):
    return row.get("name") or row["shape"]


def plot_speedup(inputs, out, margin_pct):
    shapes = []
    for _, rows in inputs:
        for r in rows:
            if r.get("x_tuned") is not None and label(r) not in shapes:
                shapes.append(label(r))
    if not shapes:
        return False
    width = 0.8 / len(inputs)
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(shapes) * len(inputs) + 2), 4.5))
    for i, (name, rows) in enumerate(inputs):
        by = {label(r): r for r in rows if r.get("x_tuned") is not None}
        xs, ys, lo, hi = [], [], [], []
        for j, s in enumerate(shapes):
            if s not in by:
                continue
            r = by[s]
            xs.append(j + (i - (len(inputs) - 1) / 2) * width)
            ys.append(r["x_tuned"])
            # An infinite interval end is stored as null (too few rounds): no whisker on that side.
            lo.append(max(0.0, r["x_tuned"] - (r.get("x_tuned_lo") or r["x_tuned"])))
            hi.append(max(0.0, (r.get("x_tuned_hi") or r["x_tuned"]) - r["x_tuned"]))
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhspan(1 / (1 + margin_pct / 100), 1 + margin_pct / 100, color="grey", alpha=0.2, label=f"+-{margin_pct:g}% margin")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("speedup vs cuBLASLt-tuned (95% interval)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return True


def plot_roofline(inputs, out, peak_tflops, bandwidth_gbps):
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ai_all = []
    for name, rows in inputs:
        ai, tf = [], []
        for r in rows:
            t, g = r.get("tflops"), r.get("gbps")
            if t and g:
                ai.append(t * 1e3 / g)
                tf.append(t)
        ai_all += ai
        ax.scatter(ai, tf, s=14, label=name)
    if not ai_all:
        plt.close(fig)
        return False
    lo, hi = min(ai_all) / 2, max(ai_all) * 2
    ridge = peak_tflops * 1e3 / bandwidth_gbps
    xs = [lo, min(max(ridge, lo), hi), hi]
    ax.plot(xs, [min(peak_tflops, x * bandwidth_gbps / 1e3) for x in xs], color="black", linewidth=1,
            label=f"roof: {peak_tflops:g} TFLOPS, {bandwidth_gbps:g} GB/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("TFLOPS")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", help="dgtune compare or sweep output (--format json)")
    ap.add_argument("--names", nargs="*", help="legend names, one per input (default: file names)")
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--margin", type=float, default=2.0, help="equivalence margin in percent (shaded)")
    ap.add_argument("--peak-tflops", type=float, default=1979.0, help="FP8 dense peak (H200 SXM datasheet)")
    ap.add_argument("--bandwidth-gbps", type=float, default=4800.0, help="copy bandwidth; measure it (H200 datasheet HBM3e)")
    a = ap.parse_args()
    if a.names and len(a.names) != len(a.json):
        sys.exit("--names needs one name per input")
    inputs = []
    for i, path in enumerate(a.json):
        _, rows = rows_of(path)
        inputs.append((a.names[i] if a.names else os.path.splitext(os.path.basename(path))[0], rows))
    os.makedirs(a.out_dir, exist_ok=True)
    made = []
    if plot_speedup(inputs, os.path.join(a.out_dir, "speedup.png"), a.margin):
        made.append("speedup.png")
    if plot_roofline(inputs, os.path.join(a.out_dir, "roofline.png"), a.peak_tflops, a.bandwidth_gbps):
        made.append("roofline.png")
    print("wrote " + ", ".join(os.path.join(a.out_dir, m) for m in made) if made else "nothing to plot")


if __name__ == "__main__":
    main()
