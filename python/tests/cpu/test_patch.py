"""patch_scaled_mm: routing decisions (meta tensors stand in for CUDA ones; the native op and torch's original are
mocked where a call must be observed), counters, idempotence, undo, and what it does not reach."""

import pytest
import torch
from conftest import E4M3, E5M2, f32, mk_a, mk_b, scales

import dgtune
from dgtune import _native, patch


@pytest.fixture
def routable(monkeypatch, clean_patch):
    """Meta tensors count as CUDA ones and the native library as loaded; torch._scaled_mm is a recorder (restored
    after the test), so a fallback is observable."""
    patch._pin_dynamo_rules()  # before torch._scaled_mm is replaced by the recorder below
    monkeypatch.setattr(patch, "_DEVICE_TYPES", ("cuda", "meta"))
    monkeypatch.setattr(_native, "available", lambda: True)
    calls = {"original": [], "dgtune": [], "dgtune_out": []}
    real = torch._scaled_mm

    def original(*args, **kwargs):
        calls["original"].append((args, kwargs))
        return real(*args, **kwargs)

    def dg(*args):
        calls["dgtune"].append(args)
        return torch.ops.dgtune.scaled_mm.default(*args)

    def dg_out(*args):
        calls["dgtune_out"].append(args)
        return torch.ops.dgtune.scaled_mm_out.default(*args)

    monkeypatch.setattr(torch, "_scaled_mm", original)
    monkeypatch.setattr(patch, "_SCALED_MM_C", dg)
    monkeypatch.setattr(patch, "_SCALED_MM_OUT_C", dg_out)
    yield calls


def test_routes_tensorwise_with_none_out_dtype_as_a_dtype(routable):
    dgtune.patch_scaled_mm()
    sa, sb = scales("tensorwise", 16, 32, 64)
    y = torch._scaled_mm(mk_a(16, 64), mk_b(64, 32), sa, sb)
    assert y.dtype == E4M3  # torch's rule: out_dtype None -> a.dtype
    assert len(routable["dgtune"]) == 1 and routable["original"] == []
    assert routable["dgtune"][0][6] == E4M3
    assert dgtune.patch_stats() == {"routed": 1, "fallback": 0, "reasons": {}}


@pytest.mark.parametrize("recipe", ["rowwise", "block", "block1d1d"])
def test_routes_every_supported_recipe(routable, recipe):
    dgtune.patch_scaled_mm()
    m, n, k = 64, 256, 512
    y = torch._scaled_mm(mk_a(m, k), mk_b(k, n), *scales(recipe, m, n, k), out_dtype=torch.bfloat16)
    assert y.shape == (m, n) and y.dtype == torch.bfloat16
    assert dgtune.patch_stats()["routed"] == 1 and len(routable["dgtune"]) == 1


def test_routes_out_variant(routable):
    dgtune.patch_scaled_mm()
    out = torch.empty(16, 32, dtype=torch.float32, device="meta")
    sa, sb = scales("rowwise", 16, 32, 64)
    r = torch._scaled_mm(mk_a(16, 64), mk_b(64, 32), sa, sb, out_dtype=torch.float32, out=out)
    assert r is out and len(routable["dgtune_out"]) == 1


def _fallback_cases():
    m, n, k = 64, 256, 512
    a, b = mk_a(m, k), mk_b(k, n)
    T = scales("tensorwise", m, n, k)
    B = scales("block", m, n, k)
    return [
        ("out-dtype", (a, b, *T), dict(out_dtype=torch.float16)),
        ("out-dtype", (a, b, *T), dict(out_dtype=E5M2)),
        ("recipe-128x128-1x128", (a, b, f32(1, 4), f32(4, n)), dict(out_dtype=torch.bfloat16)),
        ("fast-accum-block", (a, b, *B), dict(out_dtype=torch.bfloat16, use_fast_accum=True)),
        ("bias", (a, b, *T), dict(out_dtype=torch.bfloat16, bias=torch.empty(n, dtype=torch.float16, device="meta"))),
        ("layout-b", (a, torch.empty(k, n, dtype=E4M3, device="meta"), *T), dict(out_dtype=torch.bfloat16)),
    ]


@pytest.mark.parametrize("reason,args,kwargs", _fallback_cases(), ids=[c[0] + str(i) for i, c in
                                                                       enumerate(_fallback_cases())])
def test_falls_back_with_reason(routable, reason, args, kwargs):
    dgtune.patch_scaled_mm()
    try:
        torch._scaled_mm(*args, **kwargs)
    except RuntimeError:
        pass  # torch's own meta kernel may refuse it too; what matters is who was asked
    assert len(routable["original"]) == 1 and routable["dgtune"] == []
    assert dgtune.patch_stats() == {"routed": 0, "fallback": 1, "reasons": {reason: 1}}


def test_fallback_grad_device_native(routable, monkeypatch):
    dgtune.patch_scaled_mm()
    sa, sb = scales("tensorwise", 16, 32, 64)
    sg = torch.ones((), device="meta", requires_grad=True)
    torch._scaled_mm(mk_a(16, 64), mk_b(64, 32), sg, sb, out_dtype=torch.bfloat16)
    a_cpu = torch.zeros(16, 64, dtype=E4M3)
    b_cpu = torch.zeros(32, 64, dtype=E4M3).t()
    assert patch.route_reason(a_cpu, b_cpu, torch.ones(()), torch.ones(())) == "device"
    monkeypatch.setattr(_native, "available", lambda: False)
    torch._scaled_mm(mk_a(16, 64), mk_b(64, 32), sa, sb, out_dtype=torch.bfloat16)
    assert dgtune.patch_stats()["reasons"] == {"grad": 1, "native": 1}
    assert len(routable["original"]) == 2


