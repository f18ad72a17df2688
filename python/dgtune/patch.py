"""``patch_scaled_mm()``: route ``torch._scaled_mm`` calls to dgtune, falling back to PyTorch for the rest.

What it reaches (docs/python.md "patch_scaled_mm"): it replaces the Python attribute ``torch._scaled_mm`` and nothing
else. So it reaches every call that looks the attribute up after patching: model code and libraries calling
``torch._scaled_mm(...)`` (torchao, vLLM, TorchTitan do), and ``torch.compile`` graphs traced after patching (dynamo
reads the attribute while tracing and records ``dgtune.scaled_mm`` in the graph; graphs compiled before are not
changed). It does NOT reach ``torch.ops.aten._scaled_mm`` (the dispatcher op: C++ callers, other libraries' C++,
decompositions, graphs that already hold the aten op) nor a reference taken before patching
(``from torch import _scaled_mm``): no dispatcher kernel is overridden, because an override of aten::_scaled_mm's
CUDA kernel would leave no way to fall back to PyTorch's own kernel.

Routing: a call is routed when dgtune can run it (``route_reason`` returns None): every tensor on one CUDA device, the
native library loaded, grad mode off or no input requiring grad, ``out_dtype`` (None means ``a.dtype``, as torch
does: e4m3 in and None gives e4m3 out) one of bf16/f32/e4m3, and every rule of ``check_scaled_mm`` (recipe from
``infer_recipe``). Everything else runs the original ``torch._scaled_mm`` and is counted in ``patch_stats()`` with
its reason. Only calls on plain tensors are counted, not the router's runs while torch.compile traces (fake or
functional tensors). Under ``torch.compile`` the router is one node of dynamo's graph that AOTAutograd traces: the
decision is made once, when the graph is compiled, for the shapes, strides and dtypes the graph is specialised to, and
the compiled graph's calls are not counted (a graph run by ``backend="eager"`` runs the router itself: counted).
"""

from __future__ import annotations

import threading
import warnings

import torch

from . import _native
from ._ops import OUT_DTYPES, check_scaled_mm
from ._recipe import RuleError
from ._scaled_mm import _SCALED_MM, _SCALED_MM_C, _SCALED_MM_OUT, _SCALED_MM_OUT_C

__all__ = ["patch_scaled_mm", "unpatch_scaled_mm", "is_patched", "patch_stats", "reset_patch_stats", "route_reason"]

# Device types routed (tests add "meta" to check decisions without a GPU).
_DEVICE_TYPES = ("cuda",)
_lock = threading.Lock()
_state = {"original": None, "patched": None}
_routers = {}  # id(original) -> (original, router): one router per original, kept alive (dynamo registers it by id)
_stats = {"routed": 0, "fallback": 0, "reasons": {}}
_is_compiling = torch.compiler.is_compiling
_PLAIN = (torch.Tensor, torch.nn.Parameter)


def route_reason(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False, out=None):
    """Why a ``torch._scaled_mm`` call is not routed to dgtune, or None when it is.

    Args: as ``torch._scaled_mm`` (``out_dtype`` None means ``a.dtype``; ``out``: the out variant's tensor).

    Returns:
        None (routed) or a reason: ``"grad"`` (grad mode on and an input requires grad), ``"device"`` (not all on one
        CUDA device), ``"native"`` (libdgtune_torch.so not loaded), ``"out-dtype"`` (an output type dgtune does not
        write: fp16, e5m2, ...), ``"not-2d"``, or the rule of ``check_scaled_mm`` that fails (``"dtype"``,
        ``"layout-a"``, ``"layout-b"``, ``"recipe"``, ``"recipe-128x128-1x128"``, ``"fast-accum-block"``, ``"bias"``,
        ``"scale-result"``, ``"scale-dtype"``, ``"scale-dim"``, ``"out"``, ``"k0"``, ...).
    """
    if torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (a, b, scale_a, scale_b, bias, scale_result)
    ):
        return "grad"
    dev = a.device
    if dev.type not in _DEVICE_TYPES:
        return "device"
    if not _native.available():
        return "native"
    if a.dim() != 2 or b.dim() != 2:
        return "not-2d"
    if out_dtype is None:
        out_dtype = out.dtype if out is not None else a.dtype
    if out_dtype not in OUT_DTYPES:
        return "out-dtype"
    try:
        check_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out)
    except RuleError as e:
        return e.rule
    return None


