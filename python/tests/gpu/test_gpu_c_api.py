"""The op against dgt::Gemm called directly: the same operands through torch.ops.dgtune.scaled_mm and through the
runtime library's C API (dgtune/lib/libdgtune_runtime.so.0, dgtune/dgtune.h: dgt_gemm_create / dgt_gemm_run) on the
same stream, with the scales in the layout dgt::Gemm reads, give bitwise the same D. This checks what the op passes
to dgt::Gemm (shape, leading dimensions, formats, scale mode, output type, bias, scale_d) for every recipe, not only
that the result is close. Both loaders have no DB and the same cache; the C API's Gemm dispatches untuned problems
as the op's default does (cuBLASLt's heuristic where it runs the problem, else the kernel), so both run the same
code for each case."""
from gpu_helpers import require_gpu

require_gpu()

import ctypes  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

FORMAT = {torch.float8_e4m3fn: 0, torch.float8_e5m2: 1}
SCALE = {"tensorwise": 0, "rowwise": 1, "blockwise_1x128_128x128": 2, "blockwise_1x128_1x128": 3}
OUTPUT = {torch.bfloat16: 0, torch.float32: 1, torch.float8_e4m3fn: 2}


class GemmOptions(ctypes.Structure):
    _fields_ = [("db_path", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p), ("device", ctypes.c_int),
                ("protocol", ctypes.c_char_p), ("bundle", ctypes.c_char_p)]


class RunOptions(ctypes.Structure):
    _fields_ = [("a_format", ctypes.c_int), ("b_format", ctypes.c_int), ("fast_accum", ctypes.c_int),
                ("scale", ctypes.c_int), ("output", ctypes.c_int), ("bias", ctypes.c_void_p), ("act", ctypes.c_int),
                ("scale_d", ctypes.c_void_p), ("amax", ctypes.c_void_p)]


@pytest.fixture(scope="module")
def capi():
    path = os.path.join(os.path.dirname(dgtune.__file__), "lib", "libdgtune_runtime.so.0")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: the wheel installs the runtime library beside libdgtune_torch.so")
    lib = ctypes.CDLL(path)
    lib.dgt_gemm_create.argtypes = [ctypes.POINTER(GemmOptions), ctypes.POINTER(ctypes.c_void_p)]
    lib.dgt_gemm_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p] + \
        [ctypes.c_int64] * 6 + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(RunOptions)]
    lib.dgt_gemm_destroy.argtypes = [ctypes.c_void_p]
    lib.dgt_last_error.restype = ctypes.c_char_p
    opts = GemmOptions(None, None, torch.cuda.current_device(), None, None)
    handle = ctypes.c_void_p()
    assert lib.dgt_gemm_create(ctypes.byref(opts), ctypes.byref(handle)) == 0, lib.dgt_last_error()
    dgtune.load()  # the op: no DB unless $DGTUNE_DB, like the C API's Gemm
    yield lib, handle
    torch.cuda.synchronize()
    lib.dgt_gemm_destroy(handle)


CASES = [
    # (M, N, K, recipe, a dtype, b dtype, out dtype, fast, bias)
    (1, 4096, 4096, "tensorwise", torch.float8_e4m3fn, torch.float8_e4m3fn, torch.bfloat16, False, False),
    (257, 1000, 1040, "tensorwise", torch.float8_e5m2, torch.float8_e5m2, torch.float32, True, True),
    (127, 256, 512, "rowwise", torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16, True, True),
    (64, 7168, 2048, "blockwise_1x128_128x128", torch.float8_e4m3fn, torch.float8_e4m3fn, torch.bfloat16, False,
     False),
    (200, 384, 1000, "blockwise_1x128_1x128", torch.float8_e4m3fn, torch.float8_e4m3fn, torch.float32, False, False),
    (96, 512, 768, "tensorwise", torch.float8_e4m3fn, torch.float8_e4m3fn, torch.float8_e4m3fn, False, False),
]


@pytest.mark.parametrize("m,n,k,recipe,adt,bdt,odt,fast,with_bias", CASES)
def test_op_equals_c_api_bitwise(capi, m, n, k, recipe, adt, bdt, odt, fast, with_bias):
    lib, handle = capi
    case = H.make_case(m, n, k, recipe, adt, bdt, seed=11, fast=fast, layout="dgtune")
    bias = (torch.randn(n, device="cuda") * 4).to(torch.bfloat16) if with_bias else None
    scale_result = torch.tensor(0.5, device="cuda") if odt == torch.float8_e4m3fn else None
    ours = torch.ops.dgtune.scaled_mm.default(case.a, case.b, case.sa, case.sb, bias, scale_result, odt, fast)

    d = torch.full((m, n), float("nan"), device="cuda").to(odt)
    ro = RunOptions(FORMAT[adt], FORMAT[bdt], int(fast), SCALE[recipe], OUTPUT[odt],
                    bias.data_ptr() if bias is not None else None, 0,
                    scale_result.data_ptr() if scale_result is not None else None, None)
    stream = torch.cuda.current_stream().cuda_stream
    rc = lib.dgt_gemm_run(handle, case.a.data_ptr(), case.b.data_ptr(), d.data_ptr(), m, n, k, case.a.stride(0),
                          case.b.stride(1), n, case.sa.data_ptr(), case.sb.data_ptr(), stream, ctypes.byref(ro))
    assert rc == 0, lib.dgt_last_error()
    torch.cuda.synchronize()
    same = torch.equal(ours.view(torch.uint8), d.view(torch.uint8))
    assert same, (f"{m}x{n}x{k} {recipe}: the op and dgt_gemm_run differ in "
                  f"{int((ours.view(torch.uint8) != d.view(torch.uint8)).sum())} bytes")
