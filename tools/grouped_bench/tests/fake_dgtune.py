#!/usr/bin/env python3
"""A stand-in for dgtune in grouped_bench_test.py (no GPU): the subcommands the driver calls, with their flags as the
real CLI spells them (src/cli/{sweep,export,run,compare}.cpp), answering with documents of the real shapes.

Behaviour comes from the JSON file named by $FAKE_DGTUNE_PLAN:
  {"log": PATH,            every call appended as one JSON line (its argv)
   "us": {CONFIG: US},     run/compare time of a grouped config (default 100)
   "bad": [CONFIG],        run --grouped reports ok=false and exits 1 for these
   "sleep_s": S,           each call sleeps S seconds first
   "no_winners": bool,     export holds no dense winner of the swept shapes
   "export_template": PATH a real `dgtune export --format json` document whose first winner is the row template}
"""
import json
import os
import sys
import time

FLAGS = {  # flag -> takes a value
    "sweep": {"--shapes": True, "--strategy": True, "--top-k": True, "--db": True, "--format": True, "--device": True,
              "--cache-dir": True},
    "export": {"--db": True, "--format": True},
    "run": {"--grouped": True, "--config": True, "--format": True, "--device": True, "--cache-dir": True},
    "compare": {"--grouped": True, "--config": True, "--dense-config": True, "--vs-config": True, "--protocol": True,
                "--rounds": True, "--launches": True, "--format": True, "--device": True, "--cache-dir": True},
}


def fail(msg, rc=2):
    print(f"fake dgtune: {msg}", file=sys.stderr)
    sys.exit(rc)


def parse(cmd, argv):
    opts, i = {}, 0
    while i < len(argv):
        f = argv[i]
        if f not in FLAGS[cmd]:
            fail(f"{cmd}: unknown flag {f}")
        if i + 1 >= len(argv):
            fail(f"{cmd}: {f} needs a value")
        opts[f] = argv[i + 1]
        i += 2
    return opts


def real_rows(spec):
    """Sum of the counts of a --grouped spec (an implementation of its own, not the driver's)."""
    fields = dict(t.split("=", 1) for t in spec.split() if "=" in t)
    groups = int(fields["groups"])
    rows = fields.get("m_per_group") or fields["masked_m"]
    parts = rows.split(":")
    if parts[0] == "skew":
        return int(parts[2])
    if parts[0] == "route":
        return int(parts[2]) * int(parts[3])
    counts = [int(x) for x in rows.split(",")]
    return sum(counts) if len(counts) > 1 else counts[0] * groups


def main():
    plan = json.load(open(os.environ["FAKE_DGTUNE_PLAN"]))
    with open(plan["log"], "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\n")
    time.sleep(plan.get("sleep_s", 0))
    if sys.argv[1:] == ["--version"]:
        print("dgtune 0.1.0 (fake)\nkernel source hash: fakehash")
        return 0
    cmd, opts = sys.argv[1], parse(sys.argv[1], sys.argv[2:])
    us_of = lambda c: float(plan.get("us", {}).get(c, 100.0))  # noqa: E731
    if cmd == "sweep":
        shapes = [[int(x) for x in line.split()[:3]] for line in open(opts["--shapes"]) if line.strip()]
        json.dump({"shapes": shapes}, open(opts["--db"], "w"))
        print(json.dumps({"schema": "dgtune-sweep", "schema_version": 1, "tables": []}))
        return 0
    if cmd == "export":
        if not os.path.exists(opts["--db"]):
            fail(f"export: no DB {opts['--db']}")
        doc = json.load(open(plan["export_template"]))
        template = doc["winners"][0]
        doc["kernel_hash"], doc["db"] = "fakehash", os.path.abspath(opts["--db"])
        winners = []
        for m, n, k in ([] if plan.get("no_winners") else json.load(open(opts["--db"]))["shapes"]):
            w = dict(template, m=m, n=n, k=k, lda=k, ldb=k, ldd=n, shape=f"{m}x{n}x{k} block", scale="block",
                     protocol="cold-l2-v1", kernel_hash="fakehash", environment_id=2, config=f"dense-winner-{m}x{n}x{k}")
            winners.append(w)
            # Rows the driver must not take: an older kernel source, another protocol, per-tensor scales.
            winners.append(dict(w, kernel_hash="oldhash", environment_id=1, config="stale-kernel"))
            winners.append(dict(w, protocol="hot-graph-v1", config="other-protocol"))
            winners.append(dict(w, scale="per-tensor", config="per-tensor"))
        doc["winners"] = winners
        print(json.dumps(doc, indent=2))
        return 0
    spec, config = opts["--grouped"], opts["--config"]
    rows = real_rows(spec)
    us = us_of(config)
    tflops = 2.0 * rows * int(spec.split()[-3]) * int(spec.split()[-2]) / (us * 1e-6) / 1e12
    if cmd == "run":
        ok = config not in plan.get("bad", [])
        print(json.dumps({"title": "fake", "rows": [{"kernel": config, "real_rows": rows, "ok": ok, "us": us,
                                                     "tflops": tflops, "protocol": "cold-l2-v1"}]}))
        return 0 if ok else 1
    isolated = opts["--protocol"] in ("isolated", "isolated-v2")
    row = {"problem": spec, "kind": spec.split()[0].split("=")[1], "rows": "1,2", "m_max": None, "expected_m": None,
           "real_rows": rows, "config": config, "us": us, "tflops": tflops, "loop_us": 2 * us, "x_loop": 2.0,
           "x_loop_lo": None if isolated else 1.9, "x_loop_hi": None if isolated else 2.1,
           "dense_config": opts.get("--dense-config", "default-dense"), "dense_us": 0.9 * us, "x_dense": 0.9,
           "x_dense_lo": None if isolated else 0.85, "x_dense_hi": None if isolated else 0.95,
           "grouped_sm_clock_mhz_median": 1980, "loop_sm_clock_mhz_median": 1970, "dense_sm_clock_mhz_median": 1960,
           "check": "ok", "loop_check": "ok", "loop_calls": 2, "loop_padded": 0, "loop_algos": "[algo=66] x2",
           "protocol": {"isolated": "isolated-v1", "isolated-v2": "isolated-v2"}.get(opts["--protocol"], "cold-l2-v2"),
           "rounds": int(opts["--rounds"])}
    if "--vs-config" in opts:
        vs = opts["--vs-config"]
        row.update({"vs_config": vs, "vs_us": us_of(vs), "x_vs": us_of(vs) / us,
                    "x_vs_lo": None if isolated else us_of(vs) / us - 0.01,
                    "x_vs_hi": None if isolated else us_of(vs) / us + 0.01, "vs_sm_clock_mhz_median": 1950,
                    "vs_check": "ok"})
    print(json.dumps({"schema": "dgtune-compare-grouped", "schema_version": 1, "tables": [{"title": "fake",
                                                                                            "rows": [row]}]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
