#!/usr/bin/env python3
"""A Python mirror of the analytic pre-rank in src/space/cost_model.{hpp,cpp} (estimate_us, CostConstants).

It exists so that tools/cost_model/fit_cost_model.py can evaluate thousands of constant sets per second (vectorised
over every candidate of every shape with numpy) without recompiling dgtune. It is a mirror, not a second model:
tools/cost_model/tests/cost_model_mirror_test.py checks on a sample of shapes that its estimates equal the ones
`dgtune space` prints (the C++ code) and that it ranks the candidates in the same order. Change both together.

The candidate list per shape always comes from dgtune (`dgtune space --show kept --format json`, in enumeration
order): enumeration, legality and pruning are not mirrored, only the estimate of a kept config.
"""
import json
import re
import subprocess

import numpy as np

# CostConstants fields in declaration order; the integer ones are rounded when set.
FIELDS = ["sm_flops", "n_half", "one_wg_m64", "promote", "promote_2g", "cluster", "bk256", "swizzle64", "swizzle32",
          "k_block_us", "unit_us", "tma_store", "l2_tbps", "dram_tbps", "reduce_tbps", "resident_clusters_2",
          "resident_clusters_3", "resident_clusters_4", "resident_clusters_6", "resident_clusters_8", "launch_us",
          "load_latency_us", "block_promote", "block_promote_2g", "block_load_latency", "cluster_1g"]
# Shapes-file / DB scale modes that take the block-scale factors (the C++ is_block_scaled).
BLOCK_SCALES = ("block", "block1d1d")
INT_FIELDS = {"resident_clusters_2", "resident_clusters_3", "resident_clusters_4", "resident_clusters_6",
              "resident_clusters_8"}

_KEY = re.compile(r"^(\d+)x(\d+)x(\d+)_s(\d+)_wg(\d+)_sw(\d+)_c(\d+)x(\d+)_r([mn])(\d+)_(direct|tma)_sk(\d+)(c?)_sm(\d+)"
                  r"_(1g|2g|2o|pp)_p(\d+)(_swapab)?$")
_DTYPE_BYTES = {"bf16": 2, "f32": 4, "e4m3": 1}


def header_constants(path):
    """The default CostConstants, read from the C++ header `path` (src/space/cost_model.hpp): {field: value}.

    Raises ValueError naming the field when the header does not declare exactly the fields of FIELDS, so the
    mirror cannot silently run with constants the C++ code does not have.
    """
    text = open(path).read()
    body = re.search(r"struct CostConstants \{(.*?)\n\};", text, re.S)
    if not body:
        raise ValueError(f"{path}: no 'struct CostConstants {{ ... }};'")
    found = {}
    for m in re.finditer(r"^\s*(double|int)\s+(\w+)\s*=\s*([-+0-9.eE]+);", body.group(1), re.M):
        found[m.group(2)] = int(m.group(3)) if m.group(1) == "int" else float(m.group(3))
    for f in FIELDS:
        if f not in found:
            raise ValueError(f"{path}: CostConstants field '{f}' not found")
    for f in found:
        if f not in FIELDS:
            raise ValueError(f"{path}: CostConstants field '{f}' is not mirrored in tools/cost_model/cost_model.py")
    return {f: found[f] for f in FIELDS}


def parse_key(key):
    """A canonical config key ("128x128x128_s6_wg2_sw128_c1x1_rm8_tma_sk1_sm0_2g_p1") as a dict of its fields.

    Only the full 11-token form that dgtune writes today (plus an optional "_swapab"); raises ValueError for anything
    else (older keys without the sms/mainloop/promotion tokens are not candidates of the current space).
    """
    m = _KEY.match(key)
    if not m:
        raise ValueError(f"config key '{key}' is not a canonical 11-token key")
    g = m.groups()
    return {"block_m": int(g[0]), "block_n": int(g[1]), "block_k": int(g[2]), "num_stages": int(g[3]),
            "num_math_wg": int(g[4]), "swizzle": int(g[5]), "cluster_m": int(g[6]), "cluster_n": int(g[7]),
            "along_m": g[8] == "m", "group": int(g[9]), "tma": g[10] == "tma", "split_k": int(g[11]),
            "split_cluster": g[12] == "c", "sms": int(g[13]), "mainloop": g[14], "promote_every": int(g[15]),
            "swap_ab": g[16] is not None}


