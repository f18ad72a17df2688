"""Recipe inference: which scaling recipe a ``torch._scaled_mm``-style call uses, and which scales need a copy.

``infer_recipe`` is the single place the package decides the recipe from the scale shapes. It follows the order of
``torch/_meta_registrations.py`` ``_check_scaled_mm_sizes`` (torch 2.11): scalars first, then (M, 1) x (1, N), then
the block shapes. The fake implementation (``_ops.py``), ``patch_scaled_mm`` and the tests use it; the CUDA kernel in
``python/csrc/`` applies the same rules in C++.

It reads only sizes, strides, dtypes and storage offsets, never data, so it works on meta and fake tensors.

Notation: ``a`` is [M, K], ``b`` is [K, N], ``G = ceil(K / 128)``, ``round_up(x, 4)`` pads a row of floats to 16 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Recipe", "RuleError", "infer_recipe", "block_scale_strides", "PREFIX"]

PREFIX = "dgtune.scaled_mm: "


class RuleError(RuntimeError):
    """The RuntimeError a broken rule raises; ``rule`` names the rule (e.g. "layout-a", "recipe", "bias"), which
    ``patch_scaled_mm`` counts as its fallback reason. The message starts with "dgtune.scaled_mm: "."""

    def __init__(self, rule: str, message: str):
        super().__init__(PREFIX + message)
        self.rule = rule


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def _round_up4(x: int) -> int:
    return (x + 3) // 4 * 4


@dataclass(frozen=True)
class Recipe:
    """The recipe of one call.

    Attributes:
        name: torch's recipe name: ``"tensorwise"``, ``"rowwise"``, ``"blockwise_1x128_128x128"``,
            ``"blockwise_1x128_1x128"`` or ``"blockwise_128x128_1x128"`` (the last one torch runs and dgtune does not;
            ``supported`` is False for it).
        mode: dgtune's scale mode (``dgt::Fp8Scaling``): ``"per-tensor"``, ``"channel"``, ``"block"``,
            ``"block1d1d"``; ``None`` for an unsupported recipe.
        copy_scale_a: the op copies ``scale_a`` before the launch: any recipe when its data is not 16-byte aligned
            (storage offset not a multiple of 4 floats); block modes also for strides other than
            ``(1, round_up(M, 4))``, and with G == 1 when M % 4 != 0 (see ``block_scale_strides``).
        copy_scale_b: the same for ``scale_b``.
    """

    name: str
    mode: str | None
    copy_scale_a: bool = False
    copy_scale_b: bool = False

    @property
    def supported(self) -> bool:
        return self.mode is not None

    @property
    def is_block(self) -> bool:
        return self.mode in ("block", "block1d1d")


def block_scale_strides(mode: str, m: int, n: int, k: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The strides (in floats) of ``scale_a`` and ``scale_b`` that a block mode reads without a copy.

    Args:
        mode: ``"block"`` (scale_a (M, G), scale_b (G, ceil(N/128))) or ``"block1d1d"`` (scale_a (M, G),
            scale_b (G, N)).
        m, n, k: the problem.

    Returns:
        ``((sa_stride0, sa_stride1), (sb_stride0, sb_stride1))``:
        - scale_a (M, G): ``(1, round_up(M, 4))`` (MN-major, each k granule's M scales padded to 16 bytes);
        - block scale_b (G, ceil(N/128)): ``(1, round_up(G, 4))``;
        - block1d1d scale_b (G, N): ``(round_up(N, 4), 1)``: G rows of N scales, each padded to 16 bytes
          (``dgt::Fp8Scaling::kBlock1d1d``: sb(g, n) at ``g * round_up(N, 4) + n``).
    """
    g = _ceil_div(k, 128)
    sa = (1, _round_up4(m))
    if mode == "block":
        sb = (1, _round_up4(g))
    elif mode == "block1d1d":
        sb = (_round_up4(n), 1)
    else:
        raise ValueError(f"block_scale_strides: mode must be 'block' or 'block1d1d', got {mode!r}")
    return sa, sb


def _aligned(t: torch.Tensor) -> bool:
    """16-byte aligned data, as far as a fake tensor can tell: storage_offset a multiple of 4 floats (the allocation
    itself is 16-byte aligned for every tensor from PyTorch's caching allocator; the CUDA kernel checks the pointer)."""
    return t.storage_offset() % 4 == 0


def _layout_ok(t: torch.Tensor, strides: tuple[int, int], rows: int, cols: int) -> bool:
    """True when the block scale ``t`` (2-D float32) can be read in place: the kernel's layout is ``rows`` rows of
    ``round_up(cols, 4)`` floats, ``t`` is a view of it with these strides (a stride of a size-1 dim is free), aligned.
    With one row and ``cols % 4 != 0`` it is copied: the kernel reads whole 16-byte rows, and nothing shows that the
    padding floats past the tensor's last element exist."""
    if not _aligned(t):
        return False
    if rows == 1 and cols % 4 != 0:
        return False
    for d in (0, 1):
        if t.size(d) != 1 and t.stride(d) != strides[d]:
            return False
    return True


