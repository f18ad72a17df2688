"""infer_recipe: torch's order, dgtune's modes, and which block scales the op copies."""

import pytest
import torch
from conftest import f32, mk_a, mk_b, round_up4, scales

from dgtune import Recipe, infer_recipe
from dgtune._recipe import block_scale_strides


def rec(m, n, k, sa, sb, fast=False):
    return infer_recipe(mk_a(m, k), mk_b(k, n), sa, sb, fast)


@pytest.mark.parametrize("recipe,name,mode", [
    ("tensorwise", "tensorwise", "per-tensor"),
    ("rowwise", "rowwise", "channel"),
    ("block", "blockwise_1x128_128x128", "block"),
    ("block1d1d", "blockwise_1x128_1x128", "block1d1d"),
])
@pytest.mark.parametrize("mnk", [(5, 300, 700), (256, 512, 1024), (129, 129, 129)])
def test_each_recipe_in_place_layout(recipe, name, mode, mnk):
    m, n, k = mnk
    r = rec(m, n, k, *scales(recipe, m, n, k))
    assert r == Recipe(name, mode, False, False)
    assert r.supported and r.is_block == (mode in ("block", "block1d1d"))


def test_tensorwise_shapes_1_and_0d_and_1x1():
    for sa, sb in [(f32(), f32(1)), (f32(1, 1), f32()), (f32(1), f32(1, 1))]:
        assert rec(64, 64, 64, sa, sb).name == "tensorwise"


def test_order_scalars_before_rowwise_and_block():
    # M = 1, N = 1: (1, 1) and (1, 1) match rowwise and the block shapes too; torch picks tensorwise first
    assert rec(1, 1, 64, f32(1, 1), f32(1, 1)).name == "tensorwise"


def test_order_rowwise_before_block_when_g_is_1():
    # K <= 128 -> G = 1: (M, 1) & (1, N) is both rowwise and 1x128 x 1x128; rowwise wins (torch's order)
    assert rec(32, 256, 128, f32(32, 1), f32(1, 256)).name == "rowwise"


def test_order_128x128_before_1x1_when_nb_equals_n():
    # N = 1 -> ceil(N/128) == N: (M, G) & (G, 1) matches both block recipes; torch checks 1x128 x 128x128 first
    m, k = 64, 512
    assert rec(m, 1, k, f32(m, 4, strides=(1, 64)), f32(4, 1)).name == "blockwise_1x128_128x128"


def test_order_1x128_before_128x128_a_when_m_is_small():
    # M <= 128 -> ceil(M/128) == 1 only equals M when M == 1: (1, G) & (G, N) is 1x128 x 1x128 (checked first)
    assert rec(1, 256, 512, f32(1, 4), f32(4, 256)).name == "blockwise_1x128_1x128"


def test_128x128_1x128_unsupported():
    r = rec(300, 256, 512, f32(3, 4), f32(4, 256))
    assert r.name == "blockwise_128x128_1x128" and r.mode is None and not r.supported


def test_block_scale_strides_formula():
    assert block_scale_strides("block", 5, 300, 700) == ((1, 8), (1, 8))  # G = 6 -> 8
    assert block_scale_strides("block1d1d", 5, 301, 700) == ((1, 8), (304, 1))
    assert block_scale_strides("block", 128, 128, 512) == ((1, 128), (1, 4))


def test_torch_contiguous_t_layout_copied_only_when_m_not_multiple_of_4():
    # torch's usual scale_a: (K/128, M) contiguous, .t() -> (M, G) strides (1, M)
    for m, copy in [(64, False), (65, True)]:
        k, n = 512, 256
        sa = torch.empty(4, m, device="meta").t()
        sb = f32(4, 2, strides=(1, 4))
        r = rec(m, n, k, sa, sb)
        assert r.mode == "block" and r.copy_scale_a is copy and r.copy_scale_b is False


