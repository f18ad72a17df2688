"""The op schemas of the grouped (MoE) GEMMs, their rules and their fake (meta) implementations.

Two out-variant ops (they write ``out`` and return nothing, as DeepGEMM's calls do)::

    dgtune::m_grouped_scaled_mm_contiguous(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, Tensor(a!) out,
        Tensor m_indices) -> ()
    dgtune::m_grouped_scaled_mm_masked(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, Tensor(a!) out,
        Tensor masked_m, int expected_m) -> ()

``check_grouped`` is every rule of both; the fake implementations call it, so a call the CUDA kernel
(``python/csrc/grouped_op.cpp``, the same rules in ``grouped_plan.cpp``) refuses is refused under ``torch.compile``
tracing and on meta tensors too, with the same message. It reads sizes, strides, dtypes, devices and storage offsets
only, never data.

Layouts (DeepGEMM's m-grouped layouts; ``KG = ceil(K / 128)``, ``NB = ceil(N / 128)``, ``KP = round_up(KG, 4)``):

- contiguous: a [M_sum, K], b [G, N, K], out [M_sum, N], m_indices int32 [M_sum] (each row's group, -1 = a padding
  row, never written). Each group's rows start at a multiple of 128, so M_sum is a multiple of 128 (0: nothing runs).
- masked: a [G, M_max, K], b [G, N, K], out [G, M_max, N], masked_m int32 [G] (group g's real rows are its first
  masked_m[g]); M_max a multiple of 128; expected_m >= 1 is a hint (grid size only).
- a, b: float8_e4m3fn, contiguous; out: bfloat16, contiguous; K a multiple of 16 (16-byte rows for TMA).
- scales, float32, either both one element (per-tensor, shared by all groups) or blocks:
  a_scale 1x128 blocks, M-major and TMA-aligned (``dgtune.get_col_major_tma_aligned_tensor``): contiguous
  [M_sum, KG] with strides (1, M_sum), masked [G, M_max, KG] with strides (KG * M_max, 1, M_max);
  b_scale 128x128 blocks [G, NB, KG] with strides (NB * KP, KP, 1) (a contiguous tensor when KG % 4 == 0).
- every tensor on one CUDA device; a, b, out and block scales 16-byte aligned (TMA, cp.async.bulk).
"""

from __future__ import annotations

import torch

__all__ = [
    "CONTIGUOUS_SCHEMA",
    "MASKED_SCHEMA",
    "GroupedRuleError",
    "check_grouped",
    "grouped_scale_strides",
]

CONTIGUOUS = "m_grouped_scaled_mm_contiguous"
MASKED = "m_grouped_scaled_mm_masked"
CONTIGUOUS_SCHEMA = (
    f"{CONTIGUOUS}(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, Tensor(a!) out, Tensor m_indices) -> ()"
)
MASKED_SCHEMA = (
    f"{MASKED}(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, Tensor(a!) out, Tensor masked_m, "
    "int expected_m) -> ()"
)
ROW_ALIGN = 128  # DeepGEMM's Hopper m-alignment: a contiguous group's segment and masked M_max are multiples of it

_lib = torch.library.Library("dgtune", "FRAGMENT")  # noqa: kept alive for the process: owns the definitions
_lib.define(CONTIGUOUS_SCHEMA)
_lib.define(MASKED_SCHEMA)


class GroupedRuleError(RuntimeError):
    """A broken rule of a grouped call. ``rule`` names it ("dtype", "shape", "stride", "device", "align", "m-align",
    "k", "scale", "expected_m"); the message starts with "dgtune.<op>: " and names the argument."""

    def __init__(self, op: str, rule: str, message: str):
        super().__init__(f"dgtune.{op}: {message}")
        self.rule = rule


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def grouped_scale_strides(masked: bool, groups: int, m: int, n: int, k: int) -> tuple[tuple, tuple]:
    """The strides (in floats) the block scales must have: ``(a_scale strides, b_scale strides)``.

    ``m`` is M_sum (contiguous) or M_max (masked); a multiple of 128, so the TMA-aligned leading dimension of the
    M-major a_scale is m itself.
    """
    kg, nb = _ceil_div(k, 128), _ceil_div(n, 128)
    kp = (kg + 3) // 4 * 4
    sa = (kg * m, 1, m) if masked else (1, m)
    return sa, (nb * kp, kp, 1)


