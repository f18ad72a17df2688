"""Finding and loading ``libdgtune_torch.so``: the CUDA kernels of ``torch.ops.dgtune`` and the ctypes control API.

Where it looks: ``$DGTUNE_TORCH_LIB`` when set, else ``dgtune/lib/libdgtune_torch.so`` next to this package (where
``pip install ./python`` puts it). ``load()`` runs once, from ``dgtune/__init__.py`` after ``_ops`` defined the
schemas: ``torch.ops.load_library(path)`` (registers the CUDA kernels), then ``ctypes.CDLL(path)`` (the same handle)
for the control functions. When the library is missing or does not load, ``import dgtune`` still works (schemas, fake
kernels, meta tensors, quantizers, the CLI wrappers); ``available()`` is False, CUDA calls of the ops raise
RuntimeError naming the path looked at and how to build, and so does every control call (``require()``).

Control API (extern "C" in libdgtune_torch.so; each returns 0 on success, else ``dgtune_torch_last_error()`` says
why): ``dgtune_torch_configure(options_json)``, ``dgtune_torch_choose(device, problem_json, out, cap)``,
``dgtune_torch_warmup(device, request_json, out, cap)``, ``dgtune_torch_stats(device, out, cap)``,
``dgtune_torch_grouped_choice(device, problem_json, out, cap)``, ``dgtune_torch_version()``. JSON in, JSON out,
1 MiB result buffers. The hot path (the ops) never goes through ctypes.
"""

from __future__ import annotations

import ctypes
import json
import os
import warnings
from pathlib import Path

import torch

from . import _grouped_ops, _ops

__all__ = ["lib_path", "available", "load", "require", "load_error", "Control", "BUFFER_BYTES", "BUILD_HINT"]

BUFFER_BYTES = 1 << 20
ENV = "DGTUNE_TORCH_LIB"
BUILD_HINT = (
    "build it with `pip install --no-build-isolation ./python` from the dgtune repository (needs torch >= 2.10, "
    "scikit-build-core, the CUDA toolkit and the project's build dependencies), or point $DGTUNE_TORCH_LIB at a "
    "built libdgtune_torch.so"
)


def lib_path() -> Path:
    """The path the native library is (or would be) loaded from: ``$DGTUNE_TORCH_LIB``, else
    ``<package>/lib/libdgtune_torch.so``."""
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parent / "lib" / "libdgtune_torch.so"


