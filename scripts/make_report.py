#!/usr/bin/env python3
"""Renders a committed run report (results/h200/*.md) from a `dgtune sweep --format json` table.

  python3 scripts/make_report.py --sweep S.json --info I.json --commit C --command "..." \
      --title T --out results/h200/NAME.md [--notes FILE] [--log LOG]

Render only: every number comes from the JSON that dgtune printed on the GPU machine.
"""
import argparse
import json


def fmt(v, nd=2):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def sweep_table(rows):
    """Markdown table of a `dgtune sweep --format json` result."""
    out = ["| shape | name | accum | winner config | us | TFLOPS | GB/s | cuBLASLt default us | x default | cuBLASLt tuned us | x tuned | candidates | measured | trials by status |",
           "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for r in rows:
        out.append(
            f"| {r['shape']} | {r['name'] or ''} | {r['accum']} | `{r['winner']}` | {fmt(r['median_us'])} | {fmt(r['tflops'], 1)} | "
            f"{fmt(r['gbps'], 0)} | {fmt(r['cublas_default_us'])} | {fmt(r['x_cublas_default'], 3)} | {fmt(r['cublas_tuned_us'])} | "
            f"{fmt(r['x_cublas_tuned'], 3)} | {r['candidates']} | {r['measured_now']} | {r['status_counts']} |")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep", required=True)
    ap.add_argument("--info", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--title", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--notes", help="markdown appended after the table")
    ap.add_argument("--clocks", help="nvidia-smi clocks csv captured after the run")
    a = ap.parse_args()
    sweep = json.load(open(a.sweep))
    info = {r["key"]: r["value"] for r in json.load(open(a.info))["rows"]}
    rows = sweep["rows"]
    out = [f"# {a.title}", ""]
    out += [
        f"- command (on the GPU machine, repository root): `{a.command}`",
        f"- commit: `{a.commit}` (build carried from the CPU machine; `ldd build/dgtune` needs only libcuda, libnvrtc, libcublasLt)",
        f"- device: {info.get('device')} , {info.get('sm_count')} SMs, max SM clock {info.get('max_sm_clock_mhz')} MHz, "
        f"L2 {int(info.get('l2_bytes', 0)) // (1 << 20)} MiB; driver {info.get('driver_version')}, runtime {info.get('runtime_version')}, "
        f"NVRTC {info.get('nvrtc_version')}, cuBLASLt {info.get('cublaslt_version')}",
        f"- kernel hash `{info.get('kernel_hash')}`, device fingerprint `{info.get('fingerprint')}`",
        "- protocol `cold-l2-v1`: per sample a write+read flush of 2 x L2 (clean lines), event, one launch, event; "
        ">= 10 samples until the median's relative standard error < 1% (max 300 samples / 2 s); median reported. "
        "cuBLASLt goes through the same timer on the same buffers; `default` = heuristic top-1, `tuned` = fastest of "
        "up to 8 heuristic algorithms. Both sides use the shape's accumulation mode (promote = FP32 promotion, "
        "cuBLASLt default; fast = CUBLASLT_MATMUL_DESC_FAST_ACCUM).",
        "- every timed candidate was verified first against the CUDA-core reference on seeded random inputs "
        "(limits: promote max_rel_err 2^-7 / diff 2e-5, fast 2^-5 / 5e-4).",
        "- x default / x tuned = cuBLASLt us / dgtune us (above 1 = dgtune faster), from the same run.",
        "",
    ]
    out += sweep_table(rows)
    out.append("")
    if a.clocks:
        out += ["Clocks after the run (nvidia-smi):", "", "```", open(a.clocks).read().strip(), "```", ""]
    if a.notes:
        out.append(open(a.notes).read())
    open(a.out, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
