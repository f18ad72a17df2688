#!/usr/bin/env python3
"""Plot one shape's CI-gate history: the ratio dgtune / cuBLASLt-tuned at each gate run, with the
baseline's ratio and the run's change interval, so slow drift across many small changes is visible.

    build/dgtune history --shape 128x2112x7168 --history gate-history.db --format json > h.json
    python3 scripts/plot_gate_history.py h.json -o history.png
"""
import argparse
import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("history_json", help="output of `dgtune history --format json`")
    ap.add_argument("-o", "--out", default="gate-history.png")
    a = ap.parse_args()
    with open(a.history_json) as f:
        doc = json.load(f)
    rows = doc["rows"] if "rows" in doc else doc["tables"][0]["rows"]
    if not rows:
        raise SystemExit("no rows")
    x = list(range(len(rows)))
    now = [r.get("ratio_now") for r in rows]
    base = [r.get("ratio_baseline") for r in rows]
    lo = [r.get("slowdown_lo_pct") for r in rows]
    hi = [r.get("slowdown_hi_pct") for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.4), 4))
    ax.plot(x, base, "--", color="gray", label="baseline ratio")
    ax.plot(x, now, "o-", label="ratio now (dgtune / cuBLASLt-tuned)")
    for i, r in enumerate(rows):
        if base[i] and lo[i] is not None and hi[i] is not None and all(map(math.isfinite, (lo[i], hi[i]))):
            ax.vlines(i, base[i] * (1 + lo[i] / 100), base[i] * (1 + hi[i] / 100), color="C0", alpha=0.4)
        if r.get("verdict") in ("regression", "verify-failed"):
            ax.plot(i, now[i] or 0, "rx", markersize=10)
    ax.set_xticks(x)
    ax.set_xticklabels([r.get("created_at", "")[:16] for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("time ratio (< 1: dgtune faster)")
    ax.set_title(doc.get("title", "gate history")[:100], fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(a.out)


if __name__ == "__main__":
    main()
