#!/usr/bin/env python3
"""Tests of tools/grouped_bench/grouped_bench.py without a GPU. Usage: grouped_bench_test.py DGTUNE_BIN REPO_ROOT

 1. The export parser on a real `dgtune export --format json` document: fixtures/dense-export-2026-12-03.json is
    the export of the dense DB of the first grouped report (results/h200/grouped-2026-12-03-raw.tar.xz, dense.db:
    the model-top-16 sweep of four block-scaled dense problems on the H200); its winners are the ones that sweep
    printed. The same DB is exported again by today's dgtune and parsed the same way.
 2. The benchmark set: 40 problems, their specs, and the dense problems of the same FLOPs.
 3. Every command the driver builds is accepted by the real dgtune: run with no visible GPU, each must get past the
    flag, spec and config checks and stop at "no CUDA device" (exit 1), never exit 2 (bad input).
 4. The driver end to end against fake_dgtune.py: the fastest verified candidate is compared, the dense side gets the
    export's winner, x_vs and the vs fields with --vs-config and not without, the commands recorded, the time budget.
 5. summarize.py on two fake runs: every field the mean of the runs, the bars (masked x_loop geomean per count
    pattern, contiguous x_dense, DeepGEMM's TFLOPS), and a run that lacks problems of the other is an error.
"""
import json
import lzma
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import grouped_bench as gb  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "dense-export-2026-12-03.json")
RAW = os.path.join("results", "h200", "grouped-2026-12-03-raw.tar.xz")
RAW_DB = "grouped-2026-12-03/dense.db"
# What the sweep of that call printed (dense-sweep.log of the same archive).
SWEPT = {(32768, 4096, 7168): "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1",
         (1024, 4096, 7168): "128x128x128_s5_wg2_sw128_c1x1_rn16_tma_sk1_sm0_2g_p1",
         (32768, 7168, 2048): "128x128x128_s5_wg2_sw128_c1x2_rm8_tma_sk1_sm0_2g_p1",
         (1024, 7168, 2048): "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"}
VS = "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1"

failures = []


def check(cond, what):
    if cond:
        print(f"ok:   {what}")
    else:
        print(f"FAIL: {what}")
        failures.append(what)


def configs_of(winners):
    return {key: w["config"] for key, w in winners.items()}


def test_export_fixture():
    doc = json.load(open(FIXTURE))
    check("rows" not in doc and isinstance(doc.get("winners"), list),
          "the export document has 'winners', not 'rows' (what the first driver expected)")
    got = configs_of(gb.dense_winners(doc, current_kernel_only=False))
    check(got == SWEPT, f"fixture: the four swept winners ({got})")
    # The same kernel source as the DB's winners: current_kernel_only keeps them all.
    same = all(w["kernel_hash"] == doc["kernel_hash"] for w in doc["winners"])
    check(configs_of(gb.dense_winners(doc)) == (SWEPT if same else {}),
          "current_kernel_only keeps exactly the winners of the exporting binary's kernel source")
    # Winners the dense side cannot use are left out: another protocol, scale mode, output, layout or kernel source.
    w0 = doc["winners"][0]
    for field, value in (("protocol", "hot-graph-v1"), ("scale", "per-tensor"), ("d", "f32"), ("accum", "fast"),
                         ("lda", w0["k"] + 64), ("bias", "bf16")):
        changed = dict(doc, winners=[dict(w, **{field: value}) for w in doc["winners"]])
        check(gb.dense_winners(changed, current_kernel_only=False) == {}, f"a winner with {field}={value} is left out")
    stale = dict(doc, kernel_hash="0000000000000000")
    check(gb.dense_winners(stale) == {}, "a winner of another kernel source is left out by default")
    # Two environments of one problem: the newest environment wins.
    newer = dict(w0, config="newer-env", environment_id=w0["environment_id"] + 5)
    two = dict(doc, winners=[w0, newer])
    check(gb.dense_winners(two, current_kernel_only=False)[(w0["m"], w0["n"], w0["k"])]["config"] == "newer-env",
          "of two environments' winners the newer is taken")
    for bad, why in (({"schema": "dgtune-compare", "schema_version": 1, "winners": []}, "another document"),
                     ({"schema": "dgtune-export", "schema_version": 2, "winners": []}, "another schema version"),
                     ({"schema": "dgtune-export", "schema_version": 1, "rows": []}, "no winners list"),
                     (dict(doc, winners=[{k: v for k, v in w0.items() if k != "kernel_hash"}]), "--columns short")):
        try:
            gb.dense_winners(bad)
            check(False, f"{why}: refused")
        except gb.ExportError as e:
            check(True, f"{why}: refused ({e})")


