"""The grouped ops without a GPU: schemas, fake implementations (meta tensors, FakeTensorMode, torch.compile), every
argument rule with the argument and the rule named, and get_col_major_tma_aligned_tensor against a plain reference."""

import pytest
import torch
from conftest import E4M3, ceil_div

import dgtune
from dgtune._grouped_ops import GroupedRuleError, check_grouped, grouped_scale_strides

BF16 = torch.bfloat16


def f32_strided(shape, strides, device="meta"):
    size = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    return torch.empty(size, dtype=torch.float32, device=device).as_strided(shape, strides)


def masked_args(g=4, m_max=256, n=320, k=576, device="meta"):
    """A valid masked call's tensors with block scales in the kernel's layout."""
    sa_st, sb_st = grouped_scale_strides(True, g, m_max, n, k)
    kg, nb = ceil_div(k, 128), ceil_div(n, 128)
    return dict(
        a=torch.empty(g, m_max, k, dtype=E4M3, device=device),
        a_scale=f32_strided((g, m_max, kg), sa_st, device),
        b=torch.empty(g, n, k, dtype=E4M3, device=device),
        b_scale=f32_strided((g, nb, kg), sb_st, device),
        out=torch.empty(g, m_max, n, dtype=BF16, device=device),
        masked_m=torch.empty(g, dtype=torch.int32, device=device),
    )


def contiguous_args(g=4, m_sum=640, n=320, k=576, device="meta"):
    sa_st, sb_st = grouped_scale_strides(False, g, m_sum, n, k)
    kg, nb = ceil_div(k, 128), ceil_div(n, 128)
    return dict(
        a=torch.empty(m_sum, k, dtype=E4M3, device=device),
        a_scale=f32_strided((m_sum, kg), sa_st, device),
        b=torch.empty(g, n, k, dtype=E4M3, device=device),
        b_scale=f32_strided((g, nb, kg), sb_st, device),
        out=torch.empty(m_sum, n, dtype=BF16, device=device),
        m_indices=torch.empty(m_sum, dtype=torch.int32, device=device),
    )


def call_masked(t, expected_m=16):
    torch.ops.dgtune.m_grouped_scaled_mm_masked(t["a"], t["a_scale"], t["b"], t["b_scale"], t["out"], t["masked_m"],
                                                expected_m)


def call_contiguous(t):
    torch.ops.dgtune.m_grouped_scaled_mm_contiguous(t["a"], t["a_scale"], t["b"], t["b_scale"], t["out"],
                                                    t["m_indices"])


def test_schemas_exact_and_out_is_mutated():
    c = torch.ops.dgtune.m_grouped_scaled_mm_contiguous.default._schema
    m = torch.ops.dgtune.m_grouped_scaled_mm_masked.default._schema
    assert str(c) == ("dgtune::m_grouped_scaled_mm_contiguous(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, "
                      "Tensor(a!) out, Tensor m_indices) -> ()")
    assert str(m) == ("dgtune::m_grouped_scaled_mm_masked(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, "
                      "Tensor(a!) out, Tensor masked_m, int expected_m) -> ()")
    assert c.is_mutable and m.is_mutable
    assert [a.name for a in c.arguments if a.alias_info is not None and a.alias_info.is_write] == ["out"]


def test_scale_strides_of_the_kernel_layout():
    # K 576: KG 5 padded to 8 floats per row of b's scales; a's are M-major with ld = M.
    assert grouped_scale_strides(True, 4, 256, 320, 576) == ((5 * 256, 1, 256), (3 * 8, 8, 1))
    assert grouped_scale_strides(False, 4, 640, 320, 576) == ((1, 640), (3 * 8, 8, 1))
    # K 7168: KG 56, a multiple of 4, so a contiguous [G, NB, KG] tensor is already the layout.
    assert grouped_scale_strides(False, 32, 4096, 4096, 7168)[1] == (32 * 56, 56, 1)


