"""Shared helpers of dgtune's GPU tests (python/tests/gpu): the availability gate, operands in every recipe, the FP64
reference on the same FP8 bytes and scales, and the acceptance bounds of docs/measurement.md.

Bounds (docs/measurement.md "Verification", thresholds justified in src/bench/verify.hpp). Metrics against the
reference: max_rel_err = max|d - ref| / max|ref| and diff = 1 - 2 sum(d ref) / sum(d^2 + ref^2).

  accumulation | max_rel_err | diff   | which calls
  promote      | 2^-7        | 2e-5   | tensorwise and rowwise without fast accumulation, both block recipes
  fast         | 2^-5        | 5e-4   | tensorwise / rowwise with use_fast_accum=True

The bounds depend on the accumulation mode only, not on the scale mode (per-tensor, channel, block and block1d1d
share them); bf16 and f32 output use them as they are. e4m3 output (docs/measurement.md "Output types and
epilogues"): every element within one e4m3 code of e4m3(scale_result x ref) unless it is within the FP32 tolerance
(max_rel_err(accum) x max|clamp(scale_result x ref)|); max_rel_err <= 1/8 and diff <= 5e-3 on the clamped scaled
reference; the amax within max_rel_err(accum) x max|ref| of max|ref|.

The measurement.md reference is FP32 `fmaf`; ours is FP64 (dequantised in float64 in torch), which is at least as
exact, so the same bounds apply.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

REQUIRE_ENV = "DGTUNE_REQUIRE_GPU"

E4M3_MAX = 448.0
PROMOTE = {"max_rel_err": 2.0**-7, "diff": 2e-5}
FAST = {"max_rel_err": 2.0**-5, "diff": 5e-4}
E4M3_OUT = {"max_rel_err": 1.0 / 8, "diff": 5e-3}

# torch._scaled_mm comparison: ours at most 2x torch's error. Below these floors both errors are FP32 accumulation
# noise (f32 output: ~1e-7 relative) and their ratio means nothing, so the 2x rule applies above them only.
TORCH_RATIO = 2.0
TORCH_FLOOR = {"max_rel_err": 2.0**-20, "diff": 1e-10}

RECIPES = ("tensorwise", "rowwise", "blockwise_1x128_128x128", "blockwise_1x128_1x128")
BLOCK_RECIPES = ("blockwise_1x128_128x128", "blockwise_1x128_1x128")
# The names the ctypes problem JSON uses (spec: "scale": "per-tensor"|"channel"|"block"|"block1d1d").
SCALE_NAME = {"tensorwise": "per-tensor", "rowwise": "channel", "blockwise_1x128_128x128": "block",
              "blockwise_1x128_1x128": "block1d1d"}


def why_unavailable() -> str | None:
    """None when the GPU tests can run; else why not."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return f"torch is not importable: {e!r}"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False (no CUDA device or driver)"
    try:
        import dgtune  # noqa: F401
        from dgtune import _native
    except Exception as e:  # noqa: BLE001
        return f"the dgtune package is not importable: {e!r}"
    try:
        ok = _native.available()
    except Exception as e:  # noqa: BLE001
        return f"dgtune._native.available() raised {e!r}"
    if not ok:
        detail = ""
        for name in ("load_error", "error", "why"):
            fn = getattr(_native, name, None)
            if callable(fn):
                try:
                    detail = f": {fn()}"
                except Exception:  # noqa: BLE001
                    pass
                break
        return f"dgtune's native library (libdgtune_torch.so) is not loaded{detail}"
    cap = torch.cuda.get_device_capability()
    if cap != (9, 0):
        return f"dgtune's kernels need sm_90 (Hopper); device 0 is sm_{cap[0]}{cap[1]}"
    return None


def require_gpu() -> None:
    """Call at the top of every GPU test module: skips the whole module when the GPU tests cannot run, or fails
    (a collection error naming the reason) when DGTUNE_REQUIRE_GPU=1."""
    reason = why_unavailable()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the dgtune GPU tests cannot run: {reason}", pytrace=False)
    pytest.skip(f"dgtune GPU tests skipped: {reason} (set {REQUIRE_ENV}=1 to fail instead)",
                allow_module_level=True)


# ---------------------------------------------------------------------------------------------------------------
# Operands


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def round_up(a: int, b: int) -> int:
    return cdiv(a, b) * b


def rand_values(shape, gen, device="cuda"):
    """Random float32 values over 8 binades (never zero, NaN or Inf), as docs/measurement.md's inputs."""
    import torch

    sign = torch.randint(0, 2, shape, generator=gen, device=device).float() * 2 - 1
    expo = torch.randint(-4, 4, shape, generator=gen, device=device).float()
    mant = 1 + torch.rand(shape, generator=gen, device=device)
    return sign * torch.exp2(expo) * mant


