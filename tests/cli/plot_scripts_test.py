#!/usr/bin/env python3
"""scripts/plot_results.py and scripts/plot_gate_history.py on committed dgtune outputs (tests/cli/fixtures/plots/:
a 35-shape compare measured on the H200 before the JSON envelope, today's export of the committed fit DB and a gate
history holding the fast and the promote problem of one size) and on an export made now: each run ends 0, each PNG is
under 2000 pixels wide (the speedup chart of 35 shapes was 5025), the history draws one series per problem, and the
writer rule holds (an output that is the input is refused with exit 2, the input unchanged). matplotlib is required:
a missing one fails the test.

Usage: plot_scripts_test.py DGTUNE_BIN REPO_ROOT
"""
import gzip
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_packages import TOOLS, require  # noqa: E402

require("matplotlib")
MAX_WIDTH = 2000


def png_size(path):
    """(width, height) from the PNG's IHDR chunk."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"FAIL: {path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    dgtune, root = sys.argv[1:]
    scripts, fixtures = os.path.join(root, "scripts"), os.path.join(root, "tests", "cli", "fixtures", "plots")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [TOOLS, os.environ.get("PYTHONPATH", "")] if p),
               MPLBACKEND="Agg")
    failures = []

    def plot(script, args, want_rc=0):
        p = subprocess.run([sys.executable, os.path.join(scripts, script), *args], capture_output=True, env=env,
                           timeout=300)
        if p.returncode != want_rc:
            failures.append(f"{script} {' '.join(args)}: exit {p.returncode}, want {want_rc}: "
                            f"{(p.stdout + p.stderr).decode(errors='replace')[-500:]}")
        return (p.stdout + p.stderr).decode(errors="replace")

    def check_png(path, what, min_height=0):
        if not os.path.exists(path):
            failures.append(f"{what}: {path} was not written")
            return
        w, h = png_size(path)
        print(f"{what}: {os.path.basename(path)} {w} x {h} px")
        if w >= MAX_WIDTH:
            failures.append(f"{what}: {os.path.basename(path)} is {w} px wide (want < {MAX_WIDTH})")
        if h < min_height:
            failures.append(f"{what}: {os.path.basename(path)} is only {h} px tall")

    with tempfile.TemporaryDirectory() as tmp:
        # Compare JSON of 35 shapes, cold and hot (H200, 2026-12-02): bars per shape with intervals, a roofline.
        cold, hot = os.path.join(fixtures, "compare-deepseek-cold.json"), os.path.join(fixtures, "compare-deepseek-hot.json")
        out = os.path.join(tmp, "compare")
        plot("plot_results.py", [cold, hot, "--names", "cold-l2", "hot-graph", "--out-dir", out])
        check_png(os.path.join(out, "speedup.png"), "compare speedup", min_height=1500)  # 70 bars: readable, tall
        check_png(os.path.join(out, "roofline.png"), "compare roofline")
        # Export JSON (it was a KeyError): the committed one and one made now by this dgtune.
        fit = os.path.join(tmp, "fit.db")
        with gzip.open(os.path.join(root, "results", "fits", "small-m-2026-11-30.db.gz"), "rb") as s, \
                open(fit, "wb") as d:
            shutil.copyfileobj(s, d)
        # The committed H200 DB predates schema 10: migrate the copy as a user would (`dgtune db migrate`).
        subprocess.run([dgtune, "db", "migrate", "--db", fit], check=True, stdout=subprocess.DEVNULL)
        now = os.path.join(tmp, "export-now.json")
        with open(now, "wb") as f:
            p = subprocess.run([dgtune, "export", "--db", fit, "--format", "json"], stdout=f, stderr=subprocess.PIPE)
        if p.returncode != 0:
            failures.append(f"dgtune export: exit {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}")
        for label, path in [("committed export", os.path.join(fixtures, "export-small-m-2026-11-30.json")),
                            ("export made now", now)]:
            d = os.path.join(tmp, label.replace(" ", "-"))
            text = plot("plot_results.py", [path, "--out-dir", d])
            if "speedup.png" not in text:
                failures.append(f"{label}: no speedup chart ({text.strip()[-200:]})")
            check_png(os.path.join(d, "speedup.png"), label)
            check_png(os.path.join(d, "roofline.png"), label)
        # Gate history: one series per problem; many runs stay under the width.
        history = os.path.join(fixtures, "history-decode.json")
        h_png = os.path.join(tmp, "history.png")
        plot("plot_gate_history.py", [history, "-o", h_png])
        check_png(h_png, "gate history")
        with open(history) as f:
            doc = json.load(f)
        keys = {r["problem_key"] for r in doc["rows"]}
        if len(keys) != 2:
            failures.append(f"history fixture: want the fast and the promote problem, has {sorted(keys)}")
        many = dict(doc, rows=[dict(r, created_at=f"2026-12-{1 + i // 40:02d}T{i % 24:02d}:00:00Z")
                                for i, r in enumerate(doc["rows"] * 40)])
        many_path = os.path.join(tmp, "many.json")
        with open(many_path, "w") as f:
            json.dump(many, f)
        plot("plot_gate_history.py", [many_path, "-o", os.path.join(tmp, "many.png")])
        check_png(os.path.join(tmp, "many.png"), f"gate history of {len(many['rows'])} runs")
        # History JSON of dgtune before the one ratio convention (ratio_now = dgtune / cuBLASLt) still plots.
        old = dict(doc, rows=[{k: v for k, v in r.items() if not k.startswith("x_tuned")} |
                              {"ratio_now": 1 / r["x_tuned_now"], "ratio_baseline": 1 / r["x_tuned_baseline"]}
                              for r in doc["rows"]])
        old_path = os.path.join(tmp, "old.json")
        with open(old_path, "w") as f:
            json.dump(old, f)
        plot("plot_gate_history.py", [old_path, "-o", os.path.join(tmp, "old.png")])
        check_png(os.path.join(tmp, "old.png"), "gate history before the x convention")
        # The writer rule: never the input (a link counts), nothing written when refused; bad input is exit 2.
        before = digest(many_path)
        os.symlink(many_path, os.path.join(tmp, "link.png"))
        for target in (many_path, os.path.join(tmp, "link.png")):
            text = plot("plot_gate_history.py", [many_path, "-o", target], want_rc=2)
            if "is the input" not in text:
                failures.append(f"plot_gate_history.py -o {target}: says {text.strip()[-200:]!r}")
        if digest(many_path) != before:
            failures.append("plot_gate_history.py wrote over its input")
        plot("plot_results.py", [cold, "--out-dir", cold], want_rc=2)
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"rows": [\n  {"shape": 1},\n  oops\n]}')
        text = plot("plot_results.py", [bad, "--out-dir", os.path.join(tmp, "b")], want_rc=2)
        if "bad.json:3:3: invalid JSON" not in text:
            failures.append(f"plot_results.py on bad JSON: says {text.strip()[-200:]!r}")
        if os.path.exists(os.path.join(tmp, "b")):
            failures.append("plot_results.py made its --out-dir for an input it refused")
        leftovers = [f for f in os.listdir(tmp) if f.endswith(".tmp")]
        if leftovers:
            failures.append(f"temporary files left: {leftovers}")
    for f in failures:
        print("FAIL:", f)
    print(f"plot_scripts: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