def _strides_match(t: torch.Tensor, strides: tuple) -> bool:
    # A size-1 dimension's stride is irrelevant to the addresses the kernel reads.
    return all(size == 1 or st == want for size, st, want in zip(t.shape, t.stride(), strides))


def check_grouped(
    masked: bool,
    a: torch.Tensor,
    a_scale: torch.Tensor,
    b: torch.Tensor,
    b_scale: torch.Tensor,
    out: torch.Tensor,
    layout: torch.Tensor,
    expected_m: int = 0,
) -> str:
    """Checks every rule of a grouped call; returns its scale mode, "block" or "per-tensor".

    Args: as ``dgtune.m_grouped_scaled_mm_contiguous`` / ``_masked`` (``layout`` is m_indices or masked_m).

    Raises:
        GroupedRuleError: the first rule broken, in this order: dimensions, dtypes, one CUDA-or-meta device for all,
        shapes (b's G, K; out's; the layout's), M a multiple of 128, K a multiple of 16, expected_m >= 1 (masked),
        contiguity of a, b, out and the layout, the scales (both one element, or the block shapes and strides),
        16-byte alignment.
    """
    op = MASKED if masked else CONTIGUOUS
    layout_name = "masked_m" if masked else "m_indices"

    def fail(rule: str, msg: str):
        raise GroupedRuleError(op, rule, msg)

    a_dim, o_dim = (3, 3) if masked else (2, 2)
    for name, t, want in (("a", a, a_dim), ("b", b, 3), ("out", out, o_dim), (layout_name, layout, 1)):
        if t.dim() != want:
            fail("shape", f"{name} must be {want}-D, got shape {tuple(t.shape)}")
    for name, t, want in (("a", a, torch.float8_e4m3fn), ("b", b, torch.float8_e4m3fn), ("out", out, torch.bfloat16),
                          ("a_scale", a_scale, torch.float32), ("b_scale", b_scale, torch.float32),
                          (layout_name, layout, torch.int32)):
        if t.dtype != want:
            fail("dtype", f"{name} must be {str(want).replace('torch.', '')}, got {str(t.dtype).replace('torch.', '')}")
    dev = a.device
    for name, t in (("a_scale", a_scale), ("b", b), ("b_scale", b_scale), ("out", out), (layout_name, layout)):
        if t.device != dev:
            fail("device", f"Expected all tensors to be on the same device, but found at least two devices, {dev} (a) "
                 f"and {t.device} ({name})")
    groups, n, k = b.shape
    if not 1 <= groups <= 4096:
        fail("shape", f"b's G = {groups} must be in 1 .. 4096 (b is [G, N, K])")
    if masked:
        if a.size(0) != groups:
            fail("shape", f"a has {a.size(0)} groups, b has {groups} (a [G, M_max, K], b [G, N, K])")
        m = a.size(1)
        want_out = (groups, m, n)
    else:
        m = a.size(0)
        want_out = (m, n)
    if a.size(-1) != k:
        fail("shape", f"a's K = {a.size(-1)} differs from b's K = {k} (b is [G, N, K])")
    if tuple(out.shape) != want_out:
        fail("shape", f"out must be {list(want_out)}, got {list(out.shape)}")
    want_layout = groups if masked else m
    if layout.size(0) != want_layout:
        fail("shape", f"{layout_name} must have {want_layout} entries ({'G' if masked else 'M_sum'}), got "
             f"{layout.size(0)}")
    if m % ROW_ALIGN != 0 or (masked and m == 0):
        what = "M_max (a.size(1))" if masked else "M_sum (a.size(0))"
        fail("m-align", f"{what} = {m} must be a {'positive ' if masked else ''}multiple of {ROW_ALIGN} (each group's "
             "rows are whole 128-row blocks)")
    if k % 16 != 0 or k == 0:
        fail("k", f"K = {k} must be a positive multiple of 16 (16-byte rows of a and b for TMA)")
    if masked and expected_m < 1:
        fail("expected_m", f"expected_m = {expected_m} must be >= 1")
    for name, t in (("a", a), ("b", b), ("out", out), (layout_name, layout)):
        if not t.is_contiguous():
            fail("stride", f"{name} must be contiguous, got strides {tuple(t.stride())}")
    if a_scale.numel() == 1 and b_scale.numel() == 1:
        mode = "per-tensor"
    else:
        mode = "block"
        kg, nb = _ceil_div(k, 128), _ceil_div(n, 128)
        want_sa = (groups, m, kg) if masked else (m, kg)
        want_sb = (groups, nb, kg)
        if tuple(a_scale.shape) != want_sa:
            fail("scale", f"a_scale must be {list(want_sa)} (1x128 blocks of a) or one element with b_scale, got "
                 f"{list(a_scale.shape)}")
        if tuple(b_scale.shape) != want_sb:
            fail("scale", f"b_scale must be {list(want_sb)} (128x128 blocks of b) or one element with a_scale, got "
                 f"{list(b_scale.shape)}")
        sa, sb = grouped_scale_strides(masked, groups, m, n, k)
        if not _strides_match(a_scale, sa):
            fail("scale", f"a_scale must be M-major and TMA-aligned with strides {sa}, got {tuple(a_scale.stride())} "
                 "(dgtune.get_col_major_tma_aligned_tensor makes one)")
        if not _strides_match(b_scale, sb):
            fail("scale", f"b_scale must have strides {sb} (rows of ceil(K/128) scales padded to 16 bytes), got "
                 f"{tuple(b_scale.stride())}")
    # Alignment as far as a fake tensor can tell (storage offsets; a real allocation is 256-byte aligned). The native
    # op checks the data pointers themselves.
    aligned = [("a", a, 16), ("b", b, 16), ("out", out, 16), (layout_name, layout, 4)]
    if mode == "block":
        aligned += [("a_scale", a_scale, 16), ("b_scale", b_scale, 16)]
    for name, t, align in aligned:
        if (t.storage_offset() * t.element_size()) % align != 0:
            fail("align", f"{name}'s data must be {align}-byte aligned (storage_offset {t.storage_offset()})")
    return mode


