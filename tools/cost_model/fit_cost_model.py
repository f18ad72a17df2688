#!/usr/bin/env python3
"""Fits the constants of the analytic pre-rank (CostConstants, src/space/cost_model.hpp) to the exhaustive sweeps in a
tuning DB, and checks the fit on shapes it was not fitted on.

Data: for every shape of the shapes files and every accumulation mode asked for, the kept candidates of the default
space (`dgtune space`, enumeration order) and the measured time of each (status 'ok' and verified trials timed under a
protocol of the --protocol kind, default cold-l2; when several trials exist for one problem and config, from several
environments, devices or versions of the kind, the latest by created_at). Shapes without trials in a mode are listed
as not measured and left out. Candidates of the space without a trial still take their place in the ranking (they use
up a top-K slot but cannot be the measured best), as in model_check.py.

The estimate is cost_model.py (next to this script), a numpy mirror of the C++ estimate_us
(tests/cost_model_mirror_test.py checks that both agree), so no recompilation is needed; start values are the header's
constants.

Objective on a set of shapes: number of shapes failing + sum of gaps, where a shape passes when the best measured time
among the model's top K (default 16) is within TOL (default 3%) of the exhaustive winner, and its gap is that best over
the winner minus 1. Ties in the objective are broken by the sum over shapes of log(model rank of the first candidate
within TOL of the winner), so that of several constant sets with equal objective the one that ranks good candidates
earlier wins (and the descent can move across the plateaus of the first term).

Search: coordinate descent. Each field in turn is multiplied by a ladder of factors (integer fields stepped by +-1..8;
values kept to 4 significant digits, as the header will hold them, and inside BOUNDS); a change is kept only when it
lowers the objective, until a pass changes nothing. --restarts descents (default 8): the first from the start
constants, the others from random perturbations of them (x 1/1.5..1.5 per field, random.Random(--seed)); the best
objective wins, ties to the earlier one. Not fitted: launch_us (a constant offset, no influence on any ranking) and
resident_clusters_2/3/4/6/8 (the hardware's resident cluster counts). `cluster` and `cluster_1g` are not ranking knobs
either: before and after every pass each is set so that the model's 1x1/cluster time ratio equals the measured one on
the median of the measured (cluster config, same config 1x1) pairs of the fitted shapes (calibrate_cluster; 1g pairs
for `cluster_1g`, the others for `cluster`), so clusters cost what they were measured to cost instead of a prior.
--fit-top-k / --fit-tol change the objective's K and TOL only (for a fit with margin); the reported rows always use
--top-k and --tol.

Modes (--eval, any of): full (fit on every shape, report every shape), half (shapes grouped by M x N x K so that a
shape's promote and fast problems stay together; a random half with --seed fits, the other half is evaluated, and the
other way round), loso (leave one M x N x K out: fit on the others, evaluate it; every shape once), none (only the
start constants). Output: a summary per step on stdout, everything (constants, per-shape rows) with --json.

  python3 tools/cost_model/fit_cost_model.py --db results/tuning.db --shapes configs/shapes/deepseek-v3.txt \
      --shapes configs/shapes/square.txt --accum promote,fast --eval full,half,loso --json fit.json
"""
import argparse
import json
import math
import os
import random
import sqlite3
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # tools/: the shapes-file reader
import cost_model  # noqa: E402
import dgtune_shapes  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
FACTORS = [0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1.02, 1.05, 1.1, 1.25, 1.4, 2.0]
INT_STEPS = [-8, -4, -2, -1, 1, 2, 4, 8]
# Bounds that keep a constant's meaning: efficiency factors of a slower variant stay in (0, 1] (a cluster, a narrow
# swizzle, promotion, one consumer warpgroup on BLOCK_M 64 are never modelled as faster than the plain kernel), resident
# clusters within what 132 SMs hold.
BOUNDS = {"block_promote": (0.05, 1.0), "block_promote_2g": (0.05, 1.0), "one_wg_m64": (0.05, 1.0), "promote": (0.05, 1.0), "promote_2g": (0.05, 1.0), "cluster": (0.05, 1.0),
          "cluster_1g": (0.05, 1.0),
          "swizzle64": (0.05, 1.0), "swizzle32": (0.05, 1.0), "tma_store": (0.05, 1.0), "resident_clusters_2": (1, 66),
          "resident_clusters_3": (1, 44), "resident_clusters_4": (1, 33), "resident_clusters_6": (1, 22),
          "resident_clusters_8": (1, 16)}
