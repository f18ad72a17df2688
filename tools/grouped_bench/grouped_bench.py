#!/usr/bin/env python3
"""The benchmark of the grouped (MoE) GEMM reports: DeepSeek-V3's expert shapes with block scaling, contiguous and
masked layouts, each against the per-group cuBLASLt loop and the tuned dense winner of the same FLOPs.

    grouped_bench.py DGTUNE OUT [--configs KEY,KEY...] [--vs-config KEY] [--rounds N] [--isolated-protocol P] [--isolated-rounds N]
                     [--launches N] [--top-k K] [--seed S] [--budget-s S] [--device N] [--cache-dir DIR]
                     [--command-timeout-s S] [--dry-run]

Steps (every command is a plain `dgtune` call, recorded with its exit code, time and logs):
 (a) the dense problems of the same FLOPs (M = the real rows of each grouped problem, N, K, scale=block) are swept
     (`dgtune sweep --strategy model --top-k K` into OUT/dense.db) and their winners read back with
     `dgtune export --format json`: the dense side of every compare runs the tuned dense winner (--dense-config);
 (b) per grouped problem, each candidate config (--configs) runs through `dgtune run --grouped --format json`; the
     fastest verified one is the problem's config;
 (c) `dgtune compare --grouped` with that config under cold-l2-v2 (--rounds) and under isolated-v1
     (--isolated-rounds x --launches) or, with --isolated-protocol isolated-v2, DeepGEMM's benchmark procedure
     (--isolated-rounds samples), with --dense-config and, when given, --vs-config.

OUT/grouped-bench.json is rewritten after every problem (a cut run keeps what it measured): one row per problem (the
cold-l2-v2 compare's fields at the top level, the isolated compare's under "isolated"), the problems the time
budget skipped, and every command. Exit 0 when every problem that ran was measured and verified, 1 otherwise, 2 for
bad arguments. Python 3 standard library only. tools/grouped_bench/README.md has more.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

# DeepSeek-V3's routed experts (block scaling): gate_up is N 4096 (2 x 2048 intermediate), K 7168 (hidden); down is
# N 7168, K 2048.
SHAPES = (("gate_up", 4096, 7168), ("down", 7168, 2048))
# Contiguous: (groups, rows per group); a seeded skew over 8 groups is added with the run's seed.
CONTIGUOUS = ((4, 8192), (8, 4096), (32, 1024))
SKEW_GROUPS, SKEW_TOTAL = 8, 32768
# Masked: groups x mean rows per group; counts from routing (top-8 of the groups) and the same with equal counts.
MASKED_GROUPS = (8, 32)
MASKED_MEANS = (1, 16, 64, 256)
ROUTE_TOPK = 8
DEFAULT_CONFIG = "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
# The candidates of results/h200/grouped-scales-2026-12-03.md: rm8 won gate_up, rn1 down, the 64-row tile small masked
# groups.
DEFAULT_CANDIDATES = ",".join((DEFAULT_CONFIG, "128x128x128_s5_wg2_sw128_c1x1_rn1_tma_sk1_sm0_2g_p1",
                               "64x128x128_s8_wg1_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"))
DEFAULT_SEED = 20261203
# The protocol `dgtune sweep` stores its default (cold-l2) trials and winners under.
SWEEP_PROTOCOL = "cold-l2-v1"
EXPORT_SCHEMA = "dgtune-export"
COMPARE_SCHEMA = "dgtune-compare-grouped"

# The fields of a `compare --grouped` row a benchmark row keeps (docs/schemas/dgtune-compare-grouped.schema.json).
MEASURED_FIELDS = ("config", "dense_config", "us", "tflops", "loop_us", "x_loop", "x_loop_lo", "x_loop_hi", "dense_us",
                   "x_dense", "x_dense_lo", "x_dense_hi", "grouped_sm_clock_mhz_median", "loop_sm_clock_mhz_median",
                   "dense_sm_clock_mhz_median", "check", "loop_check", "loop_calls", "loop_padded", "loop_algos",
                   "protocol", "rounds")
VS_FIELDS = ("vs_config", "vs_us", "x_vs", "x_vs_lo", "x_vs_hi", "vs_sm_clock_mhz_median", "vs_check")


class Problem:
    """One grouped problem of the set: its text form for `--grouped` and the dense problem of the same FLOPs."""

    def __init__(self, shape, n, k, kind, groups, rows_text, real_rows, label):
        self.shape, self.n, self.k = shape, n, k
        self.kind, self.groups, self.rows_text = kind, groups, rows_text
        self.real_rows = real_rows  # sum of the counts: M of the dense problem of the same FLOPs
        self.label = label

    @property
    def rows_field(self):
        return "m_per_group" if self.kind == "contiguous" else "masked_m"

    @property
    def spec(self):
        return f"kind={self.kind} groups={self.groups} {self.rows_field}={self.rows_text} {self.n} {self.k} scale=block"

    @property
    def dense_key(self):
        return (self.real_rows, self.n, self.k)


def benchmark_set(seed=DEFAULT_SEED):
    """The problems in run order: contiguous (both shapes), then masked (both shapes)."""
    out = []
    for shape, n, k in SHAPES:
        for g, rows in CONTIGUOUS:
            out.append(Problem(shape, n, k, "contiguous", g, str(rows), g * rows, f"contiguous-{shape}-{g}x{rows}"))
        out.append(Problem(shape, n, k, "contiguous", SKEW_GROUPS, f"skew:{seed}:{SKEW_TOTAL}", SKEW_TOTAL,
                           f"contiguous-{shape}-{SKEW_GROUPS}xskew{SKEW_TOTAL}"))
    for shape, n, k in SHAPES:
        for g in MASKED_GROUPS:
            for mean in MASKED_MEANS:
                tokens = mean * g // ROUTE_TOPK  # each token adds TOPK rows: sum of the counts = mean x G
                out.append(Problem(shape, n, k, "masked", g, f"route:{seed}:{tokens}:{ROUTE_TOPK}", tokens * ROUTE_TOPK,
                                   f"masked-{shape}-{g}x{mean}-route"))
                out.append(Problem(shape, n, k, "masked", g, ",".join([str(mean)] * g), mean * g,
                                   f"masked-{shape}-{g}x{mean}-equal"))
    return out


def dense_shapes_text(problems):
    """The shapes file of the dense problems of the same FLOPs, one line per distinct (M, N, K)."""
    keys = sorted({p.dense_key for p in problems}, key=lambda t: (t[1], t[2], t[0]))
    return "".join(f"{m} {n} {k} scale=block\n" for m, n, k in keys)


class ExportError(Exception):
    pass


def dense_winners(doc, protocol=SWEEP_PROTOCOL, current_kernel_only=True):
    """(M, N, K) -> the export row of the dgtune winner of that dense problem as the grouped compare's dense side runs
    it: e4m3 x e4m3, block scales, promote, bf16 output, no bias or activation, packed leading dimensions, tuned under
    `protocol`. `doc` is the parsed `dgtune export --format json` document: {"schema": "dgtune-export", ...,
    "kernel_hash": the exporting binary's, "winners": [one object per stored winner]} (docs/schemas/
    dgtune-export.schema.json; there is no "rows" key). A DB holds one winner per software environment, problem and
    protocol: with current_kernel_only only winners measured with the exporting binary's kernel source count, else
    the newest environment's wins among them all."""
    if not isinstance(doc, dict) or doc.get("schema") != EXPORT_SCHEMA:
        name = doc.get("schema") if isinstance(doc, dict) else None
        raise ExportError(f"not a {EXPORT_SCHEMA} document (schema {name!r})")
    if doc.get("schema_version") != 1:
        raise ExportError(f"{EXPORT_SCHEMA} schema_version {doc.get('schema_version')!r}, this parser reads 1")
    winners = doc.get("winners")
    if not isinstance(winners, list):
        raise ExportError(f"{EXPORT_SCHEMA}: 'winners' is not a list")
    want = {"a": "e4m3", "b": "e4m3", "scale": "block", "accum": "promote", "d": "bf16", "bias": "none", "act": "none"}
    out = {}
    for w in winners:
        for f in ("m", "n", "k", "config", "protocol", "kernel_hash"):
            if f not in w:
                raise ExportError(f"{EXPORT_SCHEMA}: a winner has no '{f}' (export without --columns short?)")
        if any(w.get(f) != v for f, v in want.items()) or w["protocol"] != protocol:
            continue
        if w.get("lda") != w["k"] or w.get("ldb") != w["k"] or w.get("ldd") != w["n"]:
            continue
        if current_kernel_only and w["kernel_hash"] != doc.get("kernel_hash"):
            continue
        key = (w["m"], w["n"], w["k"])
        if key not in out or w.get("environment_id", 0) > out[key].get("environment_id", 0):
            out[key] = w
    return out


