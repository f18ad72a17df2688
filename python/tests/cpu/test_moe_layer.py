"""python/bench/moe_layer.py without a GPU: routing, the contiguous and masked layouts and their padding rule, the
torch loop's row rounding and scale gather, the quantizer against dgtune.quantize, the float32 reference and the
verification's verdicts, argument parsing, and the layer's wiring on tiny CPU tensors with stand-ins for the grouped
ops (held to the ops' own rules, check_grouped) and for torch._scaled_mm (held to its BlockWise1x128 /
BlockWise128x128 stride rules)."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest
import torch

import dgtune
from dgtune._grouped_ops import check_grouped

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "moe_layer.py"
_spec = importlib.util.spec_from_file_location("moe_layer", _BENCH)
moe = importlib.util.module_from_spec(_spec)
sys.modules["moe_layer"] = moe  # dataclasses look their module up by name
_spec.loader.exec_module(moe)

BF16 = torch.bfloat16
E4M3 = torch.float8_e4m3fn


# ----------------------------------------------------------------------------------------------------------------
# Routing and layouts


def test_route_counts_are_seeded_and_add_up():
    a = moe.route_counts(64, seed=3)
    assert a == moe.route_counts(64, seed=3)
    assert a != moe.route_counts(64, seed=4)
    assert len(a) == 32
    # Over all 256 experts every one of the 8 x 64 tokens is counted exactly top_k = 8 times, at most once per expert.
    every = moe.route_counts(64, seed=3, groups=256)
    assert every[:32] == a
    assert sum(every) == 8 * 64 * 8
    assert max(every) <= 8 * 64


def test_route_counts_mean_is_tokens_over_four():
    # DeepSeek-V3 at EP 8: 8 T tokens x 8 picks over 256 experts -> T / 4 rows per expert on average.
    counts = moe.route_counts(4096, seed=0)
    mean = sum(counts) / len(counts)
    assert abs(mean - 1024) < 0.02 * 1024, mean
    with pytest.raises(ValueError, match="tokens per GPU must be >= 1"):
        moe.route_counts(0, seed=0)


def test_contiguous_plan_segments_padding_and_m_indices():
    p = moe.contiguous_plan(10, [3, 0, 130, 128])
    assert p.layout == "contiguous" and p.mode == "prefill"
    assert p.segments == [128, 0, 256, 128]
    assert p.starts == [0, 128, 128, 384]
    assert p.m == 512 and p.real_rows == 261
    mi = p.layout_tensor
    assert mi.dtype == torch.int32 and mi.shape == (512,)
    assert mi[:3].tolist() == [0, 0, 0] and bool((mi[3:128] == -1).all())
    assert bool((mi[128:258] == 2).all()) and bool((mi[258:384] == -1).all())
    assert bool((mi[384:] == 3).all())
    assert int((mi == -1).sum()) == 512 - 261
    assert p.rows_of(2) == (128, 130) and p.rows_of(1) == (128, 0)
    d = p.describe()
    assert d["m_sum"] == 512 and d["padding_rows"] == 251 and d["max_count"] == 130


def test_masked_plan_m_max_expected_m_and_act_rows():
    p = moe.masked_plan(20, [5, 0, 17, 40])
    assert p.layout == "masked" and p.m == 256  # round_up(8 x 20, 128)
    assert p.expected_m == 16  # ceil(62 / 4)
    assert p.act_rows == 128
    assert p.layout_tensor.tolist() == [5, 0, 17, 40] and p.layout_tensor.dtype == torch.int32
    assert p.rows_of(3) == (0, 40)
    assert moe.masked_plan(200, [1500, 3, 3, 3]).act_rows == 1536
    assert moe.masked_plan(1, [0, 0]).expected_m == 1
    with pytest.raises(ValueError, match="exceeds M_max"):
        moe.masked_plan(1, [129, 0])


def test_make_plan_dispatches_on_mode():
    assert moe.make_plan("prefill", 512, 0).layout == "contiguous"
    dec = moe.make_plan("decode", 128, 0)
    assert dec.layout == "masked" and dec.m == 1024 and dec.groups == 32


def test_loop_rows_round_up_within_segments():
    p = moe.contiguous_plan(10, [3, 0, 130, 128])
    assert moe.loop_rows(p, 1) == [3, 0, 130, 128]
    assert moe.loop_rows(p, 16) == [16, 0, 144, 128]
    assert moe.loop_rows(p, 128) == [128, 0, 256, 128]
    m = moe.masked_plan(20, [5, 0, 17, 40])
    assert moe.loop_rows(m, 128) == [128, 0, 128, 128]


@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_loop_scale_index_gives_per_expert_outer_major_scales(layout):
    kg = 3
    if layout == "contiguous":
        p = moe.contiguous_plan(10, [3, 0, 130, 128])
        s = torch.randn(p.m, kg)
    else:
        p = moe.masked_plan(20, [5, 0, 17, 40])
        s = torch.randn(4, p.m, kg)
    rows = moe.loop_rows(p, 16)
    idx, bases = moe.loop_scale_index(p, rows, kg)
    assert idx.numel() == kg * sum(rows)
    flat = torch.take(s, idx)
    for g, r in enumerate(rows):
        if r == 0:
            continue
        view = moe.TorchLoopPath._scale(flat, bases[g], r, kg)
        want = s[p.starts[g]:p.starts[g] + r] if layout == "contiguous" else s[g, :r]
        assert torch.equal(view, want)
        assert view.shape == (r, kg) and view.stride() == (1, r)  # torch's BlockWise1x128 layout


# ----------------------------------------------------------------------------------------------------------------
# Quantization and the reference


def test_quantize_matches_dgtune_quantize_bitwise():
    x = torch.randn(8, 256) * 3
    x[2] = 0  # an all-zero row: the floor scale
    q, s = moe.quantize_1x128(x)
    q_ref, s_ref = dgtune.quantize.quantize_1x128(x, pad_rows=False)
    assert torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8))
    assert torch.equal(s, s_ref)
    w = torch.randn(256, 384)
    qw, sw = moe.quantize_128x128(w)
    qw_ref, sw_ref = dgtune.quantize.quantize_128x128(w, pad_rows=False)
    assert torch.equal(qw.view(torch.uint8), qw_ref.view(torch.uint8)) and torch.equal(sw, sw_ref)
    # 3-D input (the masked layout): the same per-row rule.
    q3, s3 = moe.quantize_1x128(x.view(2, 4, 256))
    assert torch.equal(s3.view(8, 2), s)


def test_silu_mul_quant_is_silu_gate_times_up():
    h = (torch.randn(6, 512) * 2).to(BF16)
    q = torch.empty(6, 256, dtype=E4M3)
    s = torch.empty(6, 2)
    moe.silu_mul_quant(h, q, s)
    want = torch.nn.functional.silu(h[:, :256].float()) * h[:, 256:].float()
    got = moe.dequant_rows(q, s)
    # e4m3 keeps 3 mantissa bits: at most 2^-4 relative in its normal range, plus the subnormal floor per block.
    bound = want.abs() * 2.0**-4 + s.repeat_interleave(128, dim=1) * 2.0**-9
    assert bool(((got - want).abs() <= bound).all())
    # Gate and up swapped would not pass.
    swapped = torch.nn.functional.silu(h[:, 256:].float()) * h[:, :256].float()
    assert not bool(((got - swapped).abs() <= bound).all())


def _tiny_gemm_case(layout):
    gen = torch.Generator().manual_seed(5)
    counts = [3, 0, 130, 20]
    p = moe.contiguous_plan(1, counts) if layout == "contiguous" else moe.masked_plan(40, counts)
    g, n, k = 4, 256, 256
    shape = (p.m, k) if layout == "contiguous" else (g, p.m, k)
    a, sa = moe.quantize_1x128(torch.randn(shape, generator=gen))
    ws = [moe.quantize_128x128(torch.randn(n, k, generator=gen)) for _ in range(g)]
    w, sw = torch.stack([q for q, _ in ws]), torch.stack([s for _, s in ws])
    out = torch.zeros(shape[:-1] + (n,), dtype=BF16)
    for e in range(g):
        first, c = p.rows_of(e)
        sel = (slice(first, first + c),) if layout == "contiguous" else (e, slice(first, first + c))
        # float64 with the scales expanded by index arithmetic, independent of dequant_rows / dequant_weight
        ad = a[sel].double() * sa[sel].double()[:, torch.arange(k) // 128]
        wd = w[e].double() * sw[e].double()[torch.arange(n) // 128][:, torch.arange(k) // 128]
        out[sel] = (ad @ wd.t()).to(BF16)
    return p, out, a, sa, w, sw


@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_verify_gemm_passes_the_exact_result_and_catches_errors_in_real_rows_only(layout):
    p, out, a, sa, w, sw = _tiny_gemm_case(layout)
    v = moe.verify_gemm(p, out, a, sa, w, sw, 2.0**-7)
    assert v["ok"] and v["max_rel_err"] <= 2.0**-8 and v["nonfinite_rows"] == 0  # bf16 rounding only
    real = moe.real_rows_mask(p, "cpu")
    assert int(real.sum()) == p.real_rows == 153
    pad = out.clone()
    pad[~real] = float("nan")  # rows that hold no real row are never compared
    assert moe.verify_gemm(p, pad, a, sa, w, sw, 2.0**-7)["ok"]
    bad = out.clone()
    row = (p.starts[3] + 19,) if layout == "contiguous" else (3, 19)  # expert 3's last real row
    bad[row + (7,)] += 0.05 * float(out[row].float().abs().max()) * 8
    v = moe.verify_gemm(p, bad, a, sa, w, sw, 2.0**-7)
    assert not v["ok"] and v["worst_group"] == 3 and v["max_rel_err"] > 2.0**-7
    nan = out.clone()
    nan[row + (0,)] = float("nan")
    v = moe.verify_gemm(p, nan, a, sa, w, sw, 2.0**-7)
    assert not v["ok"] and v["nonfinite_rows"] == 1


# ----------------------------------------------------------------------------------------------------------------
# Arguments


def test_defaults_cover_both_modes_at_three_sizes():
    args = moe.parse_args([])
    assert args.modes == ["prefill", "decode"]
    assert moe.configs(args) == [("prefill", 512), ("prefill", 2048), ("prefill", 8192), ("decode", 32),
                                 ("decode", 128), ("decode", 256)]
    assert args.paths is None and args.loop_align == [1, 16, 128] and args.tolerance == 2.0**-7
    a = moe.parse_args(["--modes", "decode", "--decode-tokens", "64,16", "--paths", "dgtune,torch-loop",
                        "--json", "o.json", "--loop-align", "128", "--db", "t.db"])
    assert moe.configs(a) == [("decode", 64), ("decode", 16)]
    assert a.paths == ["dgtune", "torch-loop"] and a.json == "o.json" and a.loop_align == [128] and a.db == "t.db"
    assert args.db is None


@pytest.mark.parametrize("argv", [["--modes", "train"], ["--prefill-tokens", "0"], ["--decode-tokens", "x"],
                                  ["--paths", "torch-loop"], ["--paths", "dgtune,cutlass"], ["--repeats", "0"],
                                  ["--loop-align", "3"], ["--tolerance", "0"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        moe.parse_args(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_plan_only_prints_each_configuration(capsys):
    assert moe.main(["--plan-only", "--modes", "prefill,decode", "--prefill-tokens", "512",
                     "--decode-tokens", "128"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    import json

    pre, dec = json.loads(lines[0]), json.loads(lines[1])
    assert pre["layout"] == "contiguous" and pre["m_sum"] % 128 == 0 and pre["m_sum"] >= pre["real_rows"]
    assert abs(pre["real_rows"] - 4096) < 400  # about 8 x 512 rows
    assert dec["layout"] == "masked" and dec["m_max"] == 1024 and dec["expected_m"] == math.ceil(
        dec["real_rows"] / 32)


# ----------------------------------------------------------------------------------------------------------------
# The layer's wiring on CPU with stand-ins


def _fake_grouped(masked):
    """A CPU stand-in for torch.ops.dgtune.m_grouped_scaled_mm_*: the op's rules (check_grouped: shapes, dtypes,
    strides of the scales), then float64 math on real rows only."""

    def run(a, sa, b, sb, out, layout, expected_m=0):
        assert check_grouped(masked, a, sa, b, sb, out, layout, expected_m) == "block"
        g, n, k = b.shape
        for e in range(g):
            if masked:
                sel = (e, slice(0, int(layout[e])))
            else:
                sel = ((layout == e).nonzero().flatten(),)
            ad = a[sel].double() * sa[sel].double()[:, torch.arange(k) // 128]
            wd = b[e].double() * sb[e].double()[torch.arange(n) // 128][:, torch.arange(k) // 128]
            out[sel] = (ad @ wd.t()).to(out.dtype)

    return run


class FakeDgtune:
    get_col_major_tma_aligned_tensor = staticmethod(dgtune.get_col_major_tma_aligned_tensor)
    m_grouped_scaled_mm_contiguous = staticmethod(_fake_grouped(False))
    m_grouped_scaled_mm_masked = staticmethod(_fake_grouped(True))


def fake_scaled_mm(min_rows=1, garbage_below=0):
    """A CPU stand-in for torch._scaled_mm with torch 2.11's BlockWise1x128 x BlockWise128x128 rules (ScaledBlas.cpp:
    scale_a (M, K/128) strides (1, M); scale_b (K/128, N/128) strides (1, K/128); a row-major, b column-major), a
    refusal below `min_rows` rows (as cuBLASLt refuses some small M), and a wrong result below `garbage_below`."""
    calls = []

    def run(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False, *, out):
        m, k = a.shape
        n = b.shape[1]
        assert a.stride() == (k, 1) and b.stride() == (1, k)
        assert scale_a.shape == (m, k // 128) and (m == 1 or scale_a.stride() == (1, m)), scale_a.stride()
        assert scale_b.shape == (k // 128, n // 128) and scale_b.stride() == (1, k // 128)
        assert out.shape == (m, n) and out.is_contiguous() and out_dtype == BF16 and not use_fast_accum
        if m < min_rows:
            raise RuntimeError(f"CUBLAS_STATUS_NOT_SUPPORTED at M = {m}")
        ad = a.double() * scale_a.double()[:, torch.arange(k) // 128]
        bd = b.double() * scale_b.double()[torch.arange(k) // 128][:, torch.arange(n) // 128]
        out.copy_((ad @ bd).to(BF16))
        if m < garbage_below:
            out.mul_(3)
        calls.append(m)
        return out

    run.calls = calls
    return run


def _layer_reference(plan, dims, ops):
    """float64 y of the real rows without the second quantization: dequant(x) @ W1.T -> SiLU * up -> @ W2.T."""
    ys = []
    for e in range(dims.groups):
        first, c = plan.rows_of(e)
        if c == 0:
            continue
        sel = (slice(first, first + c),) if plan.layout == "contiguous" else (e, slice(first, first + c))
        h = moe.dequant_rows(ops.x[sel], ops.xs[sel]).double() @ moe.dequant_weight(ops.w1[e], ops.s1[e]).double().t()
        h = h.to(BF16).double()
        a = torch.nn.functional.silu(h[:, :dims.inter]) * h[:, dims.inter:]
        ys.append(a @ moe.dequant_weight(ops.w2[e], ops.s2[e]).double().t())
    return torch.cat(ys)


def _real(plan, t):
    return t[moe.real_rows_mask(plan, "cpu")]


@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_layer_wiring_dgtune_and_torch_loop_on_cpu(layout, monkeypatch):
    dims = moe.Dims(groups=4, hidden=512, inter=512)  # K/128 a multiple of 4, as for 7168 and 2048
    counts = [3, 0, 130, 20]
    plan = moe.contiguous_plan(1, counts) if layout == "contiguous" else moe.masked_plan(40, counts)
    ops = moe.Operands(plan, dims, seed=0, device="cpu")
    # The inputs' layouts are the kernels': a_scale M-major, the layout tensor int32.
    assert ops.xs_mmajor.stride()[-2] == 1 and torch.equal(ops.xs_mmajor, ops.xs)
    assert int((ops.x[moe.real_rows_mask(plan, "cpu")].float() != 0).any(dim=-1).sum()) == plan.real_rows
    assert not bool((ops.x[~moe.real_rows_mask(plan, "cpu")].float() != 0).any())  # no token, no value

    d = moe.DgtunePath(plan, dims, ops, FakeDgtune)
    d.layer()
    v = moe.verify_path(d, 2.0**-7)
    assert v["gate_up"]["ok"] and v["down"]["ok"], v
    ref = _layer_reference(plan, dims, ops)
    y = _real(plan, d.y).double()
    # The second quantization (e4m3, 2^-4 per element) is the only difference from the float64 layer.
    assert float((y - ref).abs().max()) <= 2.0**-3 * float(ref.abs().max())
    assert not bool((d.y[~moe.real_rows_mask(plan, "cpu")] != 0).any())  # padding rows never written

    fake = fake_scaled_mm(min_rows=16)  # refuses the 3-row expert: the loop must fall back to 16-row rounding
    monkeypatch.setattr(torch, "_scaled_mm", fake)
    errors = {}
    t = moe.torch_loop_path(plan, dims, ops, [1, 16, 128], errors, 2.0**-7)
    assert t is not None and t.align == 16
    assert "align 1: CUBLAS_STATUS_NOT_SUPPORTED at M = 3" in errors["torch-loop-align"][0]
    assert "torch-loop" not in errors
    fake.calls.clear()
    t.layer()
    assert fake.calls == [16, 144, 32] * 2  # one launch per expert with rows, per GEMM; the empty expert skipped
    v = moe.verify_path(t, 2.0**-7)
    assert v["gate_up"]["ok"] and v["down"]["ok"], v
    # Both paths computed the same layer (their own q2 may differ by a rounding; here the math is identical).
    assert torch.equal(_real(plan, t.y), _real(plan, d.y))
    c = t.choice()
    assert c == {"row_align": 16, "launches_per_gemm": 3, "rows_computed": 192, "rows_real": 153}

    # The gemms-only sequence reuses the last layer's down scales.
    d.y.zero_()
    d.gemms()
    assert torch.equal(_real(plan, d.y), _real(plan, t.y))


def test_torch_loop_reports_when_no_alignment_runs(monkeypatch):
    dims = moe.Dims(groups=4, hidden=512, inter=512)  # K/128 a multiple of 4, as for 7168 and 2048
    plan = moe.contiguous_plan(1, [3, 0, 130, 20])
    ops = moe.Operands(plan, dims, seed=0, device="cpu")
    monkeypatch.setattr(torch, "_scaled_mm", fake_scaled_mm(min_rows=1000))
    errors = {}
    assert moe.torch_loop_path(plan, dims, ops, [1, 128], errors, 2.0**-7) is None
    assert errors["torch-loop"].startswith("align 1: CUBLAS_STATUS_NOT_SUPPORTED")
    assert "align 128: CUBLAS_STATUS_NOT_SUPPORTED at M = 128" in errors["torch-loop"]


def test_torch_loop_passes_over_an_alignment_that_computes_garbage(monkeypatch):
    dims = moe.Dims(groups=4, hidden=512, inter=512)
    plan = moe.contiguous_plan(1, [3, 0, 130, 20])
    ops = moe.Operands(plan, dims, seed=0, device="cpu")
    monkeypatch.setattr(torch, "_scaled_mm", fake_scaled_mm(garbage_below=16))  # accepts M = 3, returns 3x
    errors = {}
    t = moe.torch_loop_path(plan, dims, ops, [1, 16], errors, 2.0**-7)
    assert t is not None and t.align == 16
    assert errors["torch-loop-align"][0].startswith("align 1: ran but off by 2 (gate_up)")


def test_deep_gemm_function_names():
    class V2:
        m_grouped_fp8_gemm_nt_contiguous = "c2"
        m_grouped_fp8_gemm_nt_masked = "m2"

    class V1:
        m_grouped_gemm_fp8_fp8_bf16_nt_contiguous = "c1"
        m_grouped_gemm_fp8_fp8_bf16_nt_masked = "m1"

    assert moe.deep_gemm_functions(V2) == ("c2", "m2", "v2")
    assert moe.deep_gemm_functions(V1) == ("c1", "m1", "v1")
    with pytest.raises(RuntimeError, match="neither"):
        moe.deep_gemm_functions(object())


class _EagerGraph:
    """capture()'s stand-in: replay() calls the function again."""

    def __init__(self, fn):
        fn()
        self.replay = fn


