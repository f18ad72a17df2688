"""torch.library.opcheck on the real CUDA kernels of every op and recipe: schema (no undeclared mutation or
aliasing), the fake implementation against the kernel (shapes, dtypes, strides), and AOT dispatch with dynamic
shapes (what torch.compile does with the op)."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402, F401  (registers torch.ops.dgtune)
import gpu_helpers as H  # noqa: E402

E4 = torch.float8_e4m3fn
SHAPES = [(64, 512, 1024), (3, 127, 1000)]


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("recipe", H.RECIPES)
def test_opcheck_scaled_mm(m, n, k, recipe):
    case = H.make_case(m, n, k, recipe, layout="torch")
    for out_dtype in (None, torch.bfloat16, torch.float32):
        torch.library.opcheck(torch.ops.dgtune.scaled_mm.default, (case.a, case.b, case.sa, case.sb),
                              {"out_dtype": out_dtype})
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    sr = torch.tensor(0.01, device="cuda")
    torch.library.opcheck(torch.ops.dgtune.scaled_mm.default, (case.a, case.b, case.sa, case.sb),
                          {"bias": bias, "scale_result": sr, "out_dtype": E4})
    if recipe in ("tensorwise", "rowwise"):
        torch.library.opcheck(torch.ops.dgtune.scaled_mm.default, (case.a, case.b, case.sa, case.sb),
                              {"use_fast_accum": True})


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("recipe", H.RECIPES)
def test_opcheck_scaled_mm_out(m, n, k, recipe):
    case = H.make_case(m, n, k, recipe, layout="torch")
    for od in (torch.bfloat16, torch.float32, E4):
        out = torch.empty((m, n), dtype=od, device="cuda")
        sr = torch.tensor(0.01, device="cuda") if od == E4 else None
        torch.library.opcheck(torch.ops.dgtune.scaled_mm_out.default,
                              (case.a, case.b, case.sa, case.sb, None, sr, od, False, out))
    # A column slice of a wider buffer (row stride > N).
    wide = torch.zeros((m, H.round_up(n + 32, 16)), dtype=torch.bfloat16, device="cuda")
    torch.library.opcheck(torch.ops.dgtune.scaled_mm_out.default,
                          (case.a, case.b, case.sa, case.sb, None, None, None, False, wide[:, 16:16 + n]))


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("recipe", H.RECIPES)
def test_opcheck_scaled_mm_amax(m, n, k, recipe):
    case = H.make_case(m, n, k, recipe, layout="torch")
    sr = torch.tensor(0.01, device="cuda")
    torch.library.opcheck(torch.ops.dgtune.scaled_mm_amax.default, (case.a, case.b, case.sa, case.sb),
                          {"scale_result": sr})
    torch.library.opcheck(torch.ops.dgtune.scaled_mm_amax.default, (case.a, case.b, case.sa, case.sb))
