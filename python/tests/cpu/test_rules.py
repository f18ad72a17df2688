"""Every rule of the shared design, on meta tensors: the fake implementation raises RuntimeError with a message that
starts with "dgtune.scaled_mm: " and names the rule; RuleError.rule is the key patch_scaled_mm counts."""

import pytest
import torch
from conftest import E4M3, E5M2, f32, mk_a, mk_b, scales

from dgtune import RuleError

OP = torch.ops.dgtune.scaled_mm
OUT = torch.ops.dgtune.scaled_mm_out
BF16 = torch.bfloat16


def call(a, b, sa, sb, bias=None, sr=None, out_dtype=None, fast=False):
    return OP(a, b, sa, sb, bias, sr, out_dtype, fast)


def raises(rule, pattern, fn, *args, **kwargs):
    with pytest.raises(RuntimeError, match=r"^dgtune\.scaled_mm: " + pattern) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, RuleError) and info.value.rule == rule, getattr(info.value, "rule", None)


T = scales("tensorwise", 1, 1, 1)


def test_not_2d():
    a3 = torch.empty(2, 4, 32, dtype=E4M3, device="meta")
    raises("shape", r"inputs must be 2-D but got a.dim\(\)=3 and b.dim\(\)=2", call, a3, mk_b(32, 16), *T)


def test_inner_dims_mismatch():
    raises("shape", r"a and b shapes cannot be multiplied \(8x32 and 48x16\)", call, mk_a(8, 32), mk_b(48, 16), *T)


@pytest.mark.parametrize("da,db", [(torch.bfloat16, E4M3), (E4M3, torch.float16), (torch.int8, torch.int8)])
def test_operand_dtypes(da, db):
    a = torch.empty(8, 32, dtype=da, device="meta")
    b = torch.empty(16, 32, dtype=db, device="meta").t()
    raises("dtype", r"expected both inputs to be float8_e4m3fn or float8_e5m2", call, a, b, *T)


def test_mixed_fp8_formats_ok():
    assert call(mk_a(8, 32, E5M2), mk_b(32, 16, E4M3), *T).shape == (8, 16)


def test_device_mismatch():
    sa, sb = f32(), f32(device="cpu")
    raises("device", r"Expected all tensors to be on the same device, but found at least two devices, meta \(a\) and "
           r"cpu \(scale_b\)", call, mk_a(8, 32), mk_b(32, 16), sa, sb)


def test_k_zero():
    raises("k0", r"K = 0 is not supported", call, mk_a(8, 0, lda=16), mk_b(0, 16, ldb=16), *T)


def test_a_not_row_major():
    a = torch.empty(32, 8, dtype=E4M3, device="meta").t()  # [8, 32] column-major
    raises("layout-a", r"a must be row-major \(a.stride\(1\) == 1\), got stride \(1, 8\)", call, a, mk_b(32, 16), *T)


def test_a_lda_not_multiple_of_16():
    raises("layout-a", r"a's row stride lda = 40 must be a multiple of 16", call, mk_a(8, 40), mk_b(40, 16, ldb=48), *T)


def test_a_k_tail_with_padded_rows_ok():
    # K = 40 is not a multiple of 16 (torch refuses it); padded rows make it legal for dgtune
    assert call(mk_a(8, 40, lda=48), mk_b(40, 24, ldb=48), *T).shape == (8, 24)


def test_a_m1_stride_below_k_ok():
    # M == 1: the row stride is irrelevant; lda = max(stride, K) = 32
    a = torch.empty(32, dtype=E4M3, device="meta").as_strided((1, 32), (1, 1))
    assert call(a, mk_b(32, 16), *T).shape == (1, 16)


def test_a_lda_below_k():
    a = torch.empty(1024, dtype=E4M3, device="meta").as_strided((4, 64), (32, 1))
    raises("layout-a", r"a's row stride lda = 32 must be >= K = 64", call, a, mk_b(64, 16), *T)


def test_a_misaligned():
    raises("layout-a", r"a's data must be 16-byte aligned \(storage_offset 8", call, mk_a(8, 32, offset=8),
           mk_b(32, 16), *T)


def test_b_not_col_major():
    b = torch.empty(32, 16, dtype=E4M3, device="meta")  # row-major [K, N]
    raises("layout-b", r"b must be column-major \(b.stride\(0\) == 1, e.g. weight.t\(\)\), got stride \(16, 1\)",
           call, mk_a(8, 32), b, *T)


def test_b_ldb_below_k_and_not_multiple():
    raises("layout-b", r"b's column stride ldb = 16 must be >= K = 32", call, mk_a(8, 32), mk_b(32, 4, ldb=16), *T)
    raises("layout-b", r"b's column stride ldb = 40 must be a multiple of 16", call, mk_a(8, 40, lda=48),
           mk_b(40, 4, ldb=40), *T)


