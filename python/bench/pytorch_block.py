#!/usr/bin/env python3
"""The FP8 GEMMs of one transformer block, dgtune.scaled_mm vs torch._scaled_mm, as a PyTorch program (the
PyTorch package's benchmark).

What is timed: only the block's GEMMs, in model order, on pre-quantized inputs (no quantization, attention or norms in
the timed region), at tensor parallelism 8:
  - DeepSeek-V3 with 1x128 activation / 128x128 weight block scales ("block"): the MLA projections (fused q_a + kv_a,
    q_b, kv_b, o) and the shared-expert MLP (gate_up, down) of one MoE block. The dense first layers' MLP
    (gate_up_proj, down_proj without "shared_experts") and lm_head are not part of that block and are left out.
  - Llama-3.1-70B twice: row-wise scales ("rowwise"), and tensor-wise scales with use_fast_accum=True on both sides
    ("tensorwise-fast"): qkv, o, gate_up, down.
The (N, K) of every GEMM come from `dgtune shapes --hf-config configs/models/MODEL.json --tp 8` (the CLI is looked up
as --cli, $DGTUNE_CLI, the installed package's dgtune/bin/dgtune, build/dgtune, `dgtune` on PATH; without one the
table below, printed by that command at the commit that wrote this file, is used and the JSON says so).

Modes (per model, recipe and M; each side its own buffers, the same values):
  - graph: the block's GEMM sequence captured into one CUDA graph per side; per sample one side replays its graph
    --replays times between two CUDA events (time / replays = one block); the sides alternate round-robin (the order
    flips every repeat), --repeats samples each; the median is reported.
  - eager: the same sequence launched eagerly --replays times between the events, same alternation.
  A row with x_scaled_mm < 0.98 is measured once more and both values are reported (x_scaled_mm is the second).
Before timing: dgtune.load(db=..., bundle=...) for the model and dgtune.warmup(problems=...) for the block's problem
families at the benchmark's M values; dgtune.stats() before and after the timing show whether anything compiled.
Verification once per (model, recipe, M): every GEMM's dgtune output against torch._scaled_mm's on the same inputs:
max|d - t| / max|t| <= 2 x the mode's max_rel_err of docs/measurement.md (each side is within it of the exact
result) and the FP64 reference too for M <= 256.

Host cost (--host-cost): per-call host time of eager M = 1 calls that allocate their output each time, on a tiny
shape (1 x 4096 x 4096 by default), for dgtune.scaled_mm, torch.ops.dgtune.scaled_mm.default and torch._scaled_mm,
interleaved in blocks of calls, each call timed with time.perf_counter_ns, torch.cuda.synchronize() only between
blocks (outside the timed calls); p50, p99 and mean per function and recipe.

Output: --out JSON ({"meta": ..., "rows": [...], "host_cost": [...]}) with one row per (model, recipe, M, mode) and
the fields model, recipe, m, mode, dgtune_us, scaled_mm_us, x_scaled_mm (scaled_mm us / dgtune us) and more; a
markdown summary on stdout (and --md FILE).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS = {
    "deepseek-v3": {"config": "deepseek-v3.json", "recipes": ["block"]},
    "llama-3.1-70b": {"config": "llama-3.1-70b.json", "recipes": ["rowwise", "tensorwise-fast"]},
}
M_LIST = [1, 3, 16, 48, 64, 200, 256, 1024, 3000, 4096, 8192]
TP = 8
# DeepSeek-V3: the layers of one MoE block (MLA + shared experts); the dense first layers' MLP is another block.
DEEPSEEK_KEEP = ("fused_qkv_a_proj", "q_b_proj", "kv_b_proj", "o_proj", "shared_experts.gate_up_proj",
                 "shared_experts.down_proj")
# `dgtune shapes --hf-config configs/models/MODEL.json --tp 8 --m 1` (name, N, K) in model order, for a machine
# without the CLI. DeepSeek-V3 already filtered to DEEPSEEK_KEEP.
FALLBACK_SHAPES = {
    "deepseek-v3": [("DeepseekV3.fused_qkv_a_proj.tp8", 2112, 7168), ("DeepseekV3.q_b_proj.tp8", 3072, 1536),
                    ("DeepseekV3.kv_b_proj.tp8.prefill", 4096, 512), ("DeepseekV3.o_proj.tp8", 7168, 2048),
                    ("DeepseekV3.shared_experts.gate_up_proj.tp8", 512, 7168),
                    ("DeepseekV3.shared_experts.down_proj.tp8", 7168, 256)],
    "llama-3.1-70b": [("Llama.qkv_proj.tp8", 1280, 8192), ("Llama.o_proj.tp8", 8192, 1024),
                      ("Llama.gate_up_proj.tp8", 7168, 8192), ("Llama.down_proj.tp8", 8192, 3584)],
}
# recipe -> (scale name of the control API, use_fast_accum, docs/measurement.md max_rel_err of the accumulation)
RECIPES = {
    "block": ("block", False, 2.0**-7),
    "rowwise": ("channel", False, 2.0**-7),
    "tensorwise": ("per-tensor", False, 2.0**-7),
    "tensorwise-fast": ("per-tensor", True, 2.0**-5),
}
X_CONFIRM = 0.98


# ---------------------------------------------------------------------------------------------------------------
# Shapes (pure: no torch, no GPU)


def find_cli(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    env = os.environ.get("DGTUNE_CLI")
    if env:
        return env
    try:
        import importlib.util

        spec = importlib.util.find_spec("dgtune")
        if spec and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                p = Path(loc) / "bin" / "dgtune"
                if p.is_file() and os.access(p, os.X_OK):
                    return str(p)
    except (ImportError, ValueError):
        pass
    p = REPO / "build" / "dgtune"
    if p.is_file() and os.access(p, os.X_OK):
        return str(p)
    return shutil.which("dgtune")


def parse_shapes_text(text: str) -> list[tuple[str, int, int]]:
    """(name, N, K) per GEMM in file order from a `dgtune shapes` output (M N K key=value ...)."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        n, k = int(parts[1]), int(parts[2])
        kv = dict(p.split("=", 1) for p in parts[3:] if "=" in p)
        out.append((kv.get("name", f"gemm{len(out)}"), n, k))
    return out