class Candidates:
    """The configs of one or more shapes as numpy columns (one row per candidate), with the problem of each row.

    `shape` is the row's shape index; rows of a shape keep the order they were added in (the enumeration's
    canonical order, which breaks ties in rank_by_estimate). `twin` numbers the rows that differ at most in
    promote_every, within a shape (rank_order's tie-break).
    """

    def __init__(self):
        self._rows = []
        self._twins = {}

    def add(self, shape, key, m, n, k, d="bf16", block=False):
        """One candidate `key` of `shape` on an M x N x K problem with output type `d`; `block`: a block scale mode
        (one of BLOCK_SCALES)."""
        c = parse_key(key)
        twin = (shape, tuple(v for f, v in c.items() if f != "promote_every"))
        # Swap AB: the kernel computes the transposed problem (kernel_problem in src/problem/kernel_config.cpp); the
        # estimate sees its M and N, and D's bytes are the same either way.
        if c.pop("swap_ab"):
            m, n = n, m
        c.update(shape=shape, m=m, n=n, k=k, d_bytes=_DTYPE_BYTES[d], block=bool(block),
                 twin=self._twins.setdefault(twin, len(self._twins)))
        self._rows.append(c)

    def columns(self):
        """{field: np.ndarray} over all rows added so far."""
        cols = {}
        for f in self._rows[0]:
            vals = [r[f] for r in self._rows]
            cols[f] = np.array(vals, dtype=bool if isinstance(vals[0], bool) else None)
        cols["mainloop_1g"] = np.array([r["mainloop"] == "1g" for r in self._rows])
        cols["mainloop_pp"] = np.array([r["mainloop"] == "pp" for r in self._rows])
        del cols["mainloop"]
        return cols

    def __len__(self):
        return len(self._rows)


def _ceil_div(a, b):
    return (a + b - 1) // b


def estimate_us(c, sm_count, k):
    """estimate_us (src/space/cost_model.cpp) for every row of `c` (Candidates.columns()) with constants `k`.

    The same operations in the same order as the C++ code, in float64 without fused multiply-adds, so the
    values agree to the last bit (the mirror test allows 1e-12 relative).
    """
    return estimate_terms(c, sm_count, k)[0]


