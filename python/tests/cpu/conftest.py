"""CPU tests of the dgtune Python package: no GPU and no native library needed.

When dgtune is not installed, python/ (two levels up) is put on sys.path, so `python -m pytest python/tests/cpu`
runs from a clone. When it is installed (CI after `pip install ./python`), the installed package is tested.
"""

import importlib.util
import os
import sys

import pytest

if importlib.util.find_spec("dgtune") is None:
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import torch  # noqa: E402

import dgtune  # noqa: E402

E4M3 = torch.float8_e4m3fn
E5M2 = torch.float8_e5m2


def ceil_div(x, y):
    return -(-x // y)


def round_up4(x):
    return (x + 3) // 4 * 4


def mk_a(m, k, dtype=E4M3, device="meta", lda=None, offset=0):
    """a [M, K] row-major with row stride lda (default K), starting `offset` elements into its storage."""
    lda = k if lda is None else lda
    base = torch.empty(offset + max(m, 1) * lda, dtype=dtype, device=device)
    return base.as_strided((m, k), (lda, 1), offset)


def mk_b(k, n, dtype=E4M3, device="meta", ldb=None, offset=0):
    """b [K, N] column-major (the .t() of an [N, K] weight with row stride ldb)."""
    ldb = k if ldb is None else ldb
    base = torch.empty(offset + max(n, 1) * ldb, dtype=dtype, device=device)
    return base.as_strided((k, n), (1, ldb), offset)


def f32(*shape, device="meta", strides=None, offset=0):
    if strides is None:
        return torch.empty(shape, dtype=torch.float32, device=device)
    size = offset + 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    return torch.empty(size + 8, dtype=torch.float32, device=device).as_strided(shape, strides, offset)


def scales(recipe, m, n, k, device="meta"):
    """Scales in the layout dgtune reads without a copy."""
    g = ceil_div(k, 128)
    if recipe == "tensorwise":
        return f32(device=device), f32(device=device)
    if recipe == "rowwise":
        return f32(m, 1, device=device), f32(1, n, device=device)
    sa = f32(m, g, device=device, strides=(1, round_up4(m)))
    if recipe == "block":
        nb = ceil_div(n, 128)
        return sa, f32(g, nb, device=device, strides=(1, round_up4(g)))
    if recipe == "block1d1d":
        return sa, f32(g, n, device=device, strides=(round_up4(n), 1))
    raise ValueError(recipe)


@pytest.fixture
def clean_patch():
    dgtune.unpatch_scaled_mm()
    dgtune.reset_patch_stats()
    yield
    dgtune.unpatch_scaled_mm()
    dgtune.reset_patch_stats()