def infer_recipe(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    use_fast_accum: bool = False,
) -> Recipe:
    """The recipe of ``scaled_mm(a, b, scale_a, scale_b, ...)`` from the scale shapes, in torch's order.

    Args:
        a: [M, K] (only ``size(0)``, ``size(1)`` are read; must be 2-D).
        b: [K, N] (only ``size(1)`` is read; must be 2-D).
        scale_a, scale_b: float32 scales (sizes, strides, storage offsets and dtypes are read, never data).
        use_fast_accum: block recipes refuse it.

    Returns:
        A ``Recipe`` (an unsupported one only for torch's 128x128 x 1x128 recipe, with ``mode`` None).

    Raises:
        RuntimeError ("dgtune.scaled_mm: ..."): the scales are not float32; a non-scalar scale is not 2-D; the shapes
        match no recipe (the message lists the accepted shapes, like torch's "Invalid scaling configuration");
        row-wise scales that are not contiguous; a block recipe with ``use_fast_accum=True``.

    Order (torch's ``_check_scaled_mm_sizes``):
        1. ``scale_a.numel() == 1 and scale_b.numel() == 1`` -> tensorwise (both float32).
        2. both float32 and 2-D, then: (M, 1) & (1, N) -> rowwise; (M, G) & (G, ceil(N/128)) -> 1x128 x 128x128
           (block); (M, G) & (G, N) -> 1x128 x 1x128 (block1d1d); (ceil(M/128), G) & (G, N) -> 128x128 x 1x128
           (unsupported). The first match wins, so e.g. K <= 128 with (M, 1) & (1, N) is rowwise.
    """
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
            raise RuleError(
            "scale-dtype",
                "for tensorwise scaling, both scale_a and scale_b must be float32 tensors, got "
                f"scale_a.dtype={scale_a.dtype} and scale_b.dtype={scale_b.dtype}"
            )
        return Recipe("tensorwise", "per-tensor", not _aligned(scale_a), not _aligned(scale_b))
    if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
        raise RuleError(
            "scale-dtype",
            "scales must be float32 tensors (dgtune supports no e8m0/e4m3 scales), got "
            f"scale_a.dtype={scale_a.dtype} and scale_b.dtype={scale_b.dtype}"
        )
    if scale_a.dim() != 2 or scale_b.dim() != 2:
        raise RuleError(
            "scale-dim",
            "for non-tensorwise scaling, scale tensors must be 2-D, but got "
            f"scale_a.dim()={scale_a.dim()} and scale_b.dim()={scale_b.dim()}"
        )
    m, k = a.size(0), a.size(1)
    n = b.size(1)
    g = _ceil_div(k, 128)
    nb = _ceil_div(n, 128)
    sa0, sa1 = scale_a.size(0), scale_a.size(1)
    sb0, sb1 = scale_b.size(0), scale_b.size(1)

    if sa0 == m and sa1 == 1 and sb0 == 1 and sb1 == n:
        if not (scale_a.is_contiguous() and scale_b.is_contiguous()):
            raise RuleError("rowwise-contiguous", "both scale_a and scale_b must be contiguous for rowwise scaling")
        return Recipe("rowwise", "channel", not _aligned(scale_a), not _aligned(scale_b))

    name = mode = None
    if sa0 == m and sa1 == g and sb0 == g and sb1 == nb:
        name, mode = "blockwise_1x128_128x128", "block"
    elif sa0 == m and sa1 == g and sb0 == g and sb1 == n:
        name, mode = "blockwise_1x128_1x128", "block1d1d"
    elif sa0 == _ceil_div(m, 128) and sa1 == g and sb0 == g and sb1 == n:
        return Recipe("blockwise_128x128_1x128", None)
    else:
        raise RuleError(
            "recipe",
            "invalid scaling configuration. For tensorwise scaling, both scales should be scalar. "
            f"For rowwise scaling, scale_a should be ({m}, 1), scale_b should be (1, {n}). "
            f"For (BlockWise1x128, BlockWise128x128), scale_a should be ({m}, {g}), scale_b should be ({g}, {nb}). "
            f"For (BlockWise1x128, BlockWise1x128), scale_a should be ({m}, {g}), scale_b should be ({g}, {n}). "
            f"Got scale_a.size()=({sa0}, {sa1}) and scale_b.size()=({sb0}, {sb1})"
        )
    if use_fast_accum:
        raise RuleError(
            "fast-accum-block",
            f"use_fast_accum=True is not supported with block scaling ({name}): the block modes apply the "
            "scales as each 128-wide k granule is promoted to FP32"
        )
    sa_strides, sb_strides = block_scale_strides(mode, m, n, k)
    # the kernel's layouts (gemm.hpp Fp8Scaling): scale_a G rows of M; scale_b ceil(N/128) rows of G (block) or
    # G rows of N (block1d1d)
    sb_rows, sb_cols = (nb, g) if mode == "block" else (g, n)
    return Recipe(name, mode, not _layout_ok(scale_a, sa_strides, g, m),
                  not _layout_ok(scale_b, sb_strides, sb_rows, sb_cols))
