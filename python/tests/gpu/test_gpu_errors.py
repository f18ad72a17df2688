"""The same bad arguments raise RuntimeError from the real CUDA op and from the fake (meta) implementation, with
the same message prefix ("dgtune.scaled_mm: " and the rule's first words), as the spec's Rules section states."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

E4 = torch.float8_e4m3fn
PREFIX = "dgtune.scaled_mm: "


def _bad_lda():
    # K = 1000, row stride 1004: >= K but not a multiple of 16.
    c = H.make_case(64, 256, 1000, "tensorwise", layout="torch")
    g = torch.Generator(device="cuda")
    g.manual_seed(5)
    a = H.fp8_rows(64, 1000, E4, g, ld=1004)
    return (a, c.b, c.sa, c.sb), {}


def _mismatched_k():
    c = H.make_case(64, 256, 512, "tensorwise", layout="torch")
    d = H.make_case(64, 256, 1024, "tensorwise", layout="torch")
    return (c.a, d.b, c.sa, c.sb), {}


def _fast_accum_block(recipe):
    def f():
        c = H.make_case(64, 256, 512, recipe, layout="torch")
        return (c.a, c.b, c.sa, c.sb), {"use_fast_accum": True}
    return f


def _out_fp16():
    c = H.make_case(64, 256, 512, "rowwise", layout="torch")
    return (c.a, c.b, c.sa, c.sb), {"out_dtype": torch.float16}


def _block_128x128_x_1x128():
    c = H.make_case(256, 256, 512, "tensorwise", layout="torch")
    sa = torch.ones(2, 4, device="cuda")   # (ceil(M/128), G): 128x128 blocks of a
    sb = torch.ones(4, 256, device="cuda")  # (G, N): 1x128 blocks of b
    return (c.a, c.b, sa, sb), {}


def _bias_f32():
    c = H.make_case(64, 256, 512, "tensorwise", layout="torch")
    return (c.a, c.b, c.sa, c.sb), {"bias": torch.zeros(256, device="cuda")}


def _a_not_row_major():
    c = H.make_case(64, 256, 512, "tensorwise", layout="torch")
    return (c.a.t().contiguous().t(), c.b, c.sa, c.sb), {}


CASES = {
    "wrong-lda": _bad_lda,
    "mismatched-k": _mismatched_k,
    "fast-accum-block-128x128": _fast_accum_block("blockwise_1x128_128x128"),
    "fast-accum-block-1x128": _fast_accum_block("blockwise_1x128_1x128"),
    "out-dtype-float16": _out_fp16,
    "128x128-x-1x128": _block_128x128_x_1x128,
    "bias-float32": _bias_f32,
    "a-column-major": _a_not_row_major,
}


def _message(fn):
    with pytest.raises(RuntimeError) as e:
        fn()
    msg = str(e.value)
    # torch may put its own context around the message (e.g. a trace line); the rule's text starts at our prefix.
    assert PREFIX in msg, f"message lacks {PREFIX!r}: {msg[:400]}"
    return msg[msg.index(PREFIX):]


def _words(msg, n=3):
    """The first words of the rule after the prefix (the operand and the rule; the details may be worded apart)."""
    return " ".join(msg[len(PREFIX):].replace("(", " ").split()[:n])


@pytest.mark.parametrize("name", list(CASES))
def test_real_and_fake_raise_the_same(name):
    args, kw = CASES[name]()
    real = _message(lambda: torch.ops.dgtune.scaled_mm.default(*args, **kw))
    wrapper = _message(lambda: dgtune.scaled_mm(*args, **kw))
    with FakeTensorMode(allow_non_fake_inputs=False) as mode:
        fargs = [mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in args]
        fkw = {k: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
        fake = _message(lambda: torch.ops.dgtune.scaled_mm.default(*fargs, **fkw))
    assert _words(real) == _words(fake), f"real: {real[:300]}\nfake: {fake[:300]}"
    assert _words(real) == _words(wrapper), f"real: {real[:300]}\nwrapper: {wrapper[:300]}"
    if name == "128x128-x-1x128":
        assert "not supported" in real, real
    if name.startswith("fast-accum"):
        assert "use_fast_accum" in real, real


def test_meta_device_raises_the_same():
    args, kw = _fast_accum_block("blockwise_1x128_128x128")()
    meta = [t.to("meta") for t in args]
    msg = _message(lambda: torch.ops.dgtune.scaled_mm.default(*meta, **kw))
    assert "use_fast_accum" in msg


def test_grad_mode_input_requiring_grad_raises():
    """No backward: the wrapper raises at the call when an input requires grad (spec: Autograd)."""
    c = H.make_case(64, 256, 512, "tensorwise", layout="torch")
    sa = c.sa.clone().requires_grad_(True)
    with pytest.raises(RuntimeError):
        dgtune.scaled_mm(c.a, c.b, sa, c.sb)
    with torch.no_grad():
        dgtune.scaled_mm(c.a, c.b, sa, c.sb)
