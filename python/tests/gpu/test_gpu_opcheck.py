"""torch.library.opcheck on the real CUDA kernels of every op and recipe: the fake implementation against the kernel
(shapes, dtypes, strides), AOT dispatch with dynamic shapes (what torch.compile does with the op) and the autograd
registration. opcheck's test_schema cannot run on FP8 inputs in torch 2.11 (its SchemaCheckMode multiplies the
tensors it compares: "mul_cuda" not implemented for 'Float8_e4m3fn'), so what it checks (no undeclared mutation of
an input) is checked here directly: every input is bitwise unchanged after the call, and only `out` is written."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402, F401  (registers torch.ops.dgtune)
import gpu_helpers as H  # noqa: E402

E4 = torch.float8_e4m3fn
SHAPES = [(64, 512, 1024), (3, 127, 1000)]
UTILS = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")


def opcheck(op, args, kwargs=None, mutable=()):
    """opcheck without test_schema, then the mutation check test_schema would make (indices in `mutable` may change)."""
    kwargs = kwargs or {}
    before = [a.clone() if isinstance(a, torch.Tensor) else None for a in args]
    before_kw = {k: v.clone() for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    op(*args, **kwargs)
    torch.cuda.synchronize()
    for i, (a, b) in enumerate(zip(args, before)):
        if b is not None and i not in mutable:
            assert torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)), f"input {i} written"
    for k, b in before_kw.items():
        assert torch.equal(kwargs[k].reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)), f"{k} written"
    # test_aot_dispatch_dynamic runs the op on contiguous copies of the inputs: with K % 16 != 0 that drops the padded
    # row stride TMA needs (the op refuses lda = K), so it only runs where K % 16 == 0.
    utils = UTILS if args[0].size(1) % 16 == 0 else tuple(u for u in UTILS if u != "test_aot_dispatch_dynamic")
    torch.library.opcheck(op, args, kwargs, test_utils=utils)


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("recipe", H.RECIPES)
def test_opcheck_scaled_mm(m, n, k, recipe):
    case = H.make_case(m, n, k, recipe, layout="torch")
    for out_dtype in (None, torch.bfloat16, torch.float32):
        opcheck(torch.ops.dgtune.scaled_mm.default, (case.a, case.b, case.sa, case.sb),
                              {"out_dtype": out_dtype})
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    sr = torch.tensor(0.01, device="cuda")
    opcheck(torch.ops.dgtune.scaled_mm.default, (case.a, case.b, case.sa, case.sb),
                          {"bias": bias, "scale_result": sr, "out_dtype": E4})
    if recipe in ("tensorwise", "rowwise"):
        opcheck(torch.ops.dgtune.scaled_mm.default, (case.a, case.b, case.sa, case.sb),
                              {"use_fast_accum": True})


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("recipe", H.RECIPES)
def test_opcheck_scaled_mm_out(m, n, k, recipe):
    case = H.make_case(m, n, k, recipe, layout="torch")
    for od in (torch.bfloat16, torch.float32, E4):
        out = torch.empty((m, n), dtype=od, device="cuda")
        sr = torch.tensor(0.01, device="cuda") if od == E4 else None
        opcheck(torch.ops.dgtune.scaled_mm_out.default,
                (case.a, case.b, case.sa, case.sb, None, sr, od, False, out), mutable=(8,))
    # A column slice of a wider buffer (row stride > N).
    wide = torch.zeros((m, H.round_up(n + 32, 16)), dtype=torch.bfloat16, device="cuda")
    opcheck(torch.ops.dgtune.scaled_mm_out.default,
            (case.a, case.b, case.sa, case.sb, None, None, None, False, wide[:, 16:16 + n]), mutable=(8,))


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("recipe", H.RECIPES)
def test_opcheck_scaled_mm_amax(m, n, k, recipe):
    case = H.make_case(m, n, k, recipe, layout="torch")
    sr = torch.tensor(0.01, device="cuda")
    opcheck(torch.ops.dgtune.scaled_mm_amax.default, (case.a, case.b, case.sa, case.sb),
                          {"scale_result": sr})
    opcheck(torch.ops.dgtune.scaled_mm_amax.default, (case.a, case.b, case.sa, case.sb))
