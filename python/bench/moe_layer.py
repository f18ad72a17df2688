#!/usr/bin/env python3
"""A DeepSeek-V3 MoE layer's routed experts on one GPU (EP 8): its two grouped FP8 GEMMs through dgtune and through a
rival on the same tensors, every output verified, both timed under CUDA-graph replay.

The layer (per GPU, expert parallelism 8: G = 256 / 8 = 32 local experts, hidden 7168, moe_intermediate_size 2048):

    h  = grouped GEMM gate_up   (x [rows, 7168] e4m3, 1x128 scales)  x  (W1 [G, 4096, 7168] e4m3, 128x128 scales)
    a  = SiLU(h[:, :2048]) * h[:, 2048:]                    (float32 in torch; h is bf16)
    q2 = e4m3(a / s2), s2 = max(amax, 1e-12) / 448 per 1x128 block of a   (torch ops; dgtune.quantize's rule)
    y  = grouped GEMM down      (q2 [rows, 2048], s2)  x  (W2 [G, 7168, 2048] e4m3, 128x128 scales)   -> bf16

Units: rows and columns in elements, times in microseconds (us) per layer, TFLOPS over real rows only
(2 x real_rows x (4096 x 7168 + 7168 x 2048) / time).

Modes (the layouts are DeepGEMM's, which dgtune's grouped ops take):
  - prefill (contiguous): --prefill-tokens T tokens on each of the 8 GPUs pick their top-8 of 256 experts (seeded,
    uniform: each token takes 8 distinct experts, all equally likely); this GPU holds experts 0..31, so it receives
    about 8 T rows. Each expert's rows are one segment padded to a multiple of 128 rows: x [M_sum, 7168], m_indices
    int32 [M_sum] (the expert of each row, -1 on padding rows).
  - decode (masked): --decode-tokens T per GPU, routed the same way; x [G, M_max, 7168] with M_max = round_up(8 T,
    128) (DeepEP's low-latency buffer: 8 ranks x T tokens is the most one expert can receive; `dgtune shapes
    --experts` uses the same M_max), masked_m int32 [G] the counts, expected_m = ceil(mean count).
  The SiLU/quantize step runs on every row of the contiguous layout (padding rows included, as a DeepGEMM user's
  does) and, in the masked layout, on the first round_up(max count, 128) rows of every expert: plain torch has no
  masked SiLU kernel, and all M_max rows (8 T) would make it, not the GEMMs, the layer's cost. Every path runs the
  same activation code on the same rows.

Paths (each its own output buffers, the same x, W1, W2 and scales):
  - dgtune: dgtune.m_grouped_scaled_mm_contiguous / _masked (one launch per GEMM; counts read on the device, so the
    captured graph stays valid for other routings). Configs: the grouped winners of --db (dgtune.load; `dgtune sweep`
    of the lines `dgtune shapes --hf-config ... --ep 8 --experts` prints makes them), else $DGTUNE_DB, else the default rule; the
    config each GEMM ran is reported (dgtune.grouped_choice).
  - deep_gemm (when `import deep_gemm` works): deep_gemm.m_grouped_fp8_gemm_nt_contiguous / _masked (DeepGEMM >= 2),
    else m_grouped_gemm_fp8_fp8_bf16_nt_contiguous / _masked (DeepGEMM 1.x), same arguments.
  - torch-loop: what a user without DeepGEMM has: one torch._scaled_mm per expert with torch 2.11's DeepSeek recipe
    (BlockWise1x128 activations x BlockWise128x128 weights, cuBLASLt; fp32 scales, bf16 out, written in place
    through out=). torch._scaled_mm takes these scales directly, so no dequantization and no per-128-K-chunk loop is
    needed, and neither is timed. Its rules shape the loop: a group's activation scales must be their own (rows, KG)
    tensor with strides (1, rows), so the scales of the down GEMM's input are gathered into that per-expert layout in
    one torch.take inside the timed layer (the gate_up input's are prepared with the inputs, like dgtune's M-major
    copy); cuBLASLt refuses some small row counts (M = 1 and 3 at block scaling on the H200), so each expert's rows
    are rounded up to the first of --loop-align (default: try 1, then 16, then 128) at which every expert runs and
    the layer verifies, within its segment (contiguous) or M_max (masked); the rounding is reported. The loop reads
    the counts on the host when the graph is captured: the graph bakes in that routing (a serving step would
    recapture per routing), which is the rival's best case.

Verification (before timing, on the graph's own outputs after one replay): for each path and each GEMM, every
expert's real rows (padding rows of the output are never written and never compared) against a float32 reference
of the same e4m3 bytes and scales, dequantized per group (activations per 1x128 block, weights per 128x128 block):
max |out - ref| / max |ref| per expert must be <= --tolerance (default 2^-7, docs/measurement.md's bound for
promoted FP32 accumulation; bf16 rounding alone is up to 2^-8). The down GEMM's reference uses that path's own q2 and
s2. Any failed check, or a path that cannot run, makes the exit code 1.

Timing: each path's whole layer (gate_up, SiLU/quantize, down) captured once in one CUDA graph, replayed --replays
times between two CUDA events per sample, --repeats samples with the paths alternating (order reversed every other
repeat); the median per path. The same for the two GEMMs alone ("gemms": the layer graph without the activation
step, reading the last replay's q2). x = rival us / dgtune us (> 1: dgtune faster).

Output: a table on stdout; --json PATH writes {"meta": ..., "rows": [...]}: torch/CUDA versions, GPU, driver, SM
clocks, per configuration the routing, each path's times, samples, errors and choices, and the ratios.
--plan-only prints the configurations (routing, layouts) without a GPU.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]

# DeepSeek-V3 (configs/models/deepseek-v3.json) at EP 8.
HIDDEN = 7168
INTER = 2048  # moe_intermediate_size
N_EXPERTS = 256
TOP_K = 8
EP = 8
GROUPS = N_EXPERTS // EP  # local experts
ROW_ALIGN = 128  # DeepGEMM's Hopper m-alignment: contiguous segments and M_max are multiples of it
BLOCK = 128  # 1x128 activation and 128x128 weight scale blocks
E4M3_MAX = 448.0
AMAX_FLOOR = 1e-12  # dgtune.quantize's floor: an all-zero block gets a finite scale
TOLERANCE = 2.0**-7
PREFILL_TOKENS = [512, 2048, 8192]  # about 4096, 16384, 65536 real rows: near the grouped tuning ladder's M_sum points
DECODE_TOKENS = [32, 128, 256]  # mean rows per expert 8, 32, 64
LOOP_ALIGNS = [1, 16, 128]
PATHS = ["dgtune", "deep_gemm", "torch-loop"]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    return cdiv(a, b) * b


# ---------------------------------------------------------------------------------------------------------------
# Routing and layouts (pure: CPU tensors and ints; the CPU tests cover them)


def route_counts(tokens_per_gpu: int, seed: int, *, ep: int = EP, n_experts: int = N_EXPERTS, top_k: int = TOP_K,
                 groups: int = GROUPS) -> list[int]:
    """Rows each local expert receives: ep x tokens_per_gpu tokens each pick top_k distinct experts of n_experts
    (uniform: the top_k of i.i.d. uniform scores, from a CPU generator seeded with `seed`, so every platform gets the
    same counts); this GPU holds experts 0 .. groups-1. Returns `groups` counts; their mean is
    tokens_per_gpu x ep x top_k / n_experts (tokens_per_gpu / 4 for DeepSeek-V3 at EP 8)."""
    if tokens_per_gpu < 1:
        raise ValueError(f"tokens per GPU must be >= 1, got {tokens_per_gpu}")
    gen = torch.Generator().manual_seed(seed)
    total = tokens_per_gpu * ep
    counts = torch.zeros(n_experts, dtype=torch.int64)
    chunk = 8192  # bounds the score matrix at chunk x n_experts floats
    for start in range(0, total, chunk):
        rows = min(chunk, total - start)
        picked = torch.rand((rows, n_experts), generator=gen).topk(top_k, dim=1).indices
        counts += torch.bincount(picked.flatten(), minlength=n_experts)
    return [int(c) for c in counts[:groups]]


@dataclass
class Plan:
    """One configuration: the routing and the layout built from it.

    contiguous: m = M_sum (rows of x, h, y), starts/segments per expert (segment = round_up(count, 128), 0 for an
    expert without rows), m_indices int32 [M_sum] (-1 on padding rows). masked: m = M_max, expected_m, masked_m int32
    [G]; act_rows = round_up(max count, 128) (the rows per expert the SiLU/quantize step covers)."""

    mode: str  # "prefill" (contiguous) or "decode" (masked)
    tokens: int  # per GPU
    counts: list[int]
    layout: str = ""
    m: int = 0
    expected_m: int = 0
    starts: list[int] = field(default_factory=list)
    segments: list[int] = field(default_factory=list)
    act_rows: int = 0
    layout_tensor: torch.Tensor | None = None  # m_indices or masked_m (CPU, int32)

    @property
    def groups(self) -> int:
        return len(self.counts)

    @property
    def real_rows(self) -> int:
        return sum(self.counts)

    def rows_of(self, g: int) -> tuple[int, int]:
        """(first row, count) of expert g's real rows: a row index into [M_sum, .] (contiguous) or into expert g's
        [M_max, .] slice (masked)."""
        return (self.starts[g] if self.layout == "contiguous" else 0), self.counts[g]

    def describe(self) -> dict:
        d = {"mode": self.mode, "layout": self.layout, "tokens_per_gpu": self.tokens, "groups": self.groups,
             "real_rows": self.real_rows, "counts": list(self.counts), "min_count": min(self.counts),
             "max_count": max(self.counts)}
        if self.layout == "contiguous":
            d.update({"m_sum": self.m, "padding_rows": self.m - self.real_rows})
        else:
            d.update({"m_max": self.m, "expected_m": self.expected_m, "act_rows": self.act_rows})
        return d


def contiguous_plan(tokens: int, counts: list[int], align: int = ROW_ALIGN) -> Plan:
    """DeepGEMM's contiguous layout: expert g's rows are one segment of round_up(count, align) rows starting where
    the previous segment ends (a multiple of align); m_indices[r] = g on its first `count` rows, -1 after them."""
    segments = [round_up(c, align) for c in counts]
    starts, s = [], 0
    for seg in segments:
        starts.append(s)
        s += seg
    m_indices = torch.full((s,), -1, dtype=torch.int32)
    for g, (st, c) in enumerate(zip(starts, counts)):
        m_indices[st:st + c] = g
    return Plan("prefill", tokens, list(counts), "contiguous", s, 0, starts, segments, s, m_indices)


def masked_plan(tokens: int, counts: list[int], ep: int = EP, align: int = ROW_ALIGN) -> Plan:
    """DeepGEMM's masked layout: M_max = round_up(ep x tokens, align) (the most rows one expert can receive, each of
    the ep ranks sending each token at most once), masked_m = counts, expected_m = ceil(mean count) (at least 1)."""
    m_max = round_up(max(ep * tokens, 1), align)
    if max(counts) > m_max:
        raise ValueError(f"a count {max(counts)} exceeds M_max {m_max}")
    expected_m = max(1, cdiv(sum(counts), len(counts)))
    act_rows = min(m_max, max(align, round_up(max(counts), align)))
    masked_m = torch.tensor(counts, dtype=torch.int32)
    return Plan("decode", tokens, list(counts), "masked", m_max, expected_m, [0] * len(counts), [m_max] * len(counts),
                act_rows, masked_m)


def make_plan(mode: str, tokens: int, seed: int, *, groups: int = GROUPS, n_experts: int = N_EXPERTS,
              top_k: int = TOP_K, ep: int = EP) -> Plan:
    counts = route_counts(tokens, seed, ep=ep, n_experts=n_experts, top_k=top_k, groups=groups)
    return contiguous_plan(tokens, counts) if mode == "prefill" else masked_plan(tokens, counts, ep)


def loop_rows(plan: Plan, align: int) -> list[int]:
    """Rows the torch loop computes per expert: the count rounded up to `align`, within the expert's segment
    (contiguous) or M_max (masked); 0 for an expert without rows (skipped)."""
    return [0 if c == 0 else min(round_up(c, align), seg) for c, seg in zip(plan.counts, plan.segments)]


def loop_scale_index(plan: Plan, rows: list[int], kg: int) -> tuple[torch.Tensor, list[int]]:
    """Gather indices that turn a row-major scale tensor ([M_sum, kg] or [G, M_max, kg], flattened) into the torch
    loop's per-expert layout: expert g's block is kg x rows[g] floats, the scale of (row m, k block j) at
    base[g] + j x rows[g] + m, so block.view(kg, rows[g]).t() is the (rows, kg) tensor with strides (1, rows) that
    torch._scaled_mm's BlockWise1x128 rule wants. Returns (int64 index [sum(rows) x kg], base offset per expert)."""
    parts, bases, base = [], [], 0
    for g, r in enumerate(rows):
        bases.append(base)
        if r == 0:
            continue
        first = plan.starts[g] if plan.layout == "contiguous" else g * plan.m
        m = torch.arange(first, first + r, dtype=torch.int64)
        j = torch.arange(kg, dtype=torch.int64)
        parts.append((m[None, :] * kg + j[:, None]).flatten())
        base += kg * r
    idx = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)
    return idx, bases


