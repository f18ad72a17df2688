"""What the plot scripts share: reading a dgtune JSON document, and the writer rule every dgtune output follows (the
output is never an input, by device and inode after resolving links; it is written to a temporary file in the same
directory and renamed into place only when complete). Not a plot itself: imported by plot_results.py and
plot_gate_history.py."""
import json
import os
import sys
import tempfile

# PNGs stay under this many pixels wide whatever the number of shapes or runs: the figure grows in height instead.
MAX_WIDTH_PX = 1900
DPI = 150


def fail(message, code=2):
    """Exit with `message` on stderr: 2 for bad input (the exit-code table of dgtune), 1 for a failed write."""
    print(f"{os.path.basename(sys.argv[0])}: {message}", file=sys.stderr)
    sys.exit(code)


def load_document(path):
    """The JSON object in `path`, or exit 2 naming the file, line and column of the error."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"cannot read '{path}': {e.strerror}")
    except UnicodeDecodeError as e:
        fail(f"{path}: not UTF-8 text (byte {e.start})")
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}")
    if not isinstance(doc, dict):
        fail(f"{path}: the top level is not a JSON object (expected a dgtune --format json output)")
    return doc


def same_file(a, b):
    """True when both paths exist and are one file (symbolic and hard links resolved: device and inode)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_output(path, inputs, flag):
    """Exit 2 before anything is drawn or written when `path` cannot be a fresh output: one of the inputs, a directory, or in a
    directory that does not exist or cannot be written."""
    for i in inputs:
        if same_file(path, i):
            fail(f"{flag} '{path}' is the input '{i}'; write the output to another file (nothing was written)")
    if os.path.isdir(path):
        fail(f"{flag} '{path}' is a directory, not a file to write (nothing was written)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        fail(f"{flag} '{path}': its directory '{folder}' does not exist (nothing was written)")
    if not os.access(folder, os.W_OK | os.X_OK):
        fail(f"{flag} '{path}': its directory '{folder}' is not writable (nothing was written)")


def write_atomically(path, write, binary=False):
    """write(f) into a temporary file in path's directory, renamed onto `path` when complete (so `path` is complete or
    not there); exit 1 naming the path on failure."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            write(f)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail(f"cannot write '{path}': {e.strerror}", code=1)


def save_figure(fig, path):
    """fig saved as PNG through a temporary file renamed onto `path` (complete or not there); exit 1 on failure."""
    write_atomically(path, lambda f: fig.savefig(f, format="png", dpi=DPI), binary=True)


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def figure_width_in(wanted):
    """`wanted` inches, capped so the PNG stays under MAX_WIDTH_PX."""
    return min(wanted, MAX_WIDTH_PX / DPI)
