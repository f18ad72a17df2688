#!/usr/bin/env python3
"""Plot a shape's CI-gate history: x = cuBLASLt-tuned us / dgtune us at each gate run (above 1: dgtune faster),
with the baseline's x and the run's slowdown interval, so slow drift across many small changes is visible. One
series per problem (`--shape MxNxK` matches the fast- and the promote-accumulation problem of those sizes).

    build/dgtune history --shape 128x2112x7168 --history gate-history.db --format json > h.json
    python3 scripts/plot_gate_history.py h.json -o history.png

The PNG is under 2000 pixels wide however many runs there are. Needs matplotlib. Exit 2 for a bad input or output
path (nothing written).
"""
import argparse
import math

from plot_common import check_output, fail, figure_width_in, load_document, save_figure

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def x_of(row, key):
    """x_tuned_<key>; history JSON of dgtune before the one ratio convention had ratio_<key> = dgtune / cuBLASLt."""
    x = row.get(f"x_tuned_{key}")
    if x is None and row.get(f"ratio_{key}"):
        x = 1 / row[f"ratio_{key}"]
    return x


def finite(v):
    return v is not None and math.isfinite(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("history_json", help="output of `dgtune history --format json`")
    ap.add_argument("-o", "--out", default="gate-history.png")
    a = ap.parse_args()
    doc = load_document(a.history_json)
    rows = doc["rows"] if isinstance(doc.get("rows"), list) else (doc.get("tables") or [{}])[0].get("rows")
    if not rows:
        fail(f"{a.history_json}: no rows (expected `dgtune history --format json` output)")
    check_output(a.out, [a.history_json], "-o")
    series = {}
    for r in rows:
        series.setdefault(r.get("problem_key") or r.get("shape") or "?", []).append(r)
    runs = max(len(v) for v in series.values())
    fig, ax = plt.subplots(figsize=(figure_width_in(max(6.0, runs * 0.35)), 4.5))
    for n, (key, points) in enumerate(series.items()):
        color = f"C{n % 10}"
        xs = list(range(len(points)))
        now = [x_of(r, "now") for r in points]
        base = [x_of(r, "baseline") for r in points]
        name = points[0].get("shape") or key
        ax.plot(xs, base, "--", color=color, alpha=0.6, label=f"{name}: baseline")
        ax.plot(xs, now, "o-", color=color, markersize=3, label=f"{name}: now")
        for i, r in enumerate(points):
            lo, hi = r.get("slowdown_lo_pct"), r.get("slowdown_hi_pct")
            # slowdown = x_baseline / x_now - 1, so its interval [lo, hi] is x_now in [base/(1+hi), base/(1+lo)].
            if finite(base[i]) and finite(lo) and finite(hi) and lo > -100 and hi > -100:
                ax.vlines(i, base[i] / (1 + hi / 100), base[i] / (1 + lo / 100), color=color, alpha=0.4)
            if r.get("verdict") in ("regression", "verify-failed"):
                ax.plot(i, now[i] or 0, "rx", markersize=10)
    longest = max(series.values(), key=len)
    step = max(1, math.ceil(len(longest) / 40))  # at most 40 labels: they stay readable at any run count
    ticks = list(range(0, len(longest), step))
    ax.set_xticks(ticks)
    ax.set_xticklabels([(longest[i].get("created_at") or "")[:16] for i in ticks], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("x = cuBLASLt-tuned us / dgtune us (above 1: dgtune faster)")
    ax.set_title((doc.get("title") or "gate history")[:110], fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, a.out)
    plt.close(fig)
    print(a.out)


if __name__ == "__main__":
    main()
