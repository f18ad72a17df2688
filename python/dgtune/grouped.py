"""Grouped (MoE) FP8 GEMMs with DeepGEMM's m-grouped argument conventions, on dgtune's grouped kernel.

A DeepGEMM call switches by unpacking its (tensor, scales) tuples::

    deep_gemm.m_grouped_fp8_gemm_nt_contiguous((a, sa), (b, sb), out, m_indices)
    dgtune.m_grouped_scaled_mm_contiguous(a, sa, b, sb, out, m_indices)

    deep_gemm.m_grouped_fp8_gemm_nt_masked((a, sa), (b, sb), out, masked_m, expected_m)
    dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, expected_m)

Both run ``torch.ops.dgtune.m_grouped_scaled_mm_contiguous`` / ``_masked`` (``_grouped_ops.py``: schemas, rules, fake
implementations), which torch.compile traces and CUDA graphs capture. Each distinct problem (layout, G, M_sum or
M_max, expected_m, N, K, scale mode) gets its own ``dgt::GroupedGemm`` on its first call, which compiles or loads
the kernel: make that first call before capturing a graph (a first call inside a capture raises RuntimeError rather
than load a module there). Later calls launch with no synchronisation and no allocation.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import torch

from . import _native
from ._grouped_ops import grouped_scale_strides

__all__ = [
    "m_grouped_scaled_mm_contiguous",
    "m_grouped_scaled_mm_masked",
    "get_col_major_tma_aligned_tensor",
    "grouped_choice",
    "GroupedChoice",
    "warmup_grouped",
]

_TMA_ALIGN_BYTES = 16


def get_col_major_tma_aligned_tensor(x: torch.Tensor) -> torch.Tensor:
    """An M-major, TMA-aligned copy of activation scales (DeepGEMM's helper of the same name).

    Args:
        x: float32 scales [M, KG] or [G, M, KG] (one per 1x128 block of the activations), in any strides.

    Returns:
        A tensor equal to ``x`` with the same shape, whose M dimension is contiguous (``stride(-2) == 1``) and whose
        KG columns start every ``aligned_m = round_up(M, 4)`` floats (``stride(-1) == aligned_m``: 16-byte aligned
        columns for TMA), batches ``aligned_m * KG`` floats apart. ``x`` itself when it already has that layout.
        For M a multiple of 128 (what the grouped ops take) aligned_m == M.

    Raises:
        ValueError: ``x`` is not 2-D or 3-D, or not float32.
    """
    if x.dim() not in (2, 3):
        raise ValueError(f"get_col_major_tma_aligned_tensor: x must be 2-D or 3-D, got shape {tuple(x.shape)}")
    if x.dtype != torch.float32:
        raise ValueError(f"get_col_major_tma_aligned_tensor: x must be float32, got {x.dtype}")
    squeeze = x.dim() == 2
    x3 = x.unsqueeze(0) if squeeze else x
    b, m, kg = x3.shape
    per = _TMA_ALIGN_BYTES // x.element_size()
    aligned_m = (m + per - 1) // per * per
    want = (aligned_m * kg, 1, aligned_m)
    if all(size == 1 or st == w for size, st, w in zip(x3.shape, x3.stride(), want)):
        return x
    # Storage [B, KG, aligned_m] row-major: its transpose is [B, aligned_m, KG] with M contiguous.
    buf = torch.empty((b, kg, aligned_m), dtype=x.dtype, device=x.device).transpose(1, 2)
    out = buf[:, :m, :]
    out.copy_(x3)
    return out[0] if squeeze else out


def _weight_scales(b_scale: torch.Tensor, masked: bool, groups: int, m: int, n: int, k: int) -> torch.Tensor:
    """b_scale in the strides the kernel reads (rows of ceil(K/128) scales padded to 16 bytes): ``b_scale`` itself
    when it has them (always for a contiguous tensor with ceil(K/128) % 4 == 0, e.g. K = 7168 or 2048), else a copy."""
    _, sb = grouped_scale_strides(masked, groups, m, n, k)
    if b_scale.dim() != 3 or all(s == 1 or st == w for s, st, w in zip(b_scale.shape, b_scale.stride(), sb)):
        return b_scale  # per-tensor, already right, or wrong in a way the op's rules report
    g, nb, kg = b_scale.shape
    buf = torch.empty((g, nb, sb[1]), dtype=b_scale.dtype, device=b_scale.device)
    view = buf[:, :, :kg]
    view.copy_(b_scale)
    return view


def _block_scales(a_scale, b_scale, masked, groups, m, n, k):
    if a_scale.numel() == 1 and b_scale.numel() == 1:
        return a_scale, b_scale  # per-tensor
    if a_scale.dim() in (2, 3) and a_scale.dtype == torch.float32:
        a_scale = get_col_major_tma_aligned_tensor(a_scale)
    if b_scale.dtype == torch.float32:
        b_scale = _weight_scales(b_scale, masked, groups, m, n, k)
    return a_scale, b_scale


def m_grouped_scaled_mm_contiguous(
    a: torch.Tensor,
    a_scale: torch.Tensor,
    b: torch.Tensor,
    b_scale: torch.Tensor,
    out: torch.Tensor,
    m_indices: torch.Tensor,
) -> None:
    """out[rows of group g] = (a[rows of g] @ b[g].T) with block or per-tensor scales; DeepGEMM's contiguous layout.

    Args:
        a: [M_sum, K] float8_e4m3fn, contiguous; each group's rows one segment starting at a multiple of 128 rows.
        a_scale: float32 [M_sum, ceil(K/128)], the scale of each 1x128 block of a (any strides: an M-major,
            TMA-aligned copy is made unless it is one already; see ``get_col_major_tma_aligned_tensor``); or one
            element together with a one-element b_scale (per-tensor).
        b: [G, N, K] float8_e4m3fn, contiguous (each group's weight K-major, as nn.Linear stores it).
        b_scale: float32 [G, ceil(N/128), ceil(K/128)], the scale of each 128x128 block of b; or one element.
        out: [M_sum, N] bfloat16, contiguous; written in place. Rows whose m_indices is -1 are never written.
        m_indices: [M_sum] int32, each row's group in [0, G) or -1 for a padding row. Read by the kernel on the
            device: the host never reads it (a CUDA graph may be replayed with other contents).

    Units: K and N in elements; M_sum a multiple of 128 (0: nothing runs); K a multiple of 16.

    Raises:
        RuntimeError: a broken rule (``_grouped_ops.GroupedRuleError``, naming the argument and the rule: dtype,
        shape, stride, device, alignment); a first call of a problem inside a CUDA-graph capture; an error of the
        kernel's compilation or launch (the message of dgt::Error).
    """
    if a.dim() == 2 and b.dim() == 3:
        a_scale, b_scale = _block_scales(a_scale, b_scale, False, b.size(0), a.size(0), b.size(1), b.size(2))
    torch.ops.dgtune.m_grouped_scaled_mm_contiguous(a, a_scale, b, b_scale, out, m_indices)


def m_grouped_scaled_mm_masked(
    a: torch.Tensor,
    a_scale: torch.Tensor,
    b: torch.Tensor,
    b_scale: torch.Tensor,
    out: torch.Tensor,
    masked_m: torch.Tensor,
    expected_m: int,
) -> None:
    """out[g, :masked_m[g]] = a[g, :masked_m[g]] @ b[g].T with block or per-tensor scales; DeepGEMM's masked layout.

    Args:
        a: [G, M_max, K] float8_e4m3fn, contiguous; M_max a multiple of 128.
        a_scale: float32 [G, M_max, ceil(K/128)] (1x128 blocks; made M-major and TMA-aligned as in the contiguous
            call), or one element together with a one-element b_scale.
        b: [G, N, K] float8_e4m3fn, contiguous.
        b_scale: float32 [G, ceil(N/128), ceil(K/128)] (128x128 blocks), or one element.
        out: [G, M_max, N] bfloat16, contiguous; rows at or past masked_m[g] are never written.
        masked_m: [G] int32 on the device, each <= M_max; read by the kernel only (graph replays may change it).
        expected_m: the expected rows per group, >= 1: sizes the persistent grid only (any masked_m is computed
            correctly); part of the problem key, so each distinct value has its own first call.

    Raises:
        RuntimeError: as ``m_grouped_scaled_mm_contiguous`` (rules: ``_grouped_ops.check_grouped``).
    """
    if a.dim() == 3 and b.dim() == 3:
        a_scale, b_scale = _block_scales(a_scale, b_scale, True, b.size(0), a.size(1), b.size(1), b.size(2))
    torch.ops.dgtune.m_grouped_scaled_mm_masked(a, a_scale, b, b_scale, out, masked_m, int(expected_m))


class GroupedChoice(NamedTuple):
    """What a grouped op runs for one problem (``dgt::GroupedGemmChoice`` and the launch's grid)."""

    config_key: str  #: the kernel config, e.g. "128x128x128_s5_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1"
    #: "db", "db-other-protocol", "ladder", "nearest" (and their "-other-protocol" forms): a tuned winner of the DB
    #: dgtune.load named; "default": the measured default rule (no winner of this layout, G, N, K, scale for this GPU)
    source: str
    grid_ctas: int  #: CTAs of each launch (the persistent grid)
    tuned_key: str = ""  #: the grouped problem key the winner was tuned on ("" unless from the DB)
    tuned_us: float = 0.0  #: its stored median time in microseconds (0 unless from the DB)
    protocol: str = ""  #: the protocol it was timed under, e.g. "cold-l2-v1" ("" unless from the DB)


def grouped_choice(layout: str, groups: int, m: int, n: int, k: int, *, expected_m: int = 0, scale: str = "block",
                   device=None) -> GroupedChoice:
    """The config ``m_grouped_scaled_mm_contiguous`` / ``_masked`` ran for a problem on ``device``.

    Reads the ``dgt::GroupedGemm`` the op's first call of that problem made (it never makes one: call the op first),
    whose config was chosen then from the DB of the ``dgtune.load`` before that call (else the default rule).

    Args:
        layout: "contiguous" or "masked".
        groups: G (b is [G, N, K]).
        m: M_sum (contiguous: a.size(0)) or M_max (masked: a.size(1)).
        n, k: one group's N and K.
        expected_m: the masked call's expected_m; 0 for contiguous.
        scale: "block" (1x128 / 128x128 scales) or "per-tensor" (one-element scales).
        device: a CUDA device, its index, or None (the current one).

    Raises:
        ValueError: layout or scale not one of the above.
        RuntimeError: no op call made this problem on that device yet, or the native library is missing.
    """
    if layout not in ("contiguous", "masked"):
        raise ValueError(f"dgtune.grouped_choice: layout must be 'contiguous' or 'masked', got {layout!r}")
    if scale not in ("block", "per-tensor"):
        raise ValueError(f"dgtune.grouped_choice: scale must be 'block' or 'per-tensor', got {scale!r}")
    from .tuner import _device_index  # the same device rule as dgtune.choose

    problem = {"layout": layout, "groups": int(groups), "m": int(m), "expected_m": int(expected_m), "n": int(n),
               "k": int(k), "scale": scale}
    return _choice_of(_native.require().grouped_choice(_device_index(device), problem))


def warmup_grouped(layout: str, groups: int, m: int, n: int, k: int, *, expected_m=0, scale: str = "block",
                   device=None) -> list[GroupedChoice]:
    """Makes the grouped op's objects for these problems now, as their first calls would: the config chosen (from the
    DB of the last ``dgtune.load``, else the default rule) and the kernel compiled or loaded (a kernel bundle first).
    Call it before capturing CUDA graphs that serve these problems: a first call inside capture is refused.

    Args:
        layout, groups, m, n, k, scale, device: as ``grouped_choice``.
        expected_m: the masked calls' expected_m, an int or a sequence of them (one object each: a serving engine
            that passes the step's expected_m warms every value it may pass); 0 for contiguous.

    Returns:
        The choice of each problem, in the order of ``expected_m``.

    Raises:
        ValueError: layout or scale not one of ``grouped_choice``'s.
        RuntimeError: the current stream is capturing a CUDA graph, the native library is missing, or the problem
            breaks a rule (the message names the field).
    """
    if layout not in ("contiguous", "masked"):
        raise ValueError(f"dgtune.warmup_grouped: layout must be 'contiguous' or 'masked', got {layout!r}")
    if scale not in ("block", "per-tensor"):
        raise ValueError(f"dgtune.warmup_grouped: scale must be 'block' or 'per-tensor', got {scale!r}")
    from .tuner import _device_index

    index = _device_index(device)
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        raise RuntimeError("dgtune.warmup_grouped: the current stream is capturing a CUDA graph; warm up before "
                           "capturing (warm-up compiles or loads kernels)")
    stream = torch.cuda.current_stream(index).cuda_stream if torch.cuda.is_available() else 0
    try:
        values = [operator.index(expected_m)]  # an int, or a numpy / torch integer
    except TypeError:
        values = [operator.index(e) for e in expected_m]
    control = _native.require()
    return [_choice_of(control.grouped_choice(index, {
        "layout": layout, "groups": int(groups), "m": int(m), "expected_m": int(e), "n": int(n), "k": int(k),
        "scale": scale, "make": True, "stream": int(stream)})) for e in values]


def _choice_of(r: dict) -> GroupedChoice:
    return GroupedChoice(str(r["config_key"]), str(r["source"]), int(r["grid_ctas"]), str(r.get("tuned_key", "")),
                         float(r.get("tuned_us", 0.0)), str(r.get("protocol", "")))
