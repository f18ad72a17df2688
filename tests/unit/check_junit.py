#!/usr/bin/env python3
"""Parses a `dgtune gate --junit` file with junitparser (a JUnit library, as CI systems read it) and checks
its counts: check_junit.py FILE TESTS FAILURES ERRORS SKIPPED. junitparser is installed into a private
folder when missing; exit 77 when it cannot be installed (no network), 1 on a mismatch."""
import os
import subprocess
import sys
import tempfile

try:
    import junitparser
except ImportError:
    target = os.path.join(tempfile.gettempdir(), "dgtune-pylib")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", target, "junitparser"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sys.path.insert(0, target)
    try:
        import junitparser
    except ImportError:
        print("junitparser is not installed and pip could not install it", file=sys.stderr)
        sys.exit(77)

path, tests, failures, errors, skipped = sys.argv[1], *map(int, sys.argv[2:6])
xml = junitparser.JUnitXml.fromfile(path)
suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
cases = [c for s in suites for c in s]
kinds = {"failure": 0, "error": 0, "skipped": 0}
for c in cases:
    for r in c.result:
        kinds[type(r).__name__.lower()] = kinds.get(type(r).__name__.lower(), 0) + 1
got = (len(cases), kinds["failure"], kinds["error"], kinds["skipped"])
want = (tests, failures, errors, skipped)
if got != want:
    print(f"{path}: (tests, failures, errors, skipped) = {got}, want {want}", file=sys.stderr)
    sys.exit(1)
names = [c.name for c in cases]
print(f"{path}: {len(cases)} test cases parsed by junitparser {getattr(junitparser, 'version', '')}: {names}")
