"""dgtune for PyTorch: tuned FP8 GEMMs for Hopper as ``torch.ops.dgtune.scaled_mm``, a drop-in for ``torch._scaled_mm``.

    import dgtune
    dgtune.tune(hf_config="config.json", tp=8)              # or: python -m dgtune tune-model --hf-config ... --tp 8
    dgtune.load(db=dgtune.default_db_path())                # the DB the op's loader reads
    y = dgtune.scaled_mm(a, w.t(), scale_a, scale_b)        # a [M, K] e4m3, w [N, K] e4m3, float32 scales

Public API:
    scaled_mm, scaled_mm_amax            the op (torch.ops.dgtune.scaled_mm / scaled_mm_out / scaled_mm_amax)
    m_grouped_scaled_mm_contiguous, m_grouped_scaled_mm_masked, get_col_major_tma_aligned_tensor
                                         grouped (MoE) GEMMs with DeepGEMM's conventions (dgtune.grouped)
    grouped_choice, GroupedChoice        the config a grouped op ran for a problem
    warmup_grouped                       make the grouped op's objects before capturing graphs
    infer_recipe, Recipe                 which recipe a call uses and which scales the op copies
    nn.Fp8Linear, quantize.*             an FP8 linear layer and the activation/weight quantizers
    patch_scaled_mm, unpatch_scaled_mm   route torch._scaled_mm to dgtune (patch_stats: routed / fallback)
    tune, load, choose, warmup, stats    the tuner CLI and the op's loader (DB, bundle, warm-up, counters)
    native_available                     whether libdgtune_torch.so loaded (without it: schemas and fake kernels only)
See docs/python.md.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import _ops  # defines the schemas first: the native library only registers kernels for them
from . import _grouped_ops  # noqa: F401  the grouped ops' schemas, likewise
from . import _native

_native.load()

from . import nn, quantize  # noqa: E402
from ._recipe import Recipe, RuleError, infer_recipe  # noqa: E402
from .patch import is_patched, patch_scaled_mm, patch_stats, reset_patch_stats, unpatch_scaled_mm  # noqa: E402
from ._scaled_mm import scaled_mm, scaled_mm_amax  # noqa: E402
from .grouped import (  # noqa: E402
    GroupedChoice,
    get_col_major_tma_aligned_tensor,
    grouped_choice,
    warmup_grouped,
    m_grouped_scaled_mm_contiguous,
    m_grouped_scaled_mm_masked,
)
from .tuner import Choice, TuneResult, choose, cli_path, default_db_path, load, problem, stats, tune, warmup  # noqa: E402

native_available = _native.available
native_load_error = _native.load_error


def native_version() -> str:
    """``dgtune_torch_version()`` of the loaded native library; RuntimeError when it is missing."""
    return _native.require().version()


__all__ = [
    "__version__",
    "scaled_mm", "scaled_mm_amax", "infer_recipe", "Recipe", "RuleError",
    "m_grouped_scaled_mm_contiguous", "m_grouped_scaled_mm_masked", "get_col_major_tma_aligned_tensor",
    "grouped_choice", "GroupedChoice", "warmup_grouped",
    "nn", "quantize",
    "patch_scaled_mm", "unpatch_scaled_mm", "is_patched", "patch_stats", "reset_patch_stats",
    "tune", "TuneResult", "load", "choose", "Choice", "warmup", "stats", "problem", "cli_path", "default_db_path",
    "native_available", "native_load_error", "native_version",
]
