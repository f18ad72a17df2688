#!/usr/bin/env python3
"""Checks of README.md and docs/*.md (ctest cli_docs_links, cli_docs_commands, cli_docs_readme_size). No GPU.

  docs_check.py links            every relative link in README.md and docs/*.md (inline `[text](target)` and
                                 reference definitions `[key]: target`, outside code) names an existing file or
                                 directory, and every `#anchor` names a heading of the target markdown file
                                 (GitHub's slugs: lower case, punctuation dropped, spaces to '-', '-1', '-2', ...
                                 for repeated headings)
  docs_check.py commands DGTUNE  every `dgtune <command>` that README.md names (in inline code or a code block)
                                 answers `--help` with exit 0 and its own usage line, and `dgtune --version`
                                 exits 0
  docs_check.py size             README.md is under 250 lines and 15 KB, with no line over 160 characters
                                 (tables included)

The repository root is this file's ../..; --root DIR overrides it (for testing the checker itself).
Prints one line per failure; exit 1 when any check fails, 0 otherwise.
"""
import os
import re
import subprocess
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_LINES, MAX_BYTES, MAX_COLUMNS = 250, 15 * 1024, 160
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, file=sys.stderr)


def markdown_files():
    files = [os.path.join(ROOT, "README.md")]
    docs = os.path.join(ROOT, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def lines_outside_fences(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        marker = re.match(r"\s{0,3}(`{3,}|~{3,})", line)
        if marker:
            if fence is None:
                fence = marker.group(1)
            elif marker.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def prose_lines(text):
    """lines_outside_fences with inline code spans blanked out (a link inside code is not a link)."""
    for number, line in lines_outside_fences(text):
        yield number, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"<[^>]+>", "", s)                          # inline HTML
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)        # links keep their text
    s = re.sub(r"[^\w\- ]", "", s)                          # punctuation (backticks, dots, slashes, ...) dropped
    return s.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors GitHub gives the headings of a markdown file."""
    if path not in cache:
        seen, found = {}, set()
        with open(path, encoding="utf-8") as f:
            for _, line in lines_outside_fences(f.read()):
                m = re.match(r"\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def link_targets(text):
    """(line number, target) of inline links and reference definitions outside code."""
    for number, line in prose_lines(text):
        for m in re.finditer(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            yield number, m.group(1)
        m = re.match(r"\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", line)
        if m:
            yield number, m.group(1)


def check_links():
    count = 0
    for path in markdown_files():
        rel = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for number, target in link_targets(text):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):   # http:, https:, mailto: ...: not checked here
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            file_part = urllib.parse.unquote(file_part)
            dest = path if not file_part else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if file_part.startswith("/"):
                fail(f"{rel}:{number}: link '{target}' is absolute; use a path relative to the file")
                continue
            if not os.path.exists(dest):
                fail(f"{rel}:{number}: link '{target}': {os.path.relpath(dest, ROOT)} does not exist")
                continue
            if anchor:
                if not dest.endswith(".md") or os.path.isdir(dest):
                    fail(f"{rel}:{number}: link '{target}': an anchor needs a markdown file")
                elif urllib.parse.unquote(anchor) not in anchors(dest):
                    fail(f"{rel}:{number}: link '{target}': no heading with anchor '#{anchor}' in "
                         f"{os.path.relpath(dest, ROOT)} (anchors: {', '.join(sorted(anchors(dest)))})")
    if count == 0:
        fail("no relative links found: the checker is broken")
    print(f"links: {count} relative links checked in {len(markdown_files())} files")


def readme_commands():
    """The subcommands README.md names: ('sweep',), ('db', 'check'), ... from `dgtune X` in code."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    code = []
    fence = False
    for line in text.splitlines():
        if re.match(r"\s*(```|~~~)", line):
            fence = not fence
            continue
        if fence:
            code.append(line)
        else:
            code += re.findall(r"`([^`]+)`", line)
    commands = set()
    for snippet in code:
        for m in re.finditer(r"(?:^|[\s/(])dgtune\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?", snippet):
            cmd, sub = m.group(1), m.group(2)
            commands.add((cmd, sub) if cmd == "db" and sub else (cmd,))
    return sorted(commands)


def check_commands(binary):
    commands = readme_commands()
    if len(commands) < 5:
        fail(f"README names only {len(commands)} dgtune commands ({commands}): the checker is broken")
    for argv in [["--help"], ["--version"]] + [list(c) + ["--help"] for c in commands]:
        r = subprocess.run([binary] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        shown = " ".join(["dgtune"] + argv)
        if r.returncode != 0:
            fail(f"`{shown}` exited {r.returncode}: {r.stdout.strip()[-300:]}")
        elif argv[-1] == "--help" and not re.search(
                r"^Usage: \S*dgtune" + "".join(r"\s+" + re.escape(a) for a in argv[:-1]) + r"(\s|$)", r.stdout, re.M):
            # CLI11 answers `dgtune unknown --help` with the top-level help and exit 0: the usage line must name
            # the command itself
            fail(f"`{shown}` did not print the usage of `{' '.join(['dgtune'] + argv[:-1])}`: "
                 f"{(re.findall(r'^Usage:.*$', r.stdout, re.M) or ['no usage line'])[0]}")
        else:
            print(f"ok: {shown}")
    print(f"commands: {len(commands)} README commands checked: {', '.join(' '.join(c) for c in commands)}")


def check_size():
    path = os.path.join(ROOT, "README.md")
    with open(path, "rb") as f:
        data = f.read()
    lines = data.decode("utf-8").splitlines()
    if len(lines) >= MAX_LINES:
        fail(f"README.md has {len(lines)} lines (limit: under {MAX_LINES}); move reference material to docs/")
    if len(data) >= MAX_BYTES:
        fail(f"README.md has {len(data)} bytes (limit: under {MAX_BYTES}); move reference material to docs/")
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_COLUMNS:
            fail(f"README.md:{number}: {len(line)} characters (limit {MAX_COLUMNS}): {line[:60]}...")
    print(f"size: README.md {len(lines)} lines, {len(data)} bytes, longest line {max(map(len, lines))} characters")


def main(argv):
    global ROOT
    if "--root" in argv:
        i = argv.index("--root")
        ROOT = os.path.abspath(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if len(argv) >= 1 and argv[0] == "links" and len(argv) == 1:
        check_links()
    elif len(argv) == 2 and argv[0] == "commands":
        check_commands(os.path.abspath(argv[1]))
    elif len(argv) == 1 and argv[0] == "size":
        check_size()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