# ---------------------------------------------------------------------------------------------------------------
# Quantization, activation and the float32 reference (any device)


def quantize_1x128(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [..., K] (K a multiple of 128) -> (q e4m3 [..., K] contiguous, s float32 [..., K/128] row-major), with
    dgtune.quantize's rule: s = max(amax, 1e-12) / 448 per 1x128 block, q = e4m3(clamp(x / s, +-448))."""
    k = x.size(-1)
    xb = x.float().unflatten(-1, (k // BLOCK, BLOCK))
    s = xb.abs().amax(dim=-1).clamp(min=AMAX_FLOOR) / E4M3_MAX
    q = (xb / s.unsqueeze(-1)).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).flatten(-2)
    return q, s


def quantize_128x128(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w [N, K] (multiples of 128) -> (q e4m3 [N, K], s float32 [N/128, K/128]), the same rule per 128x128 block."""
    n, k = w.shape
    wb = w.float().view(n // BLOCK, BLOCK, k // BLOCK, BLOCK)
    s = wb.abs().amax(dim=(1, 3)).clamp(min=AMAX_FLOOR) / E4M3_MAX
    q = (wb / s[:, None, :, None]).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).view(n, k)
    return q, s


def silu_mul_quant(h: torch.Tensor, q_out: torch.Tensor, s_out: torch.Tensor) -> None:
    """The activation step: a = SiLU(h[..., :I]) * h[..., I:] in float32, quantized 1x128, written into q_out
    [..., I] (e4m3) and s_out [..., I/128] (float32, row-major); h [..., 2I] bf16. Same code for every path."""
    inter = h.size(-1) // 2
    a = torch.nn.functional.silu(h[..., :inter].float()) * h[..., inter:].float()
    q, s = quantize_1x128(a)
    q_out.copy_(q)
    s_out.copy_(s)


def dequant_rows(q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """q [R, K] e4m3, s [R, K/128] -> float32 [R, K] (each 1x128 block times its scale)."""
    return q.float() * s.float().repeat_interleave(BLOCK, dim=-1)


def dequant_weight(w: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """w [N, K] e4m3, s [N/128, K/128] -> float32 [N, K]."""
    return w.float() * s.float().repeat_interleave(BLOCK, dim=0).repeat_interleave(BLOCK, dim=1)


def verify_gemm(plan: Plan, out: torch.Tensor, a: torch.Tensor, sa: torch.Tensor, w: torch.Tensor, sw: torch.Tensor,
                tol: float) -> dict:
    """Every expert's real rows of `out` against float32 (dequantized a per 1x128 block) @ (dequantized w[g] per
    128x128 block).T. a, out: [M_sum, .] or [G, M_max, .]; sa row-major scales of a; w [G, N, K], sw [G, N/128,
    K/128]. Returns {"max_rel_err", "worst_group", "nonfinite_rows", "ok"}: rel err = max |out - ref| / max |ref| per
    expert; ok when every expert's is <= tol (NaN fails)."""
    worst, worst_g, nonfinite = 0.0, -1, 0
    ok = True
    for g in range(plan.groups):
        first, c = plan.rows_of(g)
        if c == 0:
            continue
        sel = (slice(first, first + c),) if plan.layout == "contiguous" else (g, slice(first, first + c))
        ref = dequant_rows(a[sel], sa[sel]) @ dequant_weight(w[g], sw[g]).t()
        got = out[sel].float()
        nonfinite += int((~torch.isfinite(got)).any(dim=-1).sum())
        den = float(ref.abs().max())
        err = float((got - ref).abs().max()) / (den if den > 0 else 1.0)
        if not (err <= tol):  # NaN compares False
            ok = False
        if not (err <= worst):
            worst, worst_g = err, g
    return {"max_rel_err": worst, "worst_group": worst_g, "nonfinite_rows": nonfinite, "ok": ok and nonfinite == 0,
            "tolerance": tol}


# ---------------------------------------------------------------------------------------------------------------
# Operands and the paths


@dataclass
class Dims:
    groups: int = GROUPS
    hidden: int = HIDDEN
    inter: int = INTER

    @property
    def flops_per_row(self) -> int:
        return 2 * (2 * self.inter * self.hidden + self.hidden * self.inter)


class Operands:
    """The inputs every path shares, on `device`: x (e4m3, the dispatched tokens, zeros on rows that hold no token)
    with its 1x128 scales xs (row-major) and xs_mmajor (the M-major TMA-aligned layout dgtune and DeepGEMM read),
    W1 [G, 2I, H] / s1 [G, 2I/128, H/128], W2 [G, H, I] / s2 [G, H/128, I/128] (contiguous), and the layout tensor.
    Values: tokens ~ N(0, 1) with every 16th channel x 8 (outlier channels), weights ~ N(0, 1/sqrt(K))."""

    def __init__(self, plan: Plan, dims: Dims, seed: int, device):
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        h, i, g = dims.hidden, dims.inter, dims.groups
        shape = (plan.m, h) if plan.layout == "contiguous" else (g, plan.m, h)
        x = torch.zeros(shape, dtype=torch.bfloat16, device=device)
        for e in range(g):
            first, c = plan.rows_of(e)
            if c:
                rows = torch.randn((c, h), generator=gen, device=device)
                rows[:, ::16] *= 8
                if plan.layout == "contiguous":
                    x[first:first + c] = rows.to(torch.bfloat16)
                else:
                    x[e, :c] = rows.to(torch.bfloat16)
        self.x, self.xs = quantize_1x128(x)
        del x
        self.xs_mmajor = to_mmajor(self.xs)
        w1, s1, w2, s2 = [], [], [], []
        for _ in range(g):
            q, s = quantize_128x128(torch.randn((2 * i, h), generator=gen, device=device) / math.sqrt(h))
            w1.append(q)
            s1.append(s)
            q, s = quantize_128x128(torch.randn((h, i), generator=gen, device=device) / math.sqrt(i))
            w2.append(q)
            s2.append(s)
        self.w1, self.s1 = torch.stack(w1), torch.stack(s1)
        self.w2, self.s2 = torch.stack(w2), torch.stack(s2)
        self.layout = plan.layout_tensor.to(device)


def to_mmajor(s: torch.Tensor) -> torch.Tensor:
    """Row-major scales [M, KG] or [G, M, KG] in the M-major layout the grouped kernels read (M a multiple of 128,
    so the TMA-aligned leading dimension is M): DeepGEMM's get_col_major_tma_aligned_tensor, written here so that a
    machine without dgtune's native library (the CPU tests) gets the same layout."""
    return s.transpose(-1, -2).contiguous().transpose(-1, -2)


class LayerPath:
    """One way to run the layer on shared Operands; its own h [rows, 2I], q2/s2 [rows, I] / [rows, I/128] and y
    [rows, H] (rows = M_sum, or G x M_max with a leading G dimension). Subclasses give gate_up(), down() and
    down_scales() (s2 in the layout their down GEMM reads)."""

    name = "?"

    def __init__(self, plan: Plan, dims: Dims, ops: Operands):
        self.plan, self.dims, self.ops = plan, dims, ops
        dev = ops.x.device
        lead = (plan.m,) if plan.layout == "contiguous" else (dims.groups, plan.m)
        # Zeroed once so that rows no path writes (padding) hold finite values in the activation step.
        self.h = torch.zeros(lead + (2 * dims.inter,), dtype=torch.bfloat16, device=dev)
        self.q2 = torch.zeros(lead + (dims.inter,), dtype=torch.float8_e4m3fn, device=dev)
        self.s2 = torch.ones(lead + (dims.inter // BLOCK,), dtype=torch.float32, device=dev)
        self.y = torch.zeros(lead + (dims.hidden,), dtype=torch.bfloat16, device=dev)
        self.s2_kernel = None  # the down GEMM's scales of the last layer() (a graph keeps them alive)

    def act(self) -> None:
        if self.plan.layout == "contiguous":
            silu_mul_quant(self.h, self.q2, self.s2)
        else:
            r = self.plan.act_rows
            silu_mul_quant(self.h[:, :r], self.q2[:, :r], self.s2[:, :r])

    def layer(self) -> None:
        self.gate_up()
        self.act()
        self.s2_kernel = self.down_scales()
        self.down(self.s2_kernel)

    def gemms(self) -> None:
        """The two GEMMs alone, the down GEMM on the last layer()'s q2 and scales."""
        self.gate_up()
        self.down(self.s2_kernel)

    def choice(self) -> dict:
        return {}


class DgtunePath(LayerPath):
    name = "dgtune"

    def __init__(self, plan, dims, ops, dgtune):
        super().__init__(plan, dims, ops)
        self.dg = dgtune

    def _run(self, a, sa, b, sb, out):
        if self.plan.layout == "contiguous":
            self.dg.m_grouped_scaled_mm_contiguous(a, sa, b, sb, out, self.ops.layout)
        else:
            self.dg.m_grouped_scaled_mm_masked(a, sa, b, sb, out, self.ops.layout, self.plan.expected_m)

    def gate_up(self):
        o = self.ops
        self._run(o.x, o.xs_mmajor, o.w1, o.s1, self.h)

    def down_scales(self):
        return self.dg.get_col_major_tma_aligned_tensor(self.s2)

    def down(self, s2k):
        o = self.ops
        self._run(self.q2, s2k, o.w2, o.s2, self.y)

    def choice(self) -> dict:
        p, d = self.plan, self.dims
        out = {}
        for gemm, n, k in (("gate_up", 2 * d.inter, d.hidden), ("down", d.hidden, d.inter)):
            try:
                c = self.dg.grouped_choice(p.layout, d.groups, p.m, n, k, expected_m=p.expected_m, scale="block",
                                           device=self.ops.x.device)
                out[gemm] = c._asdict()
            except Exception as e:  # noqa: BLE001 - an older native library: say so in the JSON, keep timing
                out[gemm] = {"error": str(e)[:300]}
        return out


def deep_gemm_functions(dg) -> tuple[object, object, str]:
    """(contiguous, masked, naming) of an imported deep_gemm: DeepGEMM >= 2 names, else 1.x names."""
    for c, m, tag in (("m_grouped_fp8_gemm_nt_contiguous", "m_grouped_fp8_gemm_nt_masked", "v2"),
                      ("m_grouped_gemm_fp8_fp8_bf16_nt_contiguous", "m_grouped_gemm_fp8_fp8_bf16_nt_masked", "v1")):
        if hasattr(dg, c) and hasattr(dg, m):
            return getattr(dg, c), getattr(dg, m), tag
    raise RuntimeError("deep_gemm has neither m_grouped_fp8_gemm_nt_contiguous nor "
                       "m_grouped_gemm_fp8_fp8_bf16_nt_contiguous")


class DeepGemmPath(LayerPath):
    name = "deep_gemm"

    def __init__(self, plan, dims, ops, deep_gemm):
        super().__init__(plan, dims, ops)
        self.contiguous, self.masked, self.api = deep_gemm_functions(deep_gemm)

    def _run(self, a, sa, b, sb, out):
        if self.plan.layout == "contiguous":
            self.contiguous((a, sa), (b, sb), out, self.ops.layout)
        else:
            self.masked((a, sa), (b, sb), out, self.ops.layout, self.plan.expected_m)

    def gate_up(self):
        o = self.ops
        self._run(o.x, o.xs_mmajor, o.w1, o.s1, self.h)

    def down_scales(self):
        return to_mmajor(self.s2)

    def down(self, s2k):
        self._run(self.q2, s2k, self.ops.w2, self.ops.s2, self.y)

    def choice(self) -> dict:
        return {"api": self.api}


class TorchLoopPath(LayerPath):
    """One torch._scaled_mm per expert and GEMM (BlockWise1x128 x BlockWise128x128), rows per expert rounded up to
    `align` (see the module docstring)."""

    name = "torch-loop"

    def __init__(self, plan, dims, ops, align: int):
        super().__init__(plan, dims, ops)
        self.align = align
        self.rows = loop_rows(plan, align)
        kg1, kg2 = dims.hidden // BLOCK, dims.inter // BLOCK
        idx1, self.base1 = loop_scale_index(plan, self.rows, kg1)
        idx2, self.base2 = loop_scale_index(plan, self.rows, kg2)
        dev = ops.x.device
        self.idx2 = idx2.to(dev)
        self.xs_loop = torch.take(ops.xs, idx1.to(dev))  # the gate_up input's, prepared with the inputs

    def _views(self, t: torch.Tensor, e: int):
        first = self.plan.starts[e] if self.plan.layout == "contiguous" else 0
        r = self.rows[e]
        return t[first:first + r] if self.plan.layout == "contiguous" else t[e, first:first + r]

    @staticmethod
    def _scale(flat: torch.Tensor, base: int, rows: int, kg: int) -> torch.Tensor:
        return flat[base:base + kg * rows].view(kg, rows).t()  # (rows, kg), strides (1, rows)

    def _loop(self, a, flat_sa, base, kg, w, sw, out):
        for e, r in enumerate(self.rows):
            if r == 0:
                continue
            torch._scaled_mm(self._views(a, e), w[e].t(), self._scale(flat_sa, base[e], r, kg), sw[e].t(),
                             out_dtype=torch.bfloat16, out=self._views(out, e))

    def gate_up(self):
        o = self.ops
        self._loop(o.x, self.xs_loop, self.base1, self.dims.hidden // BLOCK, o.w1, o.s1, self.h)

    def down_scales(self):
        return torch.take(self.s2, self.idx2)

    def down(self, s2k):
        o = self.ops
        self._loop(self.q2, s2k, self.base2, self.dims.inter // BLOCK, o.w2, o.s2, self.y)

    def choice(self) -> dict:
        computed = sum(self.rows)
        return {"row_align": self.align, "launches_per_gemm": sum(1 for r in self.rows if r),
                "rows_computed": computed, "rows_real": self.plan.real_rows}


def verify_path(path: LayerPath, tol: float) -> dict:
    """Both GEMMs of `path`'s last layer against the float32 reference (real rows only)."""
    o = path.ops
    return {"gate_up": verify_gemm(path.plan, path.h, o.x, o.xs, o.w1, o.s1, tol),
            "down": verify_gemm(path.plan, path.y, path.q2, path.s2, o.w2, o.s2, tol)}


# ---------------------------------------------------------------------------------------------------------------
# GPU: capture, time, report


def sm_clocks() -> dict:
    """The SM clock now: nvidia-smi's clocks.sm / clocks.max.sm (MHz) and torch.cuda.clock_rate() (needs pynvml)."""
    out = {}
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu",
                            "--format=csv,noheader,nounits", "-i", str(torch.cuda.current_device())],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and r.stdout.strip():
            f = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
            out.update({"sm_mhz": f[0], "max_sm_mhz": f[1], "power_w": f[2], "temp_c": f[3]})
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        out["torch_clock_rate_mhz"] = int(torch.cuda.clock_rate())
    except Exception:  # noqa: BLE001 - needs pynvml
        pass
    return out


def capture(fn) -> "torch.cuda.CUDAGraph":
    """fn captured once in a CUDA graph, after two eager calls on a side stream (torch's recipe)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


def time_graphs(graphs: dict, replays: int, repeats: int) -> dict:
    """{name: graph} -> {name: [us per replay] per repeat}, names round-robin, order reversed every other repeat."""
    names = list(graphs)
    samples = {n: [] for n in names}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for g in graphs.values():
        g.replay()  # one untimed replay each
    torch.cuda.synchronize()
    for r in range(repeats):
        for n in (names if r % 2 == 0 else names[::-1]):
            g = graphs[n]
            torch.cuda.synchronize()
            start.record()
            for _ in range(replays):
                g.replay()
            end.record()
            end.synchronize()
            samples[n].append(start.elapsed_time(end) * 1000.0 / replays)
    return samples


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def torch_loop_path(plan, dims, ops, aligns: list[int], errors: dict, tol: float):
    """The torch loop at the first alignment in `aligns` at which every torch._scaled_mm of the layer runs and the
    layer verifies (cuBLASLt may refuse a row count, or, as pytorch_block.py found for one scale layout, accept it
    and compute garbage); None (and errors["torch-loop"] saying why) when none does. The alignments passed over go
    to errors["torch-loop-align"] (information: the loop ran at a later one)."""
    why = []
    for a in aligns:
        p = TorchLoopPath(plan, dims, ops, a)
        try:
            p.layer()
            sync(ops.x.device)
        except RuntimeError as e:
            why.append(f"align {a}: {str(e).splitlines()[0][:200]}")
            continue
        v = verify_path(p, tol)
        if v["gate_up"]["ok"] and v["down"]["ok"]:
            if why:
                errors["torch-loop-align"] = why
            return p
        why.append(f"align {a}: ran but off by {v['gate_up']['max_rel_err']:.3g} (gate_up), "
                   f"{v['down']['max_rel_err']:.3g} (down) max rel")
    errors["torch-loop"] = "; ".join(why)
    return None


def make_paths(names, plan, dims, ops, args, dgtune, deep_gemm, errors) -> list[LayerPath]:
    paths = []
    for n in names:
        try:
            if n == "dgtune":
                p = DgtunePath(plan, dims, ops, dgtune)
            elif n == "deep_gemm":
                p = DeepGemmPath(plan, dims, ops, deep_gemm)
            else:
                p = torch_loop_path(plan, dims, ops, args.loop_align, errors, args.tolerance)
                if p is None:
                    continue
            p.layer()  # the first call: dgtune compiles or loads its kernels here, never inside a capture
            sync(ops.x.device)
            paths.append(p)
        except Exception as e:  # noqa: BLE001 - reported, and the exit code says so
            errors[n] = f"{type(e).__name__}: {str(e)[:400]}"
    return paths


def run_config(plan: Plan, dims: Dims, args, dgtune, deep_gemm, names: list[str], device="cuda") -> dict:
    """Builds the operands and the paths, captures, verifies and times one configuration; returns its JSON row."""
    row = plan.describe()
    errors: dict = {}
    ops = Operands(plan, dims, args.seed, device)
    paths = make_paths(names, plan, dims, ops, args, dgtune, deep_gemm, errors)
    layer_graphs, gemm_graphs = {}, {}
    for p in paths:
        layer_graphs[p.name] = capture(p.layer)
    result = {}
    for p in paths:
        # Verify what a replay of the captured layer computes (its q2/s2 are the path's buffers).
        p.h.zero_()
        p.y.zero_()
        layer_graphs[p.name].replay()
        sync(device)
        v = verify_path(p, args.tolerance)
        result[p.name] = {"verify": v, "ok": v["gate_up"]["ok"] and v["down"]["ok"], "choice": p.choice()}
    dg = next((p for p in paths if p.name == "dgtune"), None)
    for p in paths:
        if dg is not None and p is not dg:
            # Information only: the paths quantize their own h, so their y may differ by a rounding of q2.
            den = float(dg.y.float().abs().max()) or 1.0
            sel = real_rows_mask(plan, p.y.device)
            result[p.name]["y_vs_dgtune_max_rel"] = float((p.y.float() - dg.y.float())[sel].abs().max()) / den
    if not args.no_gemms_only:
        for p in paths:
            gemm_graphs[p.name] = capture(p.gemms)
    clocks0 = sm_clocks()
    samples = time_graphs(layer_graphs, args.replays, args.repeats) if paths else {}
    gsamples = time_graphs(gemm_graphs, args.replays, args.repeats) if gemm_graphs else {}
    clocks1 = sm_clocks()
    for p in paths:
        r = result[p.name]
        r["layer_us"] = round(statistics.median(samples[p.name]), 3)
        r["layer_samples_us"] = [round(x, 3) for x in samples[p.name]]
        r["layer_tflops"] = round(dims.flops_per_row * plan.real_rows / r["layer_us"] / 1e6, 2)
        if p.name in gsamples:
            r["gemms_us"] = round(statistics.median(gsamples[p.name]), 3)
            r["gemms_samples_us"] = [round(x, 3) for x in gsamples[p.name]]
            r["gemms_tflops"] = round(dims.flops_per_row * plan.real_rows / r["gemms_us"] / 1e6, 2)
    ratios = {}
    if "dgtune" in result:
        for n, r in result.items():
            if n == "dgtune":
                continue
            ratios[f"x_layer_{n}"] = round(r["layer_us"] / result["dgtune"]["layer_us"], 4)
            if "gemms_us" in r and "gemms_us" in result["dgtune"]:
                ratios[f"x_gemms_{n}"] = round(r["gemms_us"] / result["dgtune"]["gemms_us"], 4)
    row.update({"paths": result, "ratios": ratios, "errors": errors, "sm_clocks_before": clocks0,
                "sm_clocks_after": clocks1, "ok": bool(result) and all(r["ok"] for r in result.values())
                and not any(k in errors for k in names)})
    del layer_graphs, gemm_graphs, paths, ops
    sync(device)
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()
    return row


def real_rows_mask(plan: Plan, device) -> torch.Tensor:
    """Bool mask over the output's rows ([M_sum] or [G, M_max]) that hold a real row."""
    if plan.layout == "contiguous":
        return plan.layout_tensor.to(device) >= 0
    rows = torch.arange(plan.m, device=device)
    return rows[None, :] < plan.layout_tensor.to(device)[:, None]


# ---------------------------------------------------------------------------------------------------------------
# Command line


def int_list(s: str) -> list[int]:
    try:
        vals = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {s!r}")
    return vals


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default="prefill,decode",
                   help="comma-separated: prefill (contiguous layout), decode (masked layout); default %(default)s")
    p.add_argument("--prefill-tokens", type=int_list, default=PREFILL_TOKENS,
                   help="tokens per GPU for prefill, comma-separated (default %(default)s: M_sum about 8 x each)")
    p.add_argument("--decode-tokens", type=int_list, default=DECODE_TOKENS,
                   help="tokens per GPU for decode, comma-separated (default %(default)s: mean rows per expert T/4)")
    p.add_argument("--paths", default="auto",
                   help="comma-separated of dgtune, deep_gemm, torch-loop; auto (default): dgtune, deep_gemm when "
                        "`import deep_gemm` works, torch-loop")
    p.add_argument("--loop-align", type=int_list, default=LOOP_ALIGNS,
                   help="row roundings the torch loop tries in order (default %(default)s)")
    p.add_argument("--repeats", type=int, default=7, help="timed samples per path (median reported)")
    p.add_argument("--replays", type=int, default=20, help="graph replays per sample")
    p.add_argument("--seed", type=int, default=0, help="routing and data seed")
    p.add_argument("--tolerance", type=float, default=TOLERANCE,
                   help="max |out - ref| / max |ref| per expert (default 2^-7)")
    p.add_argument("--no-gemms-only", action="store_true", help="skip the GEMMs-alone graphs")
    p.add_argument("--db", help="tuning DB for dgtune.load, read at each problem's first call (default: $DGTUNE_DB, "
                                "else none: the default rule)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--plan-only", action="store_true", help="print the configurations and exit (no GPU)")
    args = p.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in ("prefill", "decode"):
            p.error(f"unknown mode {m!r} (prefill, decode)")
    if not args.modes:
        p.error("--modes is empty")
    if args.paths == "auto":
        args.paths = None
    else:
        args.paths = [x for x in args.paths.split(",") if x]
        for x in args.paths:
            if x not in PATHS:
                p.error(f"unknown path {x!r} ({', '.join(PATHS)})")
        if "dgtune" not in args.paths:
            p.error("--paths must include dgtune (the ratios are against it)")
    if args.repeats < 1 or args.replays < 1:
        p.error("--repeats and --replays must be >= 1")
    if any(a not in (1, 2, 4, 8, 16, 32, 64, 128) for a in args.loop_align):
        p.error("--loop-align values must be powers of two up to 128")
    if not args.tolerance > 0:
        p.error("--tolerance must be > 0")
    return args


def configs(args) -> list[tuple[str, int]]:
    out = []
    for m in args.modes:
        out += [(m, t) for t in (args.prefill_tokens if m == "prefill" else args.decode_tokens)]
    return out


def git_commit():
    try:
        r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        if r.returncode == 0:
            return r.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.environ.get("DGTUNE_COMMIT")


def import_deep_gemm():
    try:
        return importlib.import_module("deep_gemm"), None
    except Exception as e:  # noqa: BLE001 - any import failure means no DeepGEMM here
        return None, f"{type(e).__name__}: {str(e)[:200]}"


def table(rows: list[dict]) -> str:
    lines = ["| mode | tokens/GPU | real rows | M | exp_m | path | layer us | gemms us | x layer | x gemms | "
             "err gate_up | err down | ok |", "|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|---|"]
    for r in rows:
        m = r.get("m_sum", r.get("m_max"))
        for name, p in r["paths"].items():
            x = r["ratios"].get(f"x_layer_{name}")
            xg = r["ratios"].get(f"x_gemms_{name}")
            lines.append(
                f"| {r['mode']} | {r['tokens_per_gpu']} | {r['real_rows']} | {m} | {r.get('expected_m', '')} | "
                f"{name} | {p['layer_us']:.1f} | {p.get('gemms_us', float('nan')):.1f} | "
                f"{'' if x is None else f'{x:.3f}'} | {'' if xg is None else f'{xg:.3f}'} | "
                f"{p['verify']['gate_up']['max_rel_err']:.2e} | {p['verify']['down']['max_rel_err']:.2e} | "
                f"{'yes' if p['ok'] else 'NO'} |")
        for k, v in r["errors"].items():
            lines.append(f"| {r['mode']} | {r['tokens_per_gpu']} | | | | {k} | error: {v} | | | | | | |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    dims = Dims()
    if args.plan_only:
        for mode, t in configs(args):
            d = make_plan(mode, t, args.seed).describe()
            d.pop("counts")
            print(json.dumps(d))
        return 0
    if not torch.cuda.is_available():
        print("moe_layer.py: no CUDA device (use --plan-only for the configurations)", file=sys.stderr)
        return 2
    import dgtune

    deep_gemm, dg_why = import_deep_gemm()
    names = args.paths or ["dgtune"] + (["deep_gemm"] if deep_gemm is not None else []) + ["torch-loop"]
    if "deep_gemm" in names and deep_gemm is None:
        print(f"moe_layer.py: --paths has deep_gemm but `import deep_gemm` failed: {dg_why}", file=sys.stderr)
        return 2
    if args.db:
        dgtune.load(db=args.db)  # before any grouped call: each problem's first call chooses its config
    # The reference is float32: no TF32 in its matmuls.
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        from dgtune import _native

        native = _native.require().version()
    except Exception as e:  # noqa: BLE001
        native = f"unavailable: {e}"
    meta = {"commit": git_commit(), "argv": sys.argv[1:], "torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0), "capability": list(torch.cuda.get_device_capability(0)),
            "python": sys.version.split()[0], "dgtune": getattr(dgtune, "__version__", None), "dgtune_native": native,
            "dgtune_file": dgtune.__file__, "deep_gemm": getattr(deep_gemm, "__version__", "installed")
            if deep_gemm is not None else f"not importable ({dg_why})", "paths": names,
            "model": {"hidden": dims.hidden, "moe_intermediate_size": dims.inter, "n_routed_experts": N_EXPERTS,
                      "top_k": TOP_K, "ep": EP, "local_experts": dims.groups},
            "gemms": {"gate_up": {"n": 2 * dims.inter, "k": dims.hidden}, "down": {"n": dims.hidden, "k": dims.inter}},
            "db": args.db or os.environ.get("DGTUNE_DB"), "seed": args.seed, "repeats": args.repeats, "replays": args.replays, "tolerance": args.tolerance,
            "loop_align": args.loop_align, "sm_clocks_start": sm_clocks(),
            "rival_note": "torch-loop: one torch._scaled_mm per expert and GEMM, BlockWise1x128 x BlockWise128x128 "
                          "(cuBLASLt), counts read on the host at capture (the graph bakes in the routing)",
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        meta["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        meta["driver"] = None
    doc = {"meta": meta, "rows": []}

    def save():
        if args.json:
            Path(args.json).write_text(json.dumps(doc, indent=1))

    for mode, t in configs(args):
        plan = make_plan(mode, t, args.seed)
        t0 = time.time()
        row = run_config(plan, dims, args, dgtune, deep_gemm, names)
        row["seconds"] = round(time.time() - t0, 1)
        doc["rows"].append(row)
        save()
        summary = "  ".join(f"{n} {p['layer_us']:.1f} us{'' if p['ok'] else ' VERIFY FAILED'}"
                            for n, p in row["paths"].items())
        print(f"{mode} T={t} rows={plan.real_rows} M={plan.m}: {summary}  {row['ratios']}"
              f"{'  errors: ' + str(row['errors']) if row['errors'] else ''}", flush=True)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["sm_clocks_end"] = sm_clocks()
    meta["stats_end"] = dict(dgtune.stats()) if dgtune.native_available() else None
    save()
    print(table(doc["rows"]))
    bad = [r for r in doc["rows"] if not r["ok"]]
    if bad:
        print(f"moe_layer.py: {len(bad)} configuration(s) failed verification or could not run a path",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