def rand_fp8(shape, dtype, gen, device="cuda"):
    return rand_values(shape, gen, device).to(dtype)


def fp8_rows(rows, cols, dtype, gen, pad_to=16, ld=None, device="cuda"):
    """A row-major [rows, cols] FP8 tensor whose row stride is `ld` (default: cols rounded up to 16): a strided slice
    of a wider tensor whose padding columns hold NaN (as docs/measurement.md's inputs), so reading them shows."""
    ld = ld if ld is not None else round_up(cols, pad_to)
    full = rand_values((rows, ld), gen, device)
    if ld > cols:
        full[:, cols:] = float("nan")
    return full.to(dtype)[:, :cols]


def scales_tensor(shape, gen, lo=0.25, hi=4.0, device="cuda"):
    """Realistic positive float32 scales, not powers of two (so the product's rounding is exercised)."""
    import torch

    return (lo + (hi - lo) * torch.rand(shape, generator=gen, device=device)).float()


def empty_strided_copy(t, stride):
    """A copy of `t` with the given strides (the padding elements are NaN, so reading them shows)."""
    import torch

    size = t.shape
    extent = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if t.numel() else 0
    buf = torch.full((max(extent, 1),), float("nan"), dtype=t.dtype, device=t.device)
    out = buf.as_strided(size, stride)
    out.copy_(t)
    return out


def dgtune_scale_layout(recipe, sa, sb, m, n, k):
    """The scale layouts dgtune reads without a copy (spec / python/csrc/scaled_mm_plan.cpp block_scale)."""
    if recipe in ("tensorwise", "rowwise"):
        return sa.contiguous(), sb.contiguous()
    g = cdiv(k, 128)
    a2 = empty_strided_copy(sa, (1, round_up(m, 4)))
    if recipe == "blockwise_1x128_128x128":
        b2 = empty_strided_copy(sb, (1, round_up(g, 4)))
    else:
        b2 = empty_strided_copy(sb, (round_up(n, 4), 1))
    return a2, b2


def torch_scale_layout(recipe, sa, sb, m, n, k):
    """The layouts torch._scaled_mm wants (ScaledBlas.cpp is_blockwise_1x128_scaling / is_blockwise_128x128_scaling
    checked on b.t()): scale_a (M, G) strides (1, M); 128x128 scale_b (G, ceil(N/128)) strides (1, G) (torch 2.9+
    also accepts round_up(G, 4)); 1x128 scale_b (G, N) row-major contiguous."""
    if recipe in ("tensorwise", "rowwise"):
        return sa.contiguous(), sb.contiguous()
    a2 = sa.t().contiguous().t()
    b2 = sb.t().contiguous().t() if recipe == "blockwise_1x128_128x128" else sb.contiguous()
    return a2, b2


@dataclass
class Case:
    """One call's operands: a [M, K] row-major (lda padded to 16), b [K, N] column-major (the .t() of [N, K]),
    scales in their logical shapes (sa_l, sb_l: float32) and as passed (sa, sb)."""
    m: int
    n: int
    k: int
    recipe: str
    a: object
    b: object
    sa: object
    sb: object
    a_dtype: object
    b_dtype: object
    fast: bool = False
    bias: object = None
    extra: dict = field(default_factory=dict)


def make_case(m, n, k, recipe, a_dtype=None, b_dtype=None, *, seed=0, fast=False, layout="torch", lda=None,
              ldb=None, device="cuda") -> Case:
    import torch

    a_dtype = a_dtype or torch.float8_e4m3fn
    b_dtype = b_dtype or torch.float8_e4m3fn
    gen = torch.Generator(device=device)
    gen.manual_seed(1_000_003 * seed + 7919 * m + 131 * n + k)
    a = fp8_rows(m, k, a_dtype, gen, ld=lda, device=device)
    w = fp8_rows(n, k, b_dtype, gen, ld=ldb, device=device)  # [N, K] K-major weight
    b = w.t()  # [K, N] column-major
    g = cdiv(k, 128)
    if recipe == "tensorwise":
        sa = scales_tensor((), gen, 0.5, 2.0, device)
        sb = scales_tensor((), gen, 0.5, 2.0, device)
    elif recipe == "rowwise":
        sa = scales_tensor((m, 1), gen, device=device)
        sb = scales_tensor((1, n), gen, device=device)
    elif recipe == "blockwise_1x128_128x128":
        sa = scales_tensor((m, g), gen, device=device)
        sb = scales_tensor((g, cdiv(n, 128)), gen, device=device)
    elif recipe == "blockwise_1x128_1x128":
        sa = scales_tensor((m, g), gen, device=device)
        sb = scales_tensor((g, n), gen, device=device)
    else:
        raise ValueError(recipe)
    if layout == "torch":
        sa_p, sb_p = torch_scale_layout(recipe, sa, sb, m, n, k)
    elif layout == "dgtune":
        sa_p, sb_p = dgtune_scale_layout(recipe, sa, sb, m, n, k)
    else:
        sa_p, sb_p = sa, sb
    return Case(m, n, k, recipe, a, b, sa_p, sb_p, a_dtype, b_dtype, fast)


