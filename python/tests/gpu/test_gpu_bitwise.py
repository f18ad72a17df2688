"""Bitwise properties of the op (there is no Python path to a bare dgt::Gemm; the op runs what dgtune.choose names):
- the same call with the scales in a layout the op reads in place and in layouts it copies gives the same bits, and
  the copies are counted (dgtune.stats()["scale_copies"]) only for the layouts that need them;
- scaled_mm_out into a column slice of a wider buffer gives the bits of the contiguous output (when dgtune.choose
  picks the same config for both leading dimensions) and leaves the columns outside the slice untouched;
- repeated calls, the Python wrapper and torch.ops.dgtune.scaled_mm.default, and scaled_mm_amax's D vs scaled_mm's
  e4m3 output give the same bits; dgtune.choose is deterministic and names a config, a backend and a source."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

E4 = torch.float8_e4m3fn
OUT = {"bf16": torch.bfloat16, "f32": torch.float32, "e4m3": E4}


def bits(t):
    return t.contiguous().view(torch.uint8)


def assert_bitwise(x, y, what):
    assert x.shape == y.shape and x.dtype == y.dtype, f"{what}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}"
    bx, by = bits(x), bits(y)
    if not torch.equal(bx, by):
        n = int((bx != by).sum())
        pytest.fail(f"{what}: {n} bytes differ")


def scale_variants(recipe, sa, sb, m, n, k):
    """(name, scale_a, scale_b, copies expected: None = no claim, 0 = must not copy, >0 = must copy)."""
    out = []
    a_d, b_d = H.dgtune_scale_layout(recipe, sa, sb, m, n, k)
    out.append(("dgtune-layout", a_d, b_d, 0))
    a_t, b_t = H.torch_scale_layout(recipe, sa, sb, m, n, k)
    out.append(("torch-layout", a_t, b_t, None))
    # Misaligned: the same values one float into a fresh buffer (pointer not 16-byte aligned): always copied.
    def shifted(t):
        buf = torch.full((t.numel() + 8,), float("nan"), device=t.device)
        v = buf[1:1 + t.numel()].view(t.shape) if t.dim() else buf[1:2].view(())
        v.copy_(t)
        return v
    out.append(("misaligned", shifted(sa.contiguous()), shifted(sb.contiguous()), 1))
    if recipe in H.BLOCK_RECIPES:
        # Row-major contiguous scale_a and a padded-ld column-major scale_b: strides the op does not read in place.
        out.append(("contiguous", sa.contiguous(), sb.contiguous() if recipe == "blockwise_1x128_128x128"
                    else H.empty_strided_copy(sb, (1, sb.shape[0] + 3)), 1))
    return out


@pytest.mark.parametrize("out", ["bf16", "f32", "e4m3"])
@pytest.mark.parametrize("recipe", H.RECIPES)
@pytest.mark.parametrize("m,n,k", [(256, 384, 1024), (200, 1000, 1040)])
def test_scale_layouts_bitwise(backend, m, n, k, recipe, out):
    base = H.make_case(m, n, k, recipe, layout="none")
    sr = torch.tensor(0.01, device="cuda") if out == "e4m3" else None
    results = []
    for name, sa, sb, copies in scale_variants(recipe, base.sa, base.sb, m, n, k):
        before = H.stats(dgtune).get("scale_copies")
        d = dgtune.scaled_mm(base.a, base.b, sa, sb, scale_result=sr, out_dtype=OUT[out])
        torch.cuda.synchronize()
        after = H.stats(dgtune).get("scale_copies")
        assert before is not None and after is not None, "dgtune.stats() has no scale_copies (spec)"
        if copies == 0:
            assert after == before, f"{name}: the op copied scales it should read in place ({after - before})"
        elif copies:
            assert after > before, f"{name}: the op read scales in place that it must copy"
        results.append((name, d))
    ref_name, ref = results[0]
    for name, d in results[1:]:
        assert_bitwise(d, ref, f"{recipe} {out} {m}x{n}x{k}: scales {name} vs {ref_name}")
    if out != "e4m3":
        H.check_bf16_f32(ref, H.reference(base), False, f"{recipe} {out}")


SENTINEL = {torch.bfloat16: -12345.0, torch.float32: -1.2345e30}


@pytest.mark.parametrize("out", ["bf16", "f32", "e4m3"])
@pytest.mark.parametrize("recipe", H.RECIPES)
@pytest.mark.parametrize("m,n,k", [(127, 1024, 4000), (3, 257, 1000), (1, 256, 1024)])
def test_out_column_slice(backend, record_property, m, n, k, recipe, out):
    case = H.make_case(m, n, k, recipe, layout="torch")
    od = OUT[out]
    ref = H.reference(case)
    sr_value = 0.8 * H.E4M3_MAX / float(ref.abs().max())
    sr = torch.tensor(sr_value, device="cuda") if out == "e4m3" else None
    contiguous = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, scale_result=sr, out_dtype=od)
    ld = H.round_up(n + 48, 16)
    col0 = 16
    buf = torch.empty((m, ld), dtype=od, device="cuda")
    if od == E4:
        buf.view(torch.uint8).fill_(0x55)
    else:
        buf.fill_(SENTINEL[od])
    before = buf.clone()
    out_view = buf[:, col0:col0 + n]
    assert out_view.stride() == (ld, 1)
    ret = torch.ops.dgtune.scaled_mm_out.default(case.a, case.b, case.sa, case.sb, None, sr, od, False, out_view)
    assert ret is None  # the schema returns nothing (spec)
    torch.cuda.synchronize()
    # Columns outside the slice are untouched.
    mask = torch.ones((m, ld), dtype=torch.bool, device="cuda")
    mask[:, col0:col0 + n] = False
    assert torch.equal(bits(buf)[mask.repeat_interleave(buf.element_size(), dim=1)],
                       bits(before)[mask.repeat_interleave(buf.element_size(), dim=1)]), "wrote outside the out= slice"
    c_contig = H.choose(dgtune, case, out=out, ldd=n)
    c_slice = H.choose(dgtune, case, out=out, ldd=ld)
    record_property("choose_contiguous", c_contig)
    record_property("choose_slice", c_slice)
    same = all(c_contig.get(key) == c_slice.get(key) for key in ("config_key", "backend", "cublaslt_algo"))
    if same:
        assert_bitwise(out_view, contiguous, f"{recipe} {out} {m}x{n}x{k}: out= slice (ldd {ld}) vs contiguous")
    else:
        # Another leading dimension is another problem: the loader may pick another config. Then the bound only.
        if out == "e4m3":
            H.check_e4m3(out_view, ref, sr_value, False, "out= slice")
        else:
            H.check_bf16_f32(out_view, ref, False, "out= slice")
    # The Python wrapper's out= (when it has one) returns `out` itself.
    try:
        ret2 = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, scale_result=sr, out_dtype=od, out=out_view)
    except TypeError:
        return
    assert ret2 is out_view or ret2.data_ptr() == out_view.data_ptr()


@pytest.mark.parametrize("recipe", H.RECIPES)
def test_repeat_wrapper_op_and_amax_bitwise(backend, recipe):
    case = H.make_case(257, 1024, 4000, recipe, layout="torch")
    d1 = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb)
    d2 = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb)
    d3 = torch.ops.dgtune.scaled_mm.default(case.a, case.b, case.sa, case.sb)
    assert_bitwise(d1, d2, "repeat")
    assert_bitwise(d1, d3, "wrapper vs torch.ops.dgtune.scaled_mm.default")
    sr = torch.tensor(0.8 * H.E4M3_MAX / float(H.reference(case).abs().max()), device="cuda")
    e1 = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, scale_result=sr, out_dtype=E4)
    e2, amax = dgtune.scaled_mm_amax(case.a, case.b, case.sa, case.sb, scale_result=sr)
    e3, _ = torch.ops.dgtune.scaled_mm_amax.default(case.a, case.b, case.sa, case.sb, None, sr, False)
    assert_bitwise(e1, e2, "scaled_mm e4m3 vs scaled_mm_amax")
    assert_bitwise(e2, e3, "scaled_mm_amax wrapper vs op")


@pytest.mark.parametrize("recipe", H.RECIPES)
def test_choose(backend, record_property, recipe):
    case = H.make_case(64, 2112, 7168, recipe, layout="torch")
    c1 = H.choose(dgtune, case)
    c2 = H.choose(dgtune, case)
    record_property("choose", c1)
    assert c1 == c2
    for key in ("config_key", "source", "backend"):
        assert key in c1, f"dgtune.choose lacks {key}: {c1}"
    assert c1["backend"] in ("dgtune", "cublaslt"), c1
    if backend == "kernel":
        assert c1["backend"] == "dgtune", f"cublaslt=False must run dgtune's kernel: {c1}"
        assert c1["config_key"], c1