def estimate_terms(c, sm_count, k):
    """(estimate_us, wgmma_us) for every row of `c`: the estimate and the WGMMA time that breaks its ties in
    rank_candidates (cost_model.cpp's Estimate: waves x per-unit WGMMA time, in microseconds)."""
    bm, bn, bk = c["block_m"], c["block_n"], c["block_k"]
    cm, cn = c["cluster_m"], c["cluster_n"]
    m, n, kk = c["m"], c["n"], c["k"]
    cluster = cm * cn
    m_blocks = _ceil_div(m, bm)
    n_blocks = _ceil_div(n, bn)
    k_blocks = _ceil_div(kk, bk)
    cluster_rows = _ceil_div(m_blocks, cm)
    cluster_cols = _ceil_div(n_blocks, cn)
    per = _ceil_div(k_blocks, np.maximum(1, c["split_k"]))
    splits_i = _ceil_div(k_blocks, per)  # effective_splits
    per_split_i = _ceil_div(k_blocks, splits_i)
    units = cluster_rows * cluster_cols * splits_i
    # Cluster split (sk<S>c): the S splits of a tile are one launched cluster (TileGrid::split_cluster).
    split_cluster = c["split_cluster"] & (c["split_k"] > 1)
    s_cl = np.where(split_cluster, c["split_k"], 1)
    cluster_units = units // s_cl
    ctas = np.where(c["sms"] > 0, np.minimum(sm_count, c["sms"]), sm_count)
    def resident_clusters(size):  # size: an array of cluster sizes; the SMs' share where no count is known
        out = ctas // np.maximum(1, size)
        for s in (2, 3, 4, 6, 8):
            known = int(round(k[f"resident_clusters_{s}"]))
            if known > 0:  # as the C++ code: a count of 0 means unknown
                out = np.where(size == s, np.minimum(ctas // s, known), out)
        return out

    resident = ctas
    resident = np.where((cluster == 2) | (cluster == 4), resident_clusters(cluster), resident)
    resident = np.where(split_cluster, resident_clusters(s_cl), resident)
    resident = np.maximum(1, resident)
    waves = _ceil_div(cluster_units, np.maximum(1, resident)).astype(np.float64)
    busy_sms = (np.minimum(cluster_units, resident) * cluster * s_cl).astype(np.float64)
    splits = splits_i.astype(np.float64)
    per_split = per_split_i.astype(np.float64)

    k_unit = per_split * bk
    eff = bn.astype(np.float64) / (bn + k["n_half"])
    eff = np.where((c["num_math_wg"] == 1) & (bm == 64), eff * k["one_wg_m64"], eff)
    promo = np.where(c["mainloop_1g"], k["promote"], k["promote_2g"])
    # Block scale modes: the promotion also multiplies by the k-block's A and B scales (fitted on block trials only).
    promo = np.where(c["block"], promo * np.where(c["mainloop_1g"], k["block_promote"], k["block_promote_2g"]), promo)
    # pp never promotes (one tensor-core sum per tile, rule P8).
    eff = np.where(c["mainloop_pp"], eff, eff * (1.0 - (1.0 - promo) / np.maximum(1, c["promote_every"])))
    eff = np.where(cluster > 1, eff * np.where(c["mainloop_1g"], k["cluster_1g"], k["cluster"]), eff)
    eff = np.where(bk == 256, eff * k["bk256"], eff)
    eff = np.where(c["swizzle"] == 64, eff * k["swizzle64"], eff)
    eff = np.where(c["swizzle"] == 32, eff * k["swizzle32"], eff)
    mma_s = 2.0 * bm * bn * k_unit / (k["sm_flops"] * eff)
    l2_per_sm = k["l2_tbps"] * 1e12 / np.maximum(1.0, busy_sms)
    load_s = (bm * k_unit / cn + bn * k_unit / cm) / l2_per_sm
    # pp: one warpgroup's epilogue runs under the other's mainloop (a prior in cost_model.cpp, not fitted).
    unit_fixed_us = np.where(c["mainloop_pp"], 0.25 * k["unit_us"], k["unit_us"])
    # Pipeline depth (Little's law): num_stages loads in flight, each load_latency_us long (0: no such bound).
    latency = np.where(c["block"], k["load_latency_us"] * k["block_load_latency"], k["load_latency_us"])
    ring_s = per_split * latency * 1e-6 / c["num_stages"]
    unit_s = np.maximum(np.maximum(mma_s, load_s), ring_s) + (per_split * k["k_block_us"] + unit_fixed_us) * 1e-6
    unit_s = np.where(c["tma"], unit_s * k["tma_store"], unit_s)
    unit_s = np.where((splits > 1) & ~split_cluster,
                      unit_s + (splits + 1) * bm * bn * 4.0 / (k["reduce_tbps"] * 1e12 / np.maximum(1.0, busy_sms)),
                      unit_s)
    unit_s = np.where(split_cluster, unit_s + 0.3e-6, unit_s)  # a flat prior in cost_model.cpp, not fitted
    compute_s = waves * unit_s

    along_m = c["along_m"]
    band = np.maximum(1, c["group"]) * np.where(along_m, cn, cm)
    a_reads = np.where(along_m, np.minimum(_ceil_div(n_blocks, band), n_blocks), 1).astype(np.float64)
    b_reads = np.where(along_m, 1, np.minimum(_ceil_div(m_blocks, band), m_blocks)).astype(np.float64)
    mf, nf, kf = m.astype(np.float64), n.astype(np.float64), kk.astype(np.float64)
    split_bytes = np.where((splits > 1) & ~split_cluster, 2.0 * splits * m_blocks * bm * n_blocks * bn * 4, 0.0)
    bytes_ = mf * kf * a_reads + nf * kf * b_reads + c["d_bytes"].astype(np.float64) * mf * nf + split_bytes
    dram_s = bytes_ / (k["dram_tbps"] * 1e12)
    return np.maximum(compute_s, dram_s) * 1e6 + k["launch_us"], waves * mma_s * 1e6


def rank_order(est, wgmma_us, twin):
    """Indices of `est` in rank_candidates' order (cost_model.cpp): ascending estimate; rows of one `twin` (they differ
    only in promote_every, Candidates.columns()) with exactly equal estimates (P hidden behind the L2, pipeline-depth or
    DRAM term) together at the first one's place, by ascending WGMMA time `wgmma_us` (estimate_terms): largest P first;
    every other tie in the given (canonical) order."""
    est = np.asarray(est, dtype=np.float64)
    twin = np.asarray(twin)
    idx = np.arange(len(est))
    # Each row's anchor: the index of the first row of its (twin, estimate) group.
    by = np.lexsort((idx, est, twin))
    starts = np.ones(len(est), dtype=bool)
    starts[1:] = (twin[by][1:] != twin[by][:-1]) | (est[by][1:] != est[by][:-1])
    anchor = np.empty(len(est), dtype=np.int64)
    anchor[by] = by[np.maximum.accumulate(np.where(starts, idx, 0))]
    return np.lexsort((idx, np.asarray(wgmma_us), anchor, est))


def space_rows(dgtune, m, n, k, extra=()):
    """`dgtune space --show kept --format json` for one shape: the kept candidates in enumeration order, each
    {"config", "estimate_us", ...}. `extra` holds further CLI arguments (e.g. ["--accum", "fast"])."""
    args = [dgtune, "space", "--m", str(m), "--n", str(n), "--k", str(k), "--show", "kept", "--format", "json",
            *extra]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["rows"]