def test_fake_accepts_valid_calls_block_and_per_tensor():
    call_masked(masked_args())
    call_contiguous(contiguous_args())
    t = masked_args()
    t["a_scale"], t["b_scale"] = torch.empty((), device="meta"), torch.empty(1, device="meta")
    assert check_grouped(True, *[t[k] for k in ("a", "a_scale", "b", "b_scale", "out", "masked_m")], 5) == "per-tensor"
    call_masked(t, 5)
    t = masked_args()
    assert check_grouped(True, *[t[k] for k in ("a", "a_scale", "b", "b_scale", "out", "masked_m")], 5) == "block"
    # An empty contiguous batch (M_sum 0) is a valid no-op.
    call_contiguous(contiguous_args(m_sum=0))


def _expect(fn, rule, *needles):
    with pytest.raises(GroupedRuleError) as e:
        fn()
    assert e.value.rule == rule, str(e.value)
    for s in needles:
        assert s in str(e.value), str(e.value)
    return str(e.value)


@pytest.mark.parametrize(
    "change,rule,needles",
    [
        (lambda t: t.update(a=t["a"].to(torch.float8_e5m2)), "dtype", ["a must be float8_e4m3fn", "float8_e5m2"]),
        (lambda t: t.update(out=torch.empty(4, 256, 320, dtype=torch.float32, device="meta")), "dtype",
         ["out must be bfloat16"]),
        (lambda t: t.update(masked_m=torch.empty(4, dtype=torch.int64, device="meta")), "dtype",
         ["masked_m must be int32"]),
        (lambda t: t.update(a_scale=t["a_scale"].to(BF16)), "dtype", ["a_scale must be float32"]),
        (lambda t: t.update(a=torch.empty(256, 576, dtype=E4M3, device="meta")), "shape", ["a must be 3-D"]),
        (lambda t: t.update(b=torch.empty(0, 320, 576, dtype=E4M3, device="meta")), "shape",
         ["b's G = 0 must be in 1 .. 4096"]),
        (lambda t: t.update(a=torch.empty(3, 256, 576, dtype=E4M3, device="meta")), "shape",
         ["a has 3 groups, b has 4"]),
        (lambda t: t.update(b=torch.empty(4, 320, 512, dtype=E4M3, device="meta")), "shape",
         ["a's K = 576 differs from b's K = 512"]),
        (lambda t: t.update(out=torch.empty(4, 256, 256, dtype=BF16, device="meta")), "shape",
         ["out must be [4, 256, 320]"]),
        (lambda t: t.update(masked_m=torch.empty(5, dtype=torch.int32, device="meta")), "shape",
         ["masked_m must have 4 entries"]),
        (lambda t: t.update(a=torch.empty(4, 256, 576, dtype=E4M3, device="meta").transpose(1, 2).contiguous()
                            .transpose(1, 2)), "stride", ["a must be contiguous"]),
        (lambda t: t.update(a_scale=torch.empty(4, 256, 5, device="meta")), "scale",
         ["a_scale must be M-major and TMA-aligned", "get_col_major_tma_aligned_tensor"]),
        (lambda t: t.update(b_scale=torch.empty(4, 3, 5, device="meta")), "scale",
         ["b_scale must have strides (24, 8, 1)"]),
        (lambda t: t.update(b_scale=torch.empty(4, 2, 5, device="meta")), "scale", ["b_scale must be [4, 3, 5]"]),
        (lambda t: t.update(masked_m=torch.empty(4, dtype=torch.int32, device="cpu")), "device",
         ["same device", "meta (a)", "cpu (masked_m)"]),
    ],
)
def test_masked_rules_name_argument_and_rule(change, rule, needles):
    t = masked_args()
    change(t)
    msg = _expect(lambda: call_masked(t), rule, *needles)
    assert msg.startswith("dgtune.m_grouped_scaled_mm_masked: ")


