#!/usr/bin/env python3
"""Every `--format json` output of dgtune validates against its JSON Schema (docs/schemas/<schema>.schema.json), and
every document dgtune names (src/report/documents.hpp) has a schema. No GPU: the GPU-free commands run on synthetic
tuning DBs here; the documents of sweep, run, compare, gate and trace come from the unit test that builds them from
synthetic measurements through the CLI's own tables (tests/unit/test_json_documents.cpp, DGT_JSON_SAMPLES_DIR), and
the committed plot inputs (tests/cli/fixtures/plots/) are validated too. jsonschema is required: a missing validator
fails the test.

Usage: json_schemas_test.py DGTUNE_BIN UNIT_TESTS_BIN REPO_ROOT
"""
import gzip
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_packages import require  # noqa: E402

jsonschema = require("jsonschema")


# Committed plot inputs written by a dgtune before the envelope (the plot scripts still read them); every other
# fixture there must validate.
LEGACY_PLOT_INPUTS = {"compare-deepseek-cold.json", "compare-deepseek-hot.json"}


def run(argv, env=None, want_rc=0):
    p = subprocess.run(argv, capture_output=True, timeout=300, env=env)
    if p.returncode != want_rc:
        raise SystemExit(f"FAIL: {' '.join(argv)} exited {p.returncode}: {p.stderr.decode(errors='replace')[-600:]}")
    return p.stdout.decode()


def make_db(root, path):
    """A current-schema tuning DB (schema.sql and the migrations above it), as dgtune creates one."""
    src = os.path.join(root, "src", "db")
    schema = open(os.path.join(src, "schema.sql")).read()
    con = sqlite3.connect(path)
    con.executescript(schema)
    base = int(re.search(r"INSERT INTO schema_version \(version\) VALUES \((\d+)\)", schema).group(1))
    for f in sorted(os.listdir(os.path.join(src, "migrations"))):
        v = int(f[:4])
        if v > base:
            con.executescript(open(os.path.join(src, "migrations", f)).read())
            con.execute("UPDATE schema_version SET version = ?", (v,))
    con.commit()
    return con


