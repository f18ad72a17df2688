#!/usr/bin/env python3
"""The small-M (decode) data file from two `dgtune compare --format json` outputs (one cold-l2, one hot-graph).

    dgtune compare --shapes configs/shapes/deepseek-v3.txt --protocol cold-l2 --format json > cold.json
    dgtune compare --shapes configs/shapes/deepseek-v3.txt --protocol hot-graph --format json > hot.json
    scripts/lab/perf_small_m.py --cold cold.json --hot hot.json [--date 2026-11-29] [--out-dir results/h200]

Writes <out-dir>/perf-small-m-<date>.json (or --out FILE): one row per (shape, accum, protocol) with
M <= 128 or one of the three wave-tail shapes (4096x2112x7168, 4096x576x7168, 8192x576x7168), fields
shape, accum, median_us, tflops, cublas_tuned_us, x_cublas_tuned, sm_clock_mhz, protocol
("cold-l2" / "hot-graph"), copy_fraction (copy-limit us / dgtune us; null when compare ran with
--no-copy-limit), plus name, config, config_source, verdict, x_lo, x_hi; and a summary per protocol and
group ("m<=128", "tail"): shape count, geomean and min of x_cublas_tuned (with the shape), geomean and min
of copy_fraction, shapes not measured. Prints the rows and the summary as markdown on stdout.

Exit 0; 2 for bad input (a file that is missing, not compare JSON, or of the other protocol: the title
of compare's first table names the protocol it measured).
"""
import argparse
import datetime
import json
import math
import os
import re
import sys

TAIL_SHAPES = {(4096, 2112, 7168), (4096, 576, 7168), (8192, 576, 7168)}
SMALL_M = 128
PROTOCOLS = ("cold-l2", "hot-graph")
SHAPE_RE = re.compile(r"^(\d+)x(\d+)x(\d+)")


class BadInput(Exception):
    pass


def group_of(shape):
    """'m<=128', 'tail' or None (not reported) for a compare shape label 'MxNxK[ extras]'."""
    m = SHAPE_RE.match(shape)
    if not m:
        raise BadInput(f"shape {shape!r} is not MxNxK")
    mnk = tuple(int(x) for x in m.groups())
    if mnk[0] <= SMALL_M:
        return "m<=128"
    if mnk in TAIL_SHAPES:
        return "tail"
    return None


