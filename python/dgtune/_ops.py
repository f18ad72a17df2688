"""The op schemas of ``torch.ops.dgtune`` and their fake (meta) implementations.

The schemas are defined here in Python (``torch.library``) so that ``import dgtune`` works and fake/meta tensors are
handled on a machine without the native library or a GPU; ``libdgtune_torch.so`` (``python/csrc/``, loaded by
``_native.py`` after this module) registers only the CUDA kernels. The three schemas (exactly)::

    dgtune::scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None,
        Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor
    dgtune::scaled_mm_out(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, Tensor? scale_result,
        ScalarType? out_dtype, bool use_fast_accum, Tensor(a!) out) -> ()
    dgtune::scaled_mm_amax(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None,
        Tensor? scale_result=None, bool use_fast_accum=False) -> (Tensor, Tensor)

``check_scaled_mm`` implements every rule of the shared design (docs/python.md "Errors"); the fake implementations
call it, so a call the CUDA kernel refuses is refused under ``torch.compile`` tracing and on meta tensors with the
same RuntimeError ("dgtune.scaled_mm: ..."). It reads sizes, strides, dtypes, devices and storage offsets only.
"""

from __future__ import annotations

import torch

from ._recipe import PREFIX, Recipe, RuleError, infer_recipe

__all__ = [
    "SCALED_MM_SCHEMA",
    "SCALED_MM_OUT_SCHEMA",
    "SCALED_MM_AMAX_SCHEMA",
    "FP8_DTYPES",
    "OUT_DTYPES",
    "check_scaled_mm",
    "infer_recipe",
    "Recipe",
    "RuleError",
]

SCALED_MM_SCHEMA = (
    "scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, Tensor? scale_result=None, "
    "ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor"
)
SCALED_MM_OUT_SCHEMA = (
    "scaled_mm_out(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, Tensor? scale_result, "
    "ScalarType? out_dtype, bool use_fast_accum, Tensor(a!) out) -> ()"
)
SCALED_MM_AMAX_SCHEMA = (
    "scaled_mm_amax(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
    "Tensor? scale_result=None, bool use_fast_accum=False) -> (Tensor, Tensor)"
)

FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
OUT_DTYPES = (torch.bfloat16, torch.float32, torch.float8_e4m3fn)

_lib = torch.library.Library("dgtune", "DEF")  # noqa: kept alive for the process: owns the definitions
_lib.define(SCALED_MM_SCHEMA)
_lib.define(SCALED_MM_OUT_SCHEMA)
_lib.define(SCALED_MM_AMAX_SCHEMA)


def _fail(rule: str, msg: str):
    raise RuleError(rule, msg)


