"""``python -m dgtune ARGS``: runs the dgtune CLI (``dgtune.tuner.cli_path()``) with ARGS; its exit code is ours.

On POSIX the CLI replaces this process (``os.execv``), so signals (Ctrl-C during a sweep) reach it directly. No CLI
found: the message of ``cli_path()`` on stderr and exit 127 (a shell's "command not found").
"""

from __future__ import annotations

import os
import sys


def main(argv=None) -> int:
    from .tuner import cli_path

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli = cli_path()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(cli, [cli] + args)  # does not return
    import subprocess

    return subprocess.call([cli] + args)


if __name__ == "__main__":
    sys.exit(main())
