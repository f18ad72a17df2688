"""The grouped ops on the GPU: dgtune.m_grouped_scaled_mm_contiguous / _masked against a float64 reference per group
(block scales: a dequantised per 1x128 block, b per 128x128 block) and against per-group torch._scaled_mm
(per-tensor scales), with NaN in every padding row of a and a sentinel in out that rows without a real row must keep.
DeepGEMM-style row-major scales through the wrappers, a CUDA graph replayed with other masked_m, a first call inside
capture refused, and torch.compile."""
from gpu_helpers import require_gpu

require_gpu()

import pytest  # noqa: E402
import torch  # noqa: E402

import dgtune  # noqa: E402
import gpu_helpers as H  # noqa: E402

E4M3 = torch.float8_e4m3fn
SENTINEL = -7.0  # exact in bf16; a row the kernel must not write keeps it
NAN_E4M3 = 0x7F


def expand_blocks(s, rows, cols, br, bc):
    """Scales of [.., ceil(rows/br), ceil(cols/bc)] blocks as a [.., rows, cols] float64 tensor."""
    return s.double().repeat_interleave(br, dim=-2)[..., :rows, :].repeat_interleave(bc, dim=-1)[..., :cols]


def make_b(g, n, k, block, gen):
    b = H.rand_fp8((g, n, k), E4M3, gen)
    sb = H.scales_tensor((g, H.cdiv(n, 128), H.cdiv(k, 128)) if block else (), gen)
    return b, sb


def b_dequant(b, sb, block):
    g, n, k = b.shape
    return b.double() * (expand_blocks(sb, n, k, 128, 128) if block else sb.double())


def check_rows(out_rows, ref_rows, what):
    if ref_rows.numel():
        H.check_bf16_f32(out_rows, ref_rows, fast=False, what=what)


def fill_padding_nan(a, real):
    """a's rows where `real` is False hold e4m3 NaN: a padding row reaching a stored row would show."""
    a.view(torch.uint8)[~real] = NAN_E4M3


@pytest.mark.parametrize("block", [True, False], ids=["block", "per-tensor"])
def test_contiguous_matches_reference_and_keeps_padding_rows(block):
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = [300, 0, 129, 64]
    n, k = 320, 576
    g = len(rows)
    seg = [H.round_up(r, 128) for r in rows]
    m_sum = sum(seg)
    m_indices = torch.full((m_sum,), -1, dtype=torch.int32, device="cuda")
    start = 0
    for i, (r, s) in enumerate(zip(rows, seg)):
        m_indices[start:start + r] = i
        start += s
    real = m_indices >= 0
    a = H.rand_fp8((m_sum, k), E4M3, gen)
    fill_padding_nan(a, real)
    sa = H.scales_tensor((m_sum, H.cdiv(k, 128)) if block else (), gen)  # row-major, as DeepGEMM users hold it
    b, sb = make_b(g, n, k, block, gen)
    out = torch.full((m_sum, n), SENTINEL, dtype=torch.bfloat16, device="cuda")
    dgtune.m_grouped_scaled_mm_contiguous(a, sa, b, sb, out, m_indices)
    torch.cuda.synchronize()
    a_deq = a.double() * (expand_blocks(sa, m_sum, k, 1, 128) if block else sa.double())
    bd = b_dequant(b, sb, block)
    start = 0
    for i, (r, s) in enumerate(zip(rows, seg)):
        ref = a_deq[start:start + r] @ bd[i].T
        check_rows(out[start:start + r], ref, f"group {i}")
        if not block and r:
            # Per-tensor: torch._scaled_mm on the group's rows (its own rounding) agrees within the same bound.
            theirs = torch._scaled_mm(a[start:start + r], b[i].T, sa, sb, out_dtype=torch.bfloat16)
            H.check_bf16_f32(out[start:start + r], theirs.double(), fast=False, what=f"vs torch._scaled_mm {i}")
        start += s
    assert bool((out[~real] == SENTINEL).all()), "a padding row (m_indices -1) was written"


