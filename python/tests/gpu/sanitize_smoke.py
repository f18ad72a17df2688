"""One call of every recipe and output type through torch.ops.dgtune on small edge shapes, for compute-sanitizer:
  compute-sanitizer --tool memcheck python3 python/tests/gpu/sanitize_smoke.py
(the block scales in the layouts read in place, whose padding floats the kernel may read, and in layouts the op
copies). Exits 0 after checking every result against an FP64 reference within 2^-5 (a loose bound: the verdicts that
matter here are the sanitizer's)."""
import sys

import torch

import dgtune

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import gpu_helpers as H  # noqa: E402

dgtune.load(cublaslt=False)
bad = 0
for m, n, k in [(1, 256, 256), (3, 127, 1000), (130, 200, 384)]:
    for recipe in H.RECIPES:
        for layout in ("dgtune", "torch"):
            case = H.make_case(m, n, k, recipe, layout=layout)
            ref = H.reference(case)
            for out in (torch.bfloat16, torch.float32):
                d = dgtune.scaled_mm(case.a, case.b, case.sa, case.sb, out_dtype=out)
                err = float((d.double() - ref).abs().max()) / max(float(ref.abs().max()), 1e-30)
                if not err <= 2.0**-5:
                    bad += 1
                    print(f"{m}x{n}x{k} {recipe} {layout} {out}: max rel err {err:.3g}")
            d, amax = dgtune.scaled_mm_amax(case.a, case.b, case.sa, case.sb, scale_result=torch.tensor(0.25, device="cuda"))
torch.cuda.synchronize()
print("sanitize_smoke:", "ok" if bad == 0 else f"{bad} results out of bound", dgtune.stats())
sys.exit(1 if bad else 0)