def test_export_live(dgtune, root):
    """Today's dgtune exports the same DB: the parser reads the same winners from it."""
    with tempfile.TemporaryDirectory() as tmp:
        with lzma.open(os.path.join(root, RAW)) as xz, tarfile.open(fileobj=xz) as tar:
            member = tar.getmember(RAW_DB)
            src = tar.extractfile(member)
            db = os.path.join(tmp, "dense.db")
            with open(db, "wb") as f:
                shutil.copyfileobj(src, f)
        # The archive's DB predates schema 11 (grouped problems): migrate the copy as a user would.
        subprocess.run([dgtune, "db", "migrate", "--db", db], check=True, stdout=subprocess.DEVNULL, timeout=60)
        p = subprocess.run([dgtune, "export", "--db", db, "--format", "json"], capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0, f"dgtune export of the archive's dense.db exits 0 ({p.stderr.strip()[-300:]})")
        if p.returncode != 0:
            return
        doc = json.loads(p.stdout)
        check(configs_of(gb.dense_winners(doc, current_kernel_only=False)) == SWEPT,
              "today's export of the archive's dense.db: the four swept winners")
        fixture = json.load(open(FIXTURE))
        check(doc["winners"] == fixture["winners"] and doc["device"] == fixture["device"],
              "today's export has the fixture's winners and device")


def test_set():
    ps = gb.benchmark_set()
    check(len(ps) == 40 and len({p.label for p in ps}) == 40, "40 problems, distinct labels")
    check(sum(p.kind == "contiguous" for p in ps) == 8 and sum(p.kind == "masked" for p in ps) == 32,
          "8 contiguous, 32 masked")
    specs = {p.spec for p in ps}
    for s in ("kind=contiguous groups=4 m_per_group=8192 4096 7168 scale=block",
              "kind=contiguous groups=32 m_per_group=1024 7168 2048 scale=block",
              f"kind=contiguous groups=8 m_per_group=skew:{gb.DEFAULT_SEED}:32768 4096 7168 scale=block",
              f"kind=masked groups=32 masked_m=route:{gb.DEFAULT_SEED}:1024:8 7168 2048 scale=block",
              f"kind=masked groups=8 masked_m=route:{gb.DEFAULT_SEED}:1:8 4096 7168 scale=block",
              "kind=masked groups=8 masked_m=" + ",".join(["64"] * 8) + " 4096 7168 scale=block"):
        check(s in specs, f"the set holds '{s}'")
    check({p.real_rows for p in ps if p.kind == "contiguous"} == {32768}, "every contiguous problem has 32768 rows")
    route = [p for p in ps if "route" in p.rows_text]
    check(all(p.real_rows == int(p.label.split("-")[2].split("x")[1]) * p.groups for p in route),
          "routed counts sum to mean x G (TOKENS = mean x G / 8, top-8)")
    dense = gb.dense_shapes_text(ps).splitlines()
    check(len(dense) == 14 and "32768 4096 7168 scale=block" in dense and "8 7168 2048 scale=block" in dense,
          f"14 dense problems of the same FLOPs ({dense[:3]}...)")
    check(len(gb.benchmark_set(7)) == 40 and "skew:7:32768" in gb.benchmark_set(7)[3].spec, "--seed sets the seed")


def plan_argvs(dgtune, tmp):
    args = gb.parse_args([dgtune, tmp, "--vs-config", VS, "--configs",
                          gb.DEFAULT_CONFIG + ",128x128x128_s6_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1",
                          "--cache-dir", os.path.join(tmp, "cache"), "--device", "0"])
    shapes = os.path.join(tmp, "dense-shapes.txt")
    ps = gb.benchmark_set()
    with open(shapes, "w") as f:
        f.write(gb.dense_shapes_text(ps))
    out = [gb.sweep_argv(args, shapes, os.path.join(tmp, "dense.db"))]
    v2 = gb.parse_args([dgtune, tmp, "--isolated-protocol", "isolated-v2"])
    for p in ps:
        out += [gb.run_argv(args, p, c) for c in args.config_list]
        out += list(gb.compare_argvs(args, p, gb.DEFAULT_CONFIG, SWEPT[(32768, 4096, 7168)]))
    # An isolated-v2 compare, early in the list: the last command must keep its --vs-config (checked below).
    out.insert(1, gb.compare_argvs(v2, ps[0], gb.DEFAULT_CONFIG, None)[1])
    return out


