"""dgtune.scaled_mm / scaled_mm_amax wrappers and the missing-native behaviour."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import E4M3, mk_a, mk_b, scales

import dgtune
from dgtune import _native
from dgtune import _scaled_mm as sm_mod


def test_default_out_dtype_bf16_and_none():
    sa, sb = scales("rowwise", 8, 16, 32)
    assert dgtune.scaled_mm(mk_a(8, 32), mk_b(32, 16), sa, sb).dtype == torch.bfloat16
    assert dgtune.scaled_mm(mk_a(8, 32), mk_b(32, 16), sa, sb, out_dtype=None).dtype == torch.bfloat16
    assert dgtune.scaled_mm(mk_a(8, 32), mk_b(32, 16), sa, sb, out_dtype=torch.float32).dtype == torch.float32


def test_out_returned_and_checked():
    sa, sb = scales("tensorwise", 8, 16, 32)
    out = torch.empty(8, 16, dtype=torch.bfloat16, device="meta")
    assert dgtune.scaled_mm(mk_a(8, 32), mk_b(32, 16), sa, sb, out=out) is out
    out32 = torch.empty(8, 16, dtype=torch.float32, device="meta")
    # out_dtype defaults to bfloat16: an f32 out needs out_dtype=None or torch.float32
    with pytest.raises(RuntimeError, match=r"out.dtype = torch.float32 must be out_dtype = torch.bfloat16"):
        dgtune.scaled_mm(mk_a(8, 32), mk_b(32, 16), sa, sb, out=out32)
    assert dgtune.scaled_mm(mk_a(8, 32), mk_b(32, 16), sa, sb, out_dtype=None, out=out32) is out32


def test_amax_wrapper():
    sa, sb = scales("block", 8, 256, 256)
    d, amax = dgtune.scaled_mm_amax(mk_a(8, 256), mk_b(256, 256), sa, sb)
    assert d.dtype == E4M3 and amax.dtype == torch.float32 and amax.dim() == 0


@pytest.mark.parametrize("which", ["a", "scale_b", "bias"])
def test_requires_grad_raises_at_call(which):
    m, n, k = 8, 16, 32
    a, b = torch.zeros(m, k), torch.zeros(n, k)
    sa, sb = scales("tensorwise", m, n, k)
    bias = torch.empty(n, dtype=torch.bfloat16, device="meta")
    t = {"a": a, "scale_b": sb, "bias": bias}[which]
    t.requires_grad_(True)
    args = dict(a=mk_a(m, k), b=mk_b(k, n), scale_a=sa, scale_b=sb, bias=bias)
    if which == "a":
        args["a"] = torch.empty(m, k, device="meta", requires_grad=True)  # float: only the grad rule is tested
    with pytest.raises(RuntimeError, match=r"^dgtune\.scaled_mm: has no backward, but grad mode is on and " + which
                       + " require grad"):
        dgtune.scaled_mm(**args)
    with pytest.raises(RuntimeError, match=r"has no backward"):
        dgtune.scaled_mm_amax(**args)
    with torch.no_grad():
        if which != "a":
            assert dgtune.scaled_mm(**args).shape == (m, n)


def test_wrapper_caches_overloads_and_c_entry_points():
    assert sm_mod._SCALED_MM is torch.ops.dgtune.scaled_mm.default
    assert sm_mod._SCALED_MM_C is torch.ops.dgtune.scaled_mm.default._op
    assert sm_mod._SCALED_MM_OUT_C is torch.ops.dgtune.scaled_mm_out.default._op


def _without_native(tmp_path, code):
    """Runs `code` in a fresh Python whose dgtune finds no libdgtune_torch.so ($DGTUNE_TORCH_LIB names a missing
    file), importing the same dgtune as this process (installed, or python/ of the checkout)."""
    env = dict(os.environ, DGTUNE_TORCH_LIB=str(tmp_path / "missing" / "libdgtune_torch.so"),
               PYTHONPATH=os.path.dirname(os.path.dirname(dgtune.__file__)))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_native_missing_is_reported(tmp_path):
    out = _without_native(tmp_path, """
        import dgtune
        assert not dgtune.native_available()
        print(dgtune.native_load_error())
    """)
    assert "does not exist" in out


def test_require_names_path_and_build(tmp_path):
    _without_native(tmp_path, """
        import pytest, dgtune
        from dgtune import _native
        with pytest.raises(RuntimeError) as info:
            _native.require()
        msg = str(info.value)
        assert str(_native.lib_path()) in msg
        assert "pip install --no-build-isolation ./python" in msg and "DGTUNE_TORCH_LIB" in msg
        with pytest.raises(RuntimeError, match="pip install --no-build-isolation"):
            dgtune.stats(device=0)
        with pytest.raises(RuntimeError, match="pip install --no-build-isolation"):
            dgtune.native_version()
    """)


def test_missing_cuda_kernel_says_why(tmp_path):
    # calling the CUDA kernel directly (no GPU needed: the missing-library kernel never touches the tensors)
    _without_native(tmp_path, """
        import pytest, torch, dgtune
        a = torch.zeros(8, 32, dtype=torch.float8_e4m3fn)
        b = torch.zeros(16, 32, dtype=torch.float8_e4m3fn).t()
        s = torch.ones(())
        op = torch.ops.dgtune.scaled_mm.default
        with pytest.raises(RuntimeError, match=r"^dgtune\\.scaled_mm: the native library .*libdgtune_torch.so does "
                           r"not exist; build it with `pip install --no-build-isolation ./python`"):
            op._op_dk(torch._C.DispatchKey.CUDA, a, b, s, s, None, None, None, False)
    """)


def test_lib_path_env(monkeypatch, tmp_path):
    monkeypatch.setenv("DGTUNE_TORCH_LIB", str(tmp_path / "x.so"))
    assert _native.lib_path() == tmp_path / "x.so"
    monkeypatch.delenv("DGTUNE_TORCH_LIB")
    assert _native.lib_path().parts[-3:] == ("dgtune", "lib", "libdgtune_torch.so")
