"""The tuner from Python: run the ``dgtune`` CLI, and control the op's loader (DB or bundle, choose, warm-up, stats).

- ``tune(...)`` runs ``dgtune sweep --shapes F --db DB`` or ``dgtune tune-model --hf-config F --tp N --db DB`` (docs/cli.md)
  in a child process, streaming its progress lines (stderr: ``[i/n] shape ..., elapsed S s, ETA S s``) and its tables
  (stdout) through Python's ``sys.stderr`` / ``sys.stdout`` (so notebooks show them).
- ``load``, ``choose``, ``warmup``, ``stats`` call the control API of libdgtune_torch.so (``_native.Control``): they
  configure and query the per-device ``dgt::Gemm`` objects the op runs with.
- ``cli_path()`` finds the CLI: ``$DGTUNE_CLI``, else ``dgtune/bin/dgtune`` in the package, else ``dgtune`` on PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from . import _native

__all__ = [
    "cli_path", "default_db_path", "tune", "TuneResult", "load", "choose", "Choice", "warmup", "stats", "problem",
]


def _is_python_entry_point(path: str) -> bool:
    """True for the ``dgtune`` console script pip installs (``python -m dgtune``'s entry point, a Python script):
    running it as the CLI would exec itself forever."""
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def cli_path() -> str:
    """The dgtune CLI: ``$DGTUNE_CLI`` (must exist), else ``<package>/bin/dgtune`` (installed by pip), else ``dgtune``
    on PATH (not the Python console script of the same name that pip installs, which forwards here). Raises
    FileNotFoundError naming every place looked at when none is found."""
    env = os.environ.get("DGTUNE_CLI")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise FileNotFoundError(f"dgtune: $DGTUNE_CLI = {env!r} is not an executable file")
        return env
    bundled = Path(__file__).resolve().parent / "bin" / "dgtune"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(folder or ".", "dgtune")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and not _is_python_entry_point(candidate):
            return candidate
    raise FileNotFoundError(
        f"dgtune: the dgtune CLI was not found ($DGTUNE_CLI is not set, {bundled} does not exist, no `dgtune` on "
        "PATH); install the package with `pip install --no-build-isolation ./python`, or build the CLI "
        "(`cmake --build build`, see the README) and set DGTUNE_CLI=build/dgtune"
    )


def default_db_path() -> str:
    """The DB ``tune`` writes when none is given: ``$DGTUNE_DB``, else ``$XDG_CACHE_HOME/dgtune/tuning.db``, else
    ``~/.cache/dgtune/tuning.db`` (the CLI's own default, ``results/tuning.db``, depends on the working directory)."""
    env = os.environ.get("DGTUNE_DB")
    if env:
        return env
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "dgtune", "tuning.db")


@dataclass
class TuneResult:
    """What ``tune`` ran: the command line, the DB it wrote, the exit code (0) and the CLI's stdout and stderr (always
    captured; with ``progress=True`` also streamed to ``sys.stdout`` / ``sys.stderr`` as they come)."""

    command: list
    db: str
    returncode: int
    stdout: str = ""
    stderr: str = ""


def _pump(stream, sink, keep: list):
    for line in iter(stream.readline, ""):
        keep.append(line)
        if sink is not None:
            sink.write(line)
            sink.flush()
    stream.close()


def tune(
    shapes_file: str | os.PathLike | None = None,
    hf_config: str | os.PathLike | None = None,
    db: str | os.PathLike | None = None,
    tp: int = 1,
    extra_args: Sequence[str] = (),
    progress: bool = True,
) -> TuneResult:
    """Tunes with the CLI: a shapes file (``dgtune sweep``) or a Hugging Face model config (``dgtune tune-model``).

    Args:
        shapes_file: a shapes file (docs/shapes-and-spaces.md): runs ``dgtune sweep --shapes F --db DB``.
        hf_config: a model's config.json: runs ``dgtune tune-model --hf-config F --tp N --db DB`` (shapes, a
            ``--strategy model --top-k 16`` sweep, export; see docs/cli.md). Exactly one of the two.
        db: the tuning DB to write (created when missing); None: ``default_db_path()``.
        tp: tensor parallelism (tune-model only; with shapes_file it must stay 1).
        extra_args: more CLI flags, appended as given (e.g. ``["--protocol", "hot-graph"]``, ``["--m", "1,64,4096"]``,
            ``["--device", "1"]``, ``["--out-dir", "tuned"]``).
        progress: stream the CLI's output through ``sys.stdout`` / ``sys.stderr`` as it comes; False: capture it in
            the result.

    Returns:
        TuneResult. Load the DB into the op with ``dgtune.load(db=result.db)``.

    Raises:
        ValueError: neither or both inputs, or ``tp != 1`` with shapes_file. FileNotFoundError: no CLI
        (``cli_path``). RuntimeError: the CLI exited nonzero (exit code and the last lines of its stderr; exit 2 is
        bad input, 1 a runtime error, 130/143 an interrupted sweep that the same call resumes).
    """
    if (shapes_file is None) == (hf_config is None):
        raise ValueError("dgtune.tune: give exactly one of shapes_file and hf_config")
    if not isinstance(tp, int) or tp < 1:
        raise ValueError(f"dgtune.tune: tp must be a positive int, got {tp!r}")
    if shapes_file is not None and tp != 1:
        raise ValueError("dgtune.tune: tp applies to hf_config (tune-model); a shapes file already holds split shapes")
    if isinstance(extra_args, (str, bytes)):
        raise ValueError("dgtune.tune: extra_args must be a sequence of strings, e.g. ['--protocol', 'hot-graph']")
    db = os.fspath(db) if db is not None else default_db_path()
    cli = cli_path()
    if shapes_file is not None:
        cmd = [cli, "sweep", "--shapes", os.fspath(shapes_file), "--db", db]
    else:
        cmd = [cli, "tune-model", "--hf-config", os.fspath(hf_config), "--tp", str(tp), "--db", db]
    cmd += [str(a) for a in extra_args]
    parent = os.path.dirname(os.path.abspath(db))
    os.makedirs(parent, exist_ok=True)

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                            errors="replace")
    out_lines: list = []
    err_lines: list = []
    threads = [
        threading.Thread(target=_pump, args=(proc.stdout, sys.stdout if progress else None, out_lines), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, sys.stderr if progress else None, err_lines), daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()  # the sweep stores the trial in progress and exits 143; the same call resumes
        proc.wait()
        raise
    for t in threads:
        t.join()
    if rc != 0:
        tail = "".join(err_lines[-20:]).rstrip()
        raise RuntimeError(f"dgtune.tune: `{' '.join(cmd)}` exited with {rc}" + (f":\n{tail}" if tail else ""))
    return TuneResult(cmd, db, rc, "".join(out_lines), "".join(err_lines))


def load(
    path: str | os.PathLike | None = None,
    *,
    db: str | os.PathLike | None = None,
    bundle: str | os.PathLike | None = None,
    protocol: str | None = None,
    cublaslt: bool | None = None,
    cache_dir: str | os.PathLike | None = None,
    capture_miss: str | None = None,
    record_untuned: str | os.PathLike | None = None,
    probe_ladder: bool | None = None,
) -> dict:
    """Sets what the op's loader reads: a tuning DB, a kernel bundle, and options (``dgt::GemmOptions``).

    Args:
        path: a directory holding ``manifest.json`` is a kernel bundle (``dgtune export --format bundle``), anything
            else a tuning DB. Or give the keywords:
        db: tuning DB path. bundle: kernel bundle directory.
        protocol: ``"cold-l2"`` or ``"hot-graph"`` (which winners to prefer).
        cublaslt: whether cuBLASLt may run problems where it was faster (default true).
        cache_dir: the cubin cache. capture_miss: ``"cublaslt"`` or ``"error"`` (an unwarmed family under graph
            capture). record_untuned: where to write the problems that ran untuned (a shapes file).
        probe_ladder: whether the first call of an M no sweep tuned times the ladder pick against cuBLASLt's
            heuristic and keeps the faster (default true; docs/loader.md "The ladder probe").
        Omitted keys keep dgt::GemmOptions' defaults ($DGTUNE_DB, $DGTUNE_BUNDLE, ...).

    Returns:
        The options sent (a dict), for the record.

    Raises:
        ValueError: a path and the same keyword both given, an unknown protocol or capture_miss.
        RuntimeError: the native library is missing, or dgtune_torch_configure failed (its message).

    Destroys the per-device ``dgt::Gemm`` objects; the next call on a device creates one with these options. Must not
    run while ops run on other threads or streams (finish them, e.g. torch.cuda.synchronize(), first); warm up again
    afterwards.
    """
    if path is not None:
        p = Path(path)
        if p.is_dir() and (p / "manifest.json").is_file():
            if bundle is not None:
                raise ValueError("dgtune.load: a bundle directory and bundle= both given")
            bundle = p
        else:
            if db is not None:
                raise ValueError("dgtune.load: a DB path and db= both given")
            db = p
    if protocol is not None and protocol not in ("cold-l2", "hot-graph"):
        raise ValueError(f"dgtune.load: protocol must be 'cold-l2' or 'hot-graph', got {protocol!r}")
    if capture_miss is not None and capture_miss not in ("cublaslt", "error"):
        raise ValueError(f"dgtune.load: capture_miss must be 'cublaslt' or 'error', got {capture_miss!r}")
    options: dict = {}
    for key, value in (("db", db), ("bundle", bundle), ("cache_dir", cache_dir), ("record_untuned", record_untuned)):
        if value is not None:
            options[key] = os.path.abspath(os.fspath(value))
    if protocol is not None:
        options["protocol"] = protocol
    if cublaslt is not None:
        options["cublaslt"] = bool(cublaslt)
    if capture_miss is not None:
        options["capture_miss"] = capture_miss
    if probe_ladder is not None:
        options["probe_ladder"] = bool(probe_ladder)
    _native.require().configure(options)
    return options


@dataclass(frozen=True)
class Choice:
    """What the op runs for one problem (``dgt::GemmChoice``).

    config_key: the dgtune kernel config (also set when cuBLASLt runs: the fallback for pointers it cannot take);
    source: where it came from (``"db"``, ``"db-other-protocol"``, ``"ladder"``, ``"bundle"``..., ``"default"``);
    backend: ``"dgtune"`` or ``"cublaslt"``; cublaslt_algo: the cuBLASLt algorithm ("" for dgtune); protocol: the
    protocol its time was measured under; tuned_us: the stored median time (0 for "default"); probe: what the
    ladder probe measured ("" where none ran).
    """

    config_key: str
    source: str
    backend: str
    cublaslt_algo: str
    protocol: str
    tuned_us: float
    probe: str = ""


_FP8_NAMES = {"e4m3": "e4m3", "e5m2": "e5m2"}
_OUT_NAMES = {"bf16": "bf16", "f32": "f32", "e4m3": "e4m3"}
_SCALES = ("per-tensor", "channel", "block", "block1d1d")


def _fmt_name(value, table: dict, what: str) -> str:
    import torch

    torch_names = {
        torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2", torch.bfloat16: "bf16", torch.float32: "f32",
    }
    if isinstance(value, torch.dtype):
        value = torch_names.get(value, str(value))
    if value not in table:
        raise ValueError(f"dgtune: {what} must be one of {sorted(table)}, got {value!r}")
    return table[value]


def problem(
    n: int,
    k: int,
    *,
    m: Iterable[int] | int | None = None,
    lda: int | None = None,
    ldb: int | None = None,
    ldd: int | None = None,
    a="e4m3",
    b="e4m3",
    fast_accum: bool = False,
    scale: str = "per-tensor",
    out="bf16",
    bias: bool = False,
) -> dict:
    """A problem (family) dict of the control API: ``{"n","k","lda","ldb","ldd","a","b","fast_accum","scale","out",
    "bias"}`` plus ``"m"``: an int (for ``choose``) or a list (for ``warmup``; empty: the default M ladder).

    lda, ldb default to K (as a contiguous a and weight), ldd to N; a, b: "e4m3"/"e5m2" or the torch dtypes; out:
    "bf16"/"f32"/"e4m3" or the torch dtypes; scale: "per-tensor", "channel", "block", "block1d1d" (a ``Recipe.mode``).
    """
    if scale not in _SCALES:
        raise ValueError(f"dgtune: scale must be one of {list(_SCALES)}, got {scale!r}")
    for name, v in (("n", n), ("k", k)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"dgtune: {name} must be a positive int, got {v!r}")
    p = {
        "n": n, "k": k,
        "lda": k if lda is None else int(lda), "ldb": k if ldb is None else int(ldb), "ldd": n if ldd is None else int(ldd),
        "a": _fmt_name(a, _FP8_NAMES, "a"), "b": _fmt_name(b, _FP8_NAMES, "b"), "fast_accum": bool(fast_accum),
        "scale": scale, "out": _fmt_name(out, _OUT_NAMES, "out"), "bias": bool(bias),
    }
    if m is not None:
        p["m"] = int(m) if isinstance(m, int) else [int(x) for x in m]
    return p


def _device_index(device) -> int:
    import torch

    if device is None:
        return torch.cuda.current_device()
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != "cuda":
        raise ValueError(f"dgtune: device must be a CUDA device, got {d}")
    return d.index if d.index is not None else torch.cuda.current_device()


def choose(m: int, n: int, k: int, *, device=None, **kwargs) -> Choice:
    """The config the op runs for the problem M x N x K on ``device`` (None: the current CUDA device).

    Keyword arguments are ``problem``'s (lda, ldb, ldd, a, b, fast_accum, scale, out, bias). Loads the kernel as a
    first call would (may compile with NVRTC when not warmed up).
    """
    if not isinstance(m, int) or m < 1:
        raise ValueError(f"dgtune.choose: m must be a positive int, got {m!r}")
    p = problem(n, k, m=m, **kwargs)
    r = _native.require().choose(_device_index(device), p)
    return Choice(str(r["config_key"]), str(r["source"]), str(r["backend"]), str(r.get("cublaslt_algo", "")),
                  str(r.get("protocol", "")), float(r.get("tuned_us", 0.0)), str(r.get("probe", "")))


def warmup(shapes_file=None, problems=None, tuned: bool = False, device=None) -> dict:
    """Warms up problem families on ``device`` (None: the current CUDA device) so that later calls (also inside CUDA
    graph capture) compile nothing, allocate nothing and read no DB.

    Exactly one of: ``shapes_file`` (a shapes file; each family at the M its lines give), ``problems`` (dicts from
    ``problem(...)``, ``m`` a list, empty: the default M ladder), ``tuned=True`` (every family the DB or bundle holds
    a winner of for this device, at the default ladder).

    Returns:
        ``{"families", "shapes", "kernels", "nvrtc_compiles": int, "seconds": float}``.
    """
    given = (shapes_file is not None) + (problems is not None) + bool(tuned)
    if given != 1:
        raise ValueError("dgtune.warmup: give exactly one of shapes_file, problems and tuned=True")
    if shapes_file is not None:
        request = {"shapes_file": os.path.abspath(os.fspath(shapes_file))}
    elif problems is not None:
        fams = []
        for p in problems:
            p = dict(p)
            m = p.pop("m", [])
            fams.append(problem(m=[m] if isinstance(m, int) else list(m), **p))
        request = {"problems": fams}
    else:
        request = {"tuned": True}
    return _native.require().warmup(_device_index(device), request)


def stats(device=None) -> dict:
    """Counters of ``device``'s loader and op (None: the current CUDA device): nvrtc_compiles, cache_loads,
    bundle_loads, db_reads, device_allocs, resolved, capture_fallbacks, ladder_probes, calls (op calls), scale_copies
    (scales the op copied into the kernel's layout)."""
    return _native.require().stats(_device_index(device))
