"""Reads dgtune shapes files (configs/shapes/*.txt) for the Python tools: one reader, not one per tool.

The format is the one dgtune's parser reads (src/problem/shapes_file.{hpp,cpp}): one problem per line, `M N K`
(positive integers), then optional `key=value` fields, each key at most once per line, separated by spaces or tabs.
`#` starts a comment (a whole line or the end of one), blank lines are ignored, and CRLF line ends and a UTF-8 byte
order mark are accepted. This module checks the structure of a line and its keys (KEYS is the C++ parser's list;
tools/tests/dgtune_shapes_test.py keeps the two equal), not the values: dgtune checks those when a tool passes the
fields on (`dgtune space --KEY VALUE`, see Shape.cli_args). A bad line raises ShapesFileError, whose message starts
with FILE:LINE like dgtune's own messages.

    import dgtune_shapes
    for s in dgtune_shapes.load("configs/shapes/deepseek-v3.txt"):
        print(s.where, s.m, s.n, s.k, s.name, s.fields, s.cli_args())
"""
import re

# The keys a line may carry, in the order dgtune's messages list them (kKeys in src/problem/shapes_file.cpp).
KEYS = ("lda", "ldb", "ldd", "a", "b", "d", "scale", "accum", "bias", "act", "name")
_KEY_LIST = ", ".join(KEYS)
_DIMS = ("M", "N", "K")
_DIGITS = re.compile(r"[0-9]+")


class ShapesFileError(ValueError):
    """A shapes file that cannot be read or has a bad line; str() starts with "FILE:LINE: " (or "FILE: ")."""


class Shape:
    """One problem of a shapes file: m, n, k (ints), fields ({key: value} in the line's order, name= included),
    file and line (1-based) it came from."""

    def __init__(self, m, n, k, fields, file, line):
        self.m, self.n, self.k = m, n, k
        self.fields = fields
        self.file, self.line = file, line

    @property
    def name(self):
        """The name= field, "" when absent."""
        return self.fields.get("name", "")

    @property
    def where(self):
        """"FILE:LINE", for messages."""
        return f"{self.file}:{self.line}"

    def problem_fields(self):
        """The fields that define the problem ({key: value}, name= left out)."""
        return {k: v for k, v in self.fields.items() if k != "name"}

    def cli_args(self):
        """The problem fields as dgtune options: ["--lda", "7168", "--accum", "fast", ...] (name= left out)."""
        out = []
        for key, value in self.problem_fields().items():
            out += ["--" + key, value]
        return out

    def __repr__(self):
        return f"Shape({self.m}, {self.n}, {self.k}, {self.fields!r}, {self.where!r})"


def _positive(where, field, text):
    if not _DIGITS.fullmatch(text) or int(text) <= 0:
        raise ShapesFileError(f"{where}: field '{field}': '{text}' is not a positive integer")
    value = int(text)
    if value >= 1 << 63:
        raise ShapesFileError(f"{where}: field '{field}': '{text}' is too large "
                              "(expected a positive integer below 2^63)")
    return value


def _parse_line(where, content, tokens, file, line_no):
    dims = []
    for i, dim in enumerate(_DIMS):
        # A key=value where a number belongs means the line has fewer than 3 numbers: say so, not "bad K".
        if i >= len(tokens) or "=" in tokens[i]:
            raise ShapesFileError(f"{where}: field '{dim}': missing in '{content}' (expected 3 positive integers "
                                  f"M N K, found {i})")
        dims.append(_positive(where, dim, tokens[i]))
    fields = {}
    for token in tokens[3:]:
        if "=" not in token:
            if _DIGITS.fullmatch(token):
                raise ShapesFileError(f"{where}: unexpected 4th number '{token}' (expected only M N K, then key=value "
                                      f"fields: {_KEY_LIST})")
            if token in KEYS:
                raise ShapesFileError(f"{where}: field '{token}': '{token}' has no value (expected {token}=VALUE)")
            raise ShapesFileError(f"{where}: '{token}' is not a key=value field (accepted keys: {_KEY_LIST})")
        key, value = token.split("=", 1)
        if key not in KEYS:
            raise ShapesFileError(f"{where}: unknown field '{key}' in '{token}' (accepted keys: {_KEY_LIST})")
        if key in fields:
            raise ShapesFileError(f"{where}: field '{key}': given twice ('{token}'; each key at most once per line)")
        if not value:
            raise ShapesFileError(f"{where}: field '{key}': empty value in '{token}' (expected {key}=VALUE)")
        fields[key] = value
    return Shape(dims[0], dims[1], dims[2], fields, file, line_no)


def parse(text, file="<text>"):
    """The problems of a shapes file's text, a list of Shape in file order; `file` names it in messages."""
    if text.startswith("\ufeff"):
        text = text[1:]
    out = []
    for line_no, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        where = f"{file}:{line_no}"
        for col, ch in enumerate(line, 1):
            if (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F:
                raise ShapesFileError(f"{where}: column {col}: character {ch!r} is not text (a control character); "
                                      "a shapes file is UTF-8 text with fields separated by spaces or tabs")
        content = line.split("#", 1)[0]
        tokens = [t for t in re.split(r"[ \t]+", content) if t]
        if tokens:
            out.append(_parse_line(where, content.strip(" \t"), tokens, file, line_no))
    return out


def load(path):
    """The problems of the shapes file at `path` (see parse). Raises ShapesFileError naming the path when it cannot be
    read or is not UTF-8."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except OSError as e:
        raise ShapesFileError(f"{path}: cannot read the shapes file: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ShapesFileError(f"{path}: byte {e.object[e.start:e.start + 1]!r} at offset {e.start} is not UTF-8; "
                              "a shapes file is UTF-8 text") from None
    return parse(text, path)