def fill_history(con):
    """One device, the fast and the promote problem of one size, three gate runs of each."""
    con.execute("INSERT INTO device VALUES (1, 'hw1', 'NVIDIA H200', 90, 132, 1, 1, 1980, 'now')")
    con.execute("INSERT INTO environment VALUES (1, 'env1', 1, 1, 1, 1, 'k', '0', 'now')")
    for pid, accum in [(1, "promote"), (2, "fast")]:
        con.execute("INSERT INTO problem (id, key, m, n, k, lda, ldb, ldd, dtype_a, dtype_b, dtype_d, scale_mode, "
                    "accum, bias, act) VALUES (?, ?, 128, 2112, 7168, 7168, 7168, 2112, 'e4m3', 'e4m3', 'bf16', "
                    "'per-tensor', ?, 'none', 'none')",
                    (pid, f"128x2112x7168_lda7168_ldb7168_ldd2112_e4m3.e4m3.bf16_pt_{accum}", accum))
    run_id = 0
    for day in range(3):
        for pid in (1, 2):
            run_id += 1
            con.execute("INSERT INTO gate_run VALUES (?, 1, 1, '', 'base.json', 'then', 'env0', 'cold-l2-v2', 0.05, "
                        "0.95, 0, 1, 0, 0, ?)", (run_id, f"2026-11-2{day}T12:0{pid}:00Z"))
            con.execute("INSERT INTO gate_result (run_id, problem_id, name, config_key, config_baseline, verdict, "
                        "reason, ratio_baseline, ratio_now, slowdown, slowdown_lo, slowdown_hi, p_value, "
                        "ours_baseline_us, ours_now_us, tuned_baseline_us, tuned_now_us) VALUES (?, ?, 'decode', "
                        "'128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0', "
                        "'128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0', 'pass', 'r', 0.9, ?, 0.01, -0.01, "
                        "0.03, 0.4, 9, 9.1, 10, 10)", (run_id, pid, 0.9 + 0.01 * day))
    con.commit()


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    dgtune, unit_tests, root = sys.argv[1:]
    schemas_dir = os.path.join(root, "docs", "schemas")
    failures = []

    # 1. Every document dgtune names has a schema, and every schema file is a document dgtune names.
    header = open(os.path.join(root, "src", "report", "documents.hpp")).read()
    named = dict(re.findall(r'DocumentType k\w+Document\{"([\w-]+)", (\d+)\}', header))
    files = {f[:-len(".schema.json")] for f in os.listdir(schemas_dir) if f.endswith(".schema.json")}
    if set(named) != files:
        failures.append(f"documents without a schema: {sorted(set(named) - files)}; schemas of no document: "
                        f"{sorted(files - set(named))}")
    schemas = {}
    for name in files:
        with open(os.path.join(schemas_dir, name + ".schema.json")) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        if schema["properties"]["schema"].get("const") != name:
            failures.append(f"{name}.schema.json: properties.schema.const is not '{name}'")
        if name in named and schema["properties"]["schema_version"].get("const") != int(named[name]):
            failures.append(f"{name}.schema.json: schema_version const differs from documents.hpp's {named[name]}")
        schemas[name] = schema

    docs = {}  # label -> document
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, DGTUNE_CACHE_DIR=os.path.join(tmp, "cache"), HOME=tmp)
        # 2. The GPU commands' documents, from synthetic measurements.
        samples = os.path.join(tmp, "samples")
        os.makedirs(samples)
        run([unit_tests, "--gtest_filter=JsonDocuments.*"], env=dict(env, DGT_JSON_SAMPLES_DIR=samples))
        for f in sorted(os.listdir(samples)):
            with open(os.path.join(samples, f)) as fh:
                docs[f"{f} (test_json_documents)"] = json.load(fh)
        # 3. The GPU-free commands, run.
        fit = os.path.join(tmp, "fit.db")
        with gzip.open(os.path.join(root, "results", "fits", "small-m-2026-11-30.db.gz"), "rb") as s, \
                open(fit, "wb") as d:
            shutil.copyfileobj(s, d)
        # The committed H200 DB predates schema 10: migrate the copy as a user would (`dgtune db migrate`), and keep
        # its JSON: a migration that ran (true), then one with nothing to do (false).
        for label in ("db migrate", "db migrate (current)"):
            doc = json.loads(run([dgtune, "db", "migrate", "--db", fit, "--format", "json"], env=env))
            docs[f"dgtune {label}"] = doc
            want = label == "db migrate"
            if doc["rows"][0]["migrated"] != want:
                failures.append(f"dgtune {label}: migrated is {doc['rows'][0]['migrated']}, want {want}")
        hist = os.path.join(tmp, "history.db")
        fill_history(make_db(root, hist))
        make_db(root, os.path.join(tmp, "empty.db")).close()
        commands = {
            "space": ["space", "--m", "4096", "--n", "4096", "--k", "4096"],
            "space rejected": ["space", "--m", "64", "--n", "2112", "--k", "7168", "--show", "rejected"],
            "info": ["info"],
            "export": ["export", "--db", fit],
            "export --columns short": ["export", "--db", fit, "--columns", "short"],
            "history": ["history", "--shape", "128x2112x7168", "--history", hist],
            "db check": ["db", "check", "--db", fit],
            "db devices": ["db", "devices", "--db", fit],
            "db prune --dry-run": ["db", "prune", "--dry-run", "--db", fit],
            "db merge": ["db", "merge", hist, os.path.join(tmp, "empty.db"), "-o", os.path.join(tmp, "merged.db")],
        }
        for label, argv in commands.items():
            docs[f"dgtune {label}"] = json.loads(run([dgtune, *argv, "--format", "json"], env=env))
    # 4. The committed outputs the plot scripts are tested on.
    plots = os.path.join(root, "tests", "cli", "fixtures", "plots")
    for f in sorted(os.listdir(plots)):
        if f in LEGACY_PLOT_INPUTS:
            continue
        if f.endswith(".json"):
            with open(os.path.join(plots, f)) as fh:
                docs[f"fixtures/plots/{f}"] = json.load(fh)

    seen = set()
    for label, doc in docs.items():
        name = doc.get("schema") if isinstance(doc, dict) else None
        if name not in schemas:
            failures.append(f"{label}: 'schema' is {name!r}, not a document with a schema file")
            continue
        seen.add(name)
        errors = sorted(jsonschema.Draft202012Validator(schemas[name]).iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:5]:
            failures.append(f"{label}: {name}: at {'/'.join(map(str, e.path)) or 'the top'}: {e.message[:300]}")
        if not errors:
            print(f"ok: {label} validates against {name}.schema.json")
    # The schemas are contracts, not "anything goes": an unknown top-level key, or a row field under an old name
    # (the time ratio "ratio" of before the one x convention), must be refused.
    for label, doc in docs.items():
        name = doc.get("schema") if isinstance(doc, dict) else None
        if name not in schemas:
            continue
        validator = jsonschema.Draft202012Validator(schemas[name])
        if validator.is_valid(dict(doc, unexpected_key=1)):
            failures.append(f"{label}: {name} accepts an unknown top-level key")
        rows = doc.get("rows") or [r for t in doc.get("tables", []) for r in t["rows"]] or doc.get("winners") or []
        if rows and isinstance(rows[0], dict):
            bad = json.loads(json.dumps(doc))
            target = (bad.get("rows") or [r for t in bad.get("tables", []) for r in t["rows"]] or bad.get("winners"))[0]
            target["ratio"] = 1.0
            if validator.is_valid(bad):
                failures.append(f"{label}: {name} accepts a row field it does not document ('ratio')")
    if set(schemas) - seen:
        failures.append(f"schemas no output was validated against: {sorted(set(schemas) - seen)}")
    for f in failures:
        print("FAIL:", f)
    print(f"json_schemas: {len(docs)} documents, {len(schemas)} schemas, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
