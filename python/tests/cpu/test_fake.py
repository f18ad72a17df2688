"""Schemas and fake (meta) implementations of torch.ops.dgtune: shapes and dtypes for every recipe and output type,
torch.compile tracing, FakeTensorMode."""

import pytest
import torch
from conftest import E4M3, E5M2, mk_a, mk_b, scales

import dgtune
from dgtune import _ops

RECIPES = ["tensorwise", "rowwise", "block", "block1d1d"]
OUTS = [(None, torch.bfloat16), (torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32), (E4M3, E4M3)]


def test_schemas_exact():
    assert str(torch.ops.dgtune.scaled_mm.default._schema) == (
        "dgtune::scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
        "Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor"
    )
    assert str(torch.ops.dgtune.scaled_mm_out.default._schema) == (
        "dgtune::scaled_mm_out(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias, Tensor? scale_result, "
        "ScalarType? out_dtype, bool use_fast_accum, Tensor(a!) out) -> ()"
    )
    assert str(torch.ops.dgtune.scaled_mm_amax.default._schema) == (
        "dgtune::scaled_mm_amax(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
        "Tensor? scale_result=None, bool use_fast_accum=False) -> (Tensor, Tensor)"
    )


def test_out_variant_is_mutable_and_others_functional():
    assert torch.ops.dgtune.scaled_mm_out.default._schema.is_mutable
    assert not torch.ops.dgtune.scaled_mm.default._schema.is_mutable
    assert not torch.ops.dgtune.scaled_mm_amax.default._schema.is_mutable


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("out_dtype,expect", OUTS)
@pytest.mark.parametrize("mnk", [(1, 7, 16), (67, 131, 200), (256, 384, 512), (3, 1, 48)])
def test_fake_shapes_and_dtypes(recipe, out_dtype, expect, mnk):
    m, n, k = mnk
    a, b = mk_a(m, k, lda=(k + 15) // 16 * 16), mk_b(k, n, E5M2, ldb=(k + 15) // 16 * 16)
    sa, sb = scales(recipe, m, n, k)
    d = torch.ops.dgtune.scaled_mm(a, b, sa, sb, out_dtype=out_dtype)
    assert d.shape == (m, n) and d.dtype == expect and d.device.type == "meta"
    assert d.is_contiguous()


@pytest.mark.parametrize("recipe", RECIPES)
def test_fake_amax(recipe):
    m, n, k = 33, 257, 384
    a, b = mk_a(m, k), mk_b(k, n)
    sa, sb = scales(recipe, m, n, k)
    d, amax = torch.ops.dgtune.scaled_mm_amax(a, b, sa, sb, scale_result=torch.empty((), device="meta"))
    assert d.shape == (m, n) and d.dtype == E4M3
    assert amax.shape == () and amax.dtype == torch.float32


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32, E4M3])
def test_fake_out_variant_wider_buffer(out_dtype):
    m, n, k = 5, 40, 64
    buf = torch.empty(m, 96, dtype=out_dtype, device="meta")
    out = buf[:, 8:48]  # a column slice of a wider buffer: stride (96, 1)
    sa, sb = scales("rowwise", m, n, k)
    r = torch.ops.dgtune.scaled_mm_out(mk_a(m, k), mk_b(k, n), sa, sb, None, None, out_dtype, False, out)
    assert r is None
    r = dgtune.scaled_mm(mk_a(m, k), mk_b(k, n), sa, sb, out_dtype=None, out=out)
    assert r is out


def test_empty_m_and_n():
    sa, sb = scales("tensorwise", 0, 0, 32)
    assert torch.ops.dgtune.scaled_mm(mk_a(0, 32), mk_b(32, 16), sa, sb).shape == (0, 16)
    assert torch.ops.dgtune.scaled_mm(mk_a(8, 32), mk_b(32, 0), sa, sb).shape == (8, 0)


def test_compile_fullgraph_traces_op_on_meta():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(a, b, sa, sb, bias):
        return torch.ops.dgtune.scaled_mm(a, b, sa, sb, bias, None, torch.float32, False) * 2

    m, n, k = 64, 128, 256
    sa, sb = scales("block", m, n, k)
    bias = torch.empty(n, dtype=torch.bfloat16, device="meta")
    y = torch.compile(f, fullgraph=True, backend=backend)(mk_a(m, k), mk_b(k, n), sa, sb, bias)
    assert y.shape == (m, n) and y.dtype == torch.float32
    targets = [str(node.target) for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert "dgtune.scaled_mm" in targets, targets


def test_compile_fullgraph_wrapper_and_out_variant():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(a, b, sa, sb, out):
        dgtune.scaled_mm(a, b, sa, sb, out_dtype=None, out=out)
        return dgtune.scaled_mm(a, b, sa, sb)

    m, n, k = 16, 32, 64
    sa, sb = scales("tensorwise", m, n, k)
    out = torch.empty(m, n, dtype=torch.float32, device="meta")
    with torch.no_grad():
        y = torch.compile(f, fullgraph=True, backend=backend)(mk_a(m, k), mk_b(k, n), sa, sb, out)
    assert y.dtype == torch.bfloat16
    targets = [str(node.target) for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert "dgtune.scaled_mm_out.default" in targets and "dgtune.scaled_mm.default" in targets, targets


def test_fake_tensor_mode_cuda_device():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(100, 64, dtype=E4M3, device="cuda")
        b = torch.empty(200, 64, dtype=E4M3, device="cuda").t()
        sa = torch.empty(100, 1, device="cuda")
        sb = torch.empty(1, 200, device="cuda")
        d = torch.ops.dgtune.scaled_mm(a, b, sa, sb, out_dtype=torch.float32)
        assert d.device.type == "cuda" and d.shape == (100, 200) and d.dtype == torch.float32
        with pytest.raises(RuntimeError, match=r"^dgtune\.scaled_mm: Expected all tensors to be on the same device"):
            torch.ops.dgtune.scaled_mm(a, b, sa.cpu(), sb)


def test_check_returns_recipe_and_dtype():
    m, n, k = 8, 256, 256
    sa, sb = scales("block1d1d", m, n, k)
    recipe, dt = _ops.check_scaled_mm(mk_a(m, k), mk_b(k, n), sa, sb, None, None, None, False)
    assert recipe.mode == "block1d1d" and dt == torch.bfloat16
