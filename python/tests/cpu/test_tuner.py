"""tuner.py: CLI command lines (a fake CLI and a mocked Popen), cli_path lookup, the control API's JSON through a
mocked Control and through ctypes against a fake C library, and `python -m dgtune`."""

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

import dgtune
from dgtune import _native, tuner

FAKE_CLI = textwrap.dedent("""\
    #!/bin/sh
    # fake dgtune: records its argv, prints progress on stderr and a table on stdout, exits with $FAKE_RC
    for a in "$@"; do printf '%s\\n' "$a"; done > "$FAKE_ARGV"
    echo "[1/2] shape 64x7168x2048, elapsed 0 s, ETA 1 s" >&2
    echo "[2/2] shape 128x7168x2048, elapsed 1 s, ETA 0 s" >&2
    echo "winners table"
    exit ${FAKE_RC:-0}
""")


@pytest.fixture
def fake_cli(tmp_path, monkeypatch):
    cli = tmp_path / "dgtune"
    cli.write_text(FAKE_CLI)
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    argv = tmp_path / "argv.txt"
    monkeypatch.setenv("DGTUNE_CLI", str(cli))
    monkeypatch.setenv("FAKE_ARGV", str(argv))
    monkeypatch.delenv("FAKE_RC", raising=False)
    return cli, argv


def test_tune_shapes_command_and_streaming(fake_cli, tmp_path, capsys):
    cli, argv = fake_cli
    db = tmp_path / "sub" / "t.db"
    r = dgtune.tune(shapes_file="s.txt", db=db, extra_args=["--protocol", "hot-graph"])
    assert argv.read_text().split("\n")[:-1] == ["sweep", "--shapes", "s.txt", "--db", str(db), "--protocol",
                                                 "hot-graph"]
    assert r.command[0] == str(cli) and r.db == str(db) and r.returncode == 0
    assert db.parent.is_dir()  # the DB's folder is created
    out = capsys.readouterr()
    assert "[2/2] shape 128x7168x2048" in out.err and "winners table" in out.out


def test_tune_model_command_quiet(fake_cli, tmp_path, capsys):
    _, argv = fake_cli
    r = dgtune.tune(hf_config="cfg/config.json", tp=8, db=tmp_path / "m.db", progress=False)
    assert argv.read_text().split() == ["tune-model", "--hf-config", "cfg/config.json", "--tp", "8", "--db",
                                        str(tmp_path / "m.db")]
    assert "ETA" in r.stderr and r.stdout == "winners table\n"
    assert capsys.readouterr().err == ""


def test_tune_default_db(fake_cli, tmp_path, monkeypatch):
    _, argv = fake_cli
    monkeypatch.delenv("DGTUNE_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = dgtune.tune(shapes_file="s.txt", progress=False)
    assert r.db == str(tmp_path / "cache" / "dgtune" / "tuning.db")
    monkeypatch.setenv("DGTUNE_DB", "/x/y.db")
    assert tuner.default_db_path() == "/x/y.db"


def test_tune_failure_raises_with_exit_code_and_stderr(fake_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_RC", "2")
    with pytest.raises(RuntimeError, match=r"exited with 2:\n\[1/2\] shape"):
        dgtune.tune(shapes_file="s.txt", db=tmp_path / "t.db", progress=False)


def test_tune_argument_errors(fake_cli):
    with pytest.raises(ValueError, match="exactly one"):
        dgtune.tune()
    with pytest.raises(ValueError, match="exactly one"):
        dgtune.tune(shapes_file="a", hf_config="b")
    with pytest.raises(ValueError, match="tp applies to hf_config"):
        dgtune.tune(shapes_file="a", tp=2)
    with pytest.raises(ValueError, match="tp must be a positive int"):
        dgtune.tune(hf_config="a", tp=0)
    with pytest.raises(ValueError, match="extra_args must be a sequence"):
        dgtune.tune(shapes_file="a", extra_args="--protocol hot-graph")


def test_tune_with_mocked_popen(monkeypatch, tmp_path):
    seen = {}

    class P:
        def __init__(self, cmd, **kw):
            seen["cmd"], seen["kw"] = cmd, kw
            import io
            self.stdout, self.stderr = io.StringIO("t\n"), io.StringIO("p\n")

        def wait(self):
            return 0

    monkeypatch.setattr(tuner, "cli_path", lambda: "/opt/dgtune")
    monkeypatch.setattr(tuner.subprocess, "Popen", P)
    dgtune.tune(hf_config="c.json", tp=4, db=tmp_path / "d.db", extra_args=("--m", 64), progress=False)
    assert seen["cmd"] == ["/opt/dgtune", "tune-model", "--hf-config", "c.json", "--tp", "4", "--db",
                           str(tmp_path / "d.db"), "--m", "64"]
    assert seen["kw"]["stdout"] is subprocess.PIPE and seen["kw"]["stderr"] is subprocess.PIPE


def test_cli_path_order(tmp_path, monkeypatch):
    exe = tmp_path / "mycli"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("DGTUNE_CLI", str(exe))
    assert tuner.cli_path() == str(exe)
    monkeypatch.setenv("DGTUNE_CLI", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=r"\$DGTUNE_CLI = .*missing.* is not an executable file"):
        tuner.cli_path()
    monkeypatch.delenv("DGTUNE_CLI")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = bindir / "dgtune"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    script = tmp_path / "scripts"
    script.mkdir()
    (script / "dgtune").write_text("#!/usr/bin/python3\nimport dgtune.__main__\n")
    (script / "dgtune").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(script), str(bindir)]))  # pip's console script is skipped
    bundled = os.path.join(os.path.dirname(tuner.__file__), "bin", "dgtune")
    expect = bundled if os.access(bundled, os.X_OK) else str(on_path)
    assert os.path.realpath(tuner.cli_path()) == os.path.realpath(expect)
    if not os.path.exists(bundled):
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        with pytest.raises(FileNotFoundError, match=r"the dgtune CLI was not found .*DGTUNE_CLI=build/dgtune"):
            tuner.cli_path()


