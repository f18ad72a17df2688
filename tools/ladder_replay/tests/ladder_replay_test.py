#!/usr/bin/env python3
"""dgtune_ladder_replay on a committed H200 DB (results/fits/mid-m-2026-12-04.db.gz: exhaustive sweeps at M 256, 512,
768 and 1536 of eight (N, K) families, with cuBLASLt-tuned and heuristic medians), checked against the DB read independently
(`dgtune export`, SQLite):
- at a tuned M the M's winner (source "db"); above the largest tuned M the largest's winner ("nearest");
- between two tuned M a ladder pick whose identity config is the upper neighbour's winner and whose time is the stored
  median of the picked config at the neighbour it names;
- the prediction is that median itself where M and the neighbour need the same number of BLOCK_M row tiles (the
  ladder rule's same-tiles case, loader/choice.hpp ladder_time_ratio), and the dispatch says cuBLASLt exactly when the
  prediction exceeds 1.02 times (kLadderCublasLtMargin) cuBLASLt's median interpolated in M between the neighbours (the
  stored medians of cuBLASLt's heuristic, cublaslt-default, which is what runs off a tuned M; cuBLASLt-tuned where a
  neighbour has none); three rows of this DB lie inside the margin (the kernel runs there);
- at a tuned M cuBLASLt exactly when its stored algorithm beat the winner there, and beyond the tuned M exactly when
  the heuristic's median at the largest tuned M beat the winner there; both checked again on a copy whose cuBLASLt
  medians were made twice as fast as the winners, so both paths also run cuBLASLt.
usage: ladder_replay_test.py DGTUNE DGTUNE_LADDER_REPLAY SOURCE_DIR"""
import gzip, json, os, shutil, sqlite3, subprocess, sys, tempfile

