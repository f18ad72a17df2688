#!/usr/bin/env python3
"""dgtune_ladder_replay on a committed H200 DB (results/fits/mid-m-2026-12-04.db.gz: exhaustive sweeps at M 256, 512,
768 and 1536 of eight (N, K) families): at a tuned M it replays that M's winner (source "db"), between two tuned M a
ladder pick whose identity-rule config is the upper neighbour's winner and whose time comes from a neighbour, above the
largest tuned M the largest's winner ("nearest"). Winners are read independently with `dgtune export`.
usage: ladder_replay_test.py DGTUNE DGTUNE_LADDER_REPLAY SOURCE_DIR"""
import gzip, json, os, shutil, subprocess, sys, tempfile

dgtune, replay, src = sys.argv[1:4]
with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "midm.db")
    with gzip.open(os.path.join(src, "results/fits/mid-m-2026-12-04.db.gz")) as f, open(db, "wb") as out:
        shutil.copyfileobj(f, out)
    shapes = os.path.join(tmp, "s.txt")
    with open(shapes, "w") as f:
        f.write("1 8192 3584\n1 5120 2048\n")
    doc = json.loads(subprocess.run([replay, "--db", db, "--shapes", shapes, "--m", "256,300,2000"], check=True,
                                    capture_output=True, text=True).stdout)
    winners = {(w["m"], w["n"], w["k"]): w for w in json.loads(subprocess.run(
        [dgtune, "export", "--db", db, "--format", "json"], check=True, capture_output=True, text=True).stdout)["winners"]}
    rows = {(r["m"], r["n"], r["k"]): r for r in doc["rows"]}
    assert len(doc["rows"]) == 6, doc["rows"]
    failures = []
    def check(ok, what):
        if not ok:
            failures.append(what)
    for n, k in ((8192, 3584), (5120, 2048)):
        at = rows[(256, n, k)]
        check(at["source"] == "db" and at["config"] == winners[(256, n, k)]["config"] and at["from_m"] == 256,
              f"{n}x{k} at M 256: {at}")
        mid = rows[(300, n, k)]
        check(mid["source"] == "ladder" and mid["identity_config"] == winners[(512, n, k)]["config"] and
              mid["from_m"] in (256, 512) and mid["tuned_us"] > 0, f"{n}x{k} at M 300: {mid}")
        above = rows[(2000, n, k)]
        check(above["source"] == "nearest" and above["from_m"] == 1536 and
              above["config"] == winners[(1536, n, k)]["config"], f"{n}x{k} at M 2000: {above}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ok: 6 rows replayed, tuned, ladder and nearest choices as the export's winners say")