def _pin_dynamo_rules():
    """Makes dynamo build its map of torch.* functions now, while ``torch._scaled_mm`` is still the original.

    Dynamo (torch 2.11, ``trace_rules.get_torch_obj_rule_map``, cached on first use) looks its torch functions up by
    name. Built while the attribute is patched, the map would hold the router instead of ``aten::_scaled_mm``'s
    Python binding, and after ``unpatch_scaled_mm()`` a compiled ``torch._scaled_mm`` call would be a graph break
    (an error with ``fullgraph=True``) for the rest of the process. A torch without that function: nothing to do.
    """
    try:
        from torch._dynamo import trace_rules

        trace_rules.get_torch_obj_rule_map()
    except (ImportError, AttributeError):
        pass


def _count(reason):
    with _lock:
        if reason is None:
            _stats["routed"] += 1
        else:
            _stats["fallback"] += 1
            _stats["reasons"][reason] = _stats["reasons"].get(reason, 0) + 1


def _make_patched(original):
    def _scaled_mm(self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False,
                   *, out=None):
        """torch._scaled_mm patched by dgtune.patch_scaled_mm(): runs dgtune.scaled_mm when it can, else the
        original (see dgtune.patch)."""
        reason = route_reason(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out)
        compiling = _is_compiling()
        if not compiling and type(self) in _PLAIN:  # not while tracing (fake / functional tensors)
            _count(reason)
        if reason is not None:
            if out is None:
                return original(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
            return original(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out=out)
        if out_dtype is None:
            out_dtype = out.dtype if out is not None else self.dtype
        if out is None:
            op = _SCALED_MM if compiling else _SCALED_MM_C
            return op(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
        op = _SCALED_MM_OUT if compiling else _SCALED_MM_OUT_C
        op(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out)
        return out

    _scaled_mm.__dgtune_original__ = original
    return _scaled_mm


class _PatchHandle:
    """Returned by ``patch_scaled_mm()``; as a context manager it undoes the patch on exit if this call made it."""

    def __init__(self, made: bool):
        self.made = made

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.made:
            unpatch_scaled_mm()
        return False


def patch_scaled_mm() -> _PatchHandle:
    """Replaces ``torch._scaled_mm`` with dgtune's router (idempotent: patching twice keeps one router).

    Usable as ``with dgtune.patch_scaled_mm(): ...`` (undone on exit when this call patched). Returns the handle.
    """
    with _lock:
        if _state["patched"] is not None and torch._scaled_mm is _state["patched"]:
            return _PatchHandle(False)
        original = torch._scaled_mm
        entry = _routers.get(id(original))
        if entry is None or entry[0] is not original:
            entry = (original, _make_patched(original))
            # torch.compile: dynamo puts the router in the graph as one call instead of tracing its Python (which it
            # would do or not depending on whether its rules for torch.* were built before or after patching);
            # AOTAutograd then traces the router with fake tensors, so the compiled graph holds dgtune's op or
            # aten._scaled_mm as decided for the traced shapes, strides and dtypes.
            from torch._dynamo import allow_in_graph

            allow_in_graph(entry[1])
            _pin_dynamo_rules()
            _routers[id(original)] = entry
        patched = entry[1]
        _state["original"], _state["patched"] = original, patched
        torch._scaled_mm = patched
    return _PatchHandle(True)


def unpatch_scaled_mm() -> None:
    """Restores the original ``torch._scaled_mm`` (idempotent). If something else replaced the attribute after
    dgtune patched it, that replacement is left in place, with a warning."""
    with _lock:
        patched = _state["patched"]
        if patched is None:
            return
        if torch._scaled_mm is patched:
            torch._scaled_mm = _state["original"]
        else:
            warnings.warn(
                "dgtune.unpatch_scaled_mm: torch._scaled_mm was replaced by something else after dgtune patched it; "
                "left as it is", RuntimeWarning, stacklevel=2,
            )
        _state["original"] = _state["patched"] = None


def is_patched() -> bool:
    """True while ``torch._scaled_mm`` is dgtune's router."""
    return _state["patched"] is not None and torch._scaled_mm is _state["patched"]


def patch_stats() -> dict:
    """Eager calls since the last reset: ``{"routed": int, "fallback": int, "reasons": {reason: count}}``."""
    with _lock:
        return {"routed": _stats["routed"], "fallback": _stats["fallback"], "reasons": dict(_stats["reasons"])}


def reset_patch_stats() -> None:
    """Zeroes the counters of ``patch_stats()``."""
    with _lock:
        _stats["routed"] = _stats["fallback"] = 0
        _stats["reasons"] = {}
