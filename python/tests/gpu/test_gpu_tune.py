"""dgtune.tune(shapes_file=...) and `python -m dgtune sweep ...` run the smoke sweep (tests/cli/sweep_smoke.sh's
flags: --max-candidates 6 --max-samples 20, here on two of its tiny shapes) into a fresh DB; the op then loads that
DB and runs the tuned problem within the bound."""
from gpu_helpers import require_gpu

require_gpu()

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402, F401

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

SHAPES = "# two shapes of tests/cli/sweep_smoke.sh\n256 512 1040 name=k-tail\n7 48 80 name=tiny\n"
SMOKE = ["--max-candidates", "6", "--max-samples", "20"]


@pytest.fixture
def shapes_file(tmp_path):
    p = tmp_path / "smoke2.txt"
    p.write_text(SHAPES)
    return p


def test_tune_shapes_file(tmp_path, shapes_file, capfd):
    db = tmp_path / "t.db"
    res = dgtune.tune(shapes_file=shapes_file, db=db, extra_args=SMOKE + ["--format", "json"], progress=False)
    assert res.returncode == 0 and os.path.isfile(db)
    rows = json.loads(res.stdout)["rows"]
    assert len(rows) == 2 and all(r["winner"] for r in rows), rows
    # The op loads the DB and runs the tuned problem from it.
    try:
        dgtune.load(db=db)
        case = H.make_case(256, 512, 1040, "tensorwise", layout="torch")
        c = H.choose(dgtune, case)
        assert c["source"] != "default", c
        d = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb)
        H.check_bf16_f32(d, H.reference(case), False, "tuned k-tail")
    finally:
        dgtune.load()


def test_tune_progress_streams(tmp_path, shapes_file, capfd):
    dgtune.tune(shapes_file=shapes_file, db=tmp_path / "p.db", extra_args=SMOKE, progress=True)
    out, err = capfd.readouterr()
    assert "k-tail" in out + err and "tiny" in out + err


def test_python_m_dgtune_sweep(tmp_path, shapes_file):
    db = tmp_path / "m.db"
    r = subprocess.run([sys.executable, "-m", "dgtune", "sweep", "--shapes", str(shapes_file), "--db", str(db)] +
                       SMOKE + ["--format", "json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout)["rows"]
    assert len(rows) == 2 and all(r_["measured_now"] == 6 for r_ in rows), rows
    # Run again: resumes, measures nothing.
    r2 = subprocess.run([sys.executable, "-m", "dgtune", "sweep", "--shapes", str(shapes_file), "--db", str(db)] +
                        SMOKE + ["--format", "json"], capture_output=True, text=True, timeout=600)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert all(r_["measured_now"] == 0 for r_ in json.loads(r2.stdout)["rows"])


def test_python_m_dgtune_forwards_exit_code():
    r = subprocess.run([sys.executable, "-m", "dgtune", "no-such-command"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