# launch_us is a constant offset (no influence on any ranking); the resident cluster counts are the hardware's (one CTA
# per SM; cuOccupancyMaxActiveClusters on the H200: 66, 39, 30, 17, 15 clusters of 2, 3, 4, 6, 8 CTAs), not knobs: what
# clusters cost is the calibrated `cluster` / `cluster_1g`.
NOT_FITTED = {"launch_us", "resident_clusters_2", "resident_clusters_3", "resident_clusters_4", "resident_clusters_6",
              "resident_clusters_8"}


class Shape:
    """One problem of the data set: its candidates (space order), measured times (nan = not measured), best time."""

    def __init__(self, m, n, k, accum, d, keys, times, trial_info, block=False):
        self.m, self.n, self.k, self.accum, self.d, self.block = m, n, k, accum, d, block
        self.group = f"{m}x{n}x{k}"
        self.label = f"{m}x{n}x{k} {accum}"
        self.keys = keys
        self.times = times
        self.trial_info = trial_info
        self.winner_us = float(np.nanmin(times))  # the winner itself depends on the ranking when times tie


def problem_filter(db, scale):
    """(SQL condition, its arguments) on `problem` for a dense problem of the shapes-file scale `scale` ("tensor" /
    "per-tensor", "channel", "block", "block1d1d"), so a DB that holds one M x N x K in several modes gives one problem
    each. A DB older than the grouped schema has no group_kind column (every problem is dense); one of dgtune 0.1
    (schema 1) spells per-tensor "per_tensor"."""
    scale = "per-tensor" if scale in ("tensor", "per-tensor") else scale
    names = [scale, "per_tensor"] if scale == "per-tensor" else [scale]
    cond = f"scale_mode IN ({', '.join('?' * len(names))})"
    cols = {row[1] for row in db.execute("PRAGMA table_info(problem)")}
    if "group_kind" in cols:
        cond += " AND group_kind = 'none'"
    return cond, names


