#!/usr/bin/env python3
"""Checks the analytic pre-rank (--strategy model) against an exhaustive sweep stored in a tuning DB.

For every shape of a shapes file: rank the default space's candidates with `dgtune space` (its
`estimate_us` column is the model; equal estimates ranked as rank_candidates does: twins that differ only in
promote_every by the WGMMA time, which cost_model.py computes with this checkout's constants, else in the space's
order), look up the measured trials of the exhaustive sweep, and report whether the model's top K contains the
exhaustive winner or a candidate within TOL of it.

  python3 tools/cost_model/model_check.py --db results/tuning.db --shapes configs/shapes/deepseek-v3.txt \
      [--dgtune build/dgtune] [--protocol cold-l2|hot-graph] [--top-k 16] [--tol 0.03] [--json out.json]
Exit code 1 when a shape fails. Render-and-compare only: times come from the DB, estimates from dgtune. Needs numpy.
Trials: status 'ok' and verified, timed under a protocol of the --protocol kind (default cold-l2: cold-l2-v1, -v2, ...;
a DB swept under both protocols holds a cold and a hot trial of every config, and before 2026-12-01 this script let the
later one overwrite the other); when one problem and config have several (other environments, devices or versions of
the kind), the latest by created_at counts; trials of configs that are not kept candidates of the space are listed
(measured_not_in_space) and left out. A shape without trials in the DB is reported as not measured and does not fail
the check.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys

TOOL_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(TOOL_DIR))  # tools/: the shapes-file reader
sys.path.insert(0, TOOL_DIR)  # the mirror, for the WGMMA time that breaks ties of promote_every twins
import cost_model  # noqa: E402
import dgtune_shapes  # noqa: E402
import fit_cost_model  # noqa: E402  (problem_filter: one problem per scale mode, any schema)

HEADER = os.path.join(os.path.dirname(os.path.dirname(TOOL_DIR)), "src", "space", "cost_model.hpp")


def model_order(rows, m, n, k, consts, block=False):
    """`dgtune space` rows (enumeration order) in rank_candidates' order (cost_model.rank_order): ascending estimate_us,
    tied twins that differ only in promote_every by the WGMMA time, every other tie in the given order. `block`: the
    problem is block-scaled (scale=block or block1d1d)."""
    if not rows:
        return []
    cands = cost_model.Candidates()
    for r in rows:
        cands.add(0, r["config"], m, n, k, block=block)
    cols = cands.columns()
    _, wgmma = cost_model.estimate_terms(cols, 132, consts)
    return [rows[i] for i in cost_model.rank_order([r["estimate_us"] for r in rows], wgmma, cols["twin"])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--dgtune", default="build/dgtune")
    ap.add_argument("--protocol", default="cold-l2", choices=["cold-l2", "hot-graph"],
                    help="protocol kind of the trials to check against (default cold-l2)")
    ap.add_argument("--top-k", type=int, default=16)
    ap.add_argument("--tol", type=float, default=0.03)
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        shapes = dgtune_shapes.load(a.shapes)
    except dgtune_shapes.ShapesFileError as e:
        sys.exit(f"model_check.py: {e}")
    db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    consts = cost_model.header_constants(HEADER)
    rows, failed = [], 0
    for s in shapes:
        m, n, k = s.m, s.n, s.k
        args = [a.dgtune, "space", "--m", str(m), "--n", str(n), "--k", str(k), "--show", "kept", "--format", "json",
                *s.cli_args()]
        space = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["rows"]
        scale = s.fields.get("scale", "per-tensor")
        ranked = model_order(space, m, n, k, consts, block=scale in cost_model.BLOCK_SCALES)
        where, where_args = fit_cost_model.problem_filter(db, scale)
        accum = s.fields.get("accum", "promote")
        measured = dict(db.execute(  # ascending created_at: the latest trial of a config overwrites older ones
            "SELECT c.key, t.median_us FROM trial t JOIN problem p ON p.id = t.problem_id JOIN config c ON c.id = t.config_id "
            "WHERE p.m = ? AND p.n = ? AND p.k = ? AND p.accum = ? AND p.id IN (SELECT id FROM problem WHERE " + where +
            ") AND t.status = 'ok' AND t.verify_ok = 1 AND (t.protocol_name = ? OR t.protocol_name LIKE ?) "
            "ORDER BY t.created_at, t.id", (m, n, k, accum, *where_args, a.protocol, a.protocol + "-v%")))
        keys = {r["config"] for r in ranked}
        outside = sorted(c for c in measured if c not in keys)  # measured, but no longer a candidate of the space
        measured = {c: us for c, us in measured.items() if c in keys}
        if outside:
            print(f"{m:>5}x{n:>5}x{k:>5}  {accum}: {len(outside)} measured configs are not candidates of the space, "
                  f"left out (e.g. {outside[0]})")
        if not measured:
            print(f"{m:>5}x{n:>5}x{k:>5}  {accum}: no trials in the DB, not measured")
            rows.append({"shape": f"{m}x{n}x{k}", "accum": accum, "candidates": len(ranked), "measured": 0})
            continue
        # The winner: the fastest measured config; of several with the same time, the one the model ranks first.
        best = min(measured.values())
        best_key = next(r["config"] for r in ranked if measured.get(r["config"]) == best)
        top = [r["config"] for r in ranked[: a.top_k]]
        top_times = [measured[c] for c in top if c in measured]
        best_top = min(top_times) if top_times else float("inf")
        rank_of_winner = next(i for i, r in enumerate(ranked) if r["config"] == best_key) + 1
        ok = best_top <= best * (1 + a.tol)
        failed += not ok
        rows.append({"shape": f"{m}x{n}x{k}", "accum": accum, "candidates": len(ranked), "measured": len(measured),
                     "winner": best_key, "winner_us": best, "winner_model_rank": rank_of_winner,
                     "best_in_top_k_us": best_top, "gap": best_top / best - 1, "ok": ok,
                     "measured_not_in_space": outside})
        print(f"{m:>5}x{n:>5}x{k:>5}  cands {len(ranked):4}  winner rank {rank_of_winner:4}  best top-{a.top_k} "
              f"{best_top:9.2f} us vs {best:9.2f} us ({100 * (best_top / best - 1):+5.1f}%)  {'ok' if ok else 'MISS'}")
    checked = sum(1 for r in rows if r["measured"])
    print(f"{checked - failed}/{checked} measured shapes within {100 * a.tol:.0f}% using the model's top {a.top_k}")
    if a.json:
        json.dump({"top_k": a.top_k, "tol": a.tol, "protocol": a.protocol, "rows": rows}, open(a.json, "w"), indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
