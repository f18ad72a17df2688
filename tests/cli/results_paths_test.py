#!/usr/bin/env python3
"""Every results/... path cited by the product's sources and docs exists in the tree (ctest cli_results_paths).

Scans README.md, docs/, src/, tests/, kernels/, scripts/, examples/ and every CMake file (CMakeLists.txt, *.cmake)
for paths that begin with `results/`. Each must name a file of the tree, or a folder holding one. The tree is what
git tracks plus untracked files git does not ignore (without git: the files on disk). Not checked:
- a file as it was at a commit, written `<commit>:<path>` (what `git show` takes): only the commit is checked, it
  must look like a hex id (7 to 40 hex digits) or be a `<placeholder>`;
- a path with a placeholder: `<name>`, `*`, `?`, `$VAR`, `${VAR}`, `{a,b}` or `...`;
- ALLOWED: paths the product itself creates at run time;
- scripts/lab/: unsupported lab scripts kept so that the reports' commands can be re-run (scripts/lab/README.md);
  they cite the paths of their own time, which the reports cite as `<commit>:<path>`.
Usage: results_paths_test.py [REPO_ROOT] (default: the checkout this file is in). Exit 0 when every path resolves,
1 otherwise, with one line `file:line: path: why` per offender.
"""
import os
import re
import subprocess
import sys

# Paths the product writes at run time, so they are not in the tree; each with the reason.
ALLOWED = {
    # The CLI's default tuning DB (src/core/paths.cpp, used when neither --db nor $DGTUNE_DB is given): the first
    # sweep creates it, and .gitignore keeps it out of the tree.
    "results/tuning.db": "the CLI's default tuning DB, created at run time",
}

SELF = "tests/cli/results_paths_test.py"
SCANNED_DIRS = ("docs", "src", "tests", "kernels", "scripts", "examples")
SCANNED_FILES = ("README.md",)

# A results/ path: ordinary path characters, or one placeholder token ({a,b}, ${VAR}, $VAR, <name>).
# Not a word's tail: "test-results/" is not matched, "${DB:-results/...}" is.
PATH = re.compile(r"(?<![\w.])(?<![\w.]-)results/(?:\{[^{}\s]*\}|\$\{\w+\}|\$\w+|<[\w .:-]+>|[\w.\-/*?~+=%@])*")
# What may stand right before `:results/`: a commit id or a placeholder for one.
COMMIT_BEFORE = re.compile(r"(<[\w .-]+>|[\w-]+):$")
HEX_ID = re.compile(r"[0-9a-fA-F]{7,40}")


def tree_files(root):
    """The files of the tree, relative to root with '/' separators."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p and
                os.path.lexists(os.path.join(root, p))}
    except (OSError, subprocess.CalledProcessError):
        files = set()
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
            for n in names:
                files.add(os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/"))
        return files


def scanned(files):
    for f in sorted(files):
        if f.startswith("scripts/lab/"):
            continue  # unsupported lab scripts (see the docstring)
        top = f.split("/", 1)[0]
        name = f.rsplit("/", 1)[-1]
        if f in SCANNED_FILES or (top in SCANNED_DIRS and "/" in f) or name == "CMakeLists.txt" or \
                name.endswith(".cmake"):
            yield f


def has_placeholder(path):
    return any(c in path for c in "<*?${") or "..." in path


def check_line(path_text, line, start, files, dirs):
    """None if the cited path is fine, else why not."""
    before = COMMIT_BEFORE.search(line[:start])
    if before:
        commit = before.group(1)
        if commit.startswith("<") or HEX_ID.fullmatch(commit):
            return None
        return f"'{commit}:' does not look like a commit id (7 to 40 hex digits)"
    if has_placeholder(path_text) or path_text in ALLOWED:
        return None
    p = path_text.rstrip("/")
    if p in files or p in dirs:
        return None
    return "not in the tree"


def citations(text):
    """(line number, cited path, the line, where the path starts in it) for every results/ path in text."""
    for n, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            yield n, m.group(0).rstrip("."), line, m.start()


def self_test():
    """The scanner on planted lines: what must be caught is caught, what must pass passes."""
    files = {"results/README.md", "results/h200/kernel-v2.md"}
    dirs = {"results", "results/h200"}
    cases = [  # (line, expected failures)
        ("see results/h200/kernel-v2.md, results/h200/ and results/.", 0),
        ("see `results/h200/gone.md`.", 1),
        ("db=${DGTUNE_DB:-results/h200/raw/gone.json}", 1),
        ("57f7a31:results/h200/raw/gone.json and <commit>:results/h200/raw/gone.json", 0),
        ("main:results/h200/raw/gone.json", 1),
        ("results/h200/perf-small-m-<date>.json results/h200/*.md results/$X/a results/{a,b}.md results/h200/...", 0),
        ("results/tuning.db (default) and test-results/gone.md", 0),
    ]
    bad = []
    for line, want in cases:
        got = [c for _, c, ln, at in citations(line) if check_line(c, ln, at, files, dirs)]
        if len(got) != want:
            bad.append(f"self-test: {line!r}: {len(got)} failures {got}, expected {want}")
    return bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    files = tree_files(root)
    dirs = set()
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    failures = self_test()
    checked = 0
    for rel in scanned(files):
        if rel == SELF:
            continue  # its planted paths (self_test) are wrong on purpose
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, OSError):
            continue  # binary or unreadable: not a citation
        for n, cited, line, at in citations(text):
            checked += 1
            why = check_line(cited, line, at, files, dirs)
            if why:
                failures.append(f"{rel}:{n}: {cited}: {why}")
    for f in failures:
        print(f)
    print(f"results_paths_test: {checked} results/ paths checked in {root}, {len(failures)} not resolved",
          file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
