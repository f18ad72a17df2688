#!/usr/bin/env python3
"""The union of several `dgtune compare --m-grid --format json` outputs (document dgtune-coverage), e.g. the shards
(--shard i/n) or the protocols (cold-l2, hot-graph) of one coverage run measured in separate calls:

    python3 scripts/coverage_union.py cold-0.json cold-1.json hot.json -o coverage.json

Rows are keyed by (shape, scale, accum, d, bias, act, protocol, model); a key in several files takes the row of the
file named last. The output is a dgtune-coverage document: one table of rows per protocol (sorted by protocol, model,
n, k, scale, accum, d, bias, act, m), then the summary per problem and protocol recomputed from the union by the
rules of src/eval/coverage_tables.cpp coverage_summary (keep the two in step): grid_m rows, count = rows with
x_dispatch, its geomean and minimum, share_slower = share of those with x_hi < 1, share_below_1 = share with
x_dispatch < 1, geomean of x_dispatch_default, geomean and minimum of x_kernel with share_kernel_slower
(x_kernel_hi < 1) and share_kernel_below_1, cublaslt_dispatched = rows whose backend is cublaslt.
Without -o the document goes to stdout. Exit 2 for an input that is not a dgtune-coverage document or an output that
is an input (nothing written); 1 when the output cannot be written.
"""
import argparse
import json
import math
import os
import sys

from plot_common import check_output, fail, load_document, write_atomically

SCHEMA, VERSION = "dgtune-coverage", 1
KEY = ("shape", "scale", "accum", "d", "bias", "act", "protocol", "model")
GROUP = ("n", "k", "scale", "accum", "d", "bias", "act", "model", "protocol")


def coverage_rows(path):
    """The grid rows of one coverage document (its summary rows are recomputed, not read)."""
    doc = load_document(path)
    if doc.get("schema") != SCHEMA or doc.get("schema_version") != VERSION:
        fail(f"{path}: not a {SCHEMA} document of version {VERSION} (schema {doc.get('schema')!r}, version "
             f"{doc.get('schema_version')!r}); write it with `dgtune compare --m-grid --format json`")
    rows = []
    for table in doc.get("tables", []):
        for row in table.get("rows", []):
            if "shape" in row:
                missing = [k for k in KEY if k not in row]
                if missing:
                    fail(f"{path}: a row lacks {', '.join(missing)}")
                rows.append(row)
    return rows


def union(paths):
    """Rows of every file, de-duplicated on KEY, the last file's row kept."""
    by_key = {}
    for path in paths:
        for row in coverage_rows(path):
            by_key[tuple(row[k] for k in KEY)] = row
    return sorted(by_key.values(), key=lambda r: (r["protocol"], r["model"], r["n"], r["k"], r["scale"], r["accum"],
                                                  r["d"], r["bias"], r["act"], r["m"]))


def geomean(values):
    return math.exp(math.fsum(math.log(v) for v in values) / len(values)) if values else None


def summary(rows):
    """One row per GROUP in order of first appearance, the fields of coverage_summary."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in GROUP), []).append(r)
    out = []
    for key, g in groups.items():
        with_x = [r for r in g if r.get("x_dispatch") is not None]
        with_k = [r for r in g if r.get("x_kernel") is not None]
        x = [r["x_dispatch"] for r in with_x]
        xk = [r["x_kernel"] for r in with_k]
        xd = [r["x_dispatch_default"] for r in g if r.get("x_dispatch_default") is not None]

        def share(part, of):
            return part / len(of) if of else None

        row = dict(zip(GROUP, key))
        row.update({
            "grid_m": len(g),
            "count": len(x),
            "geomean_x_dispatch": geomean(x),
            "min_x_dispatch": min(x) if x else None,
            "share_slower": share(sum(1 for r in with_x if r.get("x_hi") is not None and r["x_hi"] < 1), x),
            "share_below_1": share(sum(1 for v in x if v < 1), x),
            "geomean_x_dispatch_default": geomean(xd),
            "geomean_x_kernel": geomean(xk),
            "min_x_kernel": min(xk) if xk else None,
            "share_kernel_slower": share(sum(1 for r in with_k if r.get("x_kernel_hi") is not None and
                                             r["x_kernel_hi"] < 1), xk),
            "share_kernel_below_1": share(sum(1 for v in xk if v < 1), xk),
            "cublaslt_dispatched": sum(1 for r in g if r.get("backend") == "cublaslt"),
        })
        out.append(row)
    return out


def document(paths):
    rows = union(paths)
    names = ", ".join(os.path.basename(p) for p in paths)
    tables = []
    for protocol in sorted({r["protocol"] for r in rows}):
        mine = [r for r in rows if r["protocol"] == protocol]
        seeds = ", ".join(str(s) for s in sorted({r.get("grid_seed") for r in mine if r.get("grid_seed") is not None}))
        tables.append({"title": f"union of coverage runs ({names}): protocol {protocol}, grid seeds {seeds or '-'}; "
                                "x = cuBLASLt-tuned us / us",
                       "rows": mine})
    tables.append({"title": "per problem and protocol, recomputed from the union: x = cuBLASLt-tuned us / us "
                            "(dispatch: dgt::Gemm::run; kernel: the dgtune kernel of its choice); slower = the "
                            "interval lies below 1; shares over the rows with a ratio",
                   "rows": summary(rows)})
    return {"schema": SCHEMA, "schema_version": VERSION, "tables": tables}


def write(path, text):
    """text written through a temporary file renamed onto `path` (complete or not there); exit 1 on failure."""
    write_atomically(path, lambda f: f.write(text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="dgtune-coverage JSON files; a later file's row wins")
    ap.add_argument("-o", "--out", help="output file (default: stdout)")
    a = ap.parse_args()
    if a.out:
        check_output(a.out, a.inputs, "-o")
    text = json.dumps(document(a.inputs), indent=2) + "\n"
    if a.out:
        write(a.out, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
