"""``dgtune.scaled_mm`` and ``dgtune.scaled_mm_amax``: thin eager wrappers over ``torch.ops.dgtune``.

The ops take what ``torch._scaled_mm`` takes (a [M, K] row-major FP8, b [K, N] column-major FP8, float32 scales whose
shapes pick the recipe) and run dgtune's tuned kernel (or the cuBLASLt algorithm its DB chose) on the inputs' device
and that device's current stream. The rules are in docs/python.md and ``_ops.check_scaled_mm``.

The wrappers add only the requires-grad rule to the op: ``torch._scaled_mm`` has no derivative and raises at
backward ("derivative for aten::_scaled_mm is not implemented"); dgtune raises at the call instead, as RuntimeError.
Their host cost is measured against ``torch._scaled_mm`` (docs/python.md): the OpOverloads are looked up once, and
in eager mode the op's C++ entry point (``OpOverload._op``) is called with positional arguments, which skips one
Python frame; under ``torch.compile`` tracing the OpOverload itself is called (dynamo needs it).
"""

from __future__ import annotations

import torch

from . import _ops  # noqa: F401  (defines the schemas before the OpOverloads are looked up)

__all__ = ["scaled_mm", "scaled_mm_amax"]

_SCALED_MM = torch.ops.dgtune.scaled_mm.default
_SCALED_MM_OUT = torch.ops.dgtune.scaled_mm_out.default
_SCALED_MM_AMAX = torch.ops.dgtune.scaled_mm_amax.default
# The C++ entry points (what OpOverload.__call__ forwards to); fall back to the OpOverload if a torch lacks _op.
_SCALED_MM_C = getattr(_SCALED_MM, "_op", _SCALED_MM)
_SCALED_MM_OUT_C = getattr(_SCALED_MM_OUT, "_op", _SCALED_MM_OUT)
_SCALED_MM_AMAX_C = getattr(_SCALED_MM_AMAX, "_op", _SCALED_MM_AMAX)
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_BF16 = torch.bfloat16


def _grad_error(a, b, scale_a, scale_b, bias, scale_result):
    names = [n for n, t in (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias),
                            ("scale_result", scale_result)) if t is not None and t.requires_grad]
    return RuntimeError(
        "dgtune.scaled_mm: has no backward, but grad mode is on and " + ", ".join(names) + " require grad "
        "(torch._scaled_mm fails at backward with 'derivative for aten::_scaled_mm is not implemented'); "
        "call it under torch.no_grad() or detach the inputs"
    )


def scaled_mm(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    bias: torch.Tensor | None = None,
    scale_result: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = _BF16,
    use_fast_accum: bool = False,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """D = (scale_a * scale_b * (a @ b) [+ bias]) in ``out_dtype``, with dgtune's tuned FP8 GEMM.

    Args:
        a: [M, K] float8_e4m3fn or float8_e5m2, row-major; row stride (``a.stride(0)``) >= K and a multiple of 16,
            data 16-byte aligned. Any M, K >= 1 (K need not be a multiple of 16 when the rows are padded).
        b: [K, N] float8_e4m3fn or float8_e5m2, column-major (the ``.t()`` of an [N, K] K-major weight); column
            stride >= K and a multiple of 16, data 16-byte aligned. Any N.
        scale_a, scale_b: float32; the shapes pick the recipe as in ``torch._scaled_mm``:
            scalars (tensorwise), (M, 1) & (1, N) (rowwise, contiguous), (M, G) & (G, ceil(N/128)) (1x128 x 128x128
            blocks), (M, G) & (G, N) (1x128 x 1x128 blocks), G = ceil(K/128). Block scales in another layout than
            the one the kernel reads are copied by the op (docs/python.md "Recipes").
        bias: optional contiguous bfloat16 [N], added before the output conversion.
        scale_result: float8_e4m3fn output only: optional float32 scalar s, D = e4m3(s * result) (None: 1.0).
        out_dtype: torch.bfloat16 (default; None means bfloat16 too), torch.float32 or torch.float8_e4m3fn.
        use_fast_accum: accumulate all of K in the tensor cores' accumulator (tensorwise/rowwise only).
        out: optional [M, N] output of dtype ``out_dtype`` (None: ``out.dtype``), ``stride(1) == 1`` and
            ``stride(0) >= N`` (a column slice of a wider buffer is fine); it is written and returned.

    Returns:
        The [M, N] result (``out`` when given), on a's device.

    Raises:
        RuntimeError ("dgtune.scaled_mm: ..."): a rule of docs/python.md "Errors" is broken, the native library is
        missing (CUDA tensors) or the tensors are not on CUDA; grad mode is on and an input requires grad (no backward).
    """
    if _grad_enabled() and (
        a.requires_grad or b.requires_grad or scale_a.requires_grad or scale_b.requires_grad
        or (bias is not None and bias.requires_grad) or (scale_result is not None and scale_result.requires_grad)
    ):
        raise _grad_error(a, b, scale_a, scale_b, bias, scale_result)
    if out is None:
        if _is_compiling():
            return _SCALED_MM(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
        return _SCALED_MM_C(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
    if _is_compiling():
        _SCALED_MM_OUT(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out)
    else:
        _SCALED_MM_OUT_C(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out)
    return out


def scaled_mm_amax(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    bias: torch.Tensor | None = None,
    scale_result: torch.Tensor | None = None,
    use_fast_accum: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """e4m3 output with its amax: ``(D, amax)``.

    D [M, N] float8_e4m3fn = e4m3(scale_result * r), rounded to nearest even and saturated at +-448, where r is what
    ``scaled_mm`` computes in FP32 (scales and bias applied); amax is a float32 0-dim tensor = max |r| over D, taken
    before scale_result (the value a delayed-scaling recipe turns into the next scale_result). Arguments, rules and
    errors as ``scaled_mm`` with ``out_dtype=torch.float8_e4m3fn``.
    """
    if _grad_enabled() and (
        a.requires_grad or b.requires_grad or scale_a.requires_grad or scale_b.requires_grad
        or (bias is not None and bias.requires_grad) or (scale_result is not None and scale_result.requires_grad)
    ):
        raise _grad_error(a, b, scale_a, scale_b, bias, scale_result)
    if _is_compiling():
        return _SCALED_MM_AMAX(a, b, scale_a, scale_b, bias, scale_result, use_fast_accum)
    return _SCALED_MM_AMAX_C(a, b, scale_a, scale_b, bias, scale_result, use_fast_accum)