def test_b_misaligned():
    raises("layout-b", r"b's data must be 16-byte aligned \(storage_offset 4", call, mk_a(8, 32), mk_b(32, 16, offset=4),
           *T)


def test_b_n1_and_k1_relaxations():
    # N == 1: ldb = max(stride, K); K == 1: b's stride(0) is irrelevant (as the C++ plan)
    b = torch.empty(32, dtype=E4M3, device="meta").as_strided((32, 1), (1, 1))
    assert call(mk_a(8, 32), b, *T).shape == (8, 1)
    a1 = torch.empty(8 * 16, dtype=E4M3, device="meta").as_strided((8, 1), (16, 1))
    b1 = torch.empty(4 * 16, dtype=E4M3, device="meta").as_strided((1, 4), (3, 16))
    assert call(a1, b1, *T).shape == (8, 4)


def test_empty_operand_layout_not_checked():
    a = torch.empty(0, 32, dtype=E4M3, device="meta").as_strided((0, 32), (3, 7))
    assert call(a, mk_b(32, 16), *T).shape == (0, 16)
    # N == 0: neither layout is checked (nothing is launched)
    a_bad = torch.empty(32, 8, dtype=E4M3, device="meta").t()
    assert call(a_bad, mk_b(32, 0), *T).shape == (8, 0)


def test_tensorwise_scale_dtype():
    raises("scale-dtype", r"for tensorwise scaling, both scale_a and scale_b must be float32 tensors",
           call, mk_a(8, 32), mk_b(32, 16), f32(), torch.empty((), dtype=BF16, device="meta"))


def test_block_scale_dtype_e8m0_refused():
    e8 = torch.empty(8, 1, dtype=torch.float8_e8m0fnu, device="meta")
    raises("scale-dtype", r"scales must be float32 tensors \(dgtune supports no e8m0/e4m3 scales\)",
           call, mk_a(8, 32), mk_b(32, 16), e8, e8)


def test_scale_dim():
    raises("scale-dim", r"for non-tensorwise scaling, scale tensors must be 2-D, but got scale_a.dim\(\)=1 and "
           r"scale_b.dim\(\)=2", call, mk_a(8, 32), mk_b(32, 16), f32(8), f32(1, 16))


def test_rowwise_not_contiguous():
    sa = f32(8, 1, strides=(2, 1))
    raises("rowwise-contiguous", r"both scale_a and scale_b must be contiguous for rowwise scaling",
           call, mk_a(8, 32), mk_b(32, 16), sa, f32(1, 16))


def test_invalid_scaling_configuration_lists_shapes():
    m, n, k = 8, 300, 512
    raises("recipe", r"invalid scaling configuration\. .*rowwise scaling, scale_a should be \(8, 1\), scale_b should "
           r"be \(1, 300\)\. For \(BlockWise1x128, BlockWise128x128\), scale_a should be \(8, 4\), scale_b should be "
           r"\(4, 3\)\. For \(BlockWise1x128, BlockWise1x128\), scale_a should be \(8, 4\), scale_b should be "
           r"\(4, 300\)\. Got scale_a.size\(\)=\(8, 2\) and scale_b.size\(\)=\(1, 300\)",
           call, mk_a(m, k), mk_b(k, n), f32(8, 2), f32(1, 300))


def test_128x128_1x128_refused_with_explanation():
    m, n, k = 300, 256, 512
    raises("recipe-128x128-1x128", r"\(BlockWise128x128, BlockWise1x128\) scaling is not supported by dgtune \(torch._scaled_mm runs it\)",
           call, mk_a(m, k), mk_b(k, n), f32(3, 4), f32(4, 256))


@pytest.mark.parametrize("recipe", ["block", "block1d1d"])
def test_block_fast_accum_refused(recipe):
    m, n, k = 64, 256, 256
    sa, sb = scales(recipe, m, n, k)
    raises("fast-accum-block", r"use_fast_accum=True is not supported with block scaling", call, mk_a(m, k),
           mk_b(k, n), sa, sb, fast=True)


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
def test_fast_accum_ok_tensor_row(recipe):
    sa, sb = scales(recipe, 64, 256, 256)
    assert call(mk_a(64, 256), mk_b(256, 256), sa, sb, fast=True).shape == (64, 256)


@pytest.mark.parametrize("dt", [torch.float16, E5M2, torch.int32])
def test_out_dtype_refused(dt):
    raises("out-dtype", r"out_dtype " + str(dt).replace("torch.", "") + r" is not supported \(dgtune writes bfloat16, float32 or float8_e4m3fn\)",
           call, mk_a(8, 32), mk_b(32, 16), *T, out_dtype=dt)