def test_masked_m_max_k_and_expected_m_rules():
    _expect(lambda: call_masked(masked_args(m_max=200)), "m-align", "M_max (a.size(1)) = 200", "multiple of 128")
    _expect(lambda: call_masked(masked_args(k=520)), "k", "K = 520", "multiple of 16")
    _expect(lambda: call_masked(masked_args(), expected_m=0), "expected_m", "expected_m = 0 must be >= 1")


def test_contiguous_rules():
    _expect(lambda: call_contiguous(contiguous_args(m_sum=300)), "m-align", "M_sum (a.size(0)) = 300")
    t = contiguous_args()
    t["m_indices"] = torch.empty(639, dtype=torch.int32, device="meta")
    _expect(lambda: call_contiguous(t), "shape", "m_indices must have 640 entries (M_sum)")
    t = contiguous_args()
    t["out"] = torch.empty(640, 321, dtype=BF16, device="meta")
    _expect(lambda: call_contiguous(t), "shape", "out must be [640, 320]")
    # a 16-byte aligned view of a larger buffer is fine; one 8 bytes in is not.
    t = contiguous_args()
    base = torch.empty(640 * 576 + 8, dtype=E4M3, device="meta")
    t["a"] = base[8:].view(640, 576)
    msg = _expect(lambda: call_contiguous(t), "align", "a's data must be 16-byte aligned")
    assert msg.startswith("dgtune.m_grouped_scaled_mm_contiguous: ")


def test_fake_tensor_mode_on_cuda_and_cpu_kernel_refusal():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        call_masked(masked_args(device="cuda"))
        t = masked_args(device="cuda")
        t["masked_m"] = t["masked_m"].cpu()
        _expect(lambda: call_masked(t), "device", "cuda:0 (a)")
    # Real CPU tensors pass the rules, then the CPU kernel says the op runs on CUDA only.
    _expect(lambda: call_masked(masked_args(g=1, m_max=128, n=128, k=128, device="cpu")), "device",
            "runs on CUDA tensors only")


def test_compile_fullgraph_traces_both_ops():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(m, c):
        dgtune.m_grouped_scaled_mm_masked(m["a"], m["a_scale"], m["b"], m["b_scale"], m["out"], m["masked_m"], 16)
        dgtune.m_grouped_scaled_mm_contiguous(c["a"], c["a_scale"], c["b"], c["b_scale"], c["out"], c["m_indices"])
        return m["out"].float().sum() + c["out"].float().sum()

    with torch.no_grad():
        torch.compile(f, fullgraph=True, backend=backend)(masked_args(), contiguous_args())
    text = str(graphs[0].graph)
    assert "dgtune.m_grouped_scaled_mm_masked" in text and "dgtune.m_grouped_scaled_mm_contiguous" in text, text


@pytest.mark.parametrize("shape", [(5, 3), (128, 56), (7, 1), (2, 9, 4), (3, 256, 5)])
def test_col_major_tma_aligned_tensor_values_and_layout(shape):
    torch.manual_seed(0)
    x = torch.randn(shape)
    y = dgtune.get_col_major_tma_aligned_tensor(x)
    m, kg = shape[-2], shape[-1]
    aligned = (m + 3) // 4 * 4
    assert y.shape == x.shape and torch.equal(y, x)
    assert y.stride(-2) == 1 and (kg == 1 or y.stride(-1) == aligned)
    if len(shape) == 3:
        assert y.stride(0) == aligned * kg
    # Every element sits at the address of the M-major layout: storage offset m + j * aligned (+ batch).
    storage = y.untyped_storage()
    base = torch.empty(0).set_(storage, 0, (storage.nbytes() // 4,), (1,))
    for idx in torch.cartesian_prod(*[torch.arange(s) for s in shape]).reshape(-1, len(shape)).tolist():
        *bt, i, j = idx
        off = (bt[0] * aligned * kg if bt else 0) + i + j * aligned
        assert base[y.storage_offset() + off].item() == x[tuple(idx)].item(), idx
    # A tensor already in the layout is returned as is.
    assert dgtune.get_col_major_tma_aligned_tensor(y) is y


def test_col_major_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D or 3-D"):
        dgtune.get_col_major_tma_aligned_tensor(torch.empty(4))
    with pytest.raises(ValueError, match="float32"):
        dgtune.get_col_major_tma_aligned_tensor(torch.empty(4, 4, dtype=torch.float64))


def test_wrapper_converts_row_major_scales_before_the_op():
    # DeepGEMM users pass row-major a_scale [G, M_max, KG] and contiguous b_scale [G, NB, KG]; K 576 (KG 5) needs
    # both converted, and the op's rules then pass (the CPU kernel refuses afterwards: it runs on CUDA only).
    g, m_max, n, k = 2, 128, 256, 576
    a = torch.zeros(g, m_max, k, dtype=E4M3)
    b = torch.zeros(g, n, k, dtype=E4M3)
    sa = torch.rand(g, m_max, ceil_div(k, 128))
    sb = torch.rand(g, ceil_div(n, 128), ceil_div(k, 128))
    out = torch.empty(g, m_max, n, dtype=BF16)
    mm = torch.zeros(g, dtype=torch.int32)
    with pytest.raises(GroupedRuleError, match="runs on CUDA tensors only"):
        dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, mm, 16)
    # The op alone, without the wrapper's conversion, names the layout rule.
    _expect(lambda: torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, mm, 16), "scale", "a_scale")


