"""Imports a third-party package a CLI test needs (jsonschema, matplotlib) from python3's own site-packages or from
where scripts/common.sh installs it with pip ($DGT_TOOLS_DIR/python, default ~/.cache/dgtune-tools/python). A missing
package fails the test that needs it, never skips it: CI must show that it did not run."""
import importlib
import os
import sys

TOOLS = os.path.join(os.environ.get("DGT_TOOLS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dgtune-tools"), "python")


def require(name):
    """The module `name`, or exit 1 saying how to install it."""
    if os.path.isdir(TOOLS) and TOOLS not in sys.path:
        sys.path.append(TOOLS)
    try:
        return importlib.import_module(name)
    except ImportError as e:
        print(f"FAIL: python package '{name}' is missing ({e}); scripts/test.sh installs it with pip into {TOOLS} "
              f"(scripts/common.sh ensure_test_python_packages), or run: python3 -m pip install {name}")
        sys.exit(1)