@torch.library.register_fake(f"dgtune::{CONTIGUOUS}", lib=_lib)
def _contiguous_fake(a, a_scale, b, b_scale, out, m_indices):
    check_grouped(False, a, a_scale, b, b_scale, out, m_indices)


@torch.library.register_fake(f"dgtune::{MASKED}", lib=_lib)
def _masked_fake(a, a_scale, b, b_scale, out, masked_m, expected_m):
    check_grouped(True, a, a_scale, b, b_scale, out, masked_m, expected_m)


# CPU kernels (the ops run on CUDA only) and, when the native library did not load, CUDA kernels that say why.
_impl_lib = torch.library.Library("dgtune", "IMPL")


def _cpu_contiguous(a, a_scale, b, b_scale, out, m_indices):
    check_grouped(False, a, a_scale, b, b_scale, out, m_indices)
    raise GroupedRuleError(CONTIGUOUS, "device", f"runs on CUDA tensors only, got tensors on {a.device}")


def _cpu_masked(a, a_scale, b, b_scale, out, masked_m, expected_m):
    check_grouped(True, a, a_scale, b, b_scale, out, masked_m, expected_m)
    raise GroupedRuleError(MASKED, "device", f"runs on CUDA tensors only, got tensors on {a.device}")


_impl_lib.impl(CONTIGUOUS, _cpu_contiguous, "CPU")
_impl_lib.impl(MASKED, _cpu_masked, "CPU")


def register_missing_kernels(message: str) -> None:
    """CUDA kernels that raise ``RuntimeError(message)``; only called when the native library is missing."""
    for name in (CONTIGUOUS, MASKED):

        def missing(*args, _name=name, **kwargs):
            raise RuntimeError(f"dgtune.{_name}: {message}")

        _impl_lib.impl(name, missing, "CUDA")