def test_route_reason_k_tail_layout():
    # K = 40 contiguous: lda = 40 is not a multiple of 16
    assert patch.route_reason(mk_a(8, 40), mk_b(40, 16, ldb=48), f32(), f32()) in ("layout-a", "device")


def test_idempotent_reversible_and_context_manager(clean_patch):
    original = torch._scaled_mm
    h1 = dgtune.patch_scaled_mm()
    routed = torch._scaled_mm
    assert routed is not original and dgtune.is_patched()
    assert routed.__dgtune_original__ is original
    h2 = dgtune.patch_scaled_mm()
    assert torch._scaled_mm is routed and h1.made and not h2.made
    with dgtune.patch_scaled_mm():  # already patched: leaving the block keeps the outer patch
        assert torch._scaled_mm is routed
    assert torch._scaled_mm is routed
    dgtune.unpatch_scaled_mm()
    assert torch._scaled_mm is original and not dgtune.is_patched()
    dgtune.unpatch_scaled_mm()
    assert torch._scaled_mm is original
    with dgtune.patch_scaled_mm():
        assert dgtune.is_patched()
    assert torch._scaled_mm is original


def test_unpatch_leaves_a_later_replacement(clean_patch, monkeypatch):
    original = torch._scaled_mm
    dgtune.patch_scaled_mm()

    def other(*a, **k):
        return None

    torch._scaled_mm = other
    try:
        with pytest.warns(RuntimeWarning, match="replaced by something else"):
            dgtune.unpatch_scaled_mm()
        assert torch._scaled_mm is other
    finally:
        torch._scaled_mm = original


def test_does_not_reach_aten_op_or_dispatcher(routable):
    aten_default = torch.ops.aten._scaled_mm.default
    had_cuda = torch._C._dispatch_has_kernel_for_dispatch_key("aten::_scaled_mm", "CUDA")
    dgtune.patch_scaled_mm()
    assert torch.ops.aten._scaled_mm.default is aten_default
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::_scaled_mm", "CUDA") == had_cuda
    assert torch._C._VariableFunctions._scaled_mm is not torch._scaled_mm
    sa, sb = scales("tensorwise", 16, 32, 64)
    torch.ops.aten._scaled_mm(mk_a(16, 64), mk_b(64, 32), sa, sb, out_dtype=torch.bfloat16)
    assert dgtune.patch_stats()["routed"] == 0 and routable["dgtune"] == []


def _compiled_targets(fn, *args):
    """The ATen-level graph AOTAutograd makes of fn under torch.compile(fullgraph=True) (what inductor compiles)."""
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    graphs = []

    def fw(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    def backend(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=fw)

    torch._dynamo.reset()
    with torch.no_grad():
        y = torch.compile(fn, fullgraph=True, backend=backend)(*args)
    return y, [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]


def test_compile_graph_traced_after_patch_holds_dgtune_op(routable):
    dgtune.patch_scaled_mm()

    def f(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16) + 1

    m, n, k = 64, 256, 512
    y, targets = _compiled_targets(f, mk_a(m, k), mk_b(k, n), *scales("block", m, n, k))
    assert y.shape == (m, n)
    assert any(t.startswith("dgtune.scaled_mm") for t in targets), targets
    assert not any("_scaled_mm" in t and "dgtune" not in t for t in targets), targets
    assert len(routable["original"]) == 0
    assert dgtune.patch_stats()["routed"] == 0  # tracing (fake / functional tensors) is not counted


def test_compile_eager_backend_counts_runtime_calls_only(routable):
    dgtune.patch_scaled_mm()

    def f(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    m, n, k = 16, 32, 64
    torch._dynamo.reset()
    cf = torch.compile(f, fullgraph=True, backend="eager")
    with torch.no_grad():
        for _ in range(3):
            cf(mk_a(m, k), mk_b(k, n), *scales("rowwise", m, n, k))
    assert dgtune.patch_stats()["routed"] == 3


def test_compile_graph_falls_back_to_aten(routable):
    dgtune.patch_scaled_mm()

    def f(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.float16)

    m, n, k = 64, 256, 512
    _, targets = _compiled_targets(f, mk_a(m, k), mk_b(k, n), *scales("tensorwise", m, n, k))
    assert not any(t.startswith("dgtune") for t in targets), targets
    assert "aten._scaled_mm.default" in targets, targets


def test_compile_graph_unpatched_holds_aten(clean_patch):
    def f(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    m, n, k = 64, 256, 512
    _, targets = _compiled_targets(f, mk_a(m, k), mk_b(k, n), *scales("tensorwise", m, n, k))
    assert not any(t.startswith("dgtune") for t in targets) and any("_scaled_mm" in t for t in targets), targets


def test_fresh_process_patch_unpatch_then_compile_torch_scaled_mm():
    """In a fresh process (dynamo's torch-function map not built yet): patch, compile, unpatch, compile again: the
    unpatched torch._scaled_mm still traces with fullgraph=True."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import torch, dgtune
        f = lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16)
        a = torch.empty(16, 32, dtype=torch.float8_e4m3fn, device="meta")
        b = torch.empty(64, 32, dtype=torch.float8_e4m3fn, device="meta").t()
        s = torch.empty((), device="meta")
        dgtune.patch_scaled_mm()
        print("patched", tuple(torch.compile(f, fullgraph=True, backend="eager")(a, b, s).shape))
        dgtune.unpatch_scaled_mm()
        torch._dynamo.reset()
        print("OK", tuple(torch.compile(f, fullgraph=True, backend="eager")(a, b, s).shape))
    """)
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(dgtune.__file__)),
                                         env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "patched (16, 64)" in r.stdout and "OK (16, 64)" in r.stdout
