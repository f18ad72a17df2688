"""CUDA graph capture and replay after dgtune.warmup(problems=...): outputs verified after replays with new input
values copied into the captured buffers; dgtune.stats()["nvrtc_compiles"] does not grow during capture, replay and
eager calls after the warm-up (the serving path: no JIT after warm-up)."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

E4 = torch.float8_e4m3fn
M_VALUES = [1, 16, 200]
N, K = 1024, 4000


def _fill_new_values(case, seed):
    """New values into the captured buffers, in place (same pointers, same strides)."""
    fresh = H.make_case(case.m, case.n, case.k, case.recipe, seed=seed, fast=case.fast, layout="none")
    case.a.copy_(fresh.a)
    case.b.copy_(fresh.b)
    case.sa.copy_(fresh.sa.reshape(case.sa.shape))
    case.sb.copy_(fresh.sb.reshape(case.sb.shape))


def _problems(recipe, fast):
    base = H.make_case(1, N, K, recipe, fast=fast, layout="none")
    return [H.problem_dict(base, out=o, m=M_VALUES) for o in ("bf16", "e4m3")]


@pytest.mark.parametrize("recipe,fast", [("tensorwise", False), ("tensorwise", True), ("rowwise", False),
                                         ("blockwise_1x128_128x128", False), ("blockwise_1x128_1x128", False)])
def test_capture_replay_after_warmup(backend, record_property, recipe, fast):
    info = H.warmup(dgtune, _problems(recipe, fast))
    record_property("warmup", info)
    compiles = {"bf16": 0, "amax": 0}

    def counted(kind, fn):
        before = H.stats(dgtune)["nvrtc_compiles"]
        r = fn()
        torch.cuda.synchronize()
        compiles[kind] += H.stats(dgtune)["nvrtc_compiles"] - before
        return r

    s0 = H.stats(dgtune)
    for m in M_VALUES:
        case = H.make_case(m, N, K, recipe, fast=fast, layout="dgtune")
        ref = H.reference(case)
        sr = torch.tensor(0.8 * H.E4M3_MAX / float(ref.abs().max()), device="cuda")
        # Eager calls after the warm-up: no compile.
        d_eager = counted("bf16", lambda: dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, use_fast_accum=fast))
        counted("amax", lambda: dgtune.scaled_mm_amax(case.a, case.b, case.sa, case.sb, scale_result=sr,
                                                      use_fast_accum=fast))
        H.check_bf16_f32(d_eager, ref, fast, f"eager {recipe} m={m}")
        g = torch.cuda.CUDAGraph()
        g2 = torch.cuda.CUDAGraph()

        def capture_bf16():
            with torch.cuda.graph(g):
                return dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, use_fast_accum=fast)

        def capture_amax():
            with torch.cuda.graph(g2):
                return dgtune.scaled_mm_amax(case.a, case.b, case.sa, case.sb, scale_result=sr, use_fast_accum=fast)

        d = counted("bf16", capture_bf16)
        e, amax = counted("amax", capture_amax)
        for rep, seed in enumerate((11, 12)):
            _fill_new_values(case, seed + m)
            ref = H.reference(case)
            sr.fill_(0.8 * H.E4M3_MAX / float(ref.abs().max()))
            counted("bf16", g.replay)
            counted("amax", g2.replay)
            what = f"replay {rep} {recipe} fast={fast} m={m}"
            H.check_bf16_f32(d, ref, fast, what)
            H.check_e4m3(e, ref, float(sr), fast, what)
            H.check_amax(amax, ref, fast, what)
    s1 = H.stats(dgtune)
    record_property("stats_before", s0)
    record_property("stats_after", s1)
    assert compiles["bf16"] == 0, f"NVRTC compiles after warm-up (bf16 eager/capture/replay): {compiles}; {s0} -> {s1}"
    assert compiles["amax"] == 0, (f"NVRTC compiles after warm-up of the e4m3 family, in scaled_mm_amax (the warm-up "
                                   f"request has no amax field): {compiles}; {s0} -> {s1}")


def test_capture_with_scale_copy(backend):
    """Scales in a layout the op copies (through the caching allocator): capturable too, and verified."""
    recipe = "blockwise_1x128_128x128"
    H.warmup(dgtune, _problems(recipe, False))
    case = H.make_case(16, N, K, recipe, layout="none")  # row-major contiguous scale_a: copied
    c0 = H.stats(dgtune)["scale_copies"]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        d = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb)
    assert H.stats(dgtune)["scale_copies"] > c0
    _fill_new_values(case, 99)
    g.replay()
    torch.cuda.synchronize()
    H.check_bf16_f32(d, H.reference(case), False, "captured scale copy")


def test_warmup_report_and_no_compile_on_second_warmup(backend):
    problems = _problems("rowwise", False)
    H.warmup(dgtune, problems)
    s0 = H.stats(dgtune)
    info = H.warmup(dgtune, problems)
    s1 = H.stats(dgtune)
    for key in ("families", "shapes", "kernels", "nvrtc_compiles", "seconds"):
        assert key in info, f"warmup report lacks {key}: {info}"
    assert info["nvrtc_compiles"] == 0 and s1["nvrtc_compiles"] == s0["nvrtc_compiles"], (info, s0, s1)
