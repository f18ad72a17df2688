"""FP8 (e4m3) quantizers in plain torch ops, with the scale layouts ``dgtune.scaled_mm`` reads without a copy.

Every quantizer computes in float32: ``scale = max(amax, AMAX_FLOOR) / 448`` per group (amax = max |x| of the
group), ``q = e4m3(clamp(x / scale, -448, 448))`` (round to nearest even; the clamp makes the cast saturating, NaN
stays NaN), so ``x ~= q * scale``. The floor keeps an all-zero group (a padding token, a zero weight block) at a
finite, nonzero scale: its codes are all 0 and its scale is ``AMAX_FLOOR / 448``.

Quantization error (information; it is not part of the GEMM bound Fp8Linear documents): for each element,
``|x - q * scale| <= scale * 2^-4 * |x / scale|`` in e4m3's normal range (3 mantissa bits, half an ulp) and
``<= scale * 2^-10`` in its subnormal range (|x / scale| < 2^-6), as long as amax >= AMAX_FLOOR.

The functions work on any device (CPU for tests, CUDA in models) and never synchronise.
"""

from __future__ import annotations

import torch

__all__ = [
    "E4M3_MAX",
    "AMAX_FLOOR",
    "quantize_tensorwise",
    "quantize_per_token",
    "quantize_1x128",
    "quantize_128x128",
    "padded_rows",
]

E4M3_MAX = 448.0
AMAX_FLOOR = 1e-12


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def _round_up(x: int, y: int) -> int:
    return _ceil_div(x, y) * y


def _cast(x32: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return (x32 / scale).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def _scale(amax: torch.Tensor) -> torch.Tensor:
    return amax.clamp(min=AMAX_FLOOR) / E4M3_MAX


def padded_rows(rows: int, cols: int, dtype: torch.dtype, device, row_align: int = 16) -> torch.Tensor:
    """An uninitialised [rows, cols] tensor whose row stride is ``round_up(cols, row_align)`` (16 e4m3 bytes: the
    row pitch TMA needs), so ``a`` of any K satisfies ``a.stride(0) % 16 == 0``. Returns the [rows, cols] view."""
    ld = _round_up(max(cols, 1), row_align)
    return torch.empty((rows, ld), dtype=dtype, device=device)[:, :cols]


def quantize_tensorwise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One scale for the whole tensor.

    Args:
        x: any shape, floating point.

    Returns:
        ``(q, scale)``: q float8_e4m3fn of x's shape (contiguous), scale a float32 0-dim tensor.
    """
    x32 = x.float()
    amax = x32.abs().amax() if x32.numel() else x32.new_zeros(())
    scale = _scale(amax)
    return _cast(x32, scale), scale


def quantize_per_token(x: torch.Tensor, *, pad_rows: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """One scale per row (token): the rowwise recipe's ``scale_a``.

    Args:
        x: [M, K] floating point.
        pad_rows: write q into rows padded to 16 bytes (``padded_rows``), so any K satisfies the op's lda rule;
            False: q is contiguous.

    Returns:
        ``(q, scale)``: q [M, K] float8_e4m3fn (row stride ``round_up(K, 16)`` when pad_rows), scale [M, 1] float32,
        contiguous.
    """
    if x.dim() != 2:
        raise ValueError(f"quantize_per_token: x must be 2-D [M, K], got shape {tuple(x.shape)}")
    x32 = x.float()
    scale = _scale(x32.abs().amax(dim=1, keepdim=True))
    q = _cast(x32, scale)
    if pad_rows and x.size(1) % 16 != 0:
        out = padded_rows(x.size(0), x.size(1), torch.float8_e4m3fn, x.device)
        out.copy_(q)
        q = out
    return q, scale


def quantize_1x128(x: torch.Tensor, *, pad_rows: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """One scale per row and 128-wide k granule: DeepSeek-V3's activation tiles (``scale_a`` of the block recipes).

    Args:
        x: [M, K] floating point (K need not be a multiple of 128; the last granule is shorter).
        pad_rows: as ``quantize_per_token``.

    Returns:
        ``(q, scale)``: q [M, K] float8_e4m3fn; scale [M, G] float32, G = ceil(K / 128), with strides
        ``(1, round_up(M, 4))``: MN-major, each granule's M scales padded to 16 bytes, the layout dgtune reads
        without a copy (equal to torch's ``(1, M)`` when M % 4 == 0).
    """
    if x.dim() != 2:
        raise ValueError(f"quantize_1x128: x must be 2-D [M, K], got shape {tuple(x.shape)}")
    m, k = x.shape
    g = _ceil_div(k, 128)
    x32 = torch.nn.functional.pad(x.float(), (0, g * 128 - k)).view(m, g, 128)
    s = _scale(x32.abs().amax(dim=2))  # [M, G]
    q = _cast(x32, s.unsqueeze(2)).view(m, g * 128)[:, :k]
    if pad_rows:
        out = padded_rows(m, k, torch.float8_e4m3fn, x.device)
        out.copy_(q)
        q = out
    else:
        q = q.contiguous()
    storage = torch.empty((g, _round_up(m, 4)), dtype=torch.float32, device=x.device)
    scale = storage[:, :m].t()
    scale.copy_(s)
    return q, scale


def quantize_128x128(w: torch.Tensor, *, pad_rows: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """One scale per 128 x 128 block: DeepSeek-V3's weight blocks.

    Args:
        w: [N, K] floating point (a weight; N and K need not be multiples of 128).
        pad_rows: as ``quantize_per_token`` (then ``q.t()`` has a column stride that is a multiple of 16).

    Returns:
        ``(q, scale)``: q [N, K] float8_e4m3fn; scale [ceil(N/128), G] float32 with strides ``(round_up(G, 4), 1)``,
        so ``scale.t()`` (the ``scale_b`` of ``scaled_mm(a, q.t(), ...)``) is (G, ceil(N/128)) with strides
        ``(1, round_up(G, 4))``, the layout dgtune reads without a copy.
    """
    if w.dim() != 2:
        raise ValueError(f"quantize_128x128: w must be 2-D [N, K], got shape {tuple(w.shape)}")
    n, k = w.shape
    nb, g = _ceil_div(n, 128), _ceil_div(k, 128)
    w32 = torch.nn.functional.pad(w.float(), (0, g * 128 - k, 0, nb * 128 - n)).view(nb, 128, g, 128)
    s = _scale(w32.abs().amax(dim=(1, 3)))  # [Nb, G]
    q = _cast(w32, s.view(nb, 1, g, 1)).view(nb * 128, g * 128)[:n, :k]
    if pad_rows:
        out = padded_rows(n, k, torch.float8_e4m3fn, w.device)
        out.copy_(q)
        q = out
    else:
        q = q.contiguous()
    storage = torch.empty((nb, _round_up(g, 4)), dtype=torch.float32, device=w.device)
    scale = storage[:, :g]
    scale.copy_(s)
    return q, scale