def reference(case: Case, bias=None):
    """FP64 result r (before scale_result and output rounding) from the same FP8 bytes and scales."""
    import torch

    A = case.a.to(torch.float32).to(torch.float64)
    B = case.b.to(torch.float32).to(torch.float64)  # [K, N]
    sa = case.sa.to(torch.float64)
    sb = case.sb.to(torch.float64)
    m, n, k = case.m, case.n, case.k
    if case.recipe == "tensorwise":
        r = (A @ B) * (sa.reshape(()) * sb.reshape(()))
    elif case.recipe == "rowwise":
        r = (A * sa.reshape(m, 1)) @ (B * sb.reshape(1, n))
    else:
        # Block scales are separable per (row, k granule) and (k granule, column [block]): scale the operands.
        ka = sa.repeat_interleave(128, dim=1)[:, :k]  # [M, K]
        if case.recipe == "blockwise_1x128_128x128":
            kb = sb.repeat_interleave(128, dim=0)[:k].repeat_interleave(128, dim=1)[:, :n]  # [K, N]
        else:
            kb = sb.repeat_interleave(128, dim=0)[:k]  # [K, N]
        r = (A * ka) @ (B * kb)
    if bias is not None:
        r = r + bias.to(torch.float64).reshape(1, n)
    return r


def make_bias(ref_no_bias, gen_seed=0):
    """A bf16 bias in +-max|ref|/4 (docs/measurement.md: ReLU/GELU see both signs; here simply the same size)."""
    import torch

    n = ref_no_bias.shape[1]
    g = torch.Generator(device=ref_no_bias.device)
    g.manual_seed(gen_seed + 17)
    mx = float(ref_no_bias.abs().max()) if ref_no_bias.numel() else 1.0
    return ((torch.rand(n, generator=g, device=ref_no_bias.device, dtype=torch.float64) * 2 - 1) * mx / 4).to(
        torch.bfloat16)


def accum_bounds(fast: bool) -> dict:
    return FAST if fast else PROMOTE


def metrics(d, ref) -> dict:
    """max_rel_err and diff of docs/measurement.md, plus NaN/Inf count, in float64."""
    import torch

    d = d.to(torch.float32).to(torch.float64) if d.dtype != torch.float64 else d
    bad = int((~torch.isfinite(d)).sum())
    dd = torch.nan_to_num(d, nan=0.0, posinf=0.0, neginf=0.0)
    mx = float(ref.abs().max()) if ref.numel() else 0.0
    err = float((dd - ref).abs().max()) if ref.numel() else 0.0
    mre = err / mx if mx > 0 else (1.0 if err > 0 else 0.0)
    sq = float((dd * dd + ref * ref).sum())
    diff = 1.0 - 2.0 * float((dd * ref).sum()) / sq if sq > 0 else 0.0
    return {"max_rel_err": mre, "diff": diff, "nonfinite": bad}


def e4m3_code_index(x):
    """Signed code index of e4m3 values (monotonic in value; +0 and -0 both 0)."""
    import torch

    u = x.view(torch.uint8).to(torch.int32)
    mag = u & 0x7F
    return torch.where((u & 0x80) != 0, -mag, mag)


def check_bf16_f32(d, ref, fast, what=""):
    m = metrics(d, ref)
    lim = accum_bounds(fast)
    assert m["nonfinite"] == 0, f"{what}: {m['nonfinite']} NaN/Inf elements"
    assert m["max_rel_err"] <= lim["max_rel_err"], f"{what}: max_rel_err {m['max_rel_err']:.3g} > {lim} ({m})"
    assert m["diff"] <= lim["diff"], f"{what}: diff {m['diff']:.3g} > {lim} ({m})"
    return m