def load_compare(path, protocol):
    """The per-shape table of a compare JSON measured under `protocol`."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON ({e})")
    try:
        table = doc["tables"][0]
        title, rows = table["title"], table["rows"]
    except (KeyError, IndexError, TypeError):
        raise BadInput(f"{path}: not `dgtune compare --format json` output (no tables[0].title/rows)")
    # compare's title names the protocol it measured, e.g. "(cold-l2-v2, 20 rounds; ...".
    if not re.search(r"\(" + re.escape(protocol) + r"-v\d+,", title):
        raise BadInput(f"{path}: its title does not name protocol {protocol}: {title!r}")
    return rows


def row_of(r, protocol):
    def num(key):
        v = r.get(key)
        return None if v is None else float(v)

    return {
        "shape": r["shape"],
        "accum": r["accum"],
        "median_us": num("dgtune_us"),
        "tflops": num("tflops"),
        "cublas_tuned_us": num("cublas_tuned_us"),
        "x_cublas_tuned": num("x_tuned"),
        "sm_clock_mhz": num("clock_mhz"),
        "protocol": protocol,
        "copy_fraction": num("copy_fraction"),
        "name": r.get("name", ""),
        "config": r.get("config", ""),
        "config_source": r.get("config_source", ""),
        "verdict": r.get("verdict"),
        "x_lo": num("x_tuned_lo"),
        "x_hi": num("x_tuned_hi"),
    }


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarise(rows, not_measured):
    out = {}
    for protocol in PROTOCOLS:
        for group in ("m<=128", "tail"):
            rs = [r for r in rows if r["protocol"] == protocol and group_of(r["shape"]) == group]
            xs = [r for r in rs if r["x_cublas_tuned"] is not None]
            cf = [r["copy_fraction"] for r in rs if r["copy_fraction"] is not None]
            worst = min(xs, key=lambda r: r["x_cublas_tuned"]) if xs else None
            out.setdefault(protocol, {})[group] = {
                "shapes": len(rs),
                "geomean_x_cublas_tuned": geomean([r["x_cublas_tuned"] for r in xs]),
                "min_x_cublas_tuned": worst["x_cublas_tuned"] if worst else None,
                "min_shape": worst["shape"] if worst else None,
                "geomean_copy_fraction": geomean(cf),
                "min_copy_fraction": min(cf) if cf else None,
                "not_measured": not_measured.get((protocol, group), 0),
            }
    return out


def fmt(v, digits):
    return "-" if v is None else f"{v:.{digits}f}"


def markdown(rows, summary):
    lines = ["| shape | accum | protocol | us | TFLOPS | cuBLASLt-tuned us | x tuned | clock MHz | copy fraction |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['accum']} | {r['protocol']} | {fmt(r['median_us'], 2)} | "
                     f"{fmt(r['tflops'], 1)} | {fmt(r['cublas_tuned_us'], 2)} | {fmt(r['x_cublas_tuned'], 3)} | "
                     f"{fmt(r['sm_clock_mhz'], 0)} | {fmt(r['copy_fraction'], 3)} |")
    lines += ["", "| protocol | group | shapes | geomean x tuned | min x tuned (shape) | geomean copy fraction | "
              "min copy fraction | not measured |", "|---|---|---:|---:|---|---:|---:|---:|"]
    for protocol, groups in summary.items():
        for group, s in groups.items():
            lines.append(f"| {protocol} | {group} | {s['shapes']} | {fmt(s['geomean_x_cublas_tuned'], 3)} | "
                         f"{fmt(s['min_x_cublas_tuned'], 3)} ({s['min_shape'] or '-'}) | "
                         f"{fmt(s['geomean_copy_fraction'], 3)} | {fmt(s['min_copy_fraction'], 3)} | "
                         f"{s['not_measured']} |")
    return "\n".join(lines) + "\n"


def build(cold_path, hot_path):
    rows, not_measured = [], {}
    for protocol, path in (("cold-l2", cold_path), ("hot-graph", hot_path)):
        for r in load_compare(path, protocol):
            group = group_of(r["shape"])
            if group is None:
                continue
            if r.get("dgtune_us") is None:  # not measured (compare's note says why)
                not_measured[(protocol, group)] = not_measured.get((protocol, group), 0) + 1
                continue
            rows.append(row_of(r, protocol))
    return rows, summarise(rows, not_measured)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", required=True, help="dgtune compare --protocol cold-l2 --format json output")
    ap.add_argument("--hot", required=True, help="dgtune compare --protocol hot-graph --format json output")
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                    help="date in the file name (default: today, UTC)")
    ap.add_argument("--out-dir", default="results/h200")
    ap.add_argument("--out", help="output file (default: <out-dir>/perf-small-m-<date>.json)")
    ap.add_argument("--description", default="", help="free text stored in the file (machine, commit, commands)")
    a = ap.parse_args(argv)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", a.date):
        print(f"perf_small_m.py: --date {a.date!r} is not YYYY-MM-DD", file=sys.stderr)
        return 2
    try:
        rows, summary = build(a.cold, a.hot)
    except BadInput as e:
        print(f"perf_small_m.py: {e}", file=sys.stderr)
        return 2
    out = a.out or os.path.join(a.out_dir, f"perf-small-m-{a.date}.json")
    doc = {"description": a.description, "sources": {"cold-l2": a.cold, "hot-graph": a.hot}, "rows": rows,
           "summary": summary}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    sys.stdout.write(markdown(rows, summary))
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