def device_flags(args):
    flags = ["--device", str(args.device)] if args.device is not None else []
    return flags + (["--cache-dir", args.cache_dir] if args.cache_dir else [])


def sweep_argv(args, shapes_path, db_path):
    return [args.dgtune, "sweep", "--shapes", shapes_path, "--strategy", "model", "--top-k", str(args.top_k),
            "--db", db_path, "--format", "json", *device_flags(args)]


def export_argv(args, db_path):
    return [args.dgtune, "export", "--db", db_path, "--format", "json"]


def run_argv(args, problem, config):
    return [args.dgtune, "run", "--grouped", problem.spec, "--config", config, "--format", "json", *device_flags(args)]


def compare_argvs(args, problem, config, dense_config):
    """(cold-l2-v2 argv, isolated argv) of the problem's compares: isolated-v1 (--isolated-rounds x --launches) or,
    with --isolated-protocol isolated-v2, DeepGEMM's procedure (--isolated-rounds samples, one launch each)."""
    base = [args.dgtune, "compare", "--grouped", problem.spec, "--config", config]
    if dense_config:
        base += ["--dense-config", dense_config]
    if args.vs_config:
        base += ["--vs-config", args.vs_config]
    tail = ["--format", "json", *device_flags(args)]
    cold = base + ["--protocol", "cold-l2", "--rounds", str(args.rounds)] + tail
    if args.isolated_protocol == "isolated-v2":
        rounds = args.isolated_rounds if args.isolated_rounds is not None else 30
        isolated = base + ["--protocol", "isolated-v2", "--rounds", str(rounds)] + tail
    else:
        rounds = args.isolated_rounds if args.isolated_rounds is not None else 10
        isolated = base + ["--protocol", "isolated", "--rounds", str(rounds), "--launches", str(args.launches)] + tail
    return cold, isolated


