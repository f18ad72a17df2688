"""``dgtune.nn.Fp8Linear``: a linear layer with an e4m3 weight, run by ``dgtune.scaled_mm``.

Error bound (checked by the GPU tests, python/tests/gpu/). Let ``ref`` be the FP64 product of the *dequantized*
operands the layer actually multiplies, plus the bias::

    ref[m, n] = sum_k (qx[m, k] * sx(m, k)) * (qw[n, k] * sw(n, k)) + bias[n]        (in FP64)

with qx, qw the e4m3 codes, sx, sw the float32 scales of the element's group (tensor, token, 1x128 tile, channel or
128x128 block) and bias the bfloat16 values. Then the layer's output y (out_dtype bfloat16 or float32) satisfies

    max_{m,n} |y[m, n] - ref[m, n]|  <=  eps * max_{m,n} |ref[m, n]|,
    eps = 2^-7 (default, FP32 promotion)   or   2^-5 (use_fast_accum=True, tensor/channel weights only)

which is docs/measurement.md's verification limit (max_rel_err) of the accumulation mode, the same every tuned
kernel passed. (bf16 rounding alone contributes up to 2^-8 |ref[m, n]| per element.) The bound says nothing about
the quantization error against the float layer: that is ``quantize.py``'s per-element bound (2^-4 relative in e4m3's
normal range) on each operand.
"""

from __future__ import annotations

import torch

from . import quantize as Q
from ._scaled_mm import scaled_mm

__all__ = ["Fp8Linear"]

_DEFAULT_ACTIVATION = {"tensor": "tensor", "channel": "per-token", "block": "block"}
_RECIPES = {("tensor", "tensor"), ("channel", "per-token"), ("block", "block")}


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def _round_up(x: int, y: int) -> int:
    return _ceil_div(x, y) * y