def test_contiguous_row_major_scale_a_is_copied():
    m, n, k = 64, 256, 512
    r = rec(m, n, k, f32(m, 4), f32(4, 2, strides=(1, 4)))
    assert r.copy_scale_a and not r.copy_scale_b


def test_block_scale_b_copy_decisions():
    m, n, k = 64, 300, 640  # G = 5, Nb = 3
    sa = f32(m, 5, strides=(1, 64))
    assert not rec(m, n, k, sa, f32(5, 3, strides=(1, 8))).copy_scale_b  # (1, round_up(5, 4))
    assert rec(m, n, k, sa, f32(5, 3, strides=(1, 5))).copy_scale_b  # unpadded K-major
    assert rec(m, n, k, sa, f32(5, 3)).copy_scale_b  # contiguous (G, Nb)


def test_block1d1d_scale_b_copy_decisions():
    m, n, k = 64, 300, 640
    sa = f32(m, 5, strides=(1, 64))
    assert not rec(m, n, k, sa, f32(5, n, strides=(300, 1))).copy_scale_b  # N % 4 == 0: contiguous
    assert rec(m, n, k, sa, f32(5, n, strides=(1, 5))).copy_scale_b  # K-major: copied
    m2, n2 = 64, 301
    assert rec(m2, n2, k, sa, f32(5, n2)).copy_scale_b  # rows of 301 floats: not 16-byte rows
    assert not rec(m2, n2, k, sa, f32(5, n2, strides=(304, 1))).copy_scale_b


def test_misaligned_scale_is_copied():
    m, n, k = 64, 256, 512
    sa = f32(m, 4, strides=(1, 64), offset=2)
    assert rec(m, n, k, sa, f32(4, 2, strides=(1, 4))).copy_scale_a
    sa4 = f32(m, 4, strides=(1, 64), offset=4)
    assert not rec(m, n, k, sa4, f32(4, 2, strides=(1, 4))).copy_scale_a


def test_size_one_dims_strides_free():
    # G = 1: scale_a (M, 1) with any second stride; M = 1: any first stride
    assert not rec(64, 256, 128, f32(64, 1, strides=(1, 999)), f32(1, 2)).copy_scale_a
    r = rec(1, 256, 512, f32(1, 4, strides=(77, 4)), f32(4, 2, strides=(1, 4)))
    assert r.mode == "block" and not r.copy_scale_a


def test_tensorwise_and_rowwise_copy_only_when_misaligned():
    r = rec(8, 16, 32, f32(8, 1), f32(1, 16))
    assert (r.copy_scale_a, r.copy_scale_b) == (False, False)
    r = rec(8, 16, 32, f32(8, 1, strides=(1, 1), offset=1), f32(1, 16))
    assert (r.name, r.copy_scale_a, r.copy_scale_b) == ("rowwise", True, False)
    r = rec(8, 16, 32, f32(), torch.empty(3, device="meta")[2:])
    assert (r.name, r.copy_scale_a, r.copy_scale_b) == ("tensorwise", False, True)


def test_one_row_block_scale_copied_unless_multiple_of_4():
    # G == 1 (K <= 128 but not rowwise shapes): scale_a is one row of M floats; the kernel reads round_up(M, 4)
    r = rec(6, 256, 100, f32(6, 1, strides=(1, 8)), f32(1, 2))
    assert r.mode == "block" and r.copy_scale_a and r.copy_scale_b  # M = 6; and scale_b: 1 row of G = 1 float
    r = rec(8, 1024, 512, f32(8, 4, strides=(1, 8)), f32(4, 8, strides=(1, 4)))
    assert r.mode == "block" and not r.copy_scale_a and not r.copy_scale_b
    r = rec(8, 256, 512, f32(8, 4, strides=(1, 8)), f32(4, 2, strides=(1, 4)))
    assert not r.copy_scale_b  # 2 rows of G = 4 floats
    assert round_up4(5) == 8