class FakeControl:
    def __init__(self):
        self.calls = []

    def configure(self, options):
        self.calls.append(("configure", options))

    def choose(self, device, problem):
        self.calls.append(("choose", device, problem))
        return {"config_key": "128x128x128_s4", "source": "db", "backend": "cublaslt",
                "cublaslt_algo": "stored algo=66", "protocol": "cold-l2-v1", "tuned_us": 12.5,
                "probe": "cuBLASLt more than 1% faster in 12 of 15 rounds (best: kernel 12.61 us, "
                         "cuBLASLt 12.40 us, heuristic result 2 of 4; cold-l2, 9 operand copies; probe 6.2 ms)"}

    def warmup(self, device, request):
        self.calls.append(("warmup", device, request))
        return {"families": 1, "shapes": 25, "kernels": 3, "nvrtc_compiles": 0, "seconds": 0.05}

    def stats(self, device):
        self.calls.append(("stats", device))
        return {"calls": 7}


@pytest.fixture
def control(monkeypatch):
    c = FakeControl()
    monkeypatch.setattr(_native, "require", lambda: c)
    return c


def test_load_db_bundle_and_keywords(control, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    dgtune.load(bundle)
    dgtune.load(tmp_path / "t.db", protocol="hot-graph", cublaslt=False)
    dgtune.load(db="rel.db", bundle=str(bundle), capture_miss="error", cache_dir=tmp_path, record_untuned="u.txt",
                probe_ladder=False)
    assert control.calls[0] == ("configure", {"bundle": str(bundle)})
    assert control.calls[1] == ("configure", {"db": str(tmp_path / "t.db"), "protocol": "hot-graph",
                                              "cublaslt": False})
    opts = control.calls[2][1]
    assert opts["db"] == os.path.abspath("rel.db") and opts["capture_miss"] == "error"
    assert opts["record_untuned"] == os.path.abspath("u.txt") and opts["cache_dir"] == str(tmp_path)
    assert opts["probe_ladder"] is False and "probe_ladder" not in control.calls[1][1]
    with pytest.raises(ValueError, match="protocol must be"):
        dgtune.load(db="x", protocol="hot")
    with pytest.raises(ValueError, match="a DB path and db= both given"):
        dgtune.load("a.db", db="b.db")


def test_choose_problem_json(control):
    import torch

    c = dgtune.choose(64, 7168, 2048, device=1, scale="block", out=torch.float32, b=torch.float8_e5m2, bias=True)
    assert c == dgtune.Choice("128x128x128_s4", "db", "cublaslt", "stored algo=66", "cold-l2-v1", 12.5,
                              "cuBLASLt more than 1% faster in 12 of 15 rounds (best: kernel 12.61 us, cuBLASLt "
                              "12.40 us, heuristic result 2 of 4; cold-l2, 9 operand copies; probe 6.2 ms)")
    _, dev, p = control.calls[0]
    assert dev == 1
    assert p == {"n": 7168, "k": 2048, "lda": 2048, "ldb": 2048, "ldd": 7168, "a": "e4m3", "b": "e5m2",
                 "fast_accum": False, "scale": "block", "out": "f32", "bias": True, "m": 64}
    dgtune.choose(1, 16, 32, device="cuda:2", lda=48)
    assert control.calls[1][1] == 2 and control.calls[1][2]["lda"] == 48
    with pytest.raises(ValueError, match="scale must be one of"):
        dgtune.choose(1, 16, 32, device=0, scale="rowwise")
    with pytest.raises(ValueError, match="out must be one of"):
        dgtune.choose(1, 16, 32, device=0, out=torch.float16)
    with pytest.raises(ValueError, match="device must be a CUDA device"):
        dgtune.choose(1, 16, 32, device="cpu")


def test_warmup_requests(control, tmp_path):
    rep = dgtune.warmup(shapes_file="shapes.txt", device=0)
    assert rep["nvrtc_compiles"] == 0 and rep["shapes"] == 25
    dgtune.warmup(problems=[{"n": 7168, "k": 2048, "m": [1, 64]}, dgtune.problem(4096, 4096, scale="channel")],
                  device=0)
    dgtune.warmup(tuned=True, device=3)
    assert control.calls[0][2] == {"shapes_file": os.path.abspath("shapes.txt")}
    fams = control.calls[1][2]["problems"]
    assert fams[0]["m"] == [1, 64] and fams[0]["ldd"] == 7168 and fams[1]["m"] == [] and fams[1]["scale"] == "channel"
    assert control.calls[2] == ("warmup", 3, {"tuned": True})
    with pytest.raises(ValueError, match="exactly one"):
        dgtune.warmup(device=0)
    with pytest.raises(ValueError, match="exactly one"):
        dgtune.warmup(shapes_file="a", tuned=True, device=0)
    assert dgtune.stats(device=0) == {"calls": 7}


FAKE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char err[256] = "";
static char last[4096] = "";
int dgtune_torch_configure(const char* j) {
  if (strstr(j, "\"protocol\": \"bad\"")) { snprintf(err, sizeof err, "unknown protocol 'bad'"); return 1; }
  snprintf(last, sizeof last, "%s", j); return 0;
}
static int put(char* out, size_t cap, const char* s) {
  size_t n = strlen(s);
  if (n + 1 > cap) { snprintf(err, sizeof err, "buffer too small (need %zu)", n + 1); return 1; }
  memcpy(out, s, n + 1); return 0;
}
int dgtune_torch_choose(int d, const char* p, char* out, size_t cap) {
  size_t n = strlen(p) + strlen(last) + 1024;
  char* b = malloc(n);
  snprintf(b, n, "{\"config_key\":\"k\",\"source\":\"db\",\"backend\":\"dgtune\",\"cublaslt_algo\":\"\","
           "\"protocol\":\"cold-l2-v1\",\"tuned_us\":%d.5,\"echo\":%s,\"last\":%s}", d, p, last[0] ? last : "null");
  int rc = put(out, cap, b);
  free(b);
  return rc;
}
int dgtune_torch_warmup(int d, const char* r, char* out, size_t cap) {
  (void)d; (void)r; snprintf(err, sizeof err, "warmup: no CUDA device"); return 1;
}
int dgtune_torch_stats(int d, char* out, size_t cap) { (void)d; return put(out, cap, "{\"calls\":0}"); }
const char* dgtune_torch_last_error(void) { return err; }
const char* dgtune_torch_version(void) { return "fake-0.1"; }
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the fake control library")
def test_ctypes_control_against_fake_library(tmp_path):
    src = tmp_path / "fake.c"
    src.write_text(FAKE_C)
    so = tmp_path / "libfake.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    c = _native.Control(so)
    assert c.version() == "fake-0.1"
    c.configure({"db": "/t.db", "protocol": "cold-l2"})
    r = c.choose(3, {"m": 1, "n": 16})
    assert r["tuned_us"] == 3.5 and r["echo"] == {"m": 1, "n": 16}
    assert r["last"] == {"db": "/t.db", "protocol": "cold-l2"}  # configure's JSON reached the library
    with pytest.raises(RuntimeError, match=r"^dgtune: configure failed: unknown protocol 'bad'$"):
        c.configure({"protocol": "bad"})
    with pytest.raises(RuntimeError, match=r"^dgtune: warmup failed: warmup: no CUDA device$"):
        c.warmup(0, {"tuned": True})
    assert c.stats(0) == {"calls": 0}
    # This library predates dgtune_torch_grouped_choice: it still loads, and the call says why it cannot answer.
    with pytest.raises(RuntimeError, match=r"has no dgtune_torch_grouped_choice \(built before it existed\)"):
        c.grouped_choice(0, {"layout": "masked"})
    big = {"x": "y" * (_native.BUFFER_BYTES // 2), "z": "w" * (_native.BUFFER_BYTES // 2)}
    with pytest.raises(RuntimeError, match=r"choose failed: buffer too small \(need \d+\)"):
        c.choose(0, big)


def _run_main(args, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(dgtune.__file__)),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "dgtune", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_python_m_dgtune_forwards_args_and_exit_code(fake_cli):
    cli, argv = fake_cli
    r = _run_main(["--help"], {})
    assert r.returncode == 0 and "winners table" in r.stdout and "ETA" in r.stderr
    assert argv.read_text() == "--help\n"
    r = _run_main(["sweep", "--shapes", "a b.txt"], {"FAKE_RC": "3"})
    assert r.returncode == 3
    assert argv.read_text().split("\n")[:-1] == ["sweep", "--shapes", "a b.txt"]


def test_python_m_dgtune_without_cli(tmp_path):
    r = _run_main(["--help"], {"DGTUNE_CLI": str(tmp_path / "none")})
    assert r.returncode == 127 and "is not an executable file" in r.stderr