def check_e4m3(d, ref, scale_result, fast, what=""):
    """docs/measurement.md e4m3 rules: d is the float8_e4m3fn output, ref the FP64 r (before scale_result)."""
    import torch

    assert d.dtype == torch.float8_e4m3fn
    scaled = (ref * scale_result).clamp(-E4M3_MAX, E4M3_MAX)
    q = scaled.to(torch.float32).to(torch.float8_e4m3fn)  # round to nearest even, no saturation needed (clamped)
    dv = d.to(torch.float32).to(torch.float64)
    assert int((~torch.isfinite(dv)).sum()) == 0, f"{what}: NaN in e4m3 output"
    tol = accum_bounds(fast)["max_rel_err"] * (float(scaled.abs().max()) if scaled.numel() else 0.0)
    codes = (e4m3_code_index(d.contiguous()) - e4m3_code_index(q)).abs()
    over = (codes > 1) & ((dv - scaled).abs() > tol)
    assert int(over.sum()) == 0, f"{what}: {int(over.sum())} elements > 1 e4m3 code off and beyond the FP32 tolerance"
    m = metrics(dv, scaled)
    assert m["max_rel_err"] <= E4M3_OUT["max_rel_err"], f"{what}: e4m3 max_rel_err {m}"
    assert m["diff"] <= E4M3_OUT["diff"], f"{what}: e4m3 diff {m}"
    return m


def check_amax(amax, ref, fast, what=""):
    import torch

    assert amax.dtype == torch.float32 and amax.dim() == 0, f"{what}: amax {amax.dtype} {tuple(amax.shape)}"
    want = float(ref.abs().max()) if ref.numel() else 0.0
    got = float(amax)
    tol = accum_bounds(fast)["max_rel_err"] * want
    assert abs(got - want) <= tol, f"{what}: amax {got} vs max|ref| {want} (tolerance {tol})"


def torch_supports(case: Case) -> bool:
    """torch._scaled_mm needs K % 16 == 0 and N % 16 == 0 (and runs no e5m2 x e5m2)."""
    return case.k % 16 == 0 and case.n % 16 == 0


def call_torch(case: Case, sa, sb, **kw):
    """torch._scaled_mm on the same bytes; (result, None) or (None, error text) when torch refuses the call."""
    import torch

    try:
        r = torch._scaled_mm(case.a, case.b, sa, sb, **kw)
        torch.cuda.synchronize()
        return r, None
    except (RuntimeError, ValueError, NotImplementedError) as e:
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"


def assert_within_2x_torch(ours: dict, theirs: dict, what=""):
    for key in ("max_rel_err", "diff"):
        limit = max(TORCH_RATIO * theirs[key], TORCH_FLOOR[key])
        assert ours[key] <= limit, f"{what}: {key} {ours[key]:.3g} > 2 x torch._scaled_mm's {theirs[key]:.3g}"


# ---------------------------------------------------------------------------------------------------------------
# The control API (dgtune.load / choose / warmup / stats), tolerant of small differences in the wrappers.


def dtype_name(dt) -> str:
    import torch

    return {torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2", torch.bfloat16: "bf16", torch.float32: "f32"}[dt]


def problem_dict(case: Case, out="bf16", bias=False, ldd=None, m=None) -> dict:
    """The problem JSON of the ctypes control API (spec: dgtune_torch_choose / dgtune_torch_warmup): `m` an int
    (choose) or a list of M values (warmup; [] = the default ladder); None: this case's M."""
    lda = max(case.a.stride(0), case.k) if case.m == 1 else case.a.stride(0)
    ldb = max(case.b.stride(1), case.k) if case.n == 1 else case.b.stride(1)
    return {"m": case.m if m is None else m, "n": case.n, "k": case.k, "lda": lda, "ldb": ldb,
            "ldd": ldd if ldd is not None else case.n, "a": dtype_name(case.a_dtype), "b": dtype_name(case.b_dtype),
            "fast_accum": bool(case.fast), "scale": SCALE_NAME[case.recipe], "out": out, "bias": bool(bias)}


def choose(dg, case: Case, out="bf16", bias=False, ldd=None) -> dict:
    """dgtune.choose for this call's problem: the dict of config_key, source, backend, ..."""
    return as_dict(dg.choose(**problem_dict(case, out=out, bias=bias, ldd=ldd)))


def as_dict(x) -> dict:
    """dgtune.Choice (a dataclass) or a mapping as a dict."""
    import dataclasses

    return dataclasses.asdict(x) if dataclasses.is_dataclass(x) else dict(x)


def stats(dg) -> dict:
    return dict(dg.stats())


def warmup(dg, problems) -> dict:
    return dict(dg.warmup(problems=problems) or {})


def configure(dg, **options):
    """dgtune.load(...) with control-API options (e.g. cublaslt=False: no cuBLASLt backend, dgtune's own kernel
    for every untuned problem)."""
    return dg.load(**options)
