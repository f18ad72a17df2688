#!/usr/bin/env python3
"""Outputs that must not change when the code is reorganised (no GPU needed):

 - `dgtune space --show all` for every problem line of every shipped shapes file (configs/shapes/*.txt): the sha256
   of today's stdout against fixtures/space-show-all.tsv, made by the dgtune of 57f7a31 (before the layout change),
   the 35 block-scaled lines (deepseek-v3-block.txt) made again in ae52e05 (the cost model's block-scale terms change
   their estimate column), all made again in 2026-12 when the default space gained the one-group-cluster grid (0 to 22
   more kept candidates per problem), the 35 block-scaled lines again when block scales on a multicast cluster left the
   consumers 224 registers instead of 232 (the register-limit column of those rows; the pp cluster rows now fail R10
   before R24);
 - `dgtune export` of the committed cost-model fit DB results/fits/small-m-2026-11-30.db.gz in every text format
   against fixtures/export-small-m-2026-11-30.<format>.gz, made by the same dgtune. The running kernel-source hash and
   the DB's path are the only parts that may differ (a comment in kernels/ changes the hash): both are replaced by
   placeholders on each side before the comparison.

A change that is meant to change one of these outputs regenerates the fixture with --regenerate and says why in its
commit. Usage: output_fixtures_test.py DGTUNE_BIN REPO_ROOT [--regenerate]
"""
import difflib
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

FORMATS = ["table", "csv", "json", "md", "cpp"]
FIT_DB = "results/fits/small-m-2026-11-30.db.gz"


def shapes_lines(root):
    """(file#n, dgtune space arguments) of every problem line of configs/shapes/*.txt, in file order: n counts the
    file's problem lines from 1, so comment edits do not move a problem's key."""
    out = []
    folder = os.path.join(root, "configs", "shapes")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".txt"):
            continue
        rel = f"configs/shapes/{name}"
        n = 0
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for line in f:
                text = line.split("#", 1)[0].strip()
                if not text:
                    continue
                n += 1
                t = text.split()
                args = ["--m", t[0], "--n", t[1], "--k", t[2]]
                for kv in t[3:]:
                    k, v = kv.split("=", 1)
                    if k != "name":
                        args += ["--" + k, v]
                out.append((f"{rel}#{n}", args))
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode(errors='replace')[-400:]}")
    return p.stdout


def running_kernel_hash(dgtune):
    text = run([dgtune, "--version"]).decode()
    for line in text.splitlines():
        if line.startswith("kernel source hash: "):
            return line.split(": ", 1)[1].strip()
    raise SystemExit("FAIL: dgtune --version names no kernel source hash")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    dgtune, root = sys.argv[1], sys.argv[2]
    regenerate = "--regenerate" in sys.argv[3:]
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    failures = []

    # 1. dgtune space --show all for every shipped problem.
    tsv = os.path.join(fixtures, "space-show-all.tsv")
    lines = shapes_lines(root)
    got = {}
    for where, args in lines:
        out = run([dgtune, "space", "--show", "all"] + args)
        got[where] = (" ".join(args), hashlib.sha256(out).hexdigest(), len(out))
    if regenerate:
        with open(tsv, "w", encoding="utf-8") as f:
            f.write("# file#n (the n-th problem line of the file)\tdgtune space --show all arguments\tsha256 of stdout\t"
                    "bytes\n")
            for where, _ in lines:
                f.write("\t".join([where, *map(str, got[where])]) + "\n")
    want = {}
    with open(tsv, encoding="utf-8") as f:
        for row in f:
            if row.startswith("#") or not row.strip():
                continue
            where, args, digest, size = row.rstrip("\n").split("\t")
            want[where] = (args, digest, int(size))
    if set(want) != set(got):
        failures.append(f"the shipped shapes files changed: fixture rows {len(want)}, problem lines now {len(got)} "
                        f"(only in the fixture: {sorted(set(want) - set(got))[:5]}, only now: "
                        f"{sorted(set(got) - set(want))[:5]}); regenerate the fixture if that was meant")
    for where in sorted(set(want) & set(got)):
        if want[where] != got[where]:
            failures.append(f"{where}: `dgtune space --show all {got[where][0]}` prints {got[where][2]} bytes with "
                            f"sha256 {got[where][1][:16]}..., the fixture has {want[where][2]} bytes, "
                            f"{want[where][1][:16]}...")

    # 2. dgtune export of the committed fit DB.
    hash_now = running_kernel_hash(dgtune)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "fit.db")
        with gzip.open(os.path.join(root, FIT_DB), "rb") as src, open(db, "wb") as dst:
            shutil.copyfileobj(src, dst)
        # The committed H200 DB predates schema 10: migrate the copy as a user would (`dgtune db migrate`).
        subprocess.run([dgtune, "db", "migrate", "--db", db], check=True, stdout=subprocess.DEVNULL)
        for fmt in FORMATS:
            text = run([dgtune, "export", "--db", db, "--format", fmt]).decode()
            text = text.replace(hash_now, "<RUNNING_KERNEL_HASH>").replace(db, "<DB>")
            path = os.path.join(fixtures, f"export-small-m-2026-11-30.{fmt}.gz")
            if regenerate:
                with gzip.open(path, "wt", encoding="utf-8") as f:
                    f.write(text)
            with gzip.open(path, "rt", encoding="utf-8") as f:
                old = f.read()
            if old != text:
                diff = "".join(list(difflib.unified_diff(old.splitlines(True), text.splitlines(True), "fixture", "now"))[:40])
                failures.append(f"dgtune export --format {fmt} of {FIT_DB} differs from its fixture:\n{diff}")

    for f in failures:
        print("FAIL:", f)
    print(f"output_fixtures: {len(got)} space outputs and {len(FORMATS)} export formats checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