def test_commands_accepted(dgtune):
    """No GPU visible: every command must pass the CLI's checks and stop at the device (exit 1), not exit 2."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    with tempfile.TemporaryDirectory() as tmp:
        env["HOME"] = tmp
        argvs = plan_argvs(dgtune, tmp)
        bad = []
        for argv in argvs:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
            if p.returncode != 1 or "no CUDA device" not in p.stderr + p.stdout:
                bad.append(f"{shlex.join(argv[1:4])}...: rc {p.returncode}: {(p.stderr + p.stdout).strip()[-300:]}")
        check(not bad, f"{len(argvs)} commands (sweep, run, compare) pass dgtune's input checks" +
              "".join("\n      " + b for b in bad[:5]))
        # The check has teeth: a flag dgtune does not have, or a config the grouped rules refuse, is exit 2.
        p = subprocess.run(argvs[-1] + ["--no-such-flag"], capture_output=True, text=True, timeout=60, env=env)
        check(p.returncode == 2, "an unknown flag is exit 2")
        cluster_m = argvs[-1][:argvs[-1].index("--vs-config") + 1] + [VS.replace("c1x1", "c2x1")] + \
            argvs[-1][argvs[-1].index("--vs-config") + 2:]  # G2: grouped kernels cluster along N only
        p = subprocess.run(cluster_m, capture_output=True, text=True, timeout=60, env=env)
        check(p.returncode == 2 and "--vs-config" in p.stderr, "a --vs-config the grouped rules refuse is exit 2")


def run_driver(tmp, plan, extra):
    """Runs the driver against fake_dgtune.py; returns (rc, grouped-bench.json or None, the fake's call log)."""
    log = os.path.join(tmp, "calls.jsonl")
    if os.path.exists(log):
        os.remove(log)
    plan = dict(plan, log=log, export_template=FIXTURE)
    plan_path = os.path.join(tmp, "plan.json")
    json.dump(plan, open(plan_path, "w"))
    fake = os.path.join(tmp, "dgtune")
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\nexec {sys.executable} {os.path.join(HERE, 'fake_dgtune.py')} \"$@\"\n")
    os.chmod(fake, 0o755)
    out = os.path.join(tmp, "out")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, FAKE_DGTUNE_PLAN=plan_path)
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "grouped_bench.py"), fake, out, *extra],
                       capture_output=True, text=True, timeout=600, env=env)
    if p.returncode not in (0, 1):
        print(p.stdout[-2000:], p.stderr[-2000:])
    path = os.path.join(out, "grouped-bench.json")
    doc = json.load(open(path)) if os.path.exists(path) else None
    calls = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    return p.returncode, doc, calls