def block_gemms(model: str, cli: str | None, configs_dir: Path) -> tuple[list[tuple[str, int, int]], str]:
    """The block's GEMMs (name, N, K) in model order and where they came from."""
    source = "builtin table" + ("" if cli else " (no dgtune CLI found)")
    gemms = None
    if cli:
        cfg = configs_dir / MODELS[model]["config"]
        try:
            r = subprocess.run([cli, "shapes", "--hf-config", str(cfg), "--tp", str(TP), "--m", "1"],
                               capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                gemms = parse_shapes_text(r.stdout)
                source = f"{cli} shapes --hf-config {cfg} --tp {TP} --m 1"
            else:
                source += f"; `{cli} shapes` failed: {r.stderr.strip()[:200]}"
        except (OSError, subprocess.TimeoutExpired) as e:
            source += f"; `{cli} shapes` failed: {e}"
    if gemms is None:
        return list(FALLBACK_SHAPES[model]), source
    if model == "deepseek-v3":
        def keep(name):
            role = name.split(".", 1)[1] if "." in name else name
            return any(role == k or role.startswith(k + ".") for k in DEEPSEEK_KEEP)
        gemms = [g for g in gemms if keep(g[0])]
    gemms = [g for g in gemms if "lm_head" not in g[0]]
    return gemms, source


# ---------------------------------------------------------------------------------------------------------------
# Operands


def cdiv(a, b):
    return (a + b - 1) // b


def round_up(a, b):
    return cdiv(a, b) * b


def quantize_rows(x, torch):
    """Per-row (token / output channel) e4m3 quantization: q, scale (float32 [rows, 1])."""
    amax = x.abs().amax(dim=1, keepdim=True).clamp(min=1e-12)
    s = amax / 448.0
    return (x / s).to(torch.float8_e4m3fn), s.float()


def quantize_1x128(x, torch):
    """1x128 blocks along K: q [rows, K], scale [rows, G]."""
    rows, k = x.shape
    g = cdiv(k, 128)
    xp = torch.nn.functional.pad(x, (0, g * 128 - k)).view(rows, g, 128)
    s = xp.abs().amax(dim=2).clamp(min=1e-12) / 448.0
    q = (xp / s.unsqueeze(2)).view(rows, g * 128)[:, :k].to(torch.float8_e4m3fn)
    return q, s.float()


def quantize_128x128(w, torch):
    """128x128 blocks of an [N, K] weight: q [N, K], scale [ceil(N/128), G]."""
    n, k = w.shape
    nb, g = cdiv(n, 128), cdiv(k, 128)
    wp = torch.nn.functional.pad(w, (0, g * 128 - k, 0, nb * 128 - n)).view(nb, 128, g, 128)
    s = wp.abs().amax(dim=(1, 3)).clamp(min=1e-12) / 448.0
    q = (wp / s[:, None, :, None]).reshape(nb * 128, g * 128)[:n, :k].to(torch.float8_e4m3fn)
    return q, s.float()


def strided_copy(t, stride, torch):
    size = tuple(t.shape)
    extent = 1 + sum((s - 1) * st for s, st in zip(size, stride))
    out = torch.zeros(extent, dtype=t.dtype, device=t.device).as_strided(size, stride)
    out.copy_(t)
    return out


class Gemm:
    """One GEMM's operands, in each side's preferred scale layout (same values)."""

    def __init__(self, name, m, n, k, recipe, gen, torch, scale_layout):
        dev = DEVICE[0]
        self.name, self.m, self.n, self.k, self.recipe = name, m, n, k, recipe
        self.fast = RECIPES[recipe][1]
        # Realistic inputs: activations ~ N(0, 1) with a few outlier channels, weights ~ N(0, 1/sqrt(K)).
        x = torch.randn((m, k), generator=gen, device=dev)
        x[:, :: max(1, k // 16)] *= 8
        w = torch.randn((n, k), generator=gen, device=dev) / math.sqrt(k)
        g = cdiv(k, 128)
        if recipe == "block":
            self.a, sa = quantize_1x128(x, torch)             # [M, G]
            wq, sw = quantize_128x128(w, torch)                # [N/128, G]
            self.b = wq.t()                                    # [K, N] column-major
            sb = sw.t()                                        # [G, ceil(N/128)]
            # torch._scaled_mm: scale_a strides (1, M), scale_b strides (1, G) (ScaledBlas.cpp on b.t()).
            self.sa_torch = sa.t().contiguous().t()
            self.sb_torch = sw.contiguous().t()
            # torch versions differ on the 128x128 scale's row pitch: G or round_up(G, 4) (pick_torch_layout).
            self.sb_torch_alt = strided_copy(sb, (1, round_up(g, 4)), torch) if g % 4 else None
            # dgtune reads scale_a with strides (1, round_up(M, 4)) and scale_b (1, round_up(G, 4)) in place.
            if scale_layout == "native":
                self.sa_dg = strided_copy(sa, (1, round_up(m, 4)), torch)
                self.sb_dg = strided_copy(sb, (1, round_up(g, 4)), torch)
            else:
                self.sa_dg, self.sb_dg = self.sa_torch, self.sb_torch
        elif recipe == "rowwise":
            self.a, sa = quantize_rows(x, torch)
            wq, sw = quantize_rows(w, torch)
            self.b = wq.t()
            self.sa_torch = self.sa_dg = sa.contiguous()                 # (M, 1)
            self.sb_torch = self.sb_dg = sw.reshape(1, n).contiguous()  # (1, N)
        else:  # tensorwise(-fast)
            sa = (x.abs().amax() / 448.0).float()
            sw = (w.abs().amax() / 448.0).float()
            self.a = (x / sa).to(torch.float8_e4m3fn)
            self.b = (w / sw).to(torch.float8_e4m3fn).t()
            self.sa_torch = self.sa_dg = sa.reshape(())
            self.sb_torch = self.sb_dg = sw.reshape(())

    def pick_torch_layout(self, torch):
        """The block scale_b layout torch._scaled_mm computes correctly with (pitch G, else round_up(G, 4)): a layout
        it accepts is kept only when its result is within the recipe's bound of the FP64 reference (on H200 with torch
        2.11, K = 256 with pitch G is accepted and gives garbage). Returns None, or why torch cannot run the GEMM."""
        candidates = [self.sb_torch] + ([self.sb_torch_alt] if getattr(self, "sb_torch_alt", None) is not None else [])
        why = None
        for sb in candidates:
            self.sb_torch = sb
            try:
                t = self.run_torch(torch)
            except RuntimeError as e:
                why = str(e).splitlines()[0]
                continue
            if self.recipe != "block":
                return None
            ref = self.reference(torch)
            err = float((t.double() - ref).abs().max()) / max(float(ref.abs().max()), 1e-30)
            if err <= 2 * RECIPES[self.recipe][2]:
                return None
            why = f"torch._scaled_mm's result is off by {err:.3g} (max rel) with scale_b strides {tuple(sb.stride())}"
        self.sb_torch = candidates[0]
        return why

    def problem(self, m_values):
        scale, fast, _ = RECIPES[self.recipe]
        return {"n": self.n, "k": self.k, "lda": self.a.stride(0) if self.m > 1 else max(self.a.stride(0), self.k),
                "ldb": self.b.stride(1), "ldd": self.n, "a": "e4m3", "b": "e4m3", "fast_accum": fast,
                "scale": scale, "out": "bf16", "bias": False, "m": list(m_values)}

    def run_dgtune(self, dgtune):
        return dgtune.scaled_mm(self.a, self.b, self.sa_dg, self.sb_dg, out_dtype=BF16[0], use_fast_accum=self.fast)

    def run_torch(self, torch):
        return torch._scaled_mm(self.a, self.b, self.sa_torch, self.sb_torch, out_dtype=BF16[0],
                                use_fast_accum=self.fast)

    def reference(self, torch):
        """FP64 result from the same bytes and scales."""
        A = self.a.float().double()
        B = self.b.float().double()
        if self.recipe == "block":
            ka = self.sa_torch.double().repeat_interleave(128, dim=1)[:, : self.k]
            kb = self.sb_torch.double().repeat_interleave(128, dim=0)[: self.k].repeat_interleave(128, dim=1)[:, : self.n]
            return (A * ka) @ (B * kb)
        if self.recipe == "rowwise":
            return (A * self.sa_torch.double()) @ (B * self.sb_torch.double())
        return (A @ B) * (self.sa_torch.double() * self.sb_torch.double())


BF16 = [None]  # torch.bfloat16, set after import
DEVICE = ["cuda"]  # a CPU self-check sets "cpu"


def rel_err(d, t):
    dd, tt = d.double(), t.double()
    mx = float(tt.abs().max())
    return float((dd - tt).abs().max()) / mx if mx > 0 else float((dd - tt).abs().max())


# ---------------------------------------------------------------------------------------------------------------
# Timing


def sm_clock_mhz(torch):
    try:
        return int(torch.cuda.clock_rate())
    except Exception:  # noqa: BLE001
        return None


def time_sides(torch, sides, replays, repeats):
    """sides: {name: callable launching one block}; returns {name: [us per block] per repeat}, round-robin with
    the order reversed every other repeat."""
    names = list(sides)
    samples = {n: [] for n in names}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for r in range(repeats):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            fn = sides[n]
            torch.cuda.synchronize()
            start.record()
            for _ in range(replays):
                fn()
            end.record()
            end.synchronize()
            samples[n].append(start.elapsed_time(end) * 1000.0 / replays)
    return samples


def measure(torch, dgtune, gemms, mode, replays, repeats):
    """Median us per block for each side, plus the samples."""
    def seq_dg():
        for g in gemms:
            g.run_dgtune(dgtune)

    def seq_torch():
        for g in gemms:
            g.run_torch(torch)

    if mode == "graph":
        graphs = {}
        for name, seq in (("dgtune", seq_dg), ("scaled_mm", seq_torch)):
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    seq()
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                seq()
            graphs[name] = g
        sides = {"dgtune": graphs["dgtune"].replay, "scaled_mm": graphs["scaled_mm"].replay}
        for fn in sides.values():  # one untimed replay each
            fn()
    else:
        sides = {"dgtune": seq_dg, "scaled_mm": seq_torch}
        for fn in sides.values():
            fn()
    clock0 = sm_clock_mhz(torch)
    samples = time_sides(torch, sides, replays, repeats)
    clock1 = sm_clock_mhz(torch)
    med = {k: statistics.median(v) for k, v in samples.items()}
    return med, samples, (clock0, clock1)


def verify(torch, dgtune, gemms, recipe):
    """dgtune vs torch._scaled_mm on every GEMM (and vs FP64 for M <= 256); returns (ok, details)."""
    bound = RECIPES[recipe][2]
    details = []
    ok = True
    for g in gemms:
        d = g.run_dgtune(dgtune)
        t = g.run_torch(torch)
        torch.cuda.synchronize()
        e = {"gemm": g.name, "dgtune_vs_scaled_mm": rel_err(d, t), "limit": 2 * bound,
             "finite": bool(torch.isfinite(d.float()).all())}
        good = e["finite"] and e["dgtune_vs_scaled_mm"] <= 2 * bound
        if g.m <= 256:
            ref = g.reference(torch)
            e["dgtune_vs_fp64"] = rel_err(d, ref)
            e["scaled_mm_vs_fp64"] = rel_err(t, ref)
            good = good and e["dgtune_vs_fp64"] <= bound
        e["ok"] = good
        ok = ok and good
        details.append(e)
    return ok, details


# ---------------------------------------------------------------------------------------------------------------


def git_commit():
    try:
        r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        if r.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return r.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.environ.get("DGTUNE_COMMIT")


def per_model_arg(values, model):
    """--db / --bundle: 'PATH' for every model or 'MODEL=PATH' entries."""
    generic = None
    for v in values or []:
        if "=" in v and v.split("=", 1)[0] in MODELS:
            name, path = v.split("=", 1)
            if name == model:
                return path
        else:
            generic = v
    return generic


def load_model_db(dgtune, db, bundle):
    kw = {}
    if db:
        kw["db"] = db
    if bundle:
        kw["bundle"] = bundle
    dgtune.load(**kw)
    return kw


def as_dict(x):
    import dataclasses

    return dataclasses.asdict(x) if dataclasses.is_dataclass(x) else dict(x)


def choices(dgtune, gemms):
    """backend / source counts of what the op runs for the block."""
    backends, sources, per = {}, {}, []
    for g in gemms:
        p = g.problem([g.m])
        p["m"] = g.m
        try:
            c = as_dict(dgtune.choose(**p))
        except Exception as e:  # noqa: BLE001
            c = {"error": repr(e)}
        backends[c.get("backend", "?")] = backends.get(c.get("backend", "?"), 0) + 1
        sources[c.get("source", "?")] = sources.get(c.get("source", "?"), 0) + 1
        per.append({"gemm": g.name, **{k: c.get(k) for k in ("backend", "source", "config_key", "tuned_us")}})
    return backends, sources, per


def run_blocks(args, torch, dgtune, meta, rows, save):
    cli = find_cli(args.cli)
    for model in args.models:
        gemms_nk, source = block_gemms(model, cli, Path(args.configs_dir))
        meta["shapes"][model] = {"source": source, "gemms": [list(g) for g in gemms_nk]}
        db, bundle = per_model_arg(args.db, model), per_model_arg(args.bundle, model)
        meta["loaded"][model] = load_model_db(dgtune, db, bundle)
        for recipe in MODELS[model]["recipes"] if not args.recipes else [r for r in args.recipes
                                                                           if r in MODELS[model]["recipes"]]:
            # Warm-up of the families at the benchmark's M values.
            probe = [Gemm(name, 1, n, k, recipe, torch.Generator(device="cuda").manual_seed(0), torch,
                          args.scale_layout) for name, n, k in gemms_nk]
            t0 = time.perf_counter()
            try:
                wu = dict(dgtune.warmup(problems=[g.problem(args.m_list) for g in probe]) or {})
            except Exception as e:  # noqa: BLE001
                wu = {"error": repr(e)}
            wu["wall_s"] = round(time.perf_counter() - t0, 3)
            meta["warmup"][f"{model}/{recipe}"] = wu
            del probe
            for m in args.m_list:
                gen = torch.Generator(device="cuda").manual_seed(1000 + m)
                gemms = [Gemm(name, m, n, k, recipe, gen, torch, args.scale_layout) for name, n, k in gemms_nk]
                refused = {g.name: err for g in gemms if (err := g.pick_torch_layout(torch))}
                if refused and len(refused) < len(gemms):
                    # Both sides run the GEMMs torch._scaled_mm can run; the row names the ones left out and why.
                    gemms = [g for g in gemms if g.name not in refused]
                    print(f"{model} {recipe} m={m}: left out of both sides (torch._scaled_mm cannot run them): "
                          f"{refused}", flush=True)
                elif refused:
                    rows.append({"model": model, "recipe": recipe, "m": m, "mode": "error", "dgtune_us": None,
                                 "scaled_mm_us": None, "x_scaled_mm": None, "verified": False,
                                 "error": f"torch._scaled_mm refused: {refused}"})
                    save()
                    print(f"{model} {recipe} m={m}: torch._scaled_mm refused {refused}", flush=True)
                    continue
                ok, vdetails = verify(torch, dgtune, gemms, recipe)
                backends, sources, per = choices(dgtune, gemms)
                for mode in args.modes:
                    s0 = dgtune.stats()
                    med, samples, clocks = measure(torch, dgtune, gemms, mode, args.replays, args.repeats)
                    s1 = dgtune.stats()
                    row = {"model": model, "recipe": recipe, "m": m, "mode": mode,
                           "left_out": {name: err[:200] for name, err in refused.items()},
                           "dgtune_us": round(med["dgtune"], 3), "scaled_mm_us": round(med["scaled_mm"], 3),
                           "x_scaled_mm": round(med["scaled_mm"] / med["dgtune"], 4),
                           "gemms": len(gemms), "verified": ok, "backends": backends, "sources": sources,
                           "sm_clock_mhz": list(clocks), "repeats": args.repeats, "replays": args.replays,
                           "dgtune_samples_us": [round(x, 3) for x in samples["dgtune"]],
                           "scaled_mm_samples_us": [round(x, 3) for x in samples["scaled_mm"]],
                           "nvrtc_compiles_during": s1.get("nvrtc_compiles", 0) - s0.get("nvrtc_compiles", 0),
                           "scale_copies_during": s1.get("scale_copies", 0) - s0.get("scale_copies", 0),
                           "capture_fallbacks_during": s1.get("capture_fallbacks", 0) - s0.get("capture_fallbacks", 0)}
                    if row["x_scaled_mm"] < X_CONFIRM:
                        med2, samples2, clocks2 = measure(torch, dgtune, gemms, mode, args.replays, args.repeats)
                        row.update({"first_dgtune_us": row["dgtune_us"], "first_scaled_mm_us": row["scaled_mm_us"],
                                    "first_x_scaled_mm": row["x_scaled_mm"], "remeasured": True,
                                    "dgtune_us": round(med2["dgtune"], 3),
                                    "scaled_mm_us": round(med2["scaled_mm"], 3),
                                    "x_scaled_mm": round(med2["scaled_mm"] / med2["dgtune"], 4),
                                    "sm_clock_mhz_confirm": list(clocks2)})
                    if mode == args.modes[0]:
                        row["verify"] = vdetails
                        row["choices"] = per
                    rows.append(row)
                    save()
                    print(f"{model:14s} {recipe:16s} m={m:5d} {mode:5s} dgtune {row['dgtune_us']:9.2f} us  "
                          f"scaled_mm {row['scaled_mm_us']:9.2f} us  x {row['x_scaled_mm']:.3f}"
                          f"{'  (remeasured, first x %.3f)' % row['first_x_scaled_mm'] if row.get('remeasured') else ''}"
                          f"{'' if ok else '  VERIFY FAILED'}", flush=True)
                del gemms
                torch.cuda.empty_cache()


def host_cost(args, torch, dgtune):
    """Per-call host time (ns) of eager M = 1 calls that allocate their output."""
    m, n, k = 1, args.host_n, args.host_k
    results = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    for recipe in args.host_recipes:
        g = Gemm("host", m, n, k, recipe, gen, torch, "native")
        op = torch.ops.dgtune.scaled_mm.default
        bf16 = torch.bfloat16
        fast = g.fast
        fns = {
            "dgtune.scaled_mm": lambda: dgtune.scaled_mm(g.a, g.b, g.sa_dg, g.sb_dg, None, None, bf16, fast),
            "torch.ops.dgtune.scaled_mm": lambda: op(g.a, g.b, g.sa_dg, g.sb_dg, None, None, bf16, fast),
            "torch._scaled_mm": lambda: torch._scaled_mm(g.a, g.b, g.sa_torch, g.sb_torch, None, None, bf16, fast),
        }
        torch_error = g.pick_torch_layout(torch)
        if torch_error is not None:  # torch._scaled_mm cannot run this recipe here: time dgtune alone, say why
            del fns["torch._scaled_mm"]
            results.append({"recipe": recipe, "fn": "torch._scaled_mm", "m": m, "n": n, "k": k, "error": torch_error})
        try:
            p = g.problem([m])
            p["m"] = m
            chosen = as_dict(dgtune.choose(**p))
        except Exception as e:  # noqa: BLE001
            chosen = {"error": repr(e)}
        for fn in fns.values():  # warm-up (first-use allocation, cuBLASLt handles, plans)
            for _ in range(50):
                fn()
        torch.cuda.synchronize()
        times = {name: [] for name in fns}
        perf = time.perf_counter_ns
        for blk in range(args.host_blocks):
            names = list(fns) if blk % 2 == 0 else list(fns)[::-1]
            for name in names:
                fn = fns[name]
                ts = times[name]
                for _ in range(args.host_calls):
                    t0 = perf()
                    fn()
                    ts.append(perf() - t0)
                torch.cuda.synchronize()  # outside the timed calls: the queue never fills
        for name, ts in times.items():
            ts.sort()
            results.append({"recipe": recipe, "fn": name, "m": m, "n": n, "k": k, "calls": len(ts),
                            "p50_us": round(ts[len(ts) // 2] / 1000, 3),
                            "p99_us": round(ts[min(len(ts) - 1, int(len(ts) * 0.99))] / 1000, 3),
                            "mean_us": round(sum(ts) / len(ts) / 1000, 3),
                            "dgtune_choice": chosen if name != "torch._scaled_mm" else None})
        ref = next(r for r in results if r["recipe"] == recipe and r["fn"] == "torch._scaled_mm")
        for r in results:
            if r["recipe"] == recipe and r["fn"] != "torch._scaled_mm" and "p50_us" in ref:
                r["p50_minus_scaled_mm_us"] = round(r["p50_us"] - ref["p50_us"], 3)
                r["within_0_5_us"] = r["p50_us"] <= ref["p50_us"] + 0.5
        for r in results:
            if r["recipe"] == recipe and "error" in r:
                print(f"host {recipe:16s} {r['fn']:28s} cannot run: {r['error']}", flush=True)
            elif r["recipe"] == recipe:
                print(f"host {recipe:16s} {r['fn']:28s} p50 {r['p50_us']:7.3f} us  p99 {r['p99_us']:7.3f} us  "
                      f"mean {r['mean_us']:7.3f} us", flush=True)
    return results


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def markdown(doc) -> str:
    out = []
    meta = doc["meta"]
    out.append(f"# dgtune.scaled_mm vs torch._scaled_mm: one block's FP8 GEMMs ({meta.get('device')}, "
               f"torch {meta.get('torch')}, commit {meta.get('commit')})\n")
    rows = doc.get("rows", [])
    for mode in ("graph", "eager"):
        mrows = [r for r in rows if r["mode"] == mode]
        if not mrows:
            continue
        out.append(f"## {mode}\n")
        out.append("| model | recipe | M | dgtune us | scaled_mm us | x | backends | verified |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in mrows:
            x = f"{r['x_scaled_mm']:.3f}"
            if r.get("remeasured"):
                x += f" (first {r['first_x_scaled_mm']:.3f})"
            be = ", ".join(f"{k} {v}" for k, v in sorted(r.get("backends", {}).items()))
            out.append(f"| {r['model']} | {r['recipe']} | {r['m']} | {r['dgtune_us']:.2f} | {r['scaled_mm_us']:.2f} "
                       f"| {x} | {be} | {'yes' if r['verified'] else 'NO'} |")
        out.append("")
        for model in dict.fromkeys(r["model"] for r in mrows):
            for recipe in dict.fromkeys(r["recipe"] for r in mrows if r["model"] == model):
                xs = [r["x_scaled_mm"] for r in mrows if r["model"] == model and r["recipe"] == recipe]
                out.append(f"- {model} {recipe}: geomean x {geomean(xs):.3f} over {len(xs)} M, min {min(xs):.3f}")
        gm = geomean([r["x_scaled_mm"] for r in mrows])
        below = [r for r in mrows if r["x_scaled_mm"] < X_CONFIRM]
        out.append(f"- all: geomean x {gm:.3f} over {len(mrows)} rows; confirmed below {X_CONFIRM}: {len(below)}\n")
    left = {(r["model"], r["recipe"], r["m"]): r["left_out"] for r in rows if r.get("left_out")}
    if left:
        out.append("## GEMMs left out of both sides (torch._scaled_mm cannot run them)\n")
        for (model, recipe, m), lo in left.items():
            out.append(f"- {model} {recipe} M={m}: " + "; ".join(f"{k}: {v}" for k, v in lo.items()))
        out.append("")
    errors = [r for r in rows if r["mode"] == "error"]
    if errors:
        out.append("## not measured\n")
        for r in errors:
            out.append(f"- {r['model']} {r['recipe']} M={r['m']}: {r['error']}")
        out.append("")
    hc = doc.get("host_cost", [])
    if hc:
        out.append("## host cost per call (eager, M = 1, output allocated each call)\n")
        out.append("| recipe | function | p50 us | p99 us | mean us | p50 - scaled_mm p50 |")
        out.append("|---|---|---|---|---|---|")
        for r in hc:
            if "error" in r:
                out.append(f"| {r['recipe']} | {r['fn']} | cannot run: {r['error']} | | | |")
                continue
            d = r.get("p50_minus_scaled_mm_us")
            out.append(f"| {r['recipe']} | {r['fn']} | {r['p50_us']:.3f} | {r['p99_us']:.3f} | {r['mean_us']:.3f} | "
                       f"{'' if d is None else f'{d:+.3f}'} |")
        out.append("")
    return "\n".join(out)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", action="append", help="tuning DB for dgtune.load: PATH (every model) or MODEL=PATH; "
                                                  "repeatable")
    p.add_argument("--bundle", action="append", help="kernel bundle for dgtune.load: PATH or MODEL=PATH")
    p.add_argument("--models", default=",".join(MODELS),
                   type=lambda s: [x for x in s.split(",") if x], help="comma-separated: " + ", ".join(MODELS))
    p.add_argument("--recipes", type=lambda s: [x for x in s.split(",") if x], default=None,
                   help="restrict to these recipes (block, rowwise, tensorwise-fast)")
    p.add_argument("--m-list", type=lambda s: [int(x) for x in s.split(",") if x], default=M_LIST,
                   help="comma-separated M values (default %(default)s)")
    p.add_argument("--modes", type=lambda s: [x for x in s.split(",") if x], default=["graph", "eager"])
    p.add_argument("--repeats", type=int, default=7, help="samples per side (median reported)")
    p.add_argument("--replays", type=int, default=20, help="graph replays / eager block launches per sample")
    p.add_argument("--out", help="JSON output file")
    p.add_argument("--md", help="markdown summary file (also printed)")
    p.add_argument("--cli", help="the dgtune CLI (for `dgtune shapes`)")
    p.add_argument("--configs-dir", default=str(REPO / "configs" / "models"))
    p.add_argument("--scale-layout", choices=["native", "torch"], default="native",
                   help="block scales: each side's own in-place layout (native) or torch's layout for both")
    p.add_argument("--host-cost", action="store_true", help="also the host-cost mode")
    p.add_argument("--host-cost-only", action="store_true", help="only the host-cost mode")
    p.add_argument("--host-n", type=int, default=4096)
    p.add_argument("--host-k", type=int, default=4096)
    p.add_argument("--host-calls", type=int, default=200, help="calls per block")
    p.add_argument("--host-blocks", type=int, default=50, help="blocks per function (interleaved)")
    p.add_argument("--host-recipes", type=lambda s: [x for x in s.split(",") if x],
                   default=["tensorwise-fast", "rowwise", "block"])
    p.add_argument("--shapes-only", action="store_true", help="print the block GEMMs and exit (no GPU)")
    args = p.parse_args(argv)
    for m in args.models:
        if m not in MODELS:
            p.error(f"unknown model {m!r} (known: {', '.join(MODELS)})")
    for r in (args.recipes or []) + args.host_recipes:
        if r not in RECIPES:
            p.error(f"unknown recipe {r!r} (known: {', '.join(RECIPES)})")
    for mode in args.modes:
        if mode not in ("graph", "eager"):
            p.error(f"unknown mode {mode!r}")
    if any(m < 1 for m in args.m_list):
        p.error("M must be >= 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.shapes_only:
        cli = find_cli(args.cli)
        doc = {}
        for model in args.models:
            gemms, source = block_gemms(model, cli, Path(args.configs_dir))
            doc[model] = {"source": source, "recipes": MODELS[model]["recipes"], "gemms": gemms}
            print(f"{model} ({source}):")
            for name, n, k in gemms:
                print(f"  {name:48s} N {n:6d} K {k:6d}")
        if args.out:
            Path(args.out).write_text(json.dumps(doc, indent=1))
        return 0

    import torch

    import dgtune

    BF16[0] = torch.bfloat16
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    meta = {"commit": git_commit(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "sm_clock_mhz_start": sm_clock_mhz(torch),
            "dgtune_version": getattr(dgtune, "__version__", None), "argv": sys.argv[1:],
            "scale_layout": args.scale_layout, "m_list": args.m_list, "repeats": args.repeats,
            "replays": args.replays, "shapes": {}, "loaded": {}, "warmup": {},
            "deepseek_block": list(DEEPSEEK_KEEP), "confirm_below": X_CONFIRM,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        from dgtune import _native

        meta["native_version"] = _native.require().version()
    except Exception as e:  # noqa: BLE001
        meta["native_version"] = repr(e)
    doc = {"meta": meta, "rows": [], "host_cost": []}

    def save():
        if args.out:
            Path(args.out).write_text(json.dumps(doc, indent=1))

    try:
        if args.host_cost or args.host_cost_only:
            load_model_db(dgtune, per_model_arg(args.db, "host"), per_model_arg(args.bundle, "host"))
            doc["host_cost"] = host_cost(args, torch, dgtune)
            save()
        if not args.host_cost_only:
            run_blocks(args, torch, dgtune, meta, doc["rows"], save)
    finally:
        meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        meta["stats_end"] = dict(dgtune.stats()) if hasattr(dgtune, "stats") else None
        save()
        md = markdown(doc)
        print(md)
        if args.md:
            Path(args.md).write_text(md)
    bad = [r for r in doc["rows"] if not r["verified"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
