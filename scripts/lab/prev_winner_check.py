#!/usr/bin/env python3
"""Checks a fresh sweep against the winners of an earlier one, measured again in the same run.

  prev_winner_check.py list OLD_SWEEP.json
      prints "M N K ACCUM CONFIG" for every winner of the earlier sweep (input of `dgtune run`)
  prev_winner_check.py report NEW_SWEEP.json RUNS.jsonl [--tolerance 0.03]
      RUNS.jsonl: one `dgtune run --format json` document per line, the earlier winners measured in the
      same machine start as NEW_SWEEP.json. Prints a markdown table and exits 1 when a shape's new
      winner is slower than (1 + tolerance) x the earlier winner's time measured now.

Both JSON files are what `dgtune sweep/run --format json` write: {"title": ..., "rows": [{column: value}]}
(or a list of such tables).
"""
import json
import sys


def tables(doc):
    """The tables of a `--format json` document: one table, a list of tables, or {"tables": [...]}."""
    if isinstance(doc, dict) and "tables" in doc:
        return doc["tables"]
    return doc if isinstance(doc, list) else [doc]


def shape_key(shape, accum):
    # sweep rows label fast-accumulation problems "MxNxK fast"; run rows use the same label.
    base = shape.split()[0]
    return f"{base} {accum}"


def cmd_list(path):
    doc = json.load(open(path))
    for t in tables(doc):
        for r in t["rows"]:
            if not r.get("winner") or r["winner"] == "no verified candidate":
                continue
            m, n, k = r["shape"].split()[0].split("x")
            accum = r.get("accum") or ("fast" if r["shape"].endswith("fast") else "promote")
            print(m, n, k, accum, r["winner"])


def cmd_report(sweep_path, runs_path, tol):
    new = {}
    for t in tables(json.load(open(sweep_path))):
        for r in t["rows"]:
            new[shape_key(r["shape"], r.get("accum", "promote"))] = r
    print("| shape | accum | new winner | new us | earlier winner | earlier winner us (same run) | new / earlier | ok |")
    print("|---|---|---|--:|---|--:|--:|---|")
    bad = 0
    for line in open(runs_path):
        line = line.strip()
        if not line.startswith("{") and not line.startswith("["):
            continue
        for t in tables(json.loads(line)):
            if "config" not in (t["rows"][0] if t.get("rows") else {}):
                continue  # the cuBLASLt table of `run --cublas`
            for r in t["rows"]:
                accum = "fast" if r["shape"].endswith("fast") else "promote"
                key = shape_key(r["shape"], accum)
                w = new.get(key)
                prev_us = r.get("median_us")
                if w is None or prev_us is None or w.get("median_us") is None:
                    print(f"| {r['shape']} | {accum} | {w and w.get('winner')} | | {r['config']} | {prev_us} | | missing |")
                    bad += 1
                    continue
                ratio = w["median_us"] / prev_us
                ok = ratio <= 1 + tol
                bad += 0 if ok else 1
                print(f"| {r['shape'].split()[0]} | {accum} | {w['winner']} | {w['median_us']:.2f} | {r['config']} | "
                      f"{prev_us:.2f} | {ratio:.3f} | {'yes' if ok else 'NO'} |")
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "list":
        cmd_list(argv[2])
        return 0
    if len(argv) >= 4 and argv[1] == "report":
        tol = float(argv[argv.index("--tolerance") + 1]) if "--tolerance" in argv else 0.03
        return cmd_report(argv[2], argv[3], tol)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