def test_driver_fake():
    good, fast, bad = gb.DEFAULT_CONFIG, "128x128x128_s6_wg2_sw128_c1x2_rm8_direct_sk1_sm0_2g_p1", \
        "128x160x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1"
    plan = {"us": {good: 100, fast: 80, bad: 50, VS: 120}, "bad": [bad]}
    with tempfile.TemporaryDirectory() as tmp:
        rc, doc, calls = run_driver(tmp, plan, ["--configs", f"{good},{fast},{bad}", "--vs-config", VS,
                                                "--rounds", "7", "--isolated-rounds", "5", "--launches", "3"])
        check(rc == 0 and doc is not None, f"driver with --vs-config: exit 0 ({rc})")
        if doc is None:
            return
        rows = doc["rows"]
        check(len(rows) == 40 and not doc["skipped"] and not doc["errors"], "40 rows, nothing skipped, no error")
        need = ["kind", "groups", "n", "k", "us", "tflops", "x_loop", "x_dense", "x_vs", "protocol", "config",
                "dense_config", "check", "loop_check", "vs_check", "grouped_sm_clock_mhz_median",
                "loop_sm_clock_mhz_median", "dense_sm_clock_mhz_median", "vs_sm_clock_mhz_median", "isolated",
                "commands"]
        check(all(all(f in r for f in need) for r in rows), "every row has the fields of the report")
        check(all(("m_per_group" in r) == (r["kind"] == "contiguous") and ("masked_m" in r) == (r["kind"] == "masked")
                  for r in rows), "m_per_group for contiguous rows, masked_m for masked rows")
        check(all(r["config"] == fast for r in rows), "the fastest verified candidate is compared (not the failing one)")
        check(all(abs(r["x_vs"] - 120 / 80) < 1e-9 and abs(r["isolated"]["x_vs"] - 1.5) < 1e-9 for r in rows),
              "x_vs = grouped-vs us / grouped us in both protocols")
        check(all(r["protocol"] == "cold-l2-v2" and r["isolated"]["protocol"] == "isolated-v1" and r["verified"]
                  for r in rows), "cold-l2-v2 at the top, isolated-v1 under 'isolated', verified")
        check(all(r["dense_config"] == "dense-winner-{}x{}x{}".format(r["real_rows"], r["n"], r["k"])
                  for r in rows), "the dense side ran the export's current winner of M = the real rows")
        compares = [c for c in calls if c[0] == "compare"]
        check(len(compares) == 80 and all(c[c.index("--vs-config") + 1] == VS for c in compares),
              "80 compares, each with --vs-config")
        cold = [c for c in compares if c[c.index("--protocol") + 1] == "cold-l2"]
        iso = [c for c in compares if c[c.index("--protocol") + 1] == "isolated"]
        check(len(cold) == 40 and all(c[c.index("--rounds") + 1] == "7" for c in cold),
              "cold-l2 compares with --rounds 7")
        check(len(iso) == 40 and all(c[c.index("--rounds") + 1] == "5" and c[c.index("--launches") + 1] == "3"
                                     for c in iso), "isolated compares with --rounds 5 --launches 3")
        sweep = [c for c in calls if c[0] == "sweep"]
        check(len(sweep) == 1 and sweep[0][sweep[0].index("--strategy") + 1] == "model", "one model sweep")
        check(len(doc["commands"]) == len(calls) and
              all(json.loads(json.dumps(c["argv"][1:])) == calls[i] for i, c in enumerate(doc["commands"])),
              "every command run is recorded, in order, with its argv")
        check(all(doc["commands"][i]["command"].startswith(doc["dgtune"]) for r in rows for i in r["commands"]),
              "each row names its commands")

        rc, doc, calls = run_driver(tmp, plan, ["--only", "contiguous-down"])
        check(rc == 0 and len(doc["rows"]) == 4, "--only contiguous-down: 4 rows")
        iso = [c for c in calls if c[0] == "compare" and c[c.index("--protocol") + 1] == "isolated"]
        check(len(iso) == 4 and all(c[c.index("--rounds") + 1] == "10" and c[c.index("--launches") + 1] == "10"
                                    for c in iso), "isolated-v1 by default: --rounds 10 --launches 10")

        rc, doc, calls = run_driver(tmp, plan, ["--only", "contiguous-down", "--isolated-protocol", "isolated-v2"])
        iso = [c for c in calls if c[0] == "compare" and c[c.index("--protocol") + 1] != "cold-l2"]
        check(rc == 0 and len(iso) == 4 and all(c[c.index("--protocol") + 1] == "isolated-v2" and
                                                c[c.index("--rounds") + 1] == "30" and "--launches" not in c
                                                for c in iso), "--isolated-protocol isolated-v2: 30 samples, no --launches")
        check(all(r["isolated"]["protocol"] == "isolated-v2" and r["verified"] for r in doc["rows"]),
              "isolated-v2 rows under 'isolated', verified")
        check(all("--vs-config" not in c for c in calls) and
              all(not any(f.startswith("vs_") or f.startswith("x_vs") for f in r) for r in doc["rows"])
              and doc["vs_config"] is None, "without --vs-config: no --vs-config passed and no vs field")

        rc, doc, calls = run_driver(tmp, dict(plan, no_winners=True), ["--only", "masked-down-8x1"])
        check(rc == 1 and all("no tuned dense winner" in " ".join(r["errors"]) for r in doc["rows"]) and
              all("--dense-config" not in c for c in calls if c[0] == "compare"),
              "no dense winner: said in every row, no --dense-config passed, exit 1")

        rc, doc, calls = run_driver(tmp, dict(plan, sleep_s=0.2), ["--only", "masked-gate_up", "--budget-s", "2"])
        ran, skipped = len(doc["rows"]), len(doc["skipped"])
        check(ran + skipped == 16 and skipped > 0 and ran > 0 and
              all("budget" in s["reason"] for s in doc["skipped"]),
              f"--budget-s 2 with 0.2 s calls: {ran} problems ran, {skipped} skipped and listed")
        check(doc["finished"] is not None, "the JSON is finished after a budget stop")

        rc, doc, calls = run_driver(tmp, plan, ["--only", "contiguous-gate_up-4x", "--configs", bad])
        check(rc == 1 and doc["rows"][0]["errors"] and not any(c[0] == "compare" for c in calls),
              "no verified candidate: no compare, an error, exit 1")