dgtune, replay, src = sys.argv[1:4]
MS = [256, 300, 500, 700, 767, 1000, 2000]
MARGIN = 1.02  # loader/choice.hpp kLadderCublasLtMargin
with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "midm.db")
    with gzip.open(os.path.join(src, "results/fits/mid-m-2026-12-04.db.gz")) as f, open(db, "wb") as out:
        shutil.copyfileobj(f, out)
    # The committed DB predates the current schema, and the replay only reads: migrate the copy as a user would.
    subprocess.run([dgtune, "db", "migrate", "--db", db], check=True, capture_output=True, text=True)
    shapes = os.path.join(tmp, "s.txt")
    with open(shapes, "w") as f:
        f.write("1 8192 3584\n1 5120 2048\n")
    doc = json.loads(subprocess.run([replay, "--db", db, "--shapes", shapes, "--m", ",".join(map(str, MS))], check=True,
                                    capture_output=True, text=True).stdout)
    winners = {(w["m"], w["n"], w["k"]): w for w in json.loads(subprocess.run(
        [dgtune, "export", "--db", db, "--format", "json"], check=True, capture_output=True, text=True).stdout)["winners"]}
    con = sqlite3.connect(db)
    def median(m, n, k, key):
        rows = con.execute("select t.median_us from trial t join problem p on p.id = t.problem_id join config c on "
                           "c.id = t.config_id where p.m = ? and p.n = ? and p.k = ? and c.key = ? and t.status = 'ok'",
                           (m, n, k, key)).fetchall()
        return rows[0][0] if rows else None
    def lt_median(m, n, k):
        def of(provider):
            return con.execute("select b.median_us from baseline b join problem p on p.id = b.problem_id where p.m = ? "
                               "and p.n = ? and p.k = ? and b.provider = ? and b.status = 'ok'",
                               (m, n, k, provider)).fetchall()
        heuristic, tuned = of("cublaslt-default"), of("cublaslt-tuned")
        if len(tuned) != 1 or len(heuristic) > 1:
            return None
        return heuristic[0][0] if heuristic else tuned[0][0]
    rows = {(r["m"], r["n"], r["k"]): r for r in doc["rows"]}
    failures, same_tiles, checked, backends, inside_margin = [], 0, 0, set(), 0
    def check(ok, what):
        if not ok:
            failures.append(what)
    check(len(doc["rows"]) == 2 * len(MS) and doc["sm_count"] == 132, f"rows {len(doc['rows'])}, sm_count {doc['sm_count']}")
    def provider_median(m, n, k, provider):
        rows = con.execute("select b.median_us, b.algo_data is not null from baseline b join problem p on p.id = "
                           "b.problem_id where p.m = ? and p.n = ? and p.k = ? and b.provider = ? and b.status = 'ok'",
                           (m, n, k, provider)).fetchall()
        return rows[0] if len(rows) == 1 else (None, False)
    for n, k in ((8192, 3584), (5120, 2048)):
        at = rows[(256, n, k)]
        check(at["source"] == "db" and at["config"] == winners[(256, n, k)]["config"] and at["from_m"] == 256,
              f"{n}x{k} at M 256: {at}")
        # A tuned M: cuBLASLt exactly when its stored (replayable) algorithm beat the winner in the same sweep.
        tuned_us, has_algo = provider_median(256, n, k, "cublaslt-tuned")
        want = bool(has_algo and tuned_us is not None and tuned_us < at["tuned_us"])
        check((at["backend"] == "cublaslt") == want, f"{n}x{k} at M 256: backend {at['backend']}, cuBLASLt-tuned "
              f"{tuned_us} us vs winner {at['tuned_us']} us")
        above = rows[(2000, n, k)]
        check(above["source"] == "nearest" and above["from_m"] == 1536 and
              above["config"] == winners[(1536, n, k)]["config"], f"{n}x{k} at M 2000: {above}")
        # Beyond the tuned M no prediction: the heuristic runs exactly when its median at 1536 beat the winner there
        # (and cuBLASLt-tuned stored a replayable algorithm there: the rival the rule reads).
        heuristic_us, _ = provider_median(1536, n, k, "cublaslt-default")
        _, rival = provider_median(1536, n, k, "cublaslt-tuned")
        want = bool(rival and heuristic_us is not None and heuristic_us < above["tuned_us"])
        check((above["backend"] == "cublaslt") == want, f"{n}x{k} at M 2000: backend {above['backend']}, heuristic "
              f"{heuristic_us} us at 1536 vs winner {above['tuned_us']} us")
        backends.update((at["backend"], above["backend"]))
        for m in (300, 500, 700, 767, 1000):
            r = rows[(m, n, k)]
            upper = min(t for t in (256, 512, 768, 1536) if t > m)
            check(r["source"] == "ladder" and r["identity_config"] == winners[(upper, n, k)]["config"], f"{n}x{k} at M {m}: {r}")
            stored = median(r["from_m"], n, k, r["config"])
            check(stored is not None and abs(r["tuned_us"] - stored) < 1e-9, f"{n}x{k} at M {m}: tuned_us {r['tuned_us']} vs stored {stored}")
            if "predicted_kernel_us" not in r:
                failures.append(f"{n}x{k} at M {m}: no prediction")
                continue
            checked += 1
            bm = int(r["config"].split("x")[0])
            if -(-m // bm) == -(-r["from_m"] // bm):
                same_tiles += 1
                check(r["predicted_kernel_us"] == r["tuned_us"], f"{n}x{k} at M {m}: same row tiles, prediction {r}")
            lo, hi = max(t for t in (256, 512, 768, 1536) if t < m), upper
            a, b = lt_median(lo, n, k), lt_median(hi, n, k)
            want = a + (m - lo) / (hi - lo) * (b - a) if a and b else None
            check(want is not None and abs(r["interpolated_cublaslt_us"] - want) < 1e-9 * want,
                  f"{n}x{k} at M {m}: cuBLASLt interpolated {r['interpolated_cublaslt_us']}, stored medians give {want}")
            check((r["backend"] == "cublaslt") == (r["predicted_kernel_us"] > MARGIN * r["interpolated_cublaslt_us"]),
                  f"{n}x{k} at M {m}: dispatch {r}")
            inside_margin += r["interpolated_cublaslt_us"] < r["predicted_kernel_us"] <= MARGIN * r["interpolated_cublaslt_us"]
    check(same_tiles >= 3, f"only {same_tiles} rows in the same-tiles case")
    check(inside_margin == 3, f"{inside_margin} rows inside the margin, 3 expected (8192x3584 at 700, 5120x2048 at 300, 500)")
    # The cuBLASLt side of both paths: make cuBLASLt-tuned at 256 and the heuristic at 1536 of 5120 x 2048 twice as
    # fast as the winners there, and replay those two M again: both now run cuBLASLt, for the reason each path gives.
    w256, w1536 = rows[(256, 5120, 2048)]["tuned_us"], rows[(2000, 5120, 2048)]["tuned_us"]
    for m, provider, us in ((256, "cublaslt-tuned", w256 / 2), (1536, "cublaslt-default", w1536 / 2)):
        con.execute("update baseline set median_us = ? where provider = ? and problem_id in (select id from problem "
                    "where m = ? and n = 5120 and k = 2048)", (us, provider, m))
    con.commit()
    again = {r["m"]: r for r in json.loads(subprocess.run(
        [replay, "--db", db, "--shapes", shapes, "--m", "256,2000"], check=True, capture_output=True,
        text=True).stdout)["rows"] if r["n"] == 5120}
    check(again[256]["backend"] == "cublaslt" and again[256].get("why") == "stored algorithm won", f"M 256: {again[256]}")
    check(again[2000]["backend"] == "cublaslt" and again[2000].get("why") == "the heuristic won at the neighbour",
          f"M 2000: {again[2000]}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"ok: {len(doc['rows'])} rows; {checked} ladder predictions checked against the DB, {same_tiles} in the "
          f"same-tiles case; backends at the tuned and nearest M: {sorted(backends)}")
