"""torch.compile(fullgraph=True), with the default mode and with mode="reduce-overhead" (CUDA graphs): the same bits
as eager for every recipe, through dgtune.scaled_mm, torch.ops.dgtune.scaled_mm.default, scaled_mm_out into a
caller's buffer (auto_functionalize) and scaled_mm_amax."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

E4 = torch.float8_e4m3fn


def bits(t):
    return t.contiguous().reshape(-1).view(torch.uint8)  # reshape: amax is 0-dim, which view(uint8) refuses


def f_wrapper(a, b, sa, sb, bias):
    return dgtune.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=torch.bfloat16)


def f_op(a, b, sa, sb, bias):
    return torch.ops.dgtune.scaled_mm.default(a, b, sa, sb, bias, None, torch.float32, False)


def f_out(a, b, sa, sb, bias):
    out = torch.empty((a.shape[0], b.shape[1]), dtype=torch.bfloat16, device=a.device)
    torch.ops.dgtune.scaled_mm_out.default(a, b, sa, sb, bias, None, torch.bfloat16, False, out)
    return out * 1  # a use of the mutated buffer after the call


def f_amax(a, b, sa, sb, bias):
    sr = torch.full((), 0.01, device=a.device)
    d, amax = dgtune.scaled_mm_amax(a, b, sa, sb, bias=bias, scale_result=sr)
    return d, amax


FUNCS = {"wrapper": f_wrapper, "op": f_op, "out": f_out, "amax": f_amax}


def _outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


# Every recipe through the wrapper, out= and amax under the default mode and through the wrapper under
# reduce-overhead; the raw op and out= under reduce-overhead for two recipes (each compile costs seconds).
COMBOS = ([(r, fn, None) for r in H.RECIPES for fn in ("wrapper", "out", "amax")] +
          [("tensorwise", "op", None), ("blockwise_1x128_128x128", "op", None)] +
          [(r, "wrapper", "reduce-overhead") for r in H.RECIPES] +
          [("rowwise", "out", "reduce-overhead"), ("blockwise_1x128_1x128", "amax", "reduce-overhead")])


@pytest.mark.parametrize("recipe,fn,mode", COMBOS)
def test_compile_fullgraph_bitwise(recipe, fn, mode):
    torch._dynamo.reset()
    f = FUNCS[fn]
    case = H.make_case(200, 1024, 4000, recipe, layout="torch")
    bias = (torch.randn(1024, device="cuda") * 100).to(torch.bfloat16)
    eager = [t.clone() for t in _outputs(f(case.a, case.b, case.sa, case.sb, bias))]
    kw = {"fullgraph": True}
    if mode:
        kw["mode"] = mode
    cf = torch.compile(f, **kw)
    # reduce-overhead: call 1 warms up, call 2 records the graph, call 3 replays it.
    for i in range(3):
        got = [t.clone() for t in _outputs(cf(case.a, case.b, case.sa, case.sb, bias))]
        torch.cuda.synchronize()
        for e, g in zip(eager, got):
            assert e.dtype == g.dtype and e.shape == g.shape
            assert torch.equal(bits(e), bits(g)), f"{recipe} {fn} mode={mode} call {i}: compiled != eager"
    if mode == "reduce-overhead":
        # New values into the same inputs: the replayed graph computes them.
        fresh = H.make_case(200, 1024, 4000, recipe, seed=5, layout="torch")
        case.a.copy_(fresh.a)
        case.sa.copy_(fresh.sa)
        eager2 = [t.clone() for t in _outputs(f(case.a, case.b, case.sa, case.sb, bias))]
        got2 = [t.clone() for t in _outputs(cf(case.a, case.b, case.sa, case.sb, bias))]
        torch.cuda.synchronize()
        for e, g in zip(eager2, got2):
            assert torch.equal(bits(e), bits(g)), f"{recipe} {fn} reduce-overhead after new inputs"


def test_compile_dynamic_m():
    """dynamic=True: one graph over several M (the fake implementation on symbolic sizes)."""
    torch._dynamo.reset()
    cf = torch.compile(f_wrapper, fullgraph=True, dynamic=True)
    for m in (16, 48, 200):
        case = H.make_case(m, 512, 1024, "rowwise", layout="torch")
        e = f_wrapper(case.a, case.b, case.sa, case.sb, None)
        g = cf(case.a, case.b, case.sa, case.sb, None)
        assert torch.equal(bits(e), bits(g)), f"dynamic m={m}"
