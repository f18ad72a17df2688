"""Quantizers (CPU float math) and Fp8Linear's wiring (with a float64 reference standing in for the CUDA op)."""

import pytest
import torch
from conftest import E4M3, ceil_div, round_up4

import dgtune
from dgtune import infer_recipe, nn as dnn, quantize as Q


def test_per_token_scales_saturation_zero_rows():
    x = torch.tensor([[1.0, -2.0, 0.5, 4.0] * 4, [0.0] * 16, [1e-3] * 15 + [-896.0]])
    q, s = Q.quantize_per_token(x)
    assert s.shape == (3, 1) and s.dtype == torch.float32 and s.is_contiguous()
    assert s[0, 0].item() == pytest.approx(4.0 / 448)
    assert s[1, 0].item() == pytest.approx(Q.AMAX_FLOOR / 448)  # floor: zero row keeps a finite, nonzero scale
    assert torch.all(q[1].float() == 0)
    assert q[0, 3].float().item() == 448.0  # the amax element maps to e4m3's max
    assert q[2, 15].float().item() == -448.0
    assert torch.isfinite(q.float()).all()
    deq = q.float() * s
    assert torch.allclose(deq[0], x[0], rtol=2 ** -4, atol=0)


def test_saturating_cast_no_nan_for_out_of_range():
    x = torch.full((1, 16), 1.0)
    s = torch.tensor(1.0 / 1000)  # x / s = 1000 > 448: saturates instead of NaN
    q = Q._cast(x, s)
    assert torch.all(q.float() == 448.0)
    q2 = Q._cast(torch.tensor([float("nan"), -1e9]), torch.tensor(1.0))
    assert torch.isnan(q2.float()[0]) and q2.float()[1].item() == -448.0


def test_per_token_pads_rows_for_k_tail():
    q, _ = Q.quantize_per_token(torch.randn(5, 40))
    assert q.shape == (5, 40) and q.stride() == (48, 1)
    q2, _ = Q.quantize_per_token(torch.randn(5, 40), pad_rows=False)
    assert q2.stride() == (40, 1)


def test_tensorwise():
    x = torch.randn(7, 33) * 3
    q, s = Q.quantize_tensorwise(x)
    assert s.dim() == 0 and s.item() == pytest.approx(x.abs().max().item() / 448)
    assert q.abs().float().max().item() == 448.0
    assert Q.quantize_tensorwise(torch.zeros(0, 16))[1].item() == pytest.approx(Q.AMAX_FLOOR / 448)


@pytest.mark.parametrize("m,k", [(5, 200), (8, 256), (1, 1), (67, 129)])
def test_1x128_values_and_layout(m, k):
    torch.manual_seed(0)
    x = torch.randn(m, k)
    x[:, :min(k, 128)] *= 100  # granule 0 much larger than the rest
    q, s = Q.quantize_1x128(x)
    g = ceil_div(k, 128)
    assert s.shape == (m, g) and s.stride() == (1, round_up4(m)) and s.storage_offset() == 0
    assert q.shape == (m, k) and q.stride(0) % 16 == 0
    for gi in range(g):
        blk = x[:, gi * 128:(gi + 1) * 128]
        assert torch.allclose(s[:, gi], blk.abs().amax(dim=1) / 448)
    deq = q.float() * s.repeat_interleave(128, dim=1)[:, :k]
    assert torch.allclose(deq, x, rtol=2 ** -4, atol=float(s.max()) * 2 ** -9)


@pytest.mark.parametrize("n,k", [(300, 200), (128, 256), (1, 16)])
def test_128x128_values_and_layout(n, k):
    torch.manual_seed(1)
    w = torch.randn(n, k)
    w[:128, :128] = 0  # an all-zero block
    q, s = Q.quantize_128x128(w)
    nb, g = ceil_div(n, 128), ceil_div(k, 128)
    assert s.shape == (nb, g) and s.stride() == (round_up4(g), 1)
    assert s.t().stride() == (1, round_up4(g))
    assert s[0, 0].item() == pytest.approx(Q.AMAX_FLOOR / 448)
    assert torch.all(q[:128, :128].float() == 0)
    for j in range(nb):
        for gi in range(g):
            blk = w[j * 128:(j + 1) * 128, gi * 128:(gi + 1) * 128]
            assert s[j, gi].item() == pytest.approx(max(blk.abs().max().item(), Q.AMAX_FLOOR) / 448)


def ref_scaled_mm(a, b, sa, sb, bias=None, scale_result=None, out_dtype=torch.bfloat16, use_fast_accum=False):
    """FP64 reference of dgtune.scaled_mm on CPU (the dequantized operands multiplied)."""
    r = infer_recipe(a, b, sa, sb, use_fast_accum)
    k = a.size(1)
    A, B = a.double(), b.double()
    sa64, sb64 = sa.double(), sb.double()
    if r.mode == "per-tensor":
        A, B = A * sa64.reshape(()), B * sb64.reshape(())
    elif r.mode == "channel":
        A, B = A * sa64, B * sb64
    else:
        A = A * sa64.repeat_interleave(128, dim=1)[:, :k]
        if r.mode == "block":
            B = B * sb64.repeat_interleave(128, 0)[:k].repeat_interleave(128, 1)[:, :b.size(1)]
        else:
            B = B * sb64.repeat_interleave(128, 0)[:k]
    y = A @ B
    if bias is not None:
        y = y + bias.double()
    return y.to(out_dtype if out_dtype is not None else torch.bfloat16)


