#!/usr/bin/env python3
"""The CI gate's detection experiment: does `dgtune gate` catch real regressions of known size?

A real regression is made by replacing each shape's stored winner with a slower legal config of the
same shape (one that verified in the sweep). Three replacement DBs are written, one per target band
of stored slowdown (about 1%, 5% and 15%); the gate then runs against a baseline recorded with the
original DB. The slowdown that decides a shape's band is NOT the stored sweep ratio: it is measured
again on the GPU in the same machine start by `dgtune compare`, which times the original winner and
the three replacements in the same interleaved rounds (column x_dgtune of the extra-config table:
winner us / replacement us, paired per round).

    gate_detection.py plan BASELINE.json DB OUTDIR     # writes OUTDIR/band-{lo,mid,hi}.db, plan.json, shape files
    gate_detection.py truth OUTDIR DGTUNE DB            # per shape: compare winner + replacements in the same rounds
    gate_detection.py report OUTDIR                    # reads OUTDIR/truth-*.json and gate-*.json, prints markdown

The steps in between (run on the GPU) are in scripts/lab/device_session.sh, step `detect`.
Rules checked by `report` (the CI gate's acceptance rules): every shape with a measured slowdown >= 8% fails the gate, every
shape with <= 2% passes, and the detection rate in between is given.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

TARGETS = {"lo": 1.01, "mid": 1.05, "hi": 1.15}  # stored-time ratio replacement / winner aimed at


def stored_times(db, problem_key, config_key):
    """{config key: median_us} of the ok trials of one problem, from the one environment (sweep run)
    where `config_key` was measured with the most trials: ratios inside one run only."""
    rows = db.execute(
        """SELECT c.key, t.median_us, t.environment_id FROM trial t
           JOIN problem p ON p.id = t.problem_id JOIN config c ON c.id = t.config_id
           WHERE p.key = ? AND t.status = 'ok' AND t.median_us IS NOT NULL""",
        (problem_key,),
    ).fetchall()
    envs = {env for key, _us, env in rows if key == config_key}
    if not envs:
        return {}
    env = max(envs, key=lambda e: sum(1 for _k, _u, x in rows if x == e))
    return {key: us for key, us, x in rows if x == env}


def shape_line(problem):
    p = problem
    return (f"{p['m']} {p['n']} {p['k']} lda={p['lda']} ldb={p['ldb']} ldd={p['ldd']} "
            f"a={p['dtype_a']} b={p['dtype_b']} d={p['dtype_d']} accum={p['accum']}\n")


def plan(baseline_path, db_path, outdir):
    os.makedirs(outdir, exist_ok=True)
    base = json.load(open(baseline_path))
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    shapes = []
    for i, s in enumerate(base["shapes"]):
        if s["status"] != "ok" or not s.get("cublaslt_tuned_us"):
            continue  # not gated on the ratio: no band experiment
        w = s["config"]
        times = stored_times(db, s["problem_key"], w)
        if w not in times:
            print(f"skip {s['problem_key']}: winner {w} has no stored trial", file=sys.stderr)
            continue
        w_us = times[w]
        used, picks = {w}, {}
        for band, target in TARGETS.items():
            best = None
            for key, us in times.items():
                r = us / w_us
                if key in used or r <= 1.0:
                    continue
                if best is None or abs(r - target) < abs(best[1] - target):
                    best = (key, r)
            if best:
                picks[band] = {"config": best[0], "stored_ratio": best[1]}
                used.add(best[0])
        shape_file = os.path.join(outdir, f"shape-{i:02d}.txt")
        with open(shape_file, "w") as f:
            f.write(shape_line(s["problem"]))
        shapes.append({"index": i, "problem_key": s["problem_key"], "name": s.get("name", ""), "winner": w,
                       "winner_stored_us": w_us, "picks": picks, "shape_file": shape_file})
    db.close()
    for band in TARGETS:
        out = os.path.join(outdir, f"band-{band}.db")
        shutil.copyfile(db_path, out)
        os.chmod(out, 0o644)
        c = sqlite3.connect(out)
        c.execute("PRAGMA journal_mode = DELETE")
        for s in shapes:
            pick = s["picks"].get(band)
            if not pick:
                continue
            # Every other trial of the problem goes: the replacement is then its only (so its winning)
            # config under every environment, whatever order the loader tries them in.
            c.execute(
                """DELETE FROM trial WHERE problem_id = (SELECT id FROM problem WHERE key = ?)
                   AND config_id <> (SELECT id FROM config WHERE key = ?)""",
                (s["problem_key"], pick["config"]),
            )
        c.commit()
        c.close()
    json.dump({"baseline": baseline_path, "db": db_path, "targets": TARGETS, "shapes": shapes},
              open(os.path.join(outdir, "plan.json"), "w"), indent=1)
    print(f"{len(shapes)} shapes planned; band DBs in {outdir}")


def truth(outdir, dgtune, db_path):
    """One `dgtune compare` per shape: the loader's choice from the ORIGINAL DB (the winner) and the
    shape's replacements as extra sides of the same interleaved rounds."""
    pl = json.load(open(os.path.join(outdir, "plan.json")))
    failed = 0
    for s in pl["shapes"]:
        cmd = [dgtune, "compare", "--shapes", s["shape_file"], "--db", db_path, "--rounds", "50", "--format", "json"]
        for pick in s["picks"].values():
            cmd += ["--config", pick["config"]]
        with open(os.path.join(outdir, f"truth-{s['index']:02d}.json"), "w") as out:
            r = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            failed += 1
            print(f"truth {s['problem_key']}: exit {r.returncode}: {r.stderr.strip()[-300:]}", file=sys.stderr)
    print(f"truth: {len(pl['shapes']) - failed} of {len(pl['shapes'])} shapes measured")
    return 1 if failed else 0