def test_run_config_row_on_cpu(monkeypatch):
    # The GPU-only parts (graph capture, CUDA-event timing, nvidia-smi) replaced; the rest runs as on the device.
    monkeypatch.setattr(moe, "capture", _EagerGraph)
    times = {("layer", "dgtune"): 100.0, ("layer", "torch-loop"): 150.0, ("gemms", "dgtune"): 80.0,
             ("gemms", "torch-loop"): 100.0}
    calls = []

    def fake_time(graphs, replays, repeats):
        what = "layer" if not calls else "gemms"
        calls.append((what, list(graphs), replays, repeats))
        return {n: [times[(what, n)] + d for d in (-1.0, 0.0, 5.0)] for n in graphs}

    monkeypatch.setattr(moe, "time_graphs", fake_time)
    monkeypatch.setattr(moe, "sm_clocks", lambda: {"sm_mhz": "1980"})
    monkeypatch.setattr(torch, "_scaled_mm", fake_scaled_mm())
    dims = moe.Dims(groups=4, hidden=512, inter=512)
    plan = moe.masked_plan(40, [3, 0, 130, 20])
    args = moe.parse_args(["--repeats", "3", "--replays", "2"])
    row = moe.run_config(plan, dims, args, FakeDgtune, None, ["dgtune", "torch-loop"], device="cpu")
    assert calls == [("layer", ["dgtune", "torch-loop"], 2, 3), ("gemms", ["dgtune", "torch-loop"], 2, 3)]
    assert row["ok"] and row["errors"] == {}
    assert row["m_max"] == 384 and row["expected_m"] == 39 and row["real_rows"] == 153
    d, t = row["paths"]["dgtune"], row["paths"]["torch-loop"]
    assert d["layer_us"] == 100.0 and t["layer_us"] == 150.0 and t["gemms_us"] == 100.0  # medians
    assert row["ratios"] == {"x_layer_torch-loop": 1.5, "x_gemms_torch-loop": 1.25}
    assert d["layer_tflops"] == round(dims.flops_per_row * 153 / 100.0 / 1e6, 2)
    assert d["verify"]["down"]["ok"] and t["verify"]["gate_up"]["max_rel_err"] <= 2.0**-8
    assert t["y_vs_dgtune_max_rel"] == 0.0
    assert t["choice"]["row_align"] == 1 and d["choice"]["gate_up"]["error"]  # FakeDgtune has no grouped_choice

    # A wrong result in one path makes the row fail.
    class Broken(FakeDgtune):
        @staticmethod
        def m_grouped_scaled_mm_masked(a, sa, b, sb, out, layout, expected_m):
            FakeDgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, layout, expected_m)
            out[2, 5] *= 2

    calls.clear()
    row = moe.run_config(plan, dims, args, Broken, None, ["dgtune", "torch-loop"], device="cpu")
    assert not row["ok"] and not row["paths"]["dgtune"]["ok"] and row["paths"]["torch-loop"]["ok"]
    assert row["paths"]["dgtune"]["verify"]["gate_up"]["worst_group"] == 2
    assert moe.table([row]).count("| NO |") == 1


def test_json_output_path_is_pathlib():
    # main() writes --json with pathlib.Path; a class of the program named Path once shadowed it, and the H200 run
    # failed after the first configuration (TypeError in save()).
    import pathlib
    assert moe.Path is pathlib.Path
    assert not any(name == "Path" for name, obj in vars(moe).items() if isinstance(obj, type) and obj.__module__ ==
                   moe.__name__)