def check_scaled_mm(
    a: torch.Tensor,
    b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    bias: torch.Tensor | None,
    scale_result: torch.Tensor | None,
    out_dtype: torch.dtype | None,
    use_fast_accum: bool,
    out: torch.Tensor | None = None,
) -> tuple[Recipe, torch.dtype]:
    """Checks every rule of a dgtune.scaled_mm call; returns its recipe and the output dtype.

    Args:
        a: [M, K] float8_e4m3fn or float8_e5m2, row-major (``a.stride(1) == 1`` or K == 1), ``lda = a.stride(0)``
            (M == 1: ``max(a.stride(0), K)``) ``>= K`` and a multiple of 16, ``storage_offset() % 16 == 0``.
        b: [K, N] float8_e4m3fn or float8_e5m2, column-major (``b.stride(0) == 1`` or K == 1), ``ldb = b.stride(1)``
            (N == 1: ``max(b.stride(1), K)``) ``>= K`` and a multiple of 16, ``storage_offset() % 16 == 0``.
            (M == 0 or N == 0: the result is empty, nothing is launched and the layouts of a and b are not checked.)
        scale_a, scale_b: float32; the recipe follows from their shapes (``infer_recipe``).
        bias: None or a contiguous 1-D bfloat16 tensor of N elements (any output dtype).
        scale_result: float8_e4m3fn output only: None (1.0) or a float32 tensor of one element; ignored otherwise.
        out_dtype: None (bfloat16; the out variant: ``out.dtype``), torch.bfloat16, torch.float32 or
            torch.float8_e4m3fn.
        use_fast_accum: refused with block recipes.
        out: the out variant's output: ``dtype == out_dtype``, [M, N], ``out.stride(1) == 1`` (or N == 1),
            ``ldd = out.stride(0)`` (M == 1: ``max(out.stride(0), N)``) ``>= N``.

    Returns:
        ``(recipe, dtype)``: the ``Recipe`` and the output dtype.

    Raises:
        RuntimeError: the first rule broken, in this order: 2-D operands, ``a.size(1) == b.size(0)``, FP8 operand
        dtypes, one device for every tensor ("Expected all tensors to be on the same device ..."), K > 0, the layouts
        of a and b (strides, then alignment), the recipe (``infer_recipe``; torch's 128x128 x 1x128 is refused), the output dtype,
        scale_result, bias, out. Every message starts with "dgtune.scaled_mm: ".
    """
    if a.dim() != 2 or b.dim() != 2:
        _fail("shape", f"inputs must be 2-D but got a.dim()={a.dim()} and b.dim()={b.dim()}")
    m, k = a.size(0), a.size(1)
    n = b.size(1)
    if b.size(0) != k:
        _fail("shape", f"a and b shapes cannot be multiplied ({m}x{k} and {b.size(0)}x{n})")
    if a.dtype not in FP8_DTYPES or b.dtype not in FP8_DTYPES:
        _fail("dtype", 
            "expected both inputs to be float8_e4m3fn or float8_e5m2 but got "
            f"a.dtype={a.dtype} and b.dtype={b.dtype}"
        )
    dev = a.device
    for name, t in (("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias),
                    ("scale_result", scale_result), ("out", out)):
        if t is not None and t.device != dev:
            _fail("device", 
                f"Expected all tensors to be on the same device, but found at least two devices, {dev} (a) and "
                f"{t.device} ({name})"
            )
    if k == 0:
        _fail("k0", f"K = 0 is not supported (a is {m}x0, b is 0x{n})")
    if m > 0 and n > 0:  # an empty result launches nothing: the operands' layouts are not checked
        if not (a.stride(1) == 1 or k == 1):
            _fail("layout-a", f"a must be row-major (a.stride(1) == 1), got stride {tuple(a.stride())}")
        lda = a.stride(0) if m > 1 else max(a.stride(0), k)
        if lda < k:
            _fail("layout-a", f"a's row stride lda = {lda} must be >= K = {k}")
        if lda % 16 != 0:
            _fail("layout-a", f"a's row stride lda = {lda} must be a multiple of 16 (16-byte rows for TMA)")
        if not (b.stride(0) == 1 or k == 1):
            _fail("layout-b",
                  f"b must be column-major (b.stride(0) == 1, e.g. weight.t()), got stride {tuple(b.stride())}")
        ldb = b.stride(1) if n > 1 else max(b.stride(1), k)
        if ldb < k:
            _fail("layout-b", f"b's column stride ldb = {ldb} must be >= K = {k}")
        if ldb % 16 != 0:
            _fail("layout-b", f"b's column stride ldb = {ldb} must be a multiple of 16 (16-byte rows for TMA)")
        if a.storage_offset() % 16 != 0:
            _fail("layout-a", f"a's data must be 16-byte aligned (storage_offset {a.storage_offset()} is not a multiple of 16)")
        if b.storage_offset() % 16 != 0:
            _fail("layout-b", f"b's data must be 16-byte aligned (storage_offset {b.storage_offset()} is not a multiple of 16)")

    recipe = infer_recipe(a, b, scale_a, scale_b, use_fast_accum)
    if not recipe.supported:
        # Worded as python/csrc/scaled_mm_plan.cpp words it (the GPU tests compare the two).
        _fail("recipe-128x128-1x128",
            "(BlockWise128x128, BlockWise1x128) scaling is not supported by dgtune (torch._scaled_mm runs it); "
            "dgtune runs 1x128 activations with 128x128 or 1x128 weight blocks "
            f"(got scale_a ({scale_a.size(0)}, {scale_a.size(1)}), scale_b ({scale_b.size(0)}, {scale_b.size(1)}))"
        )

    if out_dtype is None:
        dtype = out.dtype if out is not None else torch.bfloat16
    else:
        dtype = out_dtype
    if dtype not in OUT_DTYPES:
        _fail("out-dtype", f"out_dtype {str(dtype).replace('torch.', '')} is not supported (dgtune writes bfloat16, "
              "float32 or float8_e4m3fn)")
    if dtype == torch.float8_e4m3fn and scale_result is not None:
        if scale_result.numel() != 1 or scale_result.dtype != torch.float32:
            _fail("scale-result", 
                "scale_result must be a float32 tensor of one element, got "
                f"{scale_result.dtype} with {scale_result.numel()} elements"
            )
    if bias is not None:
        if bias.dtype != torch.bfloat16:
            _fail("bias", f"bias must be torch.bfloat16, got {bias.dtype}")
        if bias.dim() != 1 or bias.size(0) != n:
            _fail("bias", f"bias must be 1-D with N = {n} elements, got shape {tuple(bias.shape)}")
        if not bias.is_contiguous():
            _fail("bias", f"bias must be contiguous, got stride {tuple(bias.stride())}")
    if out is not None:
        if out.dtype != dtype:
            _fail("out", f"out.dtype = {out.dtype} must be out_dtype = {dtype}")
        if out.dim() != 2 or out.size(0) != m or out.size(1) != n:
            _fail("out", f"out must be [{m}, {n}], got {list(out.shape)}")
        if not (out.stride(1) == 1 or n == 1):
            _fail("out", f"out must be row-major (out.stride(1) == 1), got stride {tuple(out.stride())}")
        ldd = out.stride(0) if m != 1 else max(out.stride(0), n)
        if ldd < n:
            _fail("out", f"out's row stride {ldd} must be >= N = {n}")
    return recipe, dtype


@torch.library.register_fake("dgtune::scaled_mm", lib=_lib)
def _scaled_mm_fake(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
    _, dtype = check_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
    return a.new_empty((a.size(0), b.size(1)), dtype=dtype)


@torch.library.register_fake("dgtune::scaled_mm_out", lib=_lib)
def _scaled_mm_out_fake(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out):
    check_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out)


@torch.library.register_fake("dgtune::scaled_mm_amax", lib=_lib)
def _scaled_mm_amax_fake(a, b, scale_a, scale_b, bias=None, scale_result=None, use_fast_accum=False):
    check_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, torch.float8_e4m3fn, use_fast_accum)
    return (
        a.new_empty((a.size(0), b.size(1)), dtype=torch.float8_e4m3fn),
        a.new_empty((), dtype=torch.float32),
    )