def tables_of(path):
    """A `--format json` output: {"tables": [...]} (several tables) or one {"title", "rows"} table."""
    d = json.load(open(path))
    return d["tables"] if "tables" in d else [d]


def rows_of(path, title_part):
    for t in tables_of(path):
        if title_part in t["title"]:
            return t["rows"]
    return []


def report(outdir):
    pl = json.load(open(os.path.join(outdir, "plan.json")))
    # Measured slowdown per (shape, config) from the same-round compare.
    measured = {}
    for s in pl["shapes"]:
        path = os.path.join(outdir, f"truth-{s['index']:02d}.json")
        if not os.path.exists(path):
            continue
        for r in rows_of(path, "extra configs"):
            if r.get("x_dgtune"):
                lo, hi = r.get("x_dgtune_lo"), r.get("x_dgtune_hi")
                ci = f" [{1.0 / hi - 1.0:+.1%}, {1.0 / lo - 1.0:+.1%}]" if lo and hi else ""
                measured[(s["problem_key"], r["config"])] = (1.0 / r["x_dgtune"] - 1.0, ci)
    verdicts = {}  # (band, problem key) -> gate table row
    for band in TARGETS:
        path = os.path.join(outdir, f"gate-{band}.json")
        if not os.path.exists(path):
            continue
        for t in tables_of(path):
            for r in t["rows"]:
                verdicts[(band, r.get("problem_key"))] = r
    lines = ["| shape | band | replacement | stored | measured slowdown [CI] | gate change [CI] | verdict |",
             "|---|---|---|--:|--:|---|---|"]
    groups = {"<=2%": [], "2-8%": [], ">=8%": []}
    for s in pl["shapes"]:
        label = s["name"] or s["problem_key"].split("_")[0]
        for band, pick in s["picks"].items():
            m, m_ci = measured.get((s["problem_key"], pick["config"]), (None, ""))
            v = verdicts.get((band, s["problem_key"]))
            stored = f"{pick['stored_ratio'] - 1:+.1%}"
            if v is not None and v.get("config") != pick["config"]:
                lines.append(f"| {label} | {band} | `{pick['config']}` | {stored} | - | - | "
                             f"not gated: the loader ran `{v.get('config')}` |")
                continue
            if m is None or v is None:
                lines.append(f"| {label} | {band} | `{pick['config']}` | {stored} | "
                             f"{'-' if m is None else f'{m:+.1%}'} | - | missing |")
                continue
            failed = v["verdict"] in ("regression", "verify-failed")
            g = "<=2%" if m <= 0.02 else (">=8%" if m >= 0.08 else "2-8%")
            groups[g].append(failed)
            lines.append(f"| {label} | {band} | `{pick['config']}` | {stored} | {m:+.1%}{m_ci} | "
                         f"{v.get('ratio_change', '')} | {v['verdict']} |")
    print("## Detection by measured slowdown\n")
    print("| measured slowdown | shapes | failed the gate | rule |")
    print("|---|--:|--:|---|")
    rule = {"<=2%": "all pass", "2-8%": "rate reported", ">=8%": "all fail"}
    ok = True
    for g, fails in groups.items():
        n, f = len(fails), sum(fails)
        held = (g == "<=2%" and f == 0) or (g == ">=8%" and f == n) or g == "2-8%"
        ok &= held
        rate = f"{f}/{n} ({f / n:.0%})" if n else "0/0"
        print(f"| {g} | {n} | {rate} | {rule[g]}: {'held' if held else 'VIOLATED'} |")
    print(f"\nRules held: {'yes' if ok else 'NO'}\n")
    print("## Per shape and replacement\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "plan":
        plan(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "truth":
        sys.exit(truth(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        sys.exit(report(sys.argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
