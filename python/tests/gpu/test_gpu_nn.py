"""dgtune.nn.Fp8Linear within the bound python/dgtune/nn.py documents, against an FP64 reference of the dequantized
operands the layer multiplies (its own quantizers, dgtune.quantize, rerun on the same input give the same bytes):

    max |y - ref| <= eps * max |ref|,  eps = 2^-7 (default) or 2^-5 (use_fast_accum=True, tensor/channel weights)

which is docs/measurement.md's max_rel_err of the accumulation mode."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402
import dgtune.nn  # noqa: E402
from dgtune import quantize as Q  # noqa: E402
import gpu_helpers as H  # noqa: E402, F401


def _reference(layer, x):
    k, n = layer.in_features, layer.out_features
    x2 = x.reshape(-1, k)
    if layer.activation_scaling == "per-token":
        xq, sx = Q.quantize_per_token(x2)
        xd = xq.double() * sx.double()
    elif layer.activation_scaling == "block":
        xq, sx = Q.quantize_1x128(x2)
        xd = xq.double() * sx.double().repeat_interleave(128, dim=1)[:, :k]
    else:
        xq, sx = Q.quantize_tensorwise(x2)
        xd = xq.double() * sx.double()
    w = layer.weight.double()
    s = layer.weight_scale.double()
    if layer.weight_scaling == "tensor":
        wd = w * s
    elif layer.weight_scaling == "channel":
        wd = w * s.view(n, 1)
    else:
        wd = w * s.repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)[:, :k]
    ref = xd @ wd.t()
    if layer.bias is not None:
        ref = ref + layer.bias.double()
    return ref.reshape(*x.shape[:-1], n)


CONFIGS = [("tensor", False), ("tensor", True), ("channel", False), ("channel", True), ("block", False)]


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("scaling,fast", CONFIGS)
@pytest.mark.parametrize("k,n,lead", [(1000, 257, (3, 5)), (4096, 1024, (1,)), (200, 3, (127,))])
def test_fp8_linear_bound(backend, k, n, lead, scaling, fast, out_dtype):
    torch.manual_seed(k + n)
    lin = torch.nn.Linear(k, n, bias=True, device="cuda")
    layer = dgtune.nn.Fp8Linear.from_linear(lin, weight_scaling=scaling, out_dtype=out_dtype, use_fast_accum=fast)
    x = torch.randn(*lead, k, device="cuda") * 3
    with torch.no_grad():
        y = layer(x)
    torch.cuda.synchronize()
    assert y.shape == (*lead, n) and y.dtype == out_dtype
    ref = _reference(layer, x)
    eps = 2.0**-5 if fast else 2.0**-7
    err = float((y.double() - ref).abs().max())
    mx = float(ref.abs().max())
    assert torch.isfinite(y).all()
    assert err <= eps * mx, f"Fp8Linear {scaling} fast={fast} {out_dtype}: max err {err:.4g} > {eps} x {mx:.4g}"
    # And the float layer within the quantization error (loose sanity check: a wrong layout would be far off).
    yf = lin(x).double()
    rel = float((y.double() - yf).abs().max()) / float(yf.abs().max())
    assert rel < 0.25, f"Fp8Linear far from the float layer: {rel}"


def test_fp8_linear_to_device_keeps_layouts():
    lin = torch.nn.Linear(1000, 300, device="cpu")
    layer = dgtune.nn.Fp8Linear.from_linear(lin.cuda(), weight_scaling="block").cpu().cuda()
    assert layer.weight.dtype == torch.float8_e4m3fn and layer.weight.stride(0) % 16 == 0
    x = torch.randn(7, 1000, device="cuda")
    with torch.no_grad():
        y = layer(x)
    ref = _reference(layer, x)
    assert float((y.double() - ref).abs().max()) <= 2.0**-7 * float(ref.abs().max())
