#!/usr/bin/env python3
"""tools/cost_model/fit_cost_model.py end to end on a synthetic tuning DB (ctest tools_fit_cost_model): the "measured"
time of every candidate is the mirror's estimate under known constants that rank differently from the header's, so the
header's constants miss and a fit must find constants that pass with zero gap. Also: the latest of two trials of one
config counts (an older, faster one must not become the winner), a trial timed under the other protocol kind (hot-graph,
newer and far faster) is not a cold-l2 trial, neither for the fit nor for model_check.py, and is the only trial either
reads with --protocol hot-graph; a block-scaled problem of the same M x N x K is another problem, and a DB without group_kind that spells
per-tensor "per_tensor" (older schemas) reads the same; --fields moves only
the fields it names and refuses one that is not fitted; a shape without trials is listed as not measured, the held-out split keeps every shape
once, and a --start file with an unknown field is refused naming it. Exit 77 without numpy.

  fit_cost_model_test.py path/to/dgtune
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from cost_model_test_support import HEADER, TOOL_DIR, check, cost_model, finish, np  # noqa: E402,F401

DGTUNE = sys.argv[1]
FIT = os.path.join(TOOL_DIR, "fit_cost_model.py")
MODEL_CHECK = os.path.join(TOOL_DIR, "model_check.py")


SHAPES = [(4096, 4096, 4096), (128, 7168, 2048), (8192, 2112, 7168), (2048, 2048, 2048)]
header = cost_model.header_constants(HEADER)
# "True" constants of the synthetic machine: the header's with a ninth of the L2 bandwidth, so that operand loads
# dominate and the header's own constants miss on most shapes (checked below); the fit has to find that bandwidth.
truth = dict(header, l2_tbps=header["l2_tbps"] / 9)

with tempfile.TemporaryDirectory() as tmp:
    db_path = os.path.join(tmp, "synthetic.db")
    db = sqlite3.connect(db_path)
    db.executescript("""
        CREATE TABLE problem (id INTEGER PRIMARY KEY, m INTEGER, n INTEGER, k INTEGER, accum TEXT, scale_mode TEXT,
                              group_kind TEXT);
        CREATE TABLE config (id INTEGER PRIMARY KEY, key TEXT UNIQUE);
        CREATE TABLE trial (id INTEGER PRIMARY KEY, device_id INTEGER, environment_id INTEGER, problem_id INTEGER,
                            config_id INTEGER, status TEXT, verify_ok INTEGER, median_us REAL, protocol_name TEXT,
                            created_at TEXT);
    """)
    config_ids = {}
    truth_winner = {}
    hot_only = {}  # shape -> (config, us) of its one hot-graph trial
    for pid, (m, n, k) in enumerate(SHAPES, 1):
        db.execute("INSERT INTO problem VALUES (?, ?, ?, ?, 'promote', 'per-tensor', 'none')", (pid, m, n, k))
        rows = cost_model.space_rows(DGTUNE, m, n, k)
        cands = cost_model.Candidates()
        for r in rows:
            cands.add(0, r["config"], m, n, k)
        times = cost_model.estimate_us(cands.columns(), 132, truth)
        for r, us in zip(rows, times):
            cid = config_ids.setdefault(r["config"], len(config_ids) + 1)
            db.execute("INSERT OR IGNORE INTO config VALUES (?, ?)", (cid, r["config"]))
            db.execute("INSERT INTO trial (device_id, environment_id, problem_id, config_id, status, verify_ok, "
                       "median_us, protocol_name, created_at) VALUES (1, 2, ?, ?, 'ok', 1, ?, 'cold-l2-v1', "
                       "'2026-11-29T12:00:00Z')", (pid, cid, float(us)))
        # An older trial of the slowest config, from another environment, ten times faster than the true winner: the
        # latest trial must count, so it may not become the winner.
        slow = rows[int(np.argmax(times))]["config"]
        db.execute("INSERT INTO trial (device_id, environment_id, problem_id, config_id, status, verify_ok, median_us, "
                   "protocol_name, created_at) VALUES (1, 1, ?, ?, 'ok', 1, ?, 'cold-l2-v1', '2026-11-28T12:00:00Z')",
                   (pid, config_ids[slow], float(np.min(times)) / 10))
        # A newer hot-graph trial of the second slowest config, a hundred times faster: another protocol's answer.
        slow2 = rows[int(np.argsort(times)[-2])]["config"]
        db.execute("INSERT INTO trial (device_id, environment_id, problem_id, config_id, status, verify_ok, median_us, "
                   "protocol_name, created_at) VALUES (1, 2, ?, ?, 'ok', 1, ?, 'hot-graph-v1', '2026-11-30T12:00:00Z')",
                   (pid, config_ids[slow2], float(np.min(times)) / 100))
        truth_winner[f"{m}x{n}x{k}"] = float(np.min(times))
        hot_only[f"{m}x{n}x{k}"] = (slow2, float(np.min(times)) / 100)
    # The same M x N x K block-scaled, with a trial a thousand times faster: another problem, which the per-tensor
    # lines of the shapes file must not read (the scale mode is part of the problem).
    m, n, k = SHAPES[0]
    db.execute("INSERT INTO problem VALUES (100, ?, ?, ?, 'promote', 'block', 'none')", (m, n, k))
    db.execute("INSERT INTO trial (device_id, environment_id, problem_id, config_id, status, verify_ok, median_us, "
               "protocol_name, created_at) VALUES (1, 2, 100, 1, 'ok', 1, ?, 'cold-l2-v1', '2026-11-30T12:00:00Z')",
               (truth_winner[f"{m}x{n}x{k}"] / 1000,))
    db.commit()
    db.close()

    shapes_path = os.path.join(tmp, "shapes.txt")
    with open(shapes_path, "w") as f:
        f.write("# synthetic\n" + "".join(f"{m} {n} {k}\n" for m, n, k in SHAPES) + "64 576 7168  # no trials\n")
    out_path = os.path.join(tmp, "fit.json")
    run = subprocess.run([sys.executable, FIT, "--db", db_path, "--shapes", shapes_path, "--accum", "promote",
                          "--dgtune", DGTUNE, "--eval", "full,half", "--restarts", "2", "--json", out_path],
                         capture_output=True, text=True)
    check(run.returncode == 0, f"fit exit {run.returncode}: {run.stderr[-2000:]}")
    doc = json.load(open(out_path))

    check([s[0] for s in doc["not_measured"]] == ["64x576x7168 promote"], f"not measured: {doc['not_measured']}")
    for r in doc["start"]["rows"] + doc["full"]["rows"]:
        check(abs(r["winner_us"] - truth_winner[r["shape"]]) < 1e-9 * truth_winner[r["shape"]],
              f"{r['shape']}: winner {r['winner_us']} us, the latest trials' best is {truth_winner[r['shape']]} us")
    start_gaps = [r["gap"] for r in doc["start"]["rows"]]
    check(max(start_gaps) > 0.03, f"the header's constants should miss on the synthetic data: gaps {start_gaps}")
    full = doc["full"]["rows"]
    check(all(r["ok"] for r in full), f"full fit misses: {[(r['shape'], r['gap']) for r in full if not r['ok']]}")
    check(doc["full"]["objective"][0] < sum(start_gaps) + sum(1 for g in start_gaps if g > 0.03),
          f"objective {doc['full']['objective']} not below the start's")
    check(doc["full"]["constants"]["launch_us"] == header["launch_us"], "launch_us was fitted")
    for f, v in doc["full"]["constants"].items():
        check(v == float(f"{v:.4g}"), f"{f} = {v!r} has more than 4 significant digits")
    half = doc["half"]
    held = sorted(r["shape"] for r in half["rows"])
    check(held == sorted(f"{m}x{n}x{k}" for m, n, k in SHAPES), f"held-out rows cover {held}")
    for fold in half["folds"]:
        check(not set(fold["fit_groups"]) & set(fold["eval_groups"]), f"fold {fold['name']} evaluates a fitted shape")

    # model_check.py reads the same trials: cold-l2 by default (the true winners), hot-graph when asked (the
    # one hot trial per shape is then the winner).
    for proto, expect in (("cold-l2", {s: (None, us) for s, us in truth_winner.items()}), ("hot-graph", hot_only)):
        mc_json = os.path.join(tmp, f"mc-{proto}.json")
        run = subprocess.run([sys.executable, MODEL_CHECK, "--db", db_path, "--shapes", shapes_path, "--dgtune", DGTUNE,
                              "--protocol", proto, "--json", mc_json], capture_output=True, text=True)
        check(run.returncode in (0, 1), f"model_check --protocol {proto}: exit {run.returncode}, {run.stderr[-2000:]}")
        mc = json.load(open(mc_json))
        check(mc["protocol"] == proto, f"model_check JSON protocol {mc.get('protocol')}")
        for r in mc["rows"]:
            if not r["measured"]:
                continue
            cfg, us = expect[r["shape"]]
            check(abs(r["winner_us"] - us) < 1e-9 * us,
                  f"model_check {proto} {r['shape']}: winner {r['winner_us']} us, expected {us} us")
            check(cfg is None or r["winner"] == cfg, f"model_check {proto} {r['shape']}: winner {r['winner']}")
    hot_fit = os.path.join(tmp, "fit-hot.json")
    run = subprocess.run([sys.executable, FIT, "--db", db_path, "--shapes", shapes_path, "--accum", "promote",
                          "--dgtune", DGTUNE, "--protocol", "hot-graph", "--eval", "none", "--json", hot_fit],
                         capture_output=True, text=True)
    check(run.returncode == 0, f"fit --protocol hot-graph: exit {run.returncode}, {run.stderr[-2000:]}")
    for r in json.load(open(hot_fit))["start"]["rows"]:
        check(abs(r["winner_us"] - hot_only[r["shape"]][1]) < 1e-9 * hot_only[r["shape"]][1],
              f"fit hot-graph {r['shape']}: winner {r['winner_us']} us")

    # A DB older than the grouped schema (no group_kind column) that spells per-tensor "per_tensor" (dgtune 0.1):
    # the same problems and winners (the block-scaled copy of SHAPES[0] left out).
    old_db = os.path.join(tmp, "old-schema.db")
    db = sqlite3.connect(old_db)
    db.execute("ATTACH DATABASE ? AS new", (db_path,))
    db.executescript("""
        CREATE TABLE problem (id INTEGER PRIMARY KEY, m INTEGER, n INTEGER, k INTEGER, accum TEXT, scale_mode TEXT);
        INSERT INTO problem SELECT id, m, n, k, accum, 'per_tensor' FROM new.problem WHERE scale_mode = 'per-tensor';
        CREATE TABLE config AS SELECT * FROM new.config;
        CREATE TABLE trial AS SELECT * FROM new.trial WHERE problem_id IN (SELECT id FROM problem);
    """)
    db.commit()
    db.close()
    old_fit = os.path.join(tmp, "fit-old.json")
    run = subprocess.run([sys.executable, FIT, "--db", old_db, "--shapes", shapes_path, "--accum", "promote",
                          "--dgtune", DGTUNE, "--eval", "none", "--json", old_fit], capture_output=True, text=True)
    check(run.returncode == 0, f"fit on an old-schema DB: exit {run.returncode}, {run.stderr[-2000:]}")
    old_rows = json.load(open(old_fit))["start"]["rows"]
    check(sorted((r["shape"], r["winner_us"]) for r in old_rows) ==
          sorted((r["shape"], r["winner_us"]) for r in doc["start"]["rows"]), f"old-schema DB rows differ: {old_rows}")
    run = subprocess.run([sys.executable, MODEL_CHECK, "--db", old_db, "--shapes", shapes_path, "--dgtune", DGTUNE],
                         capture_output=True, text=True)
    check(run.returncode in (0, 1), f"model_check on an old-schema DB: exit {run.returncode}, {run.stderr[-2000:]}")

    # --fields: only the named constants move (the synthetic truth differs in l2_tbps alone, so fitting it suffices).
    only = os.path.join(tmp, "fit-fields.json")
    run = subprocess.run([sys.executable, FIT, "--db", db_path, "--shapes", shapes_path, "--accum", "promote",
                          "--dgtune", DGTUNE, "--eval", "full", "--restarts", "1", "--fields", "l2_tbps", "--json",
                          only], capture_output=True, text=True)
    check(run.returncode == 0, f"fit --fields: exit {run.returncode}, {run.stderr[-2000:]}")
    doc = json.load(open(only))
    moved = sorted(f for f, v in doc["full"]["constants"].items() if v != header[f])
    check(moved == ["l2_tbps"], f"fit --fields l2_tbps moved {moved}")
    check(all(r["ok"] for r in doc["full"]["rows"]), "fit --fields l2_tbps: misses")
    run = subprocess.run([sys.executable, FIT, "--db", db_path, "--shapes", shapes_path, "--dgtune", DGTUNE,
                          "--fields", "launch_us", "--eval", "none"], capture_output=True, text=True)
    check(run.returncode != 0 and "'launch_us'" in run.stderr, f"--fields launch_us: {run.returncode}, {run.stderr!r}")

    bad = os.path.join(tmp, "bad.json")
    json.dump({"sm_flops": 5e12, "tma_stor": 0.5}, open(bad, "w"))
    run = subprocess.run([sys.executable, FIT, "--db", db_path, "--shapes", shapes_path, "--dgtune", DGTUNE,
                          "--start", bad, "--eval", "none"], capture_output=True, text=True)
    check(run.returncode != 0 and "'tma_stor'" in run.stderr, f"bad --start: exit {run.returncode}, {run.stderr!r}")

# calibrate_cluster prices 1g clusters and the others on their own pairs: "measured" times from the mirror under
# cluster = 0.5 and cluster_1g = 0.8 (promote tiles that the WGMMA term bounds at these factors, so they show in the
# times; neither is the header's) give back each factor from the header's start, a data set without 1g pairs leaves
# cluster_1g where it was, and the restarts' perturbation never moves either factor.
import fit_cost_model  # noqa: E402

truth = dict(header, cluster=0.5, cluster_1g=0.8)
tiles = ["128x128x128_s6_wg2_sw128_c{}_rm8_tma_sk1_sm0_{}_p1", "128x160x128_s4_wg2_sw128_c{}_rm8_tma_sk1_sm0_{}_p1"]


def pair_shapes(mainloops):
    out = []
    for m, n, k in [(4096, 4096, 4096), (8192, 7168, 2048), (4096, 7168, 16384)]:
        keys = [t.format(c, ml) for t in tiles for ml in mainloops for c in ("1x1", "2x1", "1x2")]
        cands = cost_model.Candidates()
        for key in keys:
            cands.add(0, key, m, n, k)
        out.append(fit_cost_model.Shape(m, n, k, "promote", "bf16", keys,
                                        cost_model.estimate_us(cands.columns(), 132, truth), {}))
    return out


ev = fit_cost_model.Evaluator(pair_shapes(["1g", "2g"]))
check(len(ev.cluster_pairs("cluster_1g")) == 12 and len(ev.cluster_pairs("cluster")) == 12,
      f"cluster pairs: {len(ev.cluster_pairs('cluster_1g'))} 1g, {len(ev.cluster_pairs('cluster'))} others")
cal = fit_cost_model.calibrate_cluster(ev, header)
check(abs(cal["cluster"] - 0.5) < 0.002 and abs(cal["cluster_1g"] - 0.8) < 0.002,
      f"calibrated cluster {cal['cluster']}, cluster_1g {cal['cluster_1g']} (truth 0.5, 0.8)")
cal = fit_cost_model.calibrate_cluster(fit_cost_model.Evaluator(pair_shapes(["2g"])), header)
check(abs(cal["cluster"] - 0.5) < 0.002 and cal["cluster_1g"] == header["cluster_1g"],
      f"no 1g pairs: cluster {cal['cluster']}, cluster_1g {cal['cluster_1g']} (header {header['cluster_1g']})")

import random  # noqa: E402

for seed in range(5):
    moved = fit_cost_model.perturbed(header, random.Random(seed))
    check(moved["cluster"] == header["cluster"] and moved["cluster_1g"] == header["cluster_1g"],
          f"perturbed (seed {seed}) moved a cluster factor: {moved['cluster']}, {moved['cluster_1g']}")

finish()
