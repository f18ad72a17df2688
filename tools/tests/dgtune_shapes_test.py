#!/usr/bin/env python3
"""tools/dgtune_shapes.py, the shapes-file reader of the Python tools (ctest tools_dgtune_shapes): lines with comments,
blank lines, tabs, CRLF and key=value fields parse to the right problems; a bad line raises ShapesFileError naming
FILE:LINE and what is wrong; its KEYS equal the C++ parser's kKeys (src/problem/shapes_file.cpp); every shipped
configs/shapes/*.txt parses. No GPU, no dgtune binary.

  dgtune_shapes_test.py
"""
import glob
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
import dgtune_shapes  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def error_of(text, file="s.txt"):
    """The ShapesFileError message parsing `text` raises, or None."""
    try:
        dgtune_shapes.parse(text, file)
    except dgtune_shapes.ShapesFileError as e:
        return str(e)
    return None


# Good lines: comments (whole and trailing), blank lines, tabs, CRLF, a byte order mark, key=value fields.
text = ("\ufeff# a comment line\n"
        "\n"
        "4096 4096 4096   # trailing comment\r\n"
        "   \t\n"
        "1\t2112\t7168 accum=fast name=decode-m1\n"
        "64 576 7168 lda=7232 d=f32 name=x#y\n")
shapes = dgtune_shapes.parse(text, "good.txt")
check(len(shapes) == 3, f"3 problems, got {shapes}")
if len(shapes) == 3:
    a, b, c = shapes
    check((a.m, a.n, a.k, a.fields, a.line, a.where) == (4096, 4096, 4096, {}, 3, "good.txt:3"), f"line 3: {a}")
    check((b.m, b.n, b.k, b.line) == (1, 2112, 7168, 5), f"line 5: {b}")
    check(b.fields == {"accum": "fast", "name": "decode-m1"} and b.name == "decode-m1", f"line 5 fields: {b.fields}")
    check(b.problem_fields() == {"accum": "fast"} and b.cli_args() == ["--accum", "fast"], f"cli_args {b.cli_args()}")
    check(a.name == "" and a.cli_args() == [], "no fields: no name, no options")
    # '#' starts a comment anywhere, also inside a value.
    check(c.fields == {"lda": "7232", "d": "f32", "name": "x"}, f"line 6 fields: {c.fields}")
    check(c.cli_args() == ["--lda", "7232", "--d", "f32"], f"line 6 cli_args: {c.cli_args()}")
check(dgtune_shapes.parse("", "empty.txt") == [], "an empty file has no problems")

# Bad lines: the error names FILE:LINE (the line of the bad one, after good lines) and the problem.
for bad, want in [
    ("64 64\n", "s.txt:1: field 'K': missing in '64 64' (expected 3 positive integers M N K, found 2)"),
    ("128 128 128\n64 64 lda=16\n", "s.txt:2: field 'K': missing"),
    ("64 2112 x7168\n", "s.txt:1: field 'K': 'x7168' is not a positive integer"),
    ("-64 64 64\n", "s.txt:1: field 'M': '-64' is not a positive integer"),
    ("0 64 64\n", "s.txt:1: field 'M': '0' is not a positive integer"),
    ("64 64.5 64\n", "s.txt:1: field 'N': '64.5' is not a positive integer"),
    ("99999999999999999999 64 64\n", "s.txt:1: field 'M': '99999999999999999999' is too large"),
    ("64 64 64 64\n", "s.txt:1: unexpected 4th number '64'"),
    ("# c\n\n64 64 64 foo=1\n", "s.txt:3: unknown field 'foo' in 'foo=1'"),
    ("64 64 64 lda=64 lda=64\n", "s.txt:1: field 'lda': given twice"),
    ("64 64 64 lda\n", "s.txt:1: field 'lda': 'lda' has no value"),
    ("64 64 64 lda=\n", "s.txt:1: field 'lda': empty value"),
    ("64 64 64 fast\n", "s.txt:1: 'fast' is not a key=value field"),
    ("64 64 64 name=a\x1bb\n", "s.txt:1: column 16: character '\\x1b' is not text"),
]:
    got = error_of(bad)
    check(got is not None and got.startswith(want), f"{bad!r}: expected an error starting {want!r}, got {got!r}")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "latin1.txt")
    open(path, "wb").write(b"64 64 64 name=caf\xe9\n")
    try:
        dgtune_shapes.load(path)
        check(False, "a file that is not UTF-8 was read")
    except dgtune_shapes.ShapesFileError as e:
        check(str(e).startswith(path + ": ") and "not UTF-8" in str(e), f"not UTF-8: {e}")
    try:
        dgtune_shapes.load(os.path.join(tmp, "missing.txt"))
        check(False, "a missing file was read")
    except dgtune_shapes.ShapesFileError as e:
        check("missing.txt: cannot read" in str(e), f"missing file: {e}")
    path = os.path.join(tmp, "ok.txt")
    open(path, "w").write("# x\n8 16 32 accum=fast\n")
    s = dgtune_shapes.load(path)
    check(len(s) == 1 and s[0].where == path + ":2" and (s[0].m, s[0].n, s[0].k) == (8, 16, 32), f"load: {s}")

# The keys are the C++ parser's (same names, same order).
cpp = open(os.path.join(ROOT, "src", "problem", "shapes_file.cpp")).read()
m = re.search(r"kKeys\[\]\s*=\s*\{([^}]*)\}", cpp)
check(m is not None, "kKeys not found in src/problem/shapes_file.cpp")
if m:
    cpp_keys = tuple(re.findall(r'"([^"]*)"', m.group(1)))
    check(cpp_keys == dgtune_shapes.KEYS, f"KEYS {dgtune_shapes.KEYS} differ from the C++ kKeys {cpp_keys}")

# Every shipped shapes file parses.
files = sorted(glob.glob(os.path.join(ROOT, "configs", "shapes", "*.txt")))
check(len(files) > 0, "no configs/shapes/*.txt found")
for path in files:
    try:
        check(len(dgtune_shapes.load(path)) > 0, f"{path}: no problems")
    except dgtune_shapes.ShapesFileError as e:
        check(False, f"shipped file refused: {e}")

if failures:
    print(f"{len(failures)} failures", file=sys.stderr)
    sys.exit(1)
print(f"ok ({len(files)} shipped shapes files parsed)")