def test_summarize():
    import summarize
    good, vs = gb.DEFAULT_CONFIG, VS
    with tempfile.TemporaryDirectory() as tmp:
        docs = []
        for i, us in enumerate((100, 80)):  # two "machine starts": the grouped kernel at 100 us, then at 80 us
            run_dir = os.path.join(tmp, f"run{i}")
            os.makedirs(run_dir)
            rc, doc, _ = run_driver(run_dir, {"us": {good: us, vs: 120}}, ["--configs", good, "--vs-config", vs])
            check(rc == 0 and doc is not None, f"fake run {i}: exit 0 ({rc})")
            if doc is None:
                return
            docs.append(os.path.join(run_dir, "out", "grouped-bench.json"))
        merged = os.path.join(tmp, "merged.json")
        proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "summarize.py"), merged] + docs,
                              capture_output=True, text=True)
        check(proc.returncode == 0, f"summarize of two complete runs: exit 0 ({proc.returncode}: {proc.stderr[-300:]})")
        m = json.load(open(merged))
        rows = m["rows"]
        check(len(rows) == 40 and not m["missing"], "40 merged rows, none missing")
        r0 = [json.load(open(d))["rows"] for d in docs]
        ok_mean = all(abs(r["x_vs"] - (a["x_vs"] + b["x_vs"]) / 2) < 1e-9 and abs(r["us"] - (a["us"] + b["us"]) / 2) < 1e-9
                      for r, a, b in zip(rows, r0[0], r0[1]))
        check(ok_mean and abs(rows[0]["x_vs"] - (1.2 + 1.5) / 2) < 1e-9, "x_vs and us are the mean of the two runs")
        check(all(("m_per_group" in r) == (r["kind"] == "contiguous") for r in rows), "m_per_group / masked_m per kind")
        b = m["bars"]
        check(b["masked_x_loop_geomean_route"]["count"] == 16 and b["masked_x_loop_geomean_equal"]["count"] == 16,
              "masked x_loop geomean over 16 problems per count pattern")
        check(len(b["contiguous_tflops_vs_deepgemm"]) == 4 and
              {t["deepgemm_h800"] for t in b["contiguous_tflops_vs_deepgemm"]} == {1346, 1214},
              "DeepGEMM's published numbers for the four contiguous problems it published")
        check("| masked x_loop geomean, route counts (16 problems) | >= 1.5 |" in proc.stdout, "the bars table")
        partial = os.path.join(tmp, "partial")
        os.makedirs(partial)
        run_driver(partial, {"us": {good: 90, vs: 120}}, ["--configs", good, "--only", "contiguous"])
        proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "summarize.py"), merged, docs[0],
                               os.path.join(partial, "out", "grouped-bench.json")], capture_output=True, text=True)
        m = json.load(open(merged))
        check(proc.returncode == 1 and len(m["rows"]) == 8 and len(m["missing"]) == 32,
              "a run that lacks problems: exit 1, only the common rows, the others listed as missing")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    dgtune, root = sys.argv[1], sys.argv[2]
    test_export_fixture()
    test_export_live(dgtune, root)
    test_set()
    test_commands_accepted(dgtune)
    test_driver_fake()
    test_summarize()
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