def test_scale_result():
    raises("scale-result", r"scale_result must be a float32 tensor of one element, got torch.float32 with 2 elements",
           call, mk_a(8, 32), mk_b(32, 16), *T, sr=f32(2), out_dtype=E4M3)
    raises("scale-result", r"scale_result must be a float32 tensor of one element, got torch.bfloat16",
           call, mk_a(8, 32), mk_b(32, 16), *T, sr=torch.empty((), dtype=BF16, device="meta"), out_dtype=E4M3)
    # ignored for bf16 / f32 output
    assert call(mk_a(8, 32), mk_b(32, 16), *T, sr=f32(2), out_dtype=torch.float32).dtype == torch.float32


def test_bias_rules():
    a, b = mk_a(8, 32), mk_b(32, 16)
    raises("bias", r"bias must be torch.bfloat16, got torch.float32", call, a, b, *T, bias=f32(16))
    raises("bias", r"bias must be 1-D with N = 16 elements, got shape \(15,\)", call, a, b, *T,
           bias=torch.empty(15, dtype=BF16, device="meta"))
    raises("bias", r"bias must be contiguous, got stride \(2,\)", call, a, b, *T,
           bias=torch.empty(32, dtype=BF16, device="meta")[::2])
    for dt in (None, torch.float32, E4M3):
        assert call(a, b, *T, bias=torch.empty(16, dtype=BF16, device="meta"), out_dtype=dt).shape == (8, 16)


def test_out_rules():
    a, b = mk_a(8, 32), mk_b(32, 16)

    def run(out, out_dtype=None):
        OUT(a, b, *T, None, None, out_dtype, False, out)

    raises("out", r"out must be \[8, 16\], got \[8, 17\]", run, torch.empty(8, 17, dtype=BF16, device="meta"))
    raises("out", r"out.dtype = torch.float32 must be out_dtype = torch.bfloat16", run,
           torch.empty(8, 16, dtype=torch.float32, device="meta"), BF16)
    raises("out", r"out must be row-major \(out.stride\(1\) == 1\), got stride \(1, 8\)", run,
           torch.empty(16, 8, dtype=BF16, device="meta").t())
    raises("out", r"out's row stride 8 must be >= N = 16", run,
           torch.empty(200, dtype=BF16, device="meta").as_strided((8, 16), (8, 1)))
    # N == 1: any column stride; M == 1: the row stride is irrelevant (C++ plan: ldd = max(stride, N))
    OUT(a, mk_b(32, 1), *T, None, None, None, False, torch.empty(8, 1, dtype=BF16, device="meta").as_strided(
        (8, 1), (1, 5)))
    OUT(mk_a(1, 32), b, *T, None, None, None, False, torch.empty(16, dtype=BF16, device="meta").as_strided(
        (1, 16), (1, 1)))
    raises("out-dtype", r"out_dtype float16 is not supported", run, torch.empty(8, 16, dtype=torch.float16,
                                                                                   device="meta"))
    run(torch.empty(8, 16, dtype=torch.float32, device="meta"))  # None: out.dtype


def test_order_first_broken_rule_wins():
    # a bad layout and a bad bias: the layout (checked first) is reported
    a = torch.empty(32, 8, dtype=E4M3, device="meta").t()
    raises("layout-a", r"a must be row-major", call, a, mk_b(32, 16), *T, bias=f32(16))


def test_amax_refuses_block_fast_accum_and_bad_scale_result():
    sa, sb = scales("block", 8, 256, 256)
    with pytest.raises(RuntimeError, match=r"^dgtune\.scaled_mm: use_fast_accum=True is not supported"):
        torch.ops.dgtune.scaled_mm_amax(mk_a(8, 256), mk_b(256, 256), sa, sb, None, None, True)
    with pytest.raises(RuntimeError, match=r"^dgtune\.scaled_mm: scale_result must be"):
        torch.ops.dgtune.scaled_mm_amax(mk_a(8, 32), mk_b(32, 16), *T, None, f32(3))


def test_cpu_tensors_refused_clearly():
    a = torch.zeros(8, 32, dtype=E4M3)
    b = torch.zeros(16, 32, dtype=E4M3).t()
    s = torch.ones(())
    with pytest.raises(RuntimeError, match=r"^dgtune\.scaled_mm: runs on CUDA tensors only, got tensors on cpu"):
        call(a, b, s, s)
    # the rules come first on CPU too
    with pytest.raises(RuntimeError, match=r"^dgtune\.scaled_mm: out_dtype float16 is not supported"):
        call(a, b, s, s, out_dtype=torch.float16)
