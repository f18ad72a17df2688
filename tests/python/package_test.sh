#!/usr/bin/env bash
# The PyTorch package from this checkout (python/, docs/python.md): `pip install --no-build-isolation ./python` into
# the torch environment scripts/common.sh made (ensure_torch_env), then its CPU tests (python/tests/cpu: schemas, fake
# implementations, rules, patch routing, tuner command lines) and its GPU tests (python/tests/gpu: they skip without
# a GPU). Exit 77 (ctest SKIP) when there is no torch environment, except in CI (CI=true), where that fails: the CPU
# tests must run there.
#   package_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1
build=$2
py=${DGT_TORCH_PYTHON:-${DGT_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dgtune-tools}/torch-venv/bin/python}
if ! [ -x "$py" ] || ! "$py" -c 'import torch, scikit_build_core, pytest' 2>/dev/null; then
  msg="no Python environment with torch, scikit-build-core and pytest at $py (scripts/test.sh makes one when CI=true or DGTUNE_TORCH_TESTS=1; or set DGT_TORCH_PYTHON)"
  if [ "${CI:-}" = true ]; then echo "FAIL: $msg" >&2; exit 1; fi
  echo "SKIP: $msg" >&2
  exit 77
fi
echo "torch: $("$py" -c 'import torch; print(torch.__version__)')"
# The wheel's CMake build lives in BUILD_DIR/python-wheel (pyproject's build-dir), compiled through ccache when there is one.
# The same compiler path as the main build's, so ccache serves the objects both builds share (it hashes the path it
# is given: /usr/bin/c++ and /usr/bin/g++ miss each other).
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
export CMAKE_ARGS="${CMAKE_ARGS:-} $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)${cxx:+ -DCMAKE_CXX_COMPILER=$cxx}"
export SKBUILD_BUILD_DIR="$build/python-wheel"
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall "$src/python" ||
  { echo "FAIL: pip install --no-build-isolation $src/python" >&2; exit 1; }
# Run from outside the checkout so `import dgtune` is the installed package (lib/libdgtune_torch.so, bin/dgtune inside).
cd "$build"
"$py" - <<'PY' || exit 1
import os, dgtune, dgtune._native as n
root = os.path.dirname(dgtune.__file__)
assert n.available(), "the installed package did not load its op library: " + str(getattr(n, "load_error", lambda: "")())
for rel in ("lib/libdgtune_torch.so", "bin/dgtune"):
    assert os.path.exists(os.path.join(root, rel)), rel + " missing from the installed package at " + root
print("installed:", root)
PY
# Two sessions: each suite imports helpers from its own conftest.py, which one session would confuse.
"$py" -m pytest -q -p no:cacheprovider "$src/python/tests/cpu" || exit 1
# The GPU suite skips every module without a GPU (pytest then exits 5, "no tests ran"): that is its pass here.
"$py" -m pytest -q -p no:cacheprovider -rs "$src/python/tests/gpu"
rc=$?
if [ $rc = 5 ] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "GPU suite (python/tests/gpu) skipped: no GPU on this machine; the CPU suite above passed"
  exit 0
fi
exit $rc