def load(db_path, shapes_files, accums, dgtune, protocol="cold-l2"):
    """The data set for the shapes files x accums, trials of the protocol kind `protocol` ("cold-l2": cold-l2-v1,
    cold-l2-v2, ...): (shapes with trials, not measured [(label, why)])."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    out, skipped = [], []
    for path in shapes_files:
        for shape in dgtune_shapes.load(path):
            m, n, k, kv = shape.m, shape.n, shape.k, shape.problem_fields()
            for accum in accums:
                kv2 = dict(kv, accum=accum)
                label = f"{m}x{n}x{k} {accum}"
                where, args_ = problem_filter(db, kv2.get("scale", "per-tensor"))
                probs = db.execute("SELECT id FROM problem WHERE m = ? AND n = ? AND k = ? AND accum = ? AND " + where,
                                   (m, n, k, accum, *args_)).fetchall()
                if len(probs) > 1:
                    raise SystemExit(f"{label}: {len(probs)} problems in the DB (other scale modes/outputs?); "
                                     "the fit handles one per shape")
                if not probs:
                    skipped.append((label, "no problem in the DB"))
                    continue
                # Latest trial per config: ORDER BY created_at, id and let later rows overwrite earlier ones.
                trials = db.execute(
                    "SELECT c.key, t.median_us, t.environment_id, t.device_id, t.created_at FROM trial t "
                    "JOIN config c ON c.id = t.config_id WHERE t.problem_id = ? AND t.status = 'ok' "
                    "AND t.verify_ok = 1 AND (t.protocol_name = ? OR t.protocol_name LIKE ?) "
                    "ORDER BY t.created_at, t.id", (probs[0][0], protocol, protocol + "-v%")).fetchall()
                if not trials:
                    skipped.append((label, "no verified trials"))
                    continue
                measured, dup = {}, 0
                envs = set()
                for key, us, env, dev, _ in trials:
                    dup += key in measured
                    measured[key] = us
                    envs.add((env, dev))
                args = []
                for key_, val in kv2.items():
                    args += ["--" + key_, val]
                rows = cost_model.space_rows(dgtune, m, n, k, args)
                keys = [r["config"] for r in rows]
                in_space = set(keys)
                times = np.array([measured.get(c, np.nan) for c in keys], dtype=np.float64)
                info = {"trials": len(trials), "duplicates_replaced": dup, "env_device": sorted(envs),
                        "space": len(keys), "measured_in_space": int(np.sum(~np.isnan(times))),
                        "measured_not_in_space": sorted(c for c in measured if c not in in_space),
                        "space_not_measured": [c for c in keys if c not in measured]}
                if info["measured_in_space"] == 0:
                    skipped.append((label, "no trial of a current space candidate"))
                    continue
                out.append(Shape(m, n, k, accum, kv2.get("d", "bf16"), keys, times, info,
                                 block=kv2.get("scale") in cost_model.BLOCK_SCALES))
    return out, skipped


class Evaluator:
    """Ranks the candidates of a list of shapes for given constants, all shapes in one vectorised estimate."""

    def __init__(self, shapes, sm_count=132):
        self.shapes = shapes
        self.sm_count = sm_count
        cands = cost_model.Candidates()
        self.bounds = []
        for i, s in enumerate(shapes):
            start = len(cands)
            for key in s.keys:
                cands.add(i, key, s.m, s.n, s.k, s.d, s.block)
            self.bounds.append((start, len(cands)))
        self.cols = cands.columns()
        self.times = np.concatenate([s.times for s in shapes])
        # Measured (cluster config, its 1x1 twin) pairs: the only data that says what a cluster costs.
        pairs = []
        for s, (a, _) in zip(shapes, self.bounds):
            index = {key: a + j for j, key in enumerate(s.keys)}
            for key, j in index.items():
                twin = key.replace("_c2x1_", "_c1x1_").replace("_c1x2_", "_c1x1_").replace("_c2x2_", "_c1x1_")
                if twin != key and twin in index and not np.isnan(self.times[j]) and not np.isnan(
                        self.times[index[twin]]):
                    pairs.append((j, index[twin]))
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)

    def cluster_pairs(self, field):
        """The (cluster config, 1x1 twin) row pairs whose cluster cost `field` prices: `cluster_1g` the 1g configs',
        `cluster` all others (2g, 2o, pp)."""
        one_group = self.cols["mainloop_1g"][self.pairs[:, 0]]
        return self.pairs[one_group] if field == "cluster_1g" else self.pairs[~one_group]

    def cluster_ratio(self, consts, field="cluster"):
        """Median over the measured cluster/1x1 pairs that `field` prices (`cluster`: 2g, 2o and pp configs;
        `cluster_1g`: 1g configs) of (model's t_1x1 / t_cluster) / (measured t_1x1 / t_cluster): above 1 the model
        favours clusters more than the measurements do, below 1 less; 1.0 without such pairs."""
        pairs = self.cluster_pairs(field)
        if len(pairs) == 0:
            return 1.0
        est = cost_model.estimate_us(self.cols, self.sm_count, consts)
        c, t = pairs[:, 0], pairs[:, 1]
        return float(np.median((est[t] / est[c]) / (self.times[t] / self.times[c])))

    def rows(self, consts, top_k, tol):
        """Per shape: winner's model rank, best measured time in the top top_k, its gap, ok."""
        est, wgmma = cost_model.estimate_terms(self.cols, self.sm_count, consts)
        out = []
        for s, (a, b) in zip(self.shapes, self.bounds):
            order = cost_model.rank_order(est[a:b], wgmma[a:b], self.cols["twin"][a:b])
            t = self.times[a:b][order]
            top = t[:top_k]
            best_top = float(np.nanmin(top)) if np.any(~np.isnan(top)) else math.inf
            # The winner: the fastest measured candidate; of several with the same time, the one ranked first.
            winner_rank = int(np.where(t == s.winner_us)[0][0]) + 1
            winner = s.keys[order[winner_rank - 1]]
            gap = best_top / s.winner_us - 1
            near = np.where(t <= s.winner_us * (1 + tol))[0]  # ranks (0-based) of candidates within tol
            clusters_top = sum(1 for j in order[:top_k] if "_c1x1_" not in s.keys[j])
            out.append({"shape": s.group, "accum": s.accum, "candidates": len(s.keys),
                        "measured": int(np.sum(~np.isnan(s.times))), "winner": winner, "winner_us": s.winner_us,
                        "winner_model_rank": winner_rank, "best_in_top_k": s.keys[order[int(np.nanargmin(top))]]
                        if best_top < math.inf else None, "best_in_top_k_us": best_top, "gap": gap,
                        "rank_within_tol": int(near[0]) + 1, "clusters_in_top_k": clusters_top,
                        "ok": best_top <= s.winner_us * (1 + tol)})  # as model_check.py decides
        return out


def objective(rows, tol):
    """(failing shapes + sum of gaps, tie-break: sum of log(rank of the first candidate within tol)); lower is better.

    The tie-break moves with every swap in the ranking, so the descent can cross the plateaus of the first term, and
    it rewards margin: a shape passes with top K exactly when that rank is <= K.
    """
    fails = sum(1 for r in rows if not r["ok"])
    capped = lambda g: min(g, 1.0)  # an empty top K (inf) counts as a 100% gap
    return (fails + sum(capped(r["gap"]) for r in rows), sum(math.log(r["rank_within_tol"]) for r in rows))


def _short(field, v):
    """`v` as the header will hold it: integer fields rounded, the others to 4 significant digits, so that the fitted
    constants can be written into cost_model.hpp exactly and rank there as they ranked here."""
    return int(round(v)) if field in cost_model.INT_FIELDS else float(f"{v:.4g}")


def _candidates(field, value):
    if field in cost_model.INT_FIELDS:
        vals = [value + s for s in INT_STEPS]
    else:
        vals = [_short(field, value * f) for f in FACTORS]
    lo, hi = BOUNDS.get(field, (0.0, math.inf))
    return [v for v in vals if lo <= v <= hi and v > 0 and v != value]


CLUSTER_FIELDS = ("cluster", "cluster_1g")  # calibrated on their own pairs, never moved by the descent


def calibrate_cluster(ev, consts):
    """`consts` with `cluster` and `cluster_1g` each set so that ev.cluster_ratio(field) is 1 (bisection within
    BOUNDS): a cluster efficiency is what the measured cluster/1x1 pairs of its mainloops say, on the median pair, not a
    prior and not a free ranking knob. A field without pairs keeps its value."""
    out = dict(consts)
    for field in CLUSTER_FIELDS:
        if len(ev.cluster_pairs(field)) == 0:
            continue
        ratio = lambda v: ev.cluster_ratio(dict(out, **{field: v}), field)
        lo, hi = BOUNDS[field]
        if ratio(hi) <= 1.0:
            out[field] = hi
        elif ratio(lo) >= 1.0:
            out[field] = lo
        else:
            for _ in range(40):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if ratio(mid) < 1.0 else (lo, mid)
            out[field] = _short(field, (lo + hi) / 2)
    return out


def _fitted(field, fields):
    """Whether the descent moves `field`: never launch_us and the resident cluster counts (NOT_FITTED) nor `cluster`
    and `cluster_1g` (calibrated); with `fields` (a set), only those."""
    return field not in NOT_FITTED and field not in CLUSTER_FIELDS and (fields is None or field in fields)


def descend(ev, start, top_k, tol, max_passes=30, log=None, fields=None):
    """Coordinate descent from `start` on the shapes of `ev`: (constants, objective, passes). `fields`: the set of
    fields it moves (None: every fitted one); `cluster` and `cluster_1g` are calibrated only when it moves them all."""
    calibrate = (lambda e, c: calibrate_cluster(e, c)) if fields is None else (lambda e, c: c)
    cur = calibrate(ev, start)
    best = objective(ev.rows(cur, top_k, tol), tol)
    passes = 0
    for passes in range(1, max_passes + 1):
        changed = False
        for field in cost_model.FIELDS:
            if not _fitted(field, fields):
                continue
            for v in _candidates(field, cur[field]):
                trial = dict(cur, **{field: v})
                obj = objective(ev.rows(trial, top_k, tol), tol)
                if obj < best and (best[0] - obj[0] > 1e-12 or best[1] - obj[1] > 1e-12):
                    best, cur, changed = obj, trial, True
                    if log:
                        log(f"  pass {passes}: {field} = {v:.6g} -> objective {obj[0]:.4f} (tie-break {obj[1]:.4f})")
        # The other constants moved: the cluster factor follows the pairs again (the objective may get worse by it).
        recal = calibrate(ev, cur)
        if any(recal[f] != cur[f] for f in CLUSTER_FIELDS):
            cur, changed = recal, True
            best = objective(ev.rows(cur, top_k, tol), tol)
            if log:
                log(f"  pass {passes}: cluster = {cur['cluster']:.6g}, cluster_1g = {cur['cluster_1g']:.6g} "
                    f"(calibrated) -> objective {best[0]:.4f}")
        if not changed:
            break
    return cur, best, passes


def perturbed(start, rng, spread=1.5, fields=None):
    """`start` with every fitted field (of `fields`, when given) multiplied by a log-uniform factor in
    [1/spread, spread], kept in BOUNDS. Never the calibrated cluster factors: a data set without 1g cluster pairs
    would keep a random cluster_1g."""
    out = dict(start)
    for f in cost_model.FIELDS:
        if not _fitted(f, fields):
            continue
        lo, hi = BOUNDS.get(f, (0.0, math.inf))
        v = start[f] * math.exp(rng.uniform(-math.log(spread), math.log(spread)))
        out[f] = _short(f, min(max(v, lo), hi))
    return out


def fit(ev, start, top_k, tol, restarts, seed, log=None, fields=None):
    """The best of `restarts` coordinate descents on the shapes of `ev`: the first from `start`, the others from
    perturbed(start) with a random.Random(seed) stream. Ties go to the earlier descent (the one from `start` first).
    Returns (constants, objective, passes of the winning descent, index of the winning descent)."""
    rng = random.Random(seed)
    best = None
    for i in range(max(1, restarts)):
        s = start if i == 0 else perturbed(start, rng, fields=fields)
        consts, obj, passes = descend(ev, s, top_k, tol, log=log if i == 0 else None, fields=fields)
        if log:
            log(f"  descent {i}: objective {obj[0]:.4f} (tie-break {obj[1]:.4f}) after {passes} passes")
        if best is None or obj < best[1]:
            best = (consts, obj, passes, i)
    return best


def summary(rows):
    fails = [f"{r['shape']} {r['accum']} ({100 * r['gap']:+.1f}%)" for r in rows if not r["ok"]]
    by_mode = {}
    for r in rows:
        ok, n = by_mode.get(r["accum"], (0, 0))
        by_mode[r["accum"]] = (ok + r["ok"], n + 1)
    return {"passing": {m: f"{ok}/{n}" for m, (ok, n) in by_mode.items()}, "failing": fails}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--shapes", action="append", required=True, help="shapes file (repeatable)")
    ap.add_argument("--accum", default="promote,fast", help="comma-separated accumulation modes")
    ap.add_argument("--protocol", default="cold-l2", choices=["cold-l2", "hot-graph"],
                    help="protocol kind of the trials to fit (default cold-l2)")
    ap.add_argument("--dgtune", default=os.path.join(ROOT, "build", "dgtune"))
    ap.add_argument("--header", default=os.path.join(ROOT, "src", "space", "cost_model.hpp"),
                    help="C++ header whose CostConstants are the starting point")
    ap.add_argument("--start", help="JSON file {field: value} overriding start constants")
    ap.add_argument("--eval", default="full,half", help="comma-separated: full, half, loso, none (check only)")
    ap.add_argument("--top-k", type=int, default=16)
    ap.add_argument("--tol", type=float, default=0.03)
    ap.add_argument("--fit-top-k", type=int, help="top K of the fit's objective (default --top-k; smaller asks the fit "
                    "for margin, the evaluation still uses --top-k)")
    ap.add_argument("--fit-tol", type=float, help="tolerance of the fit's objective (default --tol)")
    ap.add_argument("--fields", help="comma-separated CostConstants fields to fit, the others kept at the start "
                    "values (e.g. block_promote,block_promote_2g,block_load_latency for block-scaled data); default: "
                    "every fitted field, with `cluster` and `cluster_1g` calibrated")
    ap.add_argument("--seed", type=int, default=7, help="seed of the half split and of the restarts")
    ap.add_argument("--restarts", type=int, default=8, help="descents per fit: one from the start constants, the "
                    "others from random perturbations of them")
    ap.add_argument("--json", help="write constants, per-shape rows and summaries here")
    a = ap.parse_args()

    start = cost_model.header_constants(a.header)
    if a.start:
        override = json.load(open(a.start))
        for f in override:
            if f not in start:
                raise SystemExit(f"{a.start}: unknown CostConstants field '{f}' "
                                 f"(known: {', '.join(cost_model.FIELDS)})")
        start.update(override)
    try:
        shapes, skipped = load(a.db, a.shapes, a.accum.split(","), a.dgtune, a.protocol)
    except dgtune_shapes.ShapesFileError as e:
        raise SystemExit(f"fit_cost_model.py: {e}")
    print(f"{len(shapes)} shapes with trials; not measured: {len(skipped)}")
    for label, why in skipped:
        print(f"  not measured: {label}: {why}")
    ev_all = Evaluator(shapes)
    evals = [e for e in a.eval.split(",") if e]
    doc = {"db": a.db, "shapes_files": a.shapes, "accum": a.accum.split(","), "protocol": a.protocol,
           "top_k": a.top_k, "tol": a.tol, "seed": a.seed, "start_constants": start, "not_measured": skipped,
           "data": [dict(s.trial_info, shape=s.group, accum=s.accum, space_not_measured=len(
               s.trial_info["space_not_measured"]), space_not_measured_keys=s.trial_info["space_not_measured"])
                    for s in shapes]}

    fields = None
    if a.fields:
        fields = set(a.fields.split(","))
        for f in fields:
            if f not in cost_model.FIELDS or not _fitted(f, None):
                raise SystemExit(f"--fields: '{f}' is not a fitted CostConstants field")
    fit_k, fit_tol = a.fit_top_k or a.top_k, a.fit_tol if a.fit_tol is not None else a.tol
    rows0 = ev_all.rows(start, a.top_k, a.tol)
    doc["start"] = {"rows": rows0, "summary": summary(rows0), "objective": objective(rows0, a.tol)}
    print(f"start constants: {summary(rows0)}")

    if "full" in evals:
        t0 = time.time()
        consts, obj, passes, which = fit(ev_all, start, fit_k, fit_tol, a.restarts, a.seed, log=print, fields=fields)
        rows = ev_all.rows(consts, a.top_k, a.tol)
        doc["full"] = {"constants": consts, "objective": obj, "passes": passes, "descent": which, "rows": rows,
                       "summary": summary(rows)}
        print(f"full fit (descent {which}, {passes} passes, {time.time() - t0:.1f} s): {summary(rows)}")
        print("constants: " + json.dumps(consts))

    groups = sorted({s.group for s in shapes}, key=lambda g: [int(x) for x in g.split("x")])

    def held_out(fit_groups, eval_groups, name):
        fit_shapes = [s for s in shapes if s.group in fit_groups]
        eval_shapes = [s for s in shapes if s.group in eval_groups]
        consts, obj, passes, which = fit(Evaluator(fit_shapes), start, fit_k, fit_tol, a.restarts, a.seed, fields=fields)
        fit_rows = Evaluator(fit_shapes).rows(consts, a.top_k, a.tol)
        rows = Evaluator(eval_shapes).rows(consts, a.top_k, a.tol)
        for r in rows:
            r["fold"] = name
        return {"name": name, "fit_groups": sorted(fit_groups), "eval_groups": sorted(eval_groups),
                "constants": consts, "fit_summary": summary(fit_rows), "rows": rows}

    if "half" in evals:
        rng = random.Random(a.seed)
        order = list(groups)
        rng.shuffle(order)
        ga, gb = set(order[: len(order) // 2]), set(order[len(order) // 2:])
        folds = [held_out(ga, gb, "A->B"), held_out(gb, ga, "B->A")]
        rows = [r for f in folds for r in f["rows"]]
        doc["half"] = {"folds": folds, "rows": rows, "summary": summary(rows)}
        for f in folds:
            print(f"half {f['name']}: fitted on {len(f['fit_groups'])} groups ({f['fit_summary']}), "
                  f"held out {len(f['eval_groups'])}: {summary(f['rows'])}")

    if "loso" in evals:
        t0 = time.time()
        folds = [held_out(set(groups) - {g}, {g}, g) for g in groups]
        rows = [r for f in folds for r in f["rows"]]
        doc["loso"] = {"folds": [{k: v for k, v in f.items() if k != "rows"} for f in folds], "rows": rows,
                       "summary": summary(rows)}
        print(f"leave-one-shape-out ({len(folds)} fits, {time.time() - t0:.0f} s): {summary(rows)}")

    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
