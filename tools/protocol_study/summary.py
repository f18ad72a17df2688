#!/usr/bin/env python3
"""The protocol study's summary (tools/protocol_study/study.sh): reads OUT/<variant>.json (`dgtune compare --format
json`) and prints a markdown table per shape: the ratio x = cuBLASLt-tuned us / dgtune us of each variant with its
95% interval, its move vs the williams run in percent, each side's median SM clock and TFLOPS, and cuBLASLt's
algorithm; writes the same as OUT/summary.json. isolated-v1's ratio is the ratio of the two sides' medians (its
sides did not run together, so there is no paired interval). Standard library only.

Usage: summary.py OUT
"""
import json
import os
import sys

VARIANTS = ["williams", "reversed", "fixed", "williams-gap", "reversed-gap", "fixed-gap", "williams-again", "isolated"]


def rows_of(path):
    """The per-shape rows of one compare document (its first table), keyed by (shape, accum)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return None, f"{os.path.basename(path)}: {e}"
    rows = {}
    for row in doc["tables"][0]["rows"]:
        rows[(row.get("shape"), row.get("accum"))] = row
    return rows, None


def ratio_of(variant, row):
    if variant == "isolated":
        d, c = row.get("dgtune_us"), row.get("cublas_tuned_us")
        return (c / d if d and c else None), None, None
    return row.get("x_tuned"), row.get("x_tuned_lo"), row.get("x_tuned_hi")


def fmt(v, spec):
    return "" if v is None else format(v, spec)


def main(out):
    data, problems = {}, []
    for v in VARIANTS:
        path = os.path.join(out, v + ".json")
        if not os.path.exists(path):
            problems.append(f"{v}: not run")
            continue
        rows, err = rows_of(path)
        if err:
            problems.append(err)
            continue
        data[v] = rows
    shapes = []
    for rows in data.values():
        for key in rows:
            if key not in shapes:
                shapes.append(key)
    summary = {"variants": list(data), "problems": problems, "shapes": []}
    lines = ["# Protocol study (does compare's round protocol favour one side?)", "",
             "x = cuBLASLt-tuned us / dgtune us (cold-l2-v2 variants: median of per-round ratios, 95% sign-test "
             "interval; isolated-v1: ratio of the medians). move = x / x(williams) - 1. Clocks: each side's median SM "
             "clock (MHz), probed right after each sample.", ""]
    for key in shapes:
        shape, accum = key
        base = data.get("williams", {}).get(key)
        base_x = ratio_of("williams", base)[0] if base else None
        first = next(rows[key] for rows in data.values() if key in rows)
        lines += [f"## {shape} {accum} (dgtune config {first.get('config')}, source {first.get('config_source')})", "",
                  "| variant | x | lo | hi | move vs williams % | dgtune us | cuBLASLt us | dgtune TFLOPS | "
                  "cuBLASLt TFLOPS | dgtune MHz | cuBLASLt MHz | flagged | cuBLASLt algo | note |",
                  "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|"]
        entry = {"shape": shape, "accum": accum, "config": first.get("config"),
                 "config_source": first.get("config_source"), "variants": {}}
        for v in VARIANTS:
            row = data.get(v, {}).get(key)
            if row is None:
                continue
            x, lo, hi = ratio_of(v, row)
            move = (x / base_x - 1) * 100 if x and base_x else None
            rec = {"x": x, "x_lo": lo, "x_hi": hi, "move_vs_williams_pct": move,
                   "dgtune_us": row.get("dgtune_us"), "cublas_tuned_us": row.get("cublas_tuned_us"),
                   "dgtune_tflops": row.get("tflops"), "cublas_tuned_tflops": row.get("cublas_tuned_tflops"),
                   "dgtune_sm_clock_mhz_median": row.get("dgtune_sm_clock_mhz_median"),
                   "cublas_tuned_sm_clock_mhz_median": row.get("cublas_tuned_sm_clock_mhz_median"),
                   "flagged": row.get("flagged"), "cublas_tuned_algo": row.get("cublas_tuned_algo"),
                   "note": row.get("note")}
            entry["variants"][v] = rec
            lines.append("| " + " | ".join([
                v, fmt(x, ".4f"), fmt(lo, ".4f"), fmt(hi, ".4f"), fmt(move, "+.2f"), fmt(rec["dgtune_us"], ".1f"),
                fmt(rec["cublas_tuned_us"], ".1f"), fmt(rec["dgtune_tflops"], ".0f"),
                fmt(rec["cublas_tuned_tflops"], ".0f"), fmt(rec["dgtune_sm_clock_mhz_median"], ".0f"),
                fmt(rec["cublas_tuned_sm_clock_mhz_median"], ".0f"), fmt(rec["flagged"], "d"),
                rec["cublas_tuned_algo"] or "", rec["note"] or ""]) + " |")
        lines.append("")
        summary["shapes"].append(entry)
    if problems:
        lines += ["Not in the table: " + "; ".join(problems), ""]
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