def test_missing_native_library_cuda_kernel_says_why(tmp_path):
    # A fresh Python whose dgtune finds no libdgtune_torch.so: the grouped ops' CUDA kernels name the op and the build.
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import pytest, torch, dgtune
        a = torch.zeros(1, 128, 128, dtype=torch.float8_e4m3fn)
        b = torch.zeros(1, 128, 128, dtype=torch.float8_e4m3fn)
        out = torch.zeros(1, 128, 128, dtype=torch.bfloat16)
        s = torch.ones(())
        mm = torch.zeros(1, dtype=torch.int32)
        op = torch.ops.dgtune.m_grouped_scaled_mm_masked.default
        with pytest.raises(RuntimeError, match=r"^dgtune\\.m_grouped_scaled_mm_masked: the native library .*does not "
                           r"exist; build it with `pip install --no-build-isolation ./python`"):
            op._op_dk(torch._C.DispatchKey.CUDA, a, s, b, s, out, mm, 4)
    """)
    env = dict(os.environ, DGTUNE_TORCH_LIB=str(tmp_path / "missing" / "libdgtune_torch.so"),
               PYTHONPATH=os.path.dirname(os.path.dirname(dgtune.__file__)))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(tmp_path),
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_grouped_choice_sends_the_problem_and_returns_the_choice(monkeypatch):
    from dgtune import _native

    calls = []

    class Control:
        def grouped_choice(self, device, problem):
            calls.append((device, problem))
            if problem["layout"] == "contiguous":
                return {"config_key": "128x128x128_s5", "source": "ladder", "protocol": "cold-l2-v1",
                        "tuned_key": "kind=contiguous groups=4", "tuned_us": 41.5, "older_kernel": False,
                        "grid_ctas": 16}
            return {"config_key": "64x128x128_s8_wg1", "source": "default", "grid_ctas": 132}

    monkeypatch.setattr(_native, "require", lambda: Control())
    c = dgtune.grouped_choice("masked", 32, 1024, 4096, 7168, expected_m=32, device=1)
    assert c == dgtune.GroupedChoice("64x128x128_s8_wg1", "default", 132)
    assert calls == [(1, {"layout": "masked", "groups": 32, "m": 1024, "expected_m": 32, "n": 4096, "k": 7168,
                          "scale": "block"})]
    c = dgtune.grouped_choice("contiguous", 4, 512, 256, 512, scale="per-tensor", device="cuda:3")
    assert c == dgtune.GroupedChoice("128x128x128_s5", "ladder", 16, "kind=contiguous groups=4", 41.5, "cold-l2-v1")
    assert calls[1] == (3, {"layout": "contiguous", "groups": 4, "m": 512, "expected_m": 0, "n": 256, "k": 512,
                            "scale": "per-tensor"})
    with pytest.raises(ValueError, match="layout must be 'contiguous' or 'masked'"):
        dgtune.grouped_choice("dense", 4, 512, 256, 512, device=0)
    with pytest.raises(ValueError, match="scale must be 'block' or 'per-tensor'"):
        dgtune.grouped_choice("masked", 4, 512, 256, 512, expected_m=1, scale="channel", device=0)
    assert len(calls) == 2  # refused before the library is asked


def test_warmup_grouped_asks_the_library_to_make_each_expected_m(monkeypatch):
    from dgtune import _native

    calls = []

    class Control:
        def grouped_choice(self, device, problem):
            calls.append((device, problem))
            return {"config_key": f"cfg{problem['expected_m']}", "source": "ladder", "grid_ctas": 8}

    monkeypatch.setattr(_native, "require", lambda: Control())
    got = dgtune.warmup_grouped("masked", 32, 2048, 4096, 7168, expected_m=[9, 33], device=2)
    assert got == [dgtune.GroupedChoice("cfg9", "ladder", 8), dgtune.GroupedChoice("cfg33", "ladder", 8)]
    assert [c[0] for c in calls] == [2, 2]
    assert [c[1]["expected_m"] for c in calls] == [9, 33]
    assert all(c[1]["make"] is True and c[1]["layout"] == "masked" and c[1]["m"] == 2048 for c in calls)
    assert dgtune.warmup_grouped("contiguous", 4, 512, 256, 512, device=0)[0].config_key == "cfg0"
    assert [c.config_key for c in dgtune.warmup_grouped("masked", 4, 512, 256, 512, expected_m=range(5, 7),
                                                        device=0)] == ["cfg5", "cfg6"]
    assert dgtune.warmup_grouped("masked", 4, 512, 256, 512, expected_m=torch.tensor(3),
                                 device=0)[0].config_key == "cfg3"
    with pytest.raises(ValueError, match="layout must be 'contiguous' or 'masked'"):
        dgtune.warmup_grouped("dense", 4, 512, 256, 512, device=0)
    assert len(calls) == 6  # refused before the library is asked


FAKE_GROUPED_C = r"""
#include <stdio.h>
#include <string.h>
static char err[256] = "";
int dgtune_torch_configure(const char* j) { (void)j; return 0; }
int dgtune_torch_choose(int d, const char* p, char* o, size_t c) { (void)d; (void)p; (void)o; (void)c; return 1; }
int dgtune_torch_warmup(int d, const char* p, char* o, size_t c) { (void)d; (void)p; (void)o; (void)c; return 1; }
int dgtune_torch_stats(int d, char* o, size_t c) { (void)d; (void)o; (void)c; return 1; }
const char* dgtune_torch_last_error(void) { return err; }
const char* dgtune_torch_version(void) { return "fake"; }
int dgtune_torch_grouped_choice(int d, const char* p, char* out, size_t cap) {
  if (!strstr(p, "\"layout\": \"masked\"")) { snprintf(err, sizeof err, "no grouped GEMM of this problem"); return 1; }
  snprintf(out, cap, "{\"config_key\":\"k\",\"source\":\"default\",\"grid_ctas\":%d}", 100 + d);
  return 0;
}
"""


def test_grouped_choice_through_ctypes(tmp_path):
    import shutil
    import subprocess

    from dgtune import _native

    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the fake control library")
    src = tmp_path / "fake.c"
    src.write_text(FAKE_GROUPED_C)
    so = tmp_path / "libfake.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    c = _native.Control(so)
    assert c.grouped_choice(7, {"layout": "masked", "m": 128}) == {"config_key": "k", "source": "default",
                                                                   "grid_ctas": 107}
    with pytest.raises(RuntimeError, match=r"^dgtune: grouped_choice failed: no grouped GEMM of this problem$"):
        c.grouped_choice(0, {"layout": "contiguous"})