def masked_case(gen, g=4, m_max=256, n=320, k=576, block=True, counts=(200, 0, 256, 17)):
    a = H.rand_fp8((g, m_max, k), E4M3, gen)
    sa = H.scales_tensor((g, m_max, H.cdiv(k, 128)) if block else (), gen)
    b, sb = make_b(g, n, k, block, gen)
    masked_m = torch.tensor(counts, dtype=torch.int32, device="cuda")
    out = torch.full((g, m_max, n), SENTINEL, dtype=torch.bfloat16, device="cuda")
    return a, sa, b, sb, out, masked_m


def check_masked(a, sa, b, sb, out, counts, block, what=""):
    g, m_max, k = a.shape
    a_deq = a.double() * (expand_blocks(sa, m_max, k, 1, 128) if block else sa.double())
    bd = b_dequant(b, sb, block)
    for i, c in enumerate(counts):
        check_rows(out[i, :c], a_deq[i, :c] @ bd[i].T, f"{what} group {i} ({c} rows)")
        assert bool((out[i, c:] == SENTINEL).all()), f"{what} group {i}: a row at or past masked_m was written"


@pytest.mark.parametrize("expected_m", [8, 200])  # both default tiles (64 and 128 rows)
@pytest.mark.parametrize("block", [True, False], ids=["block", "per-tensor"])
def test_masked_matches_reference(expected_m, block):
    gen = torch.Generator(device="cuda").manual_seed(2)
    counts = (200, 0, 256, 17)
    a, sa, b, sb, out, masked_m = masked_case(gen, block=block, counts=counts)
    # Rows past the counts are NaN: the kernel must not read them into a stored row.
    for i, c in enumerate(counts):
        a[i, c:].view(torch.uint8).fill_(NAN_E4M3)
    dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, expected_m)
    torch.cuda.synchronize()
    check_masked(a, sa, b, sb, out, counts, block)


def test_wrapper_takes_row_major_scales_and_unpadded_weight_scales():
    # K 576: ceil(K/128) = 5 is not a multiple of 4, so b_scale [G, NB, 5] contiguous needs the padded copy, and a
    # row-major a_scale needs the M-major one; the op alone refuses both.
    gen = torch.Generator(device="cuda").manual_seed(3)
    a, sa, b, sb, out, masked_m = masked_case(gen)
    assert sa.is_contiguous() and sb.is_contiguous()
    with pytest.raises(RuntimeError, match="a_scale must be M-major"):
        torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 64)
    dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 64)
    torch.cuda.synchronize()
    check_masked(a, sa, b, sb, out, (200, 0, 256, 17), True)


def test_graph_replay_with_masked_m_changed_between_replays():
    gen = torch.Generator(device="cuda").manual_seed(4)
    g, m_max = 8, 256
    a, sa, b, sb, out, masked_m = masked_case(gen, g=g, m_max=m_max, n=256, k=512,
                                              counts=(1, 0, 256, 17, 128, 129, 0, 64))
    sa = dgtune.get_col_major_tma_aligned_tensor(sa)  # captured as is: no copy inside the graph
    dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 32)  # the first call loads the kernel
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 32)
    for counts in [(1, 0, 256, 17, 128, 129, 0, 64), (0,) * 8, (256,) * 8, (3, 200, 0, 255, 1, 0, 77, 130)]:
        masked_m.copy_(torch.tensor(counts, dtype=torch.int32))
        out.fill_(SENTINEL)
        graph.replay()
        torch.cuda.synchronize()
        check_masked(a, sa, b, sb, out, counts, True, what=f"replay {counts}")


def test_first_call_inside_capture_is_refused():
    gen = torch.Generator(device="cuda").manual_seed(5)
    # K 512: ceil(K/128) = 4, so b_scale passes the rules as it is and the capture rule is what refuses.
    a, sa, b, sb, out, masked_m = masked_case(gen, g=3, m_max=128, n=256, k=512, counts=(5, 6, 7))
    sa = dgtune.get_col_major_tma_aligned_tensor(sa)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="inside CUDA-graph capture; call it once before capturing"):
        with torch.cuda.graph(graph):
            torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 77)  # expected_m never seen
    torch.cuda.synchronize()
    # Outside capture the same call then runs.
    dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 77)
    torch.cuda.synchronize()
    check_masked(a, sa, b, sb, out, (5, 6, 7), True)