class Fp8Linear(torch.nn.Module):
    """y = x @ W^T (+ bias) with W [N, K] stored in e4m3 and x quantized to e4m3 on every call.

    Args:
        in_features: K.
        out_features: N.
        bias: whether the layer has a bfloat16 bias [N].
        weight_scaling: ``"tensor"`` (weight_scale a float32 scalar, shape ()), ``"channel"`` (shape (N,), one per
            output feature), ``"block"`` (shape (ceil(N/128), ceil(K/128)), one per 128 x 128 block, DeepSeek-V3's
            weight format: its ``weight_scale_inv``).
        activation_scaling: ``"per-token"`` (one scale per row of x: the rowwise recipe, with "channel"),
            ``"block"`` (1 x 128 tiles: the 1x128 x 128x128 recipe, with "block") or ``"tensor"`` (one scale per call:
            the tensorwise recipe, with "tensor"). Default: the one that pairs with weight_scaling. Other pairs are
            not a torch._scaled_mm recipe: ValueError.
        out_dtype: torch.bfloat16 (default) or torch.float32.
        use_fast_accum: passed to scaled_mm (refused with "block").
        device: where the buffers are created.

    Buffers (state_dict): ``weight`` [N, K] float8_e4m3fn (rows padded to a multiple of 16 bytes in memory, so any K
    meets the op's stride rule), ``weight_scale`` (float32, shape above; block scales stored so that
    ``weight_scale.t()`` has strides (1, round_up(G, 4)), read without a copy), ``bias`` [N] bfloat16 or None.
    ``.to(device)`` moves them and restores those layouts; ``.to(dtype)`` leaves their dtypes unchanged (an FP8
    weight, float32 scales and a bfloat16 bias are what the op takes).

    forward(x): x [..., K] floating point (any device the buffers are on; CUDA for the op) -> [..., N] out_dtype.
    No backward (inference only; call it under torch.no_grad() or with inputs that do not require grad).
    The error bound is in this module's docstring (docs/python.md "Fp8Linear").
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        weight_scaling: str = "channel",
        activation_scaling: str | None = None,
        out_dtype: torch.dtype = torch.bfloat16,
        use_fast_accum: bool = False,
        device=None,
    ):
        super().__init__()
        if weight_scaling not in _DEFAULT_ACTIVATION:
            raise ValueError(f"Fp8Linear: weight_scaling must be 'tensor', 'channel' or 'block', got {weight_scaling!r}")
        if activation_scaling is None:
            activation_scaling = _DEFAULT_ACTIVATION[weight_scaling]
        if activation_scaling not in ("per-token", "block", "tensor"):
            raise ValueError(
                f"Fp8Linear: activation_scaling must be 'per-token', 'block' or 'tensor', got {activation_scaling!r}"
            )
        if (weight_scaling, activation_scaling) not in _RECIPES:
            raise ValueError(
                f"Fp8Linear: weight_scaling={weight_scaling!r} with activation_scaling={activation_scaling!r} is not a "
                "torch._scaled_mm recipe; use tensor/tensor, channel/per-token or block/block"
            )
        if out_dtype not in (torch.bfloat16, torch.float32):
            raise ValueError(f"Fp8Linear: out_dtype must be torch.bfloat16 or torch.float32, got {out_dtype}")
        if use_fast_accum and weight_scaling == "block":
            raise ValueError("Fp8Linear: use_fast_accum=True is not supported with block scaling")
        self.in_features = in_features
        self.out_features = out_features
        self.weight_scaling = weight_scaling
        self.activation_scaling = activation_scaling
        self.out_dtype = out_dtype
        self.use_fast_accum = use_fast_accum
        n, k = out_features, in_features
        self.register_buffer("weight", Q.padded_rows(n, k, torch.float8_e4m3fn, device).zero_())
        if weight_scaling == "tensor":
            scale = torch.ones((), dtype=torch.float32, device=device)
        elif weight_scaling == "channel":
            scale = torch.ones((n,), dtype=torch.float32, device=device)
        else:
            scale = self._block_scale_storage(n, k, device).fill_(1.0)
        self.register_buffer("weight_scale", scale)
        self.register_buffer("bias", torch.zeros((n,), dtype=torch.bfloat16, device=device) if bias else None)

    @staticmethod
    def _block_scale_storage(n: int, k: int, device) -> torch.Tensor:
        nb, g = _ceil_div(n, 128), _ceil_div(k, 128)
        return torch.empty((nb, _round_up(g, 4)), dtype=torch.float32, device=device)[:, :g]

    @classmethod
    def from_linear(
        cls,
        linear: torch.nn.Linear,
        weight_scaling: str = "channel",
        activation_scaling: str | None = None,
        *,
        out_dtype: torch.dtype = torch.bfloat16,
        use_fast_accum: bool = False,
    ) -> "Fp8Linear":
        """Quantizes a float ``nn.Linear`` (weight [N, K]) to e4m3 with ``weight_scaling`` (``quantize.py``: amax/448
        per tensor, per output channel, or per 128 x 128 block); the bias, if any, becomes bfloat16. The new layer is
        on the linear's device."""
        w = linear.weight.detach()
        n, k = w.shape
        layer = cls(
            k, n, linear.bias is not None, weight_scaling=weight_scaling, activation_scaling=activation_scaling,
            out_dtype=out_dtype, use_fast_accum=use_fast_accum, device=w.device,
        )
        with torch.no_grad():
            if weight_scaling == "tensor":
                q, s = Q.quantize_tensorwise(w)
            elif weight_scaling == "channel":
                q, s = Q.quantize_per_token(w, pad_rows=False)
                s = s.view(n)
            else:
                q, s = Q.quantize_128x128(w, pad_rows=False)
            layer.weight.copy_(q)
            layer.weight_scale.copy_(s)
            if linear.bias is not None:
                layer.bias.copy_(linear.bias.detach().to(torch.bfloat16))
        return layer

    def _relayout(self) -> None:
        """Restores the padded layouts after a conversion (``.to``, ``.cuda``) made the buffers contiguous."""
        n, k = self.out_features, self.in_features
        w = self.weight
        if w is not None and (w.stride(0) % 16 != 0 or w.stride(0) < k):
            new = Q.padded_rows(n, k, w.dtype, w.device)
            new.copy_(w)
            self._buffers["weight"] = new
        s = self.weight_scale
        if self.weight_scaling == "block" and s is not None and s.size(0) > 1 and (
            s.stride(0) % 4 != 0 or s.stride(1) != 1
        ):
            new = self._block_scale_storage(n, k, s.device)
            new.copy_(s)
            self._buffers["weight_scale"] = new

    def _apply(self, fn, recurse=True):
        before = {name: b for name, b in self._buffers.items() if b is not None}
        super()._apply(fn, recurse)
        for name, old in before.items():
            new = self._buffers[name]
            if new is not None and new.dtype != old.dtype:  # keep dtypes: move the original instead
                self._buffers[name] = old.to(device=new.device)
        self._relayout()
        return self

    def _scale_b(self) -> torch.Tensor:
        s = self.weight_scale
        if self.weight_scaling == "channel":
            return s.view(1, -1)
        if self.weight_scaling == "block":
            return s.t()
        return s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.in_features
        if x.size(-1) != k:
            raise ValueError(f"Fp8Linear: x must be [..., {k}], got shape {tuple(x.shape)}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, k)
        if self.activation_scaling == "per-token":
            xq, sa = Q.quantize_per_token(x2)
        elif self.activation_scaling == "block":
            xq, sa = Q.quantize_1x128(x2)
        else:
            xq, sa = Q.quantize_tensorwise(x2)
            if k % 16 != 0 and x2.size(0) > 1:
                padded = Q.padded_rows(x2.size(0), k, xq.dtype, xq.device)
                padded.copy_(xq)
                xq = padded
        y = scaled_mm(xq, self.weight.t(), sa, self._scale_b(), self.bias, None, self.out_dtype, self.use_fast_accum)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
            f"weight_scaling={self.weight_scaling}, activation_scaling={self.activation_scaling}, "
            f"out_dtype={self.out_dtype}"
        )
