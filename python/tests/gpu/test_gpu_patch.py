"""dgtune.patch_scaled_mm(): what python/dgtune/patch.py claims, each checked:
- routes the Python attribute torch._scaled_mm to dgtune (patch_stats()["routed"] grows; the output is bitwise
  dgtune.scaled_mm's, with out_dtype None meaning a.dtype as in torch);
- falls back to PyTorch's kernel for what dgtune cannot run (out_dtype float16, 128x128 x 1x128 scales), counted with
  the reason, with the original's result;
- torch.compile graphs traced after patching hold dgtune's op;
- does not reach torch.ops.aten._scaled_mm nor a reference taken before patching;
- unpatch_scaled_mm() restores the original function (identity) and behaviour."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

E4 = torch.float8_e4m3fn


def bits(t):
    return t.contiguous().view(torch.uint8)


@pytest.fixture
def patched():
    original = torch._scaled_mm
    dgtune.reset_patch_stats()
    dgtune.patch_scaled_mm()
    yield original
    dgtune.unpatch_scaled_mm()
    assert torch._scaled_mm is original


def _delta(before, after, key):
    return after[key] - before[key]


@pytest.mark.parametrize("recipe", H.RECIPES)
def test_routes_attribute_calls(patched, recipe):
    case = H.make_case(127, 1024, 4000, recipe, layout="torch")
    assert torch._scaled_mm is not patched
    s0 = dgtune.patch_stats()
    r = torch._scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=torch.bfloat16)
    s1 = dgtune.patch_stats()
    assert _delta(s0, s1, "routed") == 1 and _delta(s0, s1, "fallback") == 0, (s0, s1)
    d = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=torch.bfloat16)
    assert torch.equal(bits(r), bits(d))
    # out_dtype None: torch's meaning (a.dtype = e4m3 output), routed too.
    r2 = torch._scaled_mm(case.a, case.b, case.sa, case.sb)
    assert r2.dtype == E4
    d2 = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=E4)
    assert torch.equal(bits(r2), bits(d2))
    assert _delta(s1, dgtune.patch_stats(), "routed") == 1
    # The out= variant.
    out = torch.empty((127, 1024), dtype=torch.float32, device="cuda")
    ret = torch._scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=torch.float32, out=out)
    assert ret is out
    assert torch.equal(bits(out), bits(dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=torch.float32)))


def test_falls_back_and_counts(patched):
    original = patched
    case = H.make_case(256, 256, 512, "tensorwise", layout="torch")
    s0 = dgtune.patch_stats()
    try:
        r = torch._scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=torch.float16)
    except RuntimeError:  # the original refused it too (checked below)
        r = None
    s1 = dgtune.patch_stats()
    assert _delta(s0, s1, "fallback") == 1 and _delta(s0, s1, "routed") == 0, (s0, s1)
    assert s1["reasons"].get("out-dtype", 0) == s0["reasons"].get("out-dtype", 0) + 1, s1
    try:
        want = original(case.a, case.b, case.sa, case.sb, out_dtype=torch.float16)
    except RuntimeError:
        want = None
    assert (r is None) == (want is None), "the patched call and the original disagree on raising"
    if want is not None:
        assert r.dtype == torch.float16 and torch.equal(bits(r), bits(want))
    # 128x128 blocks of a with 1x128 blocks of b: torch runs it (where its cuBLASLt does), dgtune does not.
    t = H.make_case(256, 256, 512, "tensorwise", layout="torch")
    sa = torch.rand(2, 4, device="cuda") + 0.5   # (ceil(M/128), G), row-major as torch wants
    sb = torch.rand(4, 256, device="cuda") + 0.5  # (G, N), row-major
    s2 = dgtune.patch_stats()
    try:
        got = torch._scaled_mm(t.a, t.b, sa, sb, out_dtype=torch.bfloat16)
        err = None
    except RuntimeError as e:
        got, err = None, str(e)
    s3 = dgtune.patch_stats()
    assert _delta(s2, s3, "fallback") == 1, (s2, s3)
    assert any("128x128" in k for k in s3["reasons"]), s3
    try:
        want2 = original(t.a, t.b, sa, sb, out_dtype=torch.bfloat16)
    except RuntimeError as e:
        assert err is not None, f"the original raised ({e}) but the patched call did not"
        return
    assert got is not None, f"the patched call raised but the original did not: {err}"
    assert torch.equal(bits(got), bits(want2))


def test_aten_op_and_early_reference_not_reached(patched):
    original = patched
    case = H.make_case(64, 256, 512, "tensorwise", layout="torch")
    s0 = dgtune.patch_stats()
    torch.ops.aten._scaled_mm.default(case.a, case.b, case.sa, case.sb, None, None, torch.bfloat16, False)
    original(case.a, case.b, case.sa, case.sb, out_dtype=torch.bfloat16)
    s1 = dgtune.patch_stats()
    assert s1["routed"] == s0["routed"] and s1["fallback"] == s0["fallback"], (s0, s1)


def test_compile_traced_after_patch_holds_dgtune_op(patched):
    torch._dynamo.reset()
    seen = []

    def backend(gm, example_inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    def f(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    case = H.make_case(64, 512, 1024, "rowwise", layout="torch")
    got = torch.compile(f, backend=backend, fullgraph=True)(case.a, case.b, case.sa, case.sb)
    # The patched torch._scaled_mm is one graph node (patch.py keeps its router out of dynamo's tracing,
    # allow_in_graph); it runs dgtune at run time, which the bits below show.
    assert any("dgtune" in t or "_make_patched" in t for t in seen), seen
    want = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb)
    assert torch.equal(bits(got), bits(want))
    # And with inductor (the default backend): same bits.
    torch._dynamo.reset()
    got2 = torch.compile(f, fullgraph=True)(case.a, case.b, case.sa, case.sb)
    assert torch.equal(bits(got2), bits(want))


def test_unpatch_restores():
    original = torch._scaled_mm
    case = H.make_case(64, 256, 512, "tensorwise", layout="torch")
    want = original(case.a, case.b, case.sa, case.sb, out_dtype=torch.bfloat16)
    dgtune.patch_scaled_mm()
    dgtune.patch_scaled_mm()  # idempotent
    assert torch._scaled_mm is not original
    dgtune.unpatch_scaled_mm()
    assert torch._scaled_mm is original
    dgtune.unpatch_scaled_mm()  # idempotent
    assert torch._scaled_mm is original
    s0 = dgtune.patch_stats()
    got = torch._scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=torch.bfloat16)
    assert dgtune.patch_stats() == s0
    assert torch.equal(bits(got), bits(want))
    with dgtune.patch_scaled_mm():
        assert torch._scaled_mm is not original
    assert torch._scaled_mm is original