class Runner:
    """Runs dgtune commands one at a time: stdout and stderr to OUT/logs/NNN-name.{out,err}, each command recorded."""

    def __init__(self, out_dir, timeout_s):
        self.out_dir, self.timeout_s = out_dir, timeout_s
        self.logs = os.path.join(out_dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.commands = []

    def run(self, argv, name):
        n = len(self.commands)
        base = os.path.join("logs", f"{n:03d}-{name}")
        t0 = time.time()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout_s)
            rc, so, se = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc = 124
            so = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            se = (e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")) + \
                f"\ngrouped_bench: killed after {self.timeout_s} s\n"
        except OSError as e:
            rc, so, se = 127, "", f"grouped_bench: cannot run {argv[0]}: {e}\n"
        seconds = round(time.time() - t0, 3)
        with open(os.path.join(self.out_dir, base + ".out"), "w") as f:
            f.write(so)
        with open(os.path.join(self.out_dir, base + ".err"), "w") as f:
            f.write(se)
        self.commands.append({"index": n, "command": shlex.join(argv), "argv": list(argv), "rc": rc,
                              "seconds": seconds, "stdout": base + ".out", "stderr": base + ".err"})
        return n, rc, so, se


def tail(text, n=400):
    text = text.strip()
    return text[-n:]


def json_or_none(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def write_json(path, doc):
    """Complete or not there: a temporary file renamed into place."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def measured(row, vs):
    """The kept fields of one compare row."""
    fields = MEASURED_FIELDS + (VS_FIELDS if vs else ())
    return {f: row.get(f) for f in fields}


def verified(m, vs):
    """Every checked output of a compare ok (the loop's may be 'not checked': padded groups)."""
    return (m.get("check") == "ok" and m.get("loop_check") in ("ok", "not checked")
            and (not vs or m.get("vs_check") == "ok"))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dgtune", help="the dgtune binary")
    ap.add_argument("out", help="output directory (created; grouped-bench.json, dense.db, logs/)")
    ap.add_argument("--configs", default=DEFAULT_CANDIDATES,
                    help="comma-separated grouped config candidates; per problem the fastest verified one by "
                         f"`dgtune run --grouped` is compared (default {DEFAULT_CANDIDATES})")
    ap.add_argument("--vs-config", default="", help="a second grouped config: compare --grouped --vs-config (x_vs)")
    ap.add_argument("--rounds", type=int, default=10, help="cold-l2-v2 rounds (default 10)")
    ap.add_argument("--isolated-protocol", choices=["isolated", "isolated-v2"], default="isolated",
                    help="the absolute-TFLOPS compare: isolated (isolated-v1, back-to-back launches) or isolated-v2 "
                    "(DeepGEMM's benchmark procedure, for its published numbers)")
    ap.add_argument("--isolated-rounds", type=int, default=None,
                    help="samples per side of the isolated compare (default 10; isolated-v2: 30)")
    ap.add_argument("--launches", type=int, default=10, help="isolated-v1 launches per sample (default 10)")
    ap.add_argument("--top-k", type=int, default=24,
                    help="dense sweep: model top-k per dense problem (default 24: at M = 32768 with block scaling the "
                    "model ranks the measured winner about 11th, grouped-epilogue-2026-12-03)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED,
                    help=f"seed of the skew and route row counts (default {DEFAULT_SEED})")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="stop starting problems after S seconds from the start (0 = no limit); skipped problems are "
                         "listed in the JSON")
    ap.add_argument("--device", type=int, default=None, help="CUDA device ordinal passed to dgtune (--device)")
    ap.add_argument("--cache-dir", default="", help="cubin cache directory passed to dgtune (--cache-dir)")
    ap.add_argument("--command-timeout-s", type=float, default=600, help="kill one dgtune command after S s")
    ap.add_argument("--only", default="", help="run only the problems whose label contains this text")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the commands (the dense configs as <dense winner of MxNxK>) and exit")
    args = ap.parse_args(argv)
    args.config_list = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not args.config_list:
        ap.error("--configs: no config")
    for name in ("rounds", "isolated_rounds", "launches", "top_k"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.budget_s < 0 or args.command_timeout_s <= 0:
        ap.error("--budget-s must be >= 0 and --command-timeout-s > 0")
    return args


def dry_run(args, problems):
    out = os.path.abspath(args.out)
    print(shlex.join(sweep_argv(args, os.path.join(out, "dense-shapes.txt"), os.path.join(out, "dense.db"))))
    print(shlex.join(export_argv(args, os.path.join(out, "dense.db"))))
    for p in problems:
        for c in args.config_list:
            print(shlex.join(run_argv(args, p, c)))
        for argv in compare_argvs(args, p, "<fastest verified of --configs>",
                                  "<dense winner of {}x{}x{}>".format(*p.dense_key)):
            print(shlex.join(argv))
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    problems = [p for p in benchmark_set(args.seed) if args.only in p.label]
    if not problems:
        print(f"grouped_bench: no problem label contains '{args.only}'", file=sys.stderr)
        return 2
    if args.dry_run:
        return dry_run(args, problems)
    t0 = time.time()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    runner = Runner(out, args.command_timeout_s)
    json_path = os.path.join(out, "grouped-bench.json")
    vs = bool(args.vs_config)

    def log(msg):
        print(f"[{time.time() - t0:7.1f}s] {msg}", flush=True)

    doc = {"tool": "tools/grouped_bench/grouped_bench.py",
           "argv": sys.argv if argv is None else ["grouped_bench.py", *argv],
           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None, "dgtune": args.dgtune,
           "dgtune_version": None, "seed": args.seed, "configs": args.config_list, "vs_config": args.vs_config or None,
           "rounds": args.rounds, "isolated_rounds": args.isolated_rounds, "launches": args.launches,
           "budget_s": args.budget_s, "dense": None, "rows": [], "skipped": [], "errors": [],
           "commands": runner.commands}

    _, rc, so, se = runner.run([args.dgtune, "--version"], "version")
    doc["dgtune_version"] = so.strip() if rc == 0 else None
    if rc != 0:
        doc["errors"].append(f"dgtune --version exited {rc}: {tail(se)}")

    # (a) The dense problems of the same FLOPs: sweep, then the winners from the export document.
    shapes_path, db_path = os.path.join(out, "dense-shapes.txt"), os.path.join(out, "dense.db")
    with open(shapes_path, "w") as f:
        f.write(dense_shapes_text(problems))
    dense = {"shapes": shapes_path, "db": db_path, "top_k": args.top_k, "protocol": SWEEP_PROTOCOL, "winners": {}}
    doc["dense"] = dense
    i, rc, so, se = runner.run(sweep_argv(args, shapes_path, db_path), "dense-sweep")
    dense["sweep_command"] = i
    log(f"dense sweep: rc {rc} ({runner.commands[i]['seconds']} s)")
    if rc != 0:
        doc["errors"].append(f"dense sweep exited {rc}: {tail(se)}")
    winners = {}
    i, rc, so, se = runner.run(export_argv(args, db_path), "dense-export")
    dense["export_command"] = i
    try:
        if rc != 0:
            raise ExportError(f"exited {rc}: {tail(se)}")
        parsed = json_or_none(so)
        if parsed is None:
            raise ExportError("stdout is not JSON")
        winners = dense_winners(parsed)
    except ExportError as e:
        doc["errors"].append(f"dense export: {e}")
        log(f"dense export: {e}")
    for (m, n, k), w in sorted(winners.items()):
        dense["winners"][f"{m}x{n}x{k}"] = {f: w.get(f) for f in ("config", "median_us", "tflops", "backend",
                                                                 "cublas_tuned_us", "protocol", "kernel_hash")}
    found = ", ".join(f"{s} {w['config']}" for s, w in dense["winners"].items())
    log(f"dense winners: {found or 'none'}")
    write_json(json_path, doc)

    failed = bool(doc["errors"])
    for p in problems:
        if args.budget_s > 0 and time.time() - t0 > args.budget_s:
            doc["skipped"].append({"label": p.label, "spec": p.spec,
                                   "reason": f"time budget {args.budget_s:g} s spent"})
            log(f"{p.label}: skipped (budget)")
            continue
        row = {"label": p.label, "shape": p.shape, "kind": p.kind, "groups": p.groups, p.rows_field: p.rows_text,
               "rows": None, "real_rows": p.real_rows, "n": p.n, "k": p.k, "scale": "block", "spec": p.spec,
               "config": None, "candidates": [], "dense_winner": None, "dense_config": None}
        if vs:
            row["vs_config"] = args.vs_config
        row.update({"isolated": None, "verified": False, "commands": [], "errors": []})
        key = "{}x{}x{}".format(*p.dense_key)
        winner = dense["winners"].get(key)
        row["dense_winner"] = winner and winner["config"]
        if not winner:
            row["errors"].append(f"no tuned dense winner of {key}: the dense side runs compare's default config")
        # (b) The candidates, each verified and timed alone; the fastest verified one is compared.
        for c in args.config_list:
            i, rc, so, se = runner.run(run_argv(args, p, c), f"run-{p.label}")
            row["commands"].append(i)
            r = json_or_none(so)
            r = r["rows"][0] if isinstance(r, dict) and r.get("rows") else None
            cand = {"config": c, "rc": rc, "ok": bool(r and r.get("ok")), "us": r and r.get("us"),
                    "tflops": r and r.get("tflops"), "protocol": r and r.get("protocol")}
            if r and r.get("real_rows") != p.real_rows:
                row["errors"].append(f"run --grouped counts {r.get('real_rows')} real rows, the driver {p.real_rows}")
            if rc != 0:
                cand["error"] = tail(se)
            row["candidates"].append(cand)
            log(f"{p.label} {c}: rc {rc} ok {cand['ok']} us {cand['us']}")
        ok = [c for c in row["candidates"] if c["rc"] == 0 and c["ok"] and c["us"]]
        if not ok:
            row["errors"].append("no candidate config verified")
        else:
            row["config"] = min(ok, key=lambda c: c["us"])["config"]
            # (c) compare --grouped under cold-l2-v2, then isolated-v1 (or isolated-v2).
            cold, isolated = compare_argvs(args, p, row["config"], row["dense_winner"])
            for name, argv in (("cold-l2", cold), ("isolated", isolated)):
                i, rc, so, se = runner.run(argv, f"compare-{name}-{p.label}")
                row["commands"].append(i)
                d = json_or_none(so)
                rows = None
                if isinstance(d, dict) and d.get("schema") == COMPARE_SCHEMA and d.get("tables"):
                    rows = d["tables"][0].get("rows")
                if rc != 0 or not rows:
                    row["errors"].append(f"compare --protocol {name} exited {rc}: {tail(se)}")
                    continue
                m = measured(rows[0], vs)
                if name == "cold-l2":
                    row.update(m)
                    row["rows"] = rows[0].get("rows")
                    row["m_max"], row["expected_m"] = rows[0].get("m_max"), rows[0].get("expected_m")
                else:
                    row["isolated"] = m
                log(f"{p.label} {m['protocol']}: {m['us']} us {m['tflops']} TFLOPS x_loop {m['x_loop']} x_dense "
                    f"{m['x_dense']}" + (f" x_vs {m.get('x_vs')}" if vs else "") +
                    f" check {m['check']}" + (f" vs_check {m.get('vs_check')}" if vs else ""))
            row["verified"] = bool(row.get("protocol") and row["isolated"] and verified(row, vs)
                                   and verified(row["isolated"], vs))
            if row.get("protocol") and row["isolated"] and not row["verified"]:
                row["errors"].append("an output check failed (check, loop_check or vs_check)")
        failed = failed or bool(row["errors"]) or not row["verified"]
        doc["rows"].append(row)
        write_json(json_path, doc)
    doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    doc["seconds"] = round(time.time() - t0, 1)
    write_json(json_path, doc)
    log(f"{len(doc['rows'])} problems run, {len(doc['skipped'])} skipped by the budget; {json_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
