"""What the two Python tests of the cost-model mirror share (cost_model_mirror_test.py, fit_cost_model_test.py):
the skip without numpy (exit 77, ctest SKIP), the import path of tools/cost_model/cost_model.py, the header the mirror
reads, and the failure list that decides the exit code.

  from cost_model_test_support import np, cost_model, ROOT, TOOL_DIR, HEADER, check, finish
"""
import os
import sys

# scripts/test.sh installs numpy with pip into the tools directory (scripts/common.sh ensure_numpy) when python3 lacks
# it; the scripts these tests run as subprocesses import it too, hence PYTHONPATH.
_tools = os.path.join(os.environ.get("DGT_TOOLS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dgtune-tools"), "python")
if os.path.isdir(_tools):
    sys.path.append(_tools)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), _tools) if p)
try:
    import numpy as np  # noqa: F401 (re-exported)
except ImportError:
    print("numpy is not installed (neither for python3 nor in " + _tools + "): skipped")
    sys.exit(77)

TOOL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tools/cost_model
ROOT = os.path.dirname(os.path.dirname(TOOL_DIR))
sys.path.insert(0, TOOL_DIR)
import cost_model  # noqa: E402,F401 (re-exported)

HEADER = os.path.join(ROOT, "src", "space", "cost_model.hpp")
failures = []


def check(cond, what):
    """Records a failed assertion `what` (printed at once); the test goes on and finish() exits 1."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def finish():
    """Exits 1 naming the number of failed checks, else prints ok."""
    if failures:
        print(f"{len(failures)} failures", file=sys.stderr)
        sys.exit(1)
    print("ok")