# Kernels for the dispatch keys the native library does not serve. CPU always (the ops run on CUDA only); CUDA only
# when the native library did not load (_native.register_missing_kernels), so a call says why instead of torch's
# "Could not run 'dgtune::scaled_mm' with arguments from the 'CUDA' backend".
_impl_lib = torch.library.Library("dgtune", "IMPL")


def _cpu_scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
    check_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
    _fail("device", f"runs on CUDA tensors only, got tensors on {a.device} (torch._scaled_mm has a CPU kernel)")


def _cpu_scaled_mm_out(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out):
    check_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out)
    _fail("device", f"runs on CUDA tensors only, got tensors on {a.device}")


def _cpu_scaled_mm_amax(a, b, scale_a, scale_b, bias=None, scale_result=None, use_fast_accum=False):
    check_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, torch.float8_e4m3fn, use_fast_accum)
    _fail("device", f"runs on CUDA tensors only, got tensors on {a.device}")


_impl_lib.impl("scaled_mm", _cpu_scaled_mm, "CPU")
_impl_lib.impl("scaled_mm_out", _cpu_scaled_mm_out, "CPU")
_impl_lib.impl("scaled_mm_amax", _cpu_scaled_mm_amax, "CPU")


def register_missing_kernels(message: str) -> None:
    """Registers CUDA kernels that raise ``RuntimeError(message)``; only called when the native library is missing."""

    def missing(*args, **kwargs):
        raise RuntimeError(PREFIX + message)

    for name in ("scaled_mm", "scaled_mm_out", "scaled_mm_amax"):
        _impl_lib.impl(name, missing, "CUDA")
