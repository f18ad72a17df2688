"""GPU tests of the dgtune PyTorch package (H200). Every module starts with gpu_helpers.require_gpu(): without a CUDA
device or without dgtune's native library the module is skipped with the reason, and with DGTUNE_REQUIRE_GPU=1 the
same condition is a failure (a collection error naming it) instead of a silent skip.

Backends: the `backend` fixture runs a module's tests twice, with the loader's default dispatch ("dispatch": the
options of dgtune.load() / $DGTUNE_DB, cuBLASLt for problems without a tuned entry) and with dgtune's own kernel for
every problem ("kernel": dgtune.load(cublaslt=False)), so both code paths are checked against the reference.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _reset_default():
    import dgtune

    dgtune.load()


@pytest.fixture(scope="module", params=["dispatch", "kernel"])
def backend(request):
    import dgtune

    import gpu_helpers as H

    if request.param == "kernel":
        H.configure(dgtune, cublaslt=False)
    else:
        H.configure(dgtune)
    yield request.param
    _reset_default()


@pytest.fixture
def dg():
    import dgtune

    return dgtune