def test_torch_compile_runs_the_op():
    gen = torch.Generator(device="cuda").manual_seed(6)
    a, sa, b, sb, out, masked_m = masked_case(gen)
    sa = dgtune.get_col_major_tma_aligned_tensor(sa)
    sb_padded = torch.empty(sb.shape[0], sb.shape[1], 8, device="cuda")[:, :, :5]
    sb_padded.copy_(sb)

    def f(a, sa, b, sb, out, masked_m):
        torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 64)
        return out.float().sum(dim=-1)

    sums = torch.compile(f, fullgraph=True, backend="aot_eager")(a, sa, b, sb_padded, out, masked_m)
    torch.cuda.synchronize()
    check_masked(a, sa, b, sb, out, (200, 0, 256, 17), True, what="compiled")
    assert torch.allclose(sums, out.float().sum(dim=-1))


def test_rule_errors_on_cuda_tensors():
    gen = torch.Generator(device="cuda").manual_seed(7)
    a, sa, b, sb, out, masked_m = masked_case(gen)
    sa = dgtune.get_col_major_tma_aligned_tensor(sa)
    with pytest.raises(RuntimeError, match=r"^dgtune\.m_grouped_scaled_mm_masked: masked_m must be int32"):
        torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m.long(), 64)
    with pytest.raises(RuntimeError, match=r"out must be \[4, 256, 320\]"):
        torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out[:, :, :256], masked_m, 64)


def test_grouped_choice_reports_the_ops_object():
    gen = torch.Generator(device="cuda").manual_seed(8)
    a, sa, b, sb, out, masked_m = masked_case(gen, g=3, m_max=128, n=256, k=512, counts=(5, 6, 7))
    # expected_m 41 is used by no other test: before the op's first call there is nothing to report.
    with pytest.raises(RuntimeError, match="no grouped GEMM of this problem on device .* the op's first call makes it"):
        dgtune.grouped_choice("masked", 3, 128, 256, 512, expected_m=41)
    dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 41)
    torch.cuda.synchronize()
    c = dgtune.grouped_choice("masked", 3, 128, 256, 512, expected_m=41, device=a.device)
    if c.source == "default":  # no DB winner: the default rule takes the BLOCK_M 64 tile at expected_m <= 64
        assert c.config_key.startswith("64x128x128_") and c.tuned_key == "" and c.tuned_us == 0.0, c
    else:  # $DGTUNE_DB held a grouped winner of G 3, N 256, K 512
        assert c.source.split("-")[0] in ("db", "ladder", "nearest") and c.tuned_key and c.tuned_us > 0, c
    assert 1 <= c.grid_ctas <= torch.cuda.get_device_properties(0).multi_processor_count * 2


def test_warmup_grouped_lets_the_first_call_run_inside_capture():
    gen = torch.Generator(device="cuda").manual_seed(9)
    a, sa, b, sb, out, masked_m = masked_case(gen, g=3, m_max=128, n=256, k=512, counts=(5, 6, 7))
    sa = dgtune.get_col_major_tma_aligned_tensor(sa)
    # expected_m 43 and 45 are used by no other test: nothing made them before the warm-up.
    with pytest.raises(RuntimeError, match="the op's first call makes it"):
        dgtune.grouped_choice("masked", 3, 128, 256, 512, expected_m=43)
    choices = dgtune.warmup_grouped("masked", 3, 128, 256, 512, expected_m=[43, 45], device=a.device)
    assert len(choices) == 2 and all(c.config_key and c.grid_ctas > 0 for c in choices), choices
    assert dgtune.grouped_choice("masked", 3, 128, 256, 512, expected_m=45) == choices[1]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # the first call of expected_m 43, inside capture: it was warmed up
        torch.ops.dgtune.m_grouped_scaled_mm_masked(a, sa, b, sb, out, masked_m, 43)
    out.fill_(SENTINEL)
    graph.replay()
    torch.cuda.synchronize()
    check_masked(a, sa, b, sb, out, (5, 6, 7), True, what="warmed, first call captured")
    with pytest.raises(RuntimeError, match="capturing a CUDA graph"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            dgtune.warmup_grouped("masked", 3, 128, 256, 512, expected_m=47)