class Control:
    """The ctypes control API of one loaded ``libdgtune_torch.so``.

    Every method raises RuntimeError with ``dgtune_torch_last_error()`` when the C function returns nonzero.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        lib = ctypes.CDLL(self.path)
        c_int, c_char_p, c_size_t = ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t
        lib.dgtune_torch_configure.argtypes = [c_char_p]
        lib.dgtune_torch_configure.restype = c_int
        lib.dgtune_torch_choose.argtypes = [c_int, c_char_p, c_char_p, c_size_t]
        lib.dgtune_torch_choose.restype = c_int
        lib.dgtune_torch_warmup.argtypes = [c_int, c_char_p, c_char_p, c_size_t]
        lib.dgtune_torch_warmup.restype = c_int
        lib.dgtune_torch_stats.argtypes = [c_int, c_char_p, c_size_t]
        lib.dgtune_torch_stats.restype = c_int
        lib.dgtune_torch_last_error.argtypes = []
        lib.dgtune_torch_last_error.restype = c_char_p
        lib.dgtune_torch_version.argtypes = []
        lib.dgtune_torch_version.restype = c_char_p
        # Bound when present: a library built before it existed still loads (grouped_choice then says so).
        self._grouped_choice = getattr(lib, "dgtune_torch_grouped_choice", None)
        if self._grouped_choice is not None:
            self._grouped_choice.argtypes = [c_int, c_char_p, c_char_p, c_size_t]
            self._grouped_choice.restype = c_int
        self._lib = lib

    def _error(self, what: str) -> RuntimeError:
        raw = self._lib.dgtune_torch_last_error()
        msg = raw.decode("utf-8", "replace") if raw else "unknown error"
        return RuntimeError(f"dgtune: {what} failed: {msg}")

    def _call_json(self, what: str, fn, *args) -> dict:
        buf = ctypes.create_string_buffer(BUFFER_BYTES)
        if fn(*args, buf, BUFFER_BYTES) != 0:
            raise self._error(what)
        return json.loads(buf.value.decode("utf-8"))

    def configure(self, options: dict) -> None:
        """``dgtune_torch_configure``: replaces the per-device ``dgt::Gemm`` objects' options (see ``dgtune.load``)."""
        if self._lib.dgtune_torch_configure(json.dumps(options).encode()) != 0:
            raise self._error("configure")

    def choose(self, device: int, problem: dict) -> dict:
        """``dgtune_torch_choose``: the config the op runs for ``problem`` on ``device``."""
        return self._call_json("choose", self._lib.dgtune_torch_choose, int(device), json.dumps(problem).encode())

    def warmup(self, device: int, request: dict) -> dict:
        """``dgtune_torch_warmup``: warms up problem families on ``device``; returns the report."""
        return self._call_json("warmup", self._lib.dgtune_torch_warmup, int(device), json.dumps(request).encode())

    def stats(self, device: int) -> dict:
        """``dgtune_torch_stats``: counters of ``device``'s ``dgt::Gemm`` and of the op."""
        return self._call_json("stats", self._lib.dgtune_torch_stats, int(device))

    def grouped_choice(self, device: int, problem: dict) -> dict:
        """``dgtune_torch_grouped_choice``: the config of the grouped GEMM an op call made for ``problem``."""
        if self._grouped_choice is None:
            raise RuntimeError(f"dgtune: grouped_choice failed: {self.path} has no dgtune_torch_grouped_choice "
                               "(built before it existed); rebuild the package")
        return self._call_json("grouped_choice", self._grouped_choice, int(device), json.dumps(problem).encode())

    def version(self) -> str:
        raw = self._lib.dgtune_torch_version()
        return raw.decode() if raw else ""


_state = {"tried": False, "path": None, "control": None, "error": None}


def load() -> bool:
    """Loads the native library once (later calls return the first result). Returns ``available()``.

    A missing library is silent (a source checkout or a CPU machine); a library that exists but fails to load warns
    once with the reason. Either way the CUDA kernels of the ops then raise RuntimeError saying what is missing.
    """
    if _state["tried"]:
        return _state["control"] is not None
    _state["tried"] = True
    path = lib_path()
    _state["path"] = path
    if not path.is_file():
        _state["error"] = f"the native library {path} does not exist"
    else:
        try:
            torch.ops.load_library(str(path))
            _state["control"] = Control(path)
        except (OSError, RuntimeError, AttributeError) as e:  # AttributeError: a symbol of the control API missing
            _state["error"] = f"the native library {path} did not load: {e}"
            warnings.warn(f"dgtune: {_state['error']}; the dgtune ops cannot run", RuntimeWarning, stacklevel=2)
    if _state["control"] is None:
        _ops.register_missing_kernels(f"{_state['error']}; {BUILD_HINT}")
        _grouped_ops.register_missing_kernels(f"{_state['error']}; {BUILD_HINT}")
        return False
    return True


def available() -> bool:
    """True when ``libdgtune_torch.so`` loaded (the ops have CUDA kernels and the control API works)."""
    return _state["control"] is not None


def load_error() -> str | None:
    """Why the native library is not available (None when it is, or before ``load()``)."""
    return _state["error"]


def require() -> Control:
    """The control API; raises RuntimeError naming the path looked at and how to build when the library is missing."""
    control = _state["control"]
    if control is None:
        if not _state["tried"]:
            load()
            control = _state["control"]
        if control is None:
            raise RuntimeError(f"dgtune: {_state['error']}; {BUILD_HINT}")
    return control