@pytest.mark.parametrize("ws,acts", [("tensor", "tensor"), ("channel", "per-token"), ("block", "block")])
@pytest.mark.parametrize("n,k", [(300, 200), (64, 40), (256, 512)])
def test_fp8linear_wiring_matches_float_linear(monkeypatch, ws, acts, n, k):
    torch.manual_seed(2)
    lin = torch.nn.Linear(k, n)
    layer = dnn.Fp8Linear.from_linear(lin, ws)
    assert layer.activation_scaling == acts
    seen = []

    def fake_op(a, b, sa, sb, bias, sr, out_dtype, fast):
        rec = infer_recipe(a, b, sa, sb, fast)
        seen.append(rec)
        dgtune._ops.check_scaled_mm(a, b, sa, sb, bias, sr, out_dtype, fast)  # every rule holds
        return ref_scaled_mm(a, b, sa, sb, bias, sr, out_dtype, fast)

    monkeypatch.setattr(dnn, "scaled_mm", fake_op)
    x = torch.randn(2, 3, k)
    y = layer(x)
    assert y.shape == (2, 3, n) and y.dtype == torch.bfloat16
    assert seen[0].mode == {"tensor": "per-tensor", "channel": "channel", "block": "block"}[ws]
    # the layouts the kernel reads in place; a block scale of one row whose length is not a multiple of 4 floats is
    # copied (the op cannot see that the padding exists)
    m, g, nb = 6, ceil_div(k, 128), ceil_div(n, 128)
    assert seen[0].copy_scale_a == (ws == "block" and g == 1 and m % 4 != 0)
    assert seen[0].copy_scale_b == (ws == "block" and nb == 1 and g % 4 != 0)
    with torch.no_grad():
        ref = lin(x)
    err = (y.float() - ref).abs().max().item()
    assert err <= 0.08 * ref.abs().max().item(), err  # two e4m3 roundings (2^-4 each) of the operands


def test_fp8linear_layouts_and_state_dict():
    layer = dnn.Fp8Linear(200, 300, weight_scaling="block")
    assert layer.weight.shape == (300, 200) and layer.weight.stride() == (208, 1) and layer.weight.dtype == E4M3
    assert layer.weight_scale.shape == (3, 2) and layer.weight_scale.stride() == (4, 1)
    assert layer.bias.dtype == torch.bfloat16
    sd = layer.state_dict()
    assert set(sd) == {"weight", "weight_scale", "bias"}
    other = dnn.Fp8Linear(200, 300, weight_scaling="block")
    sd["weight_scale"] = torch.full((3, 2), 0.5)
    other.load_state_dict(sd)
    assert other.weight_scale.stride() == (4, 1) and torch.all(other.weight_scale == 0.5)


def test_fp8linear_to_keeps_dtypes_and_padding():
    layer = dnn.Fp8Linear(200, 300, weight_scaling="block")
    layer.to(torch.float16)
    assert layer.weight.dtype == E4M3 and layer.weight_scale.dtype == torch.float32
    assert layer.bias.dtype == torch.bfloat16
    layer.to("meta")
    assert layer.weight.device.type == "meta"
    assert layer.weight.stride() == (208, 1) and layer.weight_scale.stride() == (4, 1)


def test_fp8linear_forward_on_meta():
    layer = dnn.Fp8Linear(200, 300, weight_scaling="channel", device="meta", out_dtype=torch.float32)
    y = layer(torch.empty(4, 5, 200, device="meta"))
    assert y.shape == (4, 5, 300) and y.dtype == torch.float32


def test_fp8linear_argument_errors():
    with pytest.raises(ValueError, match="not a torch._scaled_mm recipe"):
        dnn.Fp8Linear(16, 16, weight_scaling="channel", activation_scaling="block")
    with pytest.raises(ValueError, match="weight_scaling must be"):
        dnn.Fp8Linear(16, 16, weight_scaling="row")
    with pytest.raises(ValueError, match="use_fast_accum=True is not supported with block"):
        dnn.Fp8Linear(16, 16, weight_scaling="block", use_fast_accum=True)
    with pytest.raises(ValueError, match="out_dtype must be"):
        dnn.Fp8Linear(16, 16, out_dtype=torch.float8_e4m3fn)
    layer = dnn.Fp8Linear(16, 16, device="meta")
    with pytest.raises(ValueError, match=r"x must be \[\.\.\., 16\]"):
        layer(torch.empty(2, 8, device="meta"))
