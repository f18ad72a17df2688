#!/usr/bin/env python3
"""Plots from dgtune JSON: speedup bars with intervals and a roofline.

    dgtune compare --shapes S --format json > cold.json          # or: dgtune export --format json > winners.json
    python3 scripts/plot_results.py cold.json [hot.json ...] --out-dir plots \
        [--peak-tflops 1979] [--bandwidth-gbps 4800]

Inputs: `dgtune compare`, `dgtune sweep` or `dgtune export` JSON (--format json; documents without the
"schema" envelope of older dgtune versions are read too).
speedup.png: per shape, x = cuBLASLt-tuned us / dgtune us (above 1: dgtune faster; compare's x_tuned with its
interval [x_tuned_lo, x_tuned_hi], sweep's and export's x_cublas_tuned without one), one bar per input file (e.g.
cold-l2 and hot-graph), shapes down the page so the PNG keeps its width however many shapes there are, the +-margin
band shaded.
roofline.png: TFLOPS against arithmetic intensity (FLOP per byte of A, B read once and D written once:
TFLOPS*1e3 / GB/s) for every row with tflops and gbps, under the FP8 dense peak and the copy bandwidth given
(measure the bandwidth on the machine; the defaults are H200 datasheet numbers).
Both PNGs are under 2000 pixels wide. Needs matplotlib. Exit 2 for a bad input or output path (nothing written).
"""
import argparse
import os

from plot_common import check_output, fail, figure_width_in, load_document, save_figure

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows_of(path):
    """(title, rows) of a dgtune JSON document: export's "winners", the first of "tables" (compare), or "rows"."""
    doc = load_document(path)
    schema = doc.get("schema", "")
    if "winners" in doc:
        rows = doc["winners"]
        # One winner per (environment, problem, protocol): say which protocol when a file holds several.
        if len({r.get("protocol") for r in rows}) > 1:
            rows = [dict(r, shape=f"{r.get('shape')} {r.get('protocol')}") for r in rows]
        return doc.get("db", os.path.basename(path)), rows
    if isinstance(doc.get("tables"), list) and doc["tables"]:
        table = doc["tables"][0]
    elif isinstance(doc.get("rows"), list):
        table = doc
    else:
        fail(f"{path}: {schema or 'the document'} has no rows to plot (expected dgtune compare, sweep or export "
             f"--format json)")
    if not isinstance(table.get("rows"), list):
        fail(f"{path}: 'rows' is not a list")
    return table.get("title", os.path.basename(path)), table["rows"]


def label(row):
    return row.get("name") or str(row.get("shape", "?"))


def speedup(row):
    """x = cuBLASLt-tuned us / dgtune us: compare's x_tuned, sweep's and export's x_cublas_tuned."""
    x = row.get("x_tuned")
    return x if x is not None else row.get("x_cublas_tuned")


def plot_speedup(inputs, out, margin_pct):
    shapes = []
    for _, rows in inputs:
        for r in rows:
            if speedup(r) is not None and label(r) not in shapes:
                shapes.append(label(r))
    if not shapes:
        return None
    height = 0.8 / len(inputs)
    fig, ax = plt.subplots(figsize=(figure_width_in(10), 1.6 + 0.22 * len(shapes) * max(1.0, 0.7 * len(inputs))))
    for i, (name, rows) in enumerate(inputs):
        by = {label(r): r for r in rows if speedup(r) is not None}
        ys, xs, lo, hi = [], [], [], []
        for j, s in enumerate(shapes):
            if s not in by:
                continue
            r = by[s]
            x = speedup(r)
            ys.append(j + (i - (len(inputs) - 1) / 2) * height)
            xs.append(x)
            # An infinite interval end is stored as null (too few rounds): no whisker on that side.
            lo.append(max(0.0, x - (r.get("x_tuned_lo") or x)))
            hi.append(max(0.0, (r.get("x_tuned_hi") or x) - x))
        ax.barh(ys, xs, height, xerr=[lo, hi], capsize=2, label=name)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvspan(1 / (1 + margin_pct / 100), 1 + margin_pct / 100, color="grey", alpha=0.2,
               label=f"+-{margin_pct:g}% margin")
    ax.set_yticks(range(len(shapes)))
    ax.set_yticklabels(shapes, fontsize=7)
    ax.invert_yaxis()  # first shape of the file on top
    ax.set_xlabel("x = cuBLASLt-tuned us / dgtune us (above 1: dgtune faster; whiskers: 95% interval)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    save_figure(fig, out)
    plt.close(fig)
    return out


def plot_roofline(inputs, out, peak_tflops, bandwidth_gbps):
    fig, ax = plt.subplots(figsize=(figure_width_in(6.5), 4.5))
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
        return None
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
    save_figure(fig, out)
    plt.close(fig)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", help="dgtune compare, sweep or export output (--format json)")
    ap.add_argument("--names", nargs="*", help="legend names, one per input (default: file names)")
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--margin", type=float, default=2.0, help="equivalence margin in percent (shaded)")
    ap.add_argument("--peak-tflops", type=float, default=1979.0, help="FP8 dense peak (H200 SXM datasheet)")
    ap.add_argument("--bandwidth-gbps", type=float, default=4800.0, help="copy bandwidth; measure it (H200 datasheet HBM3e)")
    a = ap.parse_args()
    if a.names and len(a.names) != len(a.json):
        fail("--names needs one name per input")
    inputs = []
    for i, path in enumerate(a.json):
        _, rows = rows_of(path)
        inputs.append((a.names[i] if a.names else os.path.splitext(os.path.basename(path))[0], rows))
    if os.path.exists(a.out_dir) and not os.path.isdir(a.out_dir):
        fail(f"--out-dir '{a.out_dir}' is not a directory (nothing was written)")
    outputs = [os.path.join(a.out_dir, n) for n in ("speedup.png", "roofline.png")]
    if os.path.isdir(a.out_dir):
        for out in outputs:
            check_output(out, a.json, "--out-dir")
    os.makedirs(a.out_dir, exist_ok=True)
    made = [p for p in (plot_speedup(inputs, outputs[0], a.margin),
                        plot_roofline(inputs, outputs[1], a.peak_tflops, a.bandwidth_gbps)) if p]
    print("wrote " + ", ".join(made) if made else "nothing to plot")


if __name__ == "__main__":
    main()
