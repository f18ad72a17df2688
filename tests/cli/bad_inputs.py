#!/usr/bin/env python3
"""Generated corpus of bad inputs for the dgtune CLI: command-line flags, shapes files, search-space
files, config keys, gate baselines and DB files given to read-only commands. No GPU is needed: every case must be
refused before a GPU is opened.

For every case it asserts
  - the exit code of the README's table: 2 for bad user input (arguments, unreadable or malformed input files, a
    rule a problem or config breaks, an output that would overwrite an input or the DB); 1 for a DB file that exists
    but is damaged or not a dgtune DB (the file's content is at fault, the same exit as `dgtune db check` finding a
    problem), for a missing GPU, and for output that cannot be written (a closed pipe);
  - that the output names the input (file[:line[:column]] or flag), the value and the rule (substrings per case);
  - no source location ("/src/", ".cpp"), no raw control byte (other than a line break) and no line longer than
    MAX_LINE bytes in the output (a huge value is cut, with its length);
  - no "no CUDA device": the input was checked before the GPU was touched (cases marked `gpu_refusal` instead expect
    that refusal, and that it came before anything was created; they are skipped on a machine with a GPU);
  - nothing created or modified: the checksums of every file in the temporary directory (which holds the
    inputs, the --db paths, the default DB path and the cubin cache; FIFOs, sockets and links are compared by kind
    and target, never opened) are the same before and after;
  - that the command ends within TIME_LIMIT seconds (a FIFO given as a DB once made commands wait forever).

Usage: bad_inputs.py path/to/dgtune   (prints one line per case; exit 1 when any case fails)
"""

import glob
import hashlib
import json
import os
import re
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile

BIN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="dgtune_bad_inputs_")
SRC_DB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "db")
CASES = []  # dicts: label, argv, rc, want, and the options of case()
TIME_LIMIT = 30  # seconds per command; every case here is refused long before that
MAX_LINE = 4200  # bytes per output line (core/escape.hpp cuts a message line at 4000)


def case(label, argv, rc, *want, env=None, unset=(), gpu_refusal=False, close_stdout=False, lacks=()):
    """One bad input: `argv` must exit `rc` printing every string of `want` and none of `lacks`. env / unset: extra
    or removed environment variables. gpu_refusal: the command is valid but needs a GPU: it must say "no CUDA device"
    (exit 1) having created nothing (skipped where a GPU is present). close_stdout: the reader of stdout is gone
    before the command writes (`dgtune ... | head`)."""
    CASES.append(dict(label=label, argv=[str(a) for a in argv], rc=rc, want=list(want), env=env or {},
                      unset=list(unset), gpu_refusal=gpu_refusal, close_stdout=close_stdout, lacks=list(lacks)))


def write(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def snapshot():
    """path -> sha256 of every regular file under TMP (a created -wal, -journal or cache file shows up as a new
    path); FIFOs, sockets and symbolic links by kind and target, never opened (reading a FIFO would block)."""
    out = {}
    for root, dirs, files in os.walk(TMP):
        for d in dirs:
            out[os.path.join(root, d) + "/"] = "dir"
        for f in files:
            p = os.path.join(root, f)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[p] = "link:" + os.readlink(p)
            elif not stat.S_ISREG(st.st_mode):
                out[p] = f"special:{stat.S_IFMT(st.st_mode)}"
            else:
                with open(p, "rb") as fh:
                    out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


PROBLEM = ["--m", "128", "--n", "128", "--k", "128"]
GOOD_KEY = "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1"
ok_shapes = write("ok.txt", "128 128 128\n")
DB = os.path.join(TMP, "never.db")  # a --db that must never be created
os.makedirs(os.path.join(TMP, "adir"))
ADIR = os.path.join(TMP, "adir")

# ---- 1. numeric flags: decimal only, in range; the message names the flag and the value ------------------------
count_flags = [
    ("space", PROBLEM, "--sm-count"), ("sweep", ["--shapes", ok_shapes, "--db", DB], "--top-k"),
    ("sweep", ["--shapes", ok_shapes, "--db", DB], "--max-candidates"),
    ("sweep", ["--shapes", ok_shapes, "--db", DB], "--jobs"),
    ("sweep", ["--shapes", ok_shapes, "--db", DB], "--min-samples"),
    ("sweep", ["--shapes", ok_shapes, "--db", DB], "--device"),
    ("compare", ["--shapes", ok_shapes, "--db", DB], "--rounds"),
]
for cmd, base, flag in count_flags:
    for value, rule in [("0x10", "is not a decimal integer"), ("1e2", "is not a decimal integer"),
                        ("abc", "is not a decimal integer"), ("+3", "is not a decimal integer"),
                        ("1.5", "is not a decimal integer"), ("99999999999999999999", "is out of range")]:
        case(f"{cmd} {flag} {value}", [cmd, *base, flag, value], 2, flag, value, rule)
for flag in ["--m", "--n", "--k"]:
    args = dict(zip(["--m", "--n", "--k"], ["128", "128", "128"]))
    for value, rule in [("0", "is out of range: want an integer from 1 to 2147483647"),
                        ("2147483648", "is out of range: want an integer from 1 to 2147483647"),
                        ("-1", "is out of range"), ("0b1", "is not a decimal integer"), ("", "is not a decimal")]:
        a = dict(args)
        a[flag] = value
        case(f"space {flag} '{value}'", ["space", *sum(([k, v] for k, v in a.items()), [])], 2, flag, rule)
for flag in ["--lda", "--ldb", "--ldd"]:
    case(f"space {flag} -16", ["space", *PROBLEM, flag, "-16"], 2, flag, "-16 is out of range: want an integer >= 1")
real_flags = [("sweep", ["--shapes", ok_shapes, "--db", DB], "--budget-s", "a number >= 0"),
              ("sweep", ["--shapes", ok_shapes, "--db", DB], "--target-rse", "a number from 0 to 1"),
              ("compare", ["--shapes", ok_shapes, "--db", DB], "--margin", "a number from 0 to 100"),
              ("gate", ["--baseline", ok_shapes, "--db", DB], "--threshold", "a number from 0 to 1000"),
              ("gate", ["--baseline", ok_shapes, "--db", DB], "--confidence", "a number from 0.5 to 0.9999")]
for cmd, base, flag, want in real_flags:
    for value in ["-1", "0x10", "nan", "inf", "1e999"]:
        case(f"{cmd} {flag} {value}", [cmd, *base, flag, value], 2, flag, value, want)
for value in ["-1", "0x1", "18446744073709551616"]:
    case(f"sweep --seed {value}", ["sweep", "--shapes", ok_shapes, "--db", DB, "--seed", value], 2, "--seed", value)

# ---- 2. enumerated flags and control bytes in arguments (escaped in the message) ---------------------------------
enum_flags = [("space", PROBLEM, "--format", "table,csv,json,md"), ("space", PROBLEM, "--show", "all,kept,rejected"),
              ("space", PROBLEM, "--a", "e4m3,e5m2"), ("space", PROBLEM, "--b", "e4m3,e5m2"),
              ("space", PROBLEM, "--accum", "promote,fast"),
              ("space", PROBLEM, "--scale", "tensor,per-tensor,channel,block,block1d1d"),
              ("sweep", ["--shapes", ok_shapes, "--db", DB], "--strategy", "exhaustive,model"),
              ("compare", ["--shapes", ok_shapes, "--db", DB], "--protocol",
               "cold-l2,cold-l2-v2,cold-l2-v3,hot-graph,hot-graph-v1,isolated,isolated-v1,isolated-v2"),
              ("compare", ["--shapes", ok_shapes, "--db", DB], "--side-order", "williams,fixed,reversed"),
              ("compare", ["--shapes", ok_shapes, "--db", DB], "--interval", "sign,wilcoxon"),
              ("export", ["--db", DB], "--format", "table,csv,json,md,cpp,db,bundle")]
for cmd, base, flag, allowed in enum_flags:
    case(f"{cmd} {flag} xml", [cmd, *base, flag, "xml"], 2, f"{flag}: xml not in {{{allowed}}}")
    case(f"{cmd} {flag} <ESC>", [cmd, *base, flag, "x\x1b[31m"], 2, f"{flag}: x\\x1B[31m not in")
case("--log-level loud", ["--log-level", "loud", "space", *PROBLEM], 2, "--log-level: loud not in")
case("--m with a tab", ["space", "--m", "1\t2", "--n", "16", "--k", "16"], 2, "--m: '1\\t2' is not a decimal integer")

# ---- 3. problems that break a rule ------------------------------------------------------------------------------
case("lda not 16-byte", ["space", "--m", "16", "--n", "16", "--k", "7"], 2, "operand A: lda = 7", "multiple of 16 bytes")
case("ldb < K", ["space", *PROBLEM, "--ldb", "64"], 2, "operand B: ldb = 64 is smaller than K = 128")
case("ldd < N", ["space", *PROBLEM, "--ldd", "64"], 2, "operand D: ldd = 64 is smaller than N = 128")
case("lda 2^40 bytes", ["space", *PROBLEM, "--lda", str(2**40)], 2, "operand A", "< 2^40 bytes")

# ---- 4. config keys: malformed, or breaking a rule for the problem (run and compare, before the GPU) -----------------
bad_keys = [
    ("bogus", "has 1 '_'-separated fields"),
    ("128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "tile '128x128' should be BLOCK_MxBLOCK_NxBLOCK_K"),
    ("128x128x128_s4_wgX_sw128_c1x1_rm8_direct_sk1_sm0", "token 'wgX' should hold consumer warpgroups"),
    ("128x128x128_4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "token '4' should start with 's'"),
    ("128x128x128_s4_wg2_sw128_c1_rm8_direct_sk1_sm0", "cluster 'c1' should be cMxN"),
    ("128x128x128_s4_wg2_sw128_c1x1_rq8_direct_sk1_sm0", "rasterization 'rq8' should be rm<group>"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_store_sk1_sm0", "epilogue 'store' is unknown"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_3g", "mainloop '3g' is unknown"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_x", "token 'x' should be the mainloop"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1_x", "has 12 '_'-separated fields, expected 11"),
    ("128x99999999999x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "should hold BLOCK_N as an integer"),
    ("128x+128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "should hold BLOCK_N as an integer"),
    ("128x1\x01x128_s4", "'128x1\\x01x128_s4'"),  # an argument cannot hold a NUL
]
for key, rule in bad_keys:
    case(f"run --config {key[:30]!r}", ["run", *PROBLEM, "--config", key, "--db", DB], 2, "--config", rule)
rule_keys = [  # each breaks exactly the rule named, for 4096^3 (promote accumulation)
    ("100x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R1: BLOCK_M = 100"),
    ("128x264x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R2: BLOCK_N = 264"),
    ("128x128x128_s4_wg2_sw96_c1x1_rm8_direct_sk1_sm0", "R3: swizzle = 96"),
    ("128x128x96_s4_wg2_sw32_c1x1_rm8_direct_sk1_sm0", "R4: BLOCK_K = 96"),
    ("128x128x64_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R5: BLOCK_K = 64 is not a multiple of the swizzle span 128"),
    ("128x128x128_s4_wg3_sw128_c1x1_rm8_direct_sk1_sm0", "R6: 3 consumer warpgroups"),
    ("64x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R7: BLOCK_M = 64"),
    ("128x128x128_s1_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R8: kNumStages = 1"),
    ("256x256x128_s8_wg2_sw128_c1x1_rm8_direct_sk1_sm0", "R9: shared memory"),
    ("256x256x128_s2_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g", "R10:"),
    ("128x128x128_s4_wg2_sw128_c3x1_rm8_direct_sk1_sm0", "R11: cluster 3x1"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm65_direct_sk1_sm0", "R12: rasterization group = 65"),
    ("128x8x128_s4_wg2_sw128_c2x1_rm8_direct_sk1_sm0", "R13: multicast slices"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk17_sm0", "R15: split-K = 17"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm-1", "R16: persistent grid size sms = -1"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p0", "R18: promote_every P = 0"),
    ("128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p2", "R19: promote accumulation promotes every k-block"),
]
for key, rule in rule_keys:
    case(f"run --config {rule[:4]}", ["run", "--m", "4096", "--n", "4096", "--k", "4096", "--config", key, "--db", DB],
         2, f"--config {key}: cannot run 4096x4096x4096: {rule}", "nothing was measured")
case("run --config R20 (fast)", ["run", "--m", "4096", "--n", "4096", "--k", "4096", "--accum", "fast", "--config",
                                 "128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p2", "--db", DB], 2, "R20:")
case("run --config P3 (tma, odd ldd)",
     ["run", "--m", "4096", "--n", "4096", "--k", "4096", "--ldd", "4100", "--config",
      "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0", "--db", DB], 2, "P3: TMA-store epilogue", "ldd = 4100")
# dgtune trace checks its config like run, before the GPU is opened.
case("trace --config R8", ["trace", "--m", "1", "--n", "2112", "--k", "7168", "--config",
                           "64x32x128_s40_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1"], 2,
     "--config 64x32x128_s40_wg1_sw128_c1x1_rm8_tma_sk2_sm0_2g_p1: cannot run 1x2112x7168: R8: kNumStages = 40")
case("trace --l2 hot", ["trace", "--m", "1", "--n", "2112", "--k", "7168", "--config", GOOD_KEY, "--l2", "hot"], 2,
     "--l2")
two = write("two.txt", "4096 4096 4096\n4096 4096 4096 ldd=4100\n")
case("compare --config P3 on line 2", ["compare", "--shapes", two, "--db", DB, "--config",
                                       "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0"], 2,
     "cannot run 1 of 2 shapes", "two.txt:2: 4096x4096x4096", "P3:")
for key, rule in rule_keys[:6] + bad_keys[:3]:
    case(f"compare --config {key[:20]}", ["compare", "--shapes", ok_shapes, "--db", DB, "--config", GOOD_KEY,
                                          "--config", key], 2, "--config", rule)

# ---- 5. shapes files (sweep and compare read them the same way) -----------------------------------------------
shapes_cases = [
    ("x.txt", "64 2112 x7168\n", ":1: field 'K': 'x7168' is not a positive integer"),
    ("neg.txt", "-64 64 64\n", ":1: field 'M': '-64' is not a positive integer"),
    ("float.txt", "64 64.5 64\n", ":1: field 'N': '64.5' is not a positive integer"),
    ("hex.txt", "0x40 64 64\n", ":1: field 'M': '0x40' is not a positive integer"),
    ("zero.txt", "0 64 64\n", ":1: field 'M': '0' is not a positive integer"),
    ("huge.txt", "99999999999999999999 64 64\n", ":1: field 'M': '99999999999999999999' is too large"),
    ("two.txt", "64 64\n", ":1: field 'K': missing"),
    ("fourth.txt", "64 64 64 64\n", ":1: unexpected 4th number '64'"),
    ("key.txt", "64 64 64 lda=16 foo=1\n", ":1: unknown field 'foo'"),
    ("dup.txt", "64 64 64 lda=64 lda=64\n", ":1: field 'lda': given twice"),
    ("novalue.txt", "64 64 64 lda\n", ":1: field 'lda': 'lda' has no value"),
    ("empty-value.txt", "64 64 64 lda=\n", ":1: field 'lda': empty value"),
    ("dtype.txt", "64 64 64 a=e3m4\n", ":1: field 'a': 'e3m4' is not a valid value (expected e4m3 or e5m2)"),
    ("dtype-d.txt", "64 64 64 d=e5m2\n", ":1: field 'd': 'e5m2' is not a valid value (expected bf16, f32 or e4m3)"),
    ("bias.txt", "64 64 64 bias=f32\n", ":1: field 'bias': 'f32' is not a valid value (expected none or bf16)"),
    ("act.txt", "64 64 64 act=silu\n", ":1: field 'act': 'silu' is not a valid value (expected none, relu or gelu_tanh)"),
    ("accum.txt", "64 64 64 accum=slow\n", ":1: field 'accum': 'slow' is not a valid value"),
    ("scale.txt", "64 64 128 scale=blocks\n", ":1: field 'scale': 'blocks' is not a valid value (expected tensor, "
     "channel, block or block1d1d)"),
    ("scale-fast.txt", "64 64 128 scale=block1d1d accum=fast\n", ":1: scale mode block1d1d needs accum = promote"),
    ("lda.txt", "64 64 64\n16 16 7\n", ":2: operand A: lda = 7 elements = 7 bytes is not a multiple of 16 bytes"),
    ("ldd.txt", "33 48 80 ldd=40\n", ":1: operand D: ldd = 40 is smaller than N = 48"),
    ("bigdim.txt", "4294967296 64 64\n", ":1: M = 4294967296 is too large"),
    ("nul.txt", b"64 64 6\x004\n", ":1: column 8: byte \\x00 is not text"),
    ("esc.txt", b"64 64 64 name=a\x1b[31m\n", ":1: column 16: byte \\x1B is not text"),
    ("cr.txt", b"64 64 64 name=a\rb\n", ":1: column 16: byte \\r is not text"),
    ("bell.txt", b"# \x07\n64 64 64\n", ":1: column 3: byte \\x07 is not text"),
    ("latin1.txt", b"64 64 64 name=caf\xe9\n", ":1: column 18: byte \\xE9 is not text"),
    ("binary.txt", bytes(range(256)), ":1: column 1: byte \\x00 is not text"),
    ("elf.txt", b"\x7fELF\x02\x01\x01\x00", ":1: column 1: byte \\x7F is not text"),
    ("utf16.txt", "64 64 64\n".encode("utf-16"), ":1: column 1: byte \\xFF is not text"),
    ("empty.txt", b"", ": no shapes (every line is blank or a comment)"),
    ("comments.txt", "# only\n\n   \n", ": no shapes (every line is blank or a comment)"),
    ("late.txt", "64 64 64\n" * 40 + "64 64 q\n", ":41: field 'K': 'q' is not a positive integer"),
    # Grouped (MoE) lines: totals that wrapped int64, a routing spec that ran for ever, kind= not first, and one key
    # given twice with other counts (the DB keeps one distribution per key).
    ("g-mmax.txt", "kind=masked groups=4 masked_m=0 m_max=4611686018427387904 expected_m=1 4096 7168\n",
     ":1: groups=4 x m_max=4611686018427387904 rows of A in all (must be < 2^31)"),
    ("g-count.txt", "kind=contiguous groups=2 m_per_group=9223372036854775807,1 4096 7168\n",
     ":1: m_per_group: group 0 has 9223372036854775807 rows (must be < 2^31)"),
    ("g-route.txt", "kind=masked groups=4 masked_m=route:1:4611686018427387904:4 m_max=128 4096 7168\n",
     ":1: rows distribution 'route:1:4611686018427387904:4': TOKENS x TOPK and TOKENS x groups must be <= 2^30"),
    ("g-kind.txt", "groups=4 kind=contiguous m_per_group=128 4096 7168\n",
     ":1: field 'kind=contiguous': a grouped (MoE) line must start with its kind= field"),
    ("g-twice.txt", "kind=masked groups=4 masked_m=64 m_max=128 expected_m=64 4096 7168\n"
     "kind=masked groups=4 masked_m=1,2,3,4 m_max=128 expected_m=64 4096 7168\n",
     ":2: the grouped problem of "),
    # A grouped line that breaks a rule of its dense view: the dense rule's message, without its source location.
    ("g-fast.txt", "kind=contiguous groups=8 m_per_group=skew:1:32768 4096 7168 scale=block accum=fast\n",
     ":1: N=4096 K=7168: scale mode block needs accum = promote"),
    ("g-n0.txt", "kind=contiguous groups=2 m_per_group=64 0 7168\n", ":1: N=0 K=7168: N = 0 is invalid"),
    ("g-kbig.txt", "kind=contiguous groups=2 m_per_group=64 4096 3000000000\n",
     ":1: N=4096 K=3000000000: K = 3000000000 is too large: dimensions must be < 2^31"),
    ("g-k7.txt", "kind=masked groups=2 masked_m=1,2 4096 7\n",
     ":1: K=7: the rows of A and B are K e4m3 elements = 7 bytes apart, not a multiple of 16 bytes"),
    # A hint of rows per group above M_max, and a masked line without a row (as a contiguous one is refused).
    ("g-em.txt", "kind=masked groups=4 masked_m=64 m_max=128 expected_m=999999 4096 7168\n",
     ":1: expected_m=999999 must be <= m_max=128"),
    ("g-mempty.txt", "kind=masked groups=4 masked_m=0 4096 7168\n",
     ":1: masked_m: every group is empty (a masked problem needs at least one row)"),
]
for name, text, rule in shapes_cases:
    path = write("shapes-" + name, text)
    case(f"sweep --shapes {name}", ["sweep", "--shapes", path, "--db", DB], 2, "shapes-" + name + rule)
for name, text, rule in [c for c in shapes_cases if not c[0].startswith("g-")][::3]:
    path = os.path.join(TMP, "shapes-" + name)
    case(f"compare --shapes {name}", ["compare", "--shapes", path, "--db", DB], 2, "shapes-" + name + rule)
for flag_cmd in (["sweep"], ["compare"], ["gate", "--record", os.path.join(TMP, "rec.json"), "--db", DB]):
    for path, rule in [(os.path.join(TMP, "missing.txt"), "no such file"), (ADIR, "it is a directory"),
                       ("/dev/zero", "it is not a regular file")]:
        case(f"{flag_cmd[0]} --shapes {os.path.basename(path)}", [*flag_cmd, "--shapes", path], 2,
             f"--shapes: cannot read shapes file '{path}': {rule}")
# The same grouped problems given on the command line (run and compare --grouped), before the GPU.
G_KEY = "128x128x128_s5_wg2_sw128_c1x1_rm8_direct_sk1_sm0_2g_p1"
for name, text, rule in [c for c in shapes_cases
                         if c[0] in ("g-fast.txt", "g-n0.txt", "g-kbig.txt", "g-k7.txt", "g-em.txt", "g-mempty.txt")]:
    rule = rule[len(":1: "):]
    case(f"run --grouped {name}", ["run", "--grouped", text.strip(), "--config", G_KEY, "--db", DB], 2,
         "--grouped", rule)
    case(f"compare --grouped {name}", ["compare", "--grouped", text.strip(), "--config", G_KEY], 2, "--grouped", rule)
case("sweep --shapes name with NUL", ["sweep", "--shapes", os.path.join(TMP, "a\x01b.txt")], 2,
     "cannot read shapes file", "a\\x01b.txt")

# ---- 6. search-space files (space and sweep read them the same way, before the GPU) ----------------------------
GRID = {"block_m": [128], "block_n": [128], "block_k": [128], "num_stages": [4], "num_math_wg": [2],
        "swizzle": [128], "cluster": ["1x1"], "raster": ["m"], "group": [8], "split_k": [1], "epilogue": ["direct"],
        "sms": [0]}


def grid(**axes):
    g = dict(GRID)
    for k, v in axes.items():
        if v is None:
            g.pop(k)
        else:
            g[k] = v
    return json.dumps(g)


space_cases = [
    ("range-to", grid(block_n={"from": 8, "to": 2147483647, "step": 1073741824}),
     "/block_n/to: 2147483647 is out of range [8, 256]"),
    ("range-step0", grid(block_n={"from": 8, "to": 64, "step": 0}), "/block_n/step: 0 is out of range [1, 256]"),
    ("range-empty", grid(block_n={"from": 64, "to": 8, "step": 8}), "is an empty range: from 64 > to 8"),
    ("range-nostep", grid(block_n={"from": 8, "to": 64}), "/block_n: {\"from\":8,\"to\":64} lacks \"step\""),
    ("range-key", grid(block_n={"from": 8, "to": 64, "step": 8, "by": 1}), "/block_n/by: 1 is an unknown key"),
    ("range-float", grid(block_n={"from": 8, "to": 64.5, "step": 8}), "/block_n/to: 64.5 is not an integer"),
    ("trunc", grid(block_m=[4294967424]), "/block_m/0: 4294967424 is out of range [64, 256]"),
    ("neg", grid(block_m=[-128]), "/block_m/0: -128 is out of range [64, 256]"),
    ("float", grid(block_m=[128.5]), "/block_m/0: 128.5 is not an integer"),
    ("float0", '{"block_m": [128.0]' + grid()[len('{"block_m": [128]'):], "/block_m/0: 128.0 is not an integer"),
    ("string-num", grid(block_k=["128"]), "/block_k/0: \"128\" is a string, not an integer"),
    ("bool", grid(num_math_wg=[True]), "/num_math_wg/0: true is a boolean, not an integer"),
    ("null", grid(swizzle=[None]), "/swizzle/0: null is a null, not an integer"),
    ("scalar", grid(group=8), "/group: 8 is a number, not an array"),
    ("empty-axis", grid(split_k=[]), "/split_k: [] is empty"),
    ("sms-big", grid(sms=[10**12]), "/sms/0: 1000000000000 is out of range [0, 65536]"),
    ("sms-2^64", grid(sms=[2**64]), "/sms/0: 1.8446744073709552e+19 is not an integer"),
    ("splitk", grid(split_k=[32]), "/split_k/0: 32 is out of range [1, 16]"),
    ("group", grid(group=[0]), "/group/0: 0 is out of range [1, 64]"),
    ("stages", grid(num_stages=[1]), "/num_stages/0: 1 is out of range [2, 32]"),
    ("stages-max", grid(num_stages=["max-99999999999"]), "/num_stages/0: \"max-99999999999\" is not \"max\""),
    ("stages-max0", grid(num_stages=["max-0"]), "/num_stages/0: \"max-0\" is not \"max\""),
    ("stages-maxneg", grid(num_stages=["max--1"]), "/num_stages/0: \"max--1\" is not"),
    ("stages-word", grid(num_stages=["deep"]), "/num_stages/0: \"deep\" is not"),
    ("promote", grid(promote_every=[0]), "/promote_every/0: 0 is out of range [1, 32]"),
    ("promote-str", grid(promote_every=["min"]), "/promote_every/0: \"min\" is not \"max\""),
    ("cluster", grid(cluster=["2by1"]), "/cluster/0: \"2by1\" is not one of \"MxN\" with M, N in 1..4"),
    ("cluster-big", grid(cluster=["8x1"]), "/cluster/0: \"8x1\" is not one of"),
    ("cluster-num", grid(cluster=[21]), "/cluster/0: 21 is a number, not a string"),
    ("raster", grid(raster=["q"]), "/raster/0: \"q\" is not one of \"m\", \"n\""),
    ("epilogue", grid(epilogue=["store"]), "/epilogue/0: \"store\" is not one of \"direct\", \"tma\""),
    ("mainloop", grid(mainloop=["3g"]), "/mainloop/0: \"3g\" is not one of \"1g\", \"2g\", \"2o\""),
    ("name-num", grid(name=5), "/name: 5 is a number, not a string"),
    ("name-ctl", grid(name="a\x1bb"), "/name: \"a\\u001bb\" holds a control character"),
    ("name-empty", grid(name=""), "/name: \"\" is empty"),
    ("comment-num", grid(comment=7), "/comment: 7 is a number, not a string"),
    ("unknown", grid(blockm=[64]), "/blockm: unknown key \"blockm\" (known keys: block_m, block_n"),
    ("missing-axis", grid(block_k=None), "lacks \"block_k\""),
    ("dup-key", grid()[:-1] + ', "block_m": [64]}', "/block_m: the key appears twice in one object"),
    ("top-array", "[1, 2]", "the top level: [1,2] is an array, not an object"),
    ("top-number", "5", "the top level: 5 is a number, not an object"),
    ("not-json", "block_m = 128", ":1:1: invalid JSON: syntax error"),
    ("truncated", grid()[:40], ":1:41: invalid JSON: syntax error"),
    ("empty", "", ":1:1: invalid JSON: syntax error"),
    ("nul", b'{"block_m"\x00: [1]}', "invalid JSON"),
    ("latin1", b'{"name": "caf\xe9"}', "invalid JSON", "invalid string: ill-formed UTF-8 byte"),
    ("base-alone", grid(base={}), "/base: {} is given without \"union\""),
    ("union-axis", json.dumps({"union": [{"name": "a"}], "base": GRID, "block_n": [64]}),
     "/block_n: [64] is an axis beside \"union\""),
    ("union-empty", json.dumps({"union": [], "base": GRID}), "/union: [] is empty"),
    ("union-entry", json.dumps({"union": [5], "base": GRID}), "/union/0: 5 is a number, not a grid object"),
    ("union-base-type", json.dumps({"union": [{}], "base": [1]}), "/base: [1] is an array, not an object of axes"),
    ("union-bad", json.dumps({"union": [{"name": "a"}, {"name": "b", "raster": ["q"]}], "base": GRID}),
     "/union/1/raster/0: \"q\" is not one of"),
    ("union-dup", json.dumps({"union": [{"name": "a"}], "base": GRID})[:-1] + ', "union": []}',
     "/union: the key appears twice"),
    ("cross", grid(sms={"from": 0, "to": 65536, "step": 1}, block_n={"from": 8, "to": 256, "step": 1}),
     "the space has more than 1048576 points"),
]
for name, text, *rules in space_cases:
    path = write(f"space-{name}.json", text)
    case(f"space --space {name}", ["space", *PROBLEM, "--space", path], 2, f"space-{name}.json:", *rules)
for name, text, *rules in space_cases[::4]:
    path = os.path.join(TMP, f"space-{name}.json")
    case(f"sweep --space {name}", ["sweep", "--shapes", ok_shapes, "--space", path, "--db", DB], 2,
         f"space-{name}.json:", *rules)
for path, rule in [(os.path.join(TMP, "missing.json"), "no such file"), (ADIR, "it is a directory"),
                   ("/dev/zero", "it is not a regular file")]:
    case(f"space --space {os.path.basename(path)}", ["space", *PROBLEM, "--space", path], 2,
         f"--space: cannot read search space file '{path}': {rule}")
    case(f"sweep --space {os.path.basename(path)}", ["sweep", "--shapes", ok_shapes, "--space", path, "--db", DB], 2,
         f"--space: cannot read search space file '{path}': {rule}")

# ---- 7. gate baselines ----------------------------------------------------------------------------------------
HW = {"name": "NVIDIA H200", "cc_major": 9, "cc_minor": 0, "sm_count": 132, "memory_bytes": 1, "l2_bytes": 1}
SW = {"driver_version": 1, "runtime_version": 1, "cublaslt_version": 1, "nvrtc_version": 1, "kernel_hash": "h",
      "dgtune_version": "0"}


def baseline(**over):
    b = {"schema_version": 1, "hardware": HW, "software": SW, "kernel_hash": "h", "protocol": {"name": "cold-l2-v2"},
         "created_at": "now", "shapes": []}
    b.update(over)
    return json.dumps(b)


baseline_cases = [
    ("notjson", "not json", ".json:1:2: invalid JSON: syntax error"),
    ("empty", "", ".json:1:1: invalid JSON: syntax error"),
    ("array", "[]", "the top level is array, not an object"),
    ("v7", baseline(schema_version=7), "schema_version 7 without \"schema\" (this dgtune reads version 2"),
    ("v-trunc", baseline(schema_version=4294967297), "field 'schema_version': 4294967297 is out of range"),
    ("v-float", baseline(schema_version=1.5), "field 'schema_version': 1.5 is not an integer"),
    ("v-string", baseline(schema_version="1"), "field 'schema_version': \"1\" is not an integer"),
    ("no-hw", baseline(hardware=None), "hardware: missing field 'name'"),
    ("sm-string", baseline(hardware=dict(HW, sm_count="132")), "hardware: field 'sm_count'"),
    ("no-shapes", baseline(shapes=None), "missing array 'shapes'"),
    ("shape-noproblem", baseline(shapes=[{}]), "shapes[0]: missing field 'problem'"),
    ("shape-name", baseline(shapes=[{"problem": {"m": 64, "n": 64, "k": 64}, "name": 5}]), "type must be string"),
    ("no-protocol", baseline(protocol=None), "missing field 'protocol'"),
    ("ctl", baseline(kernel_hash=5), "field 'kernel_hash'"),
]
for name, text, rule in baseline_cases:
    path = write(f"base-{name}.json", text)
    case(f"gate --baseline {name}", ["gate", "--baseline", path, "--db", DB], 2, f"base-{name}.json", rule)
for path, rule in [(os.path.join(TMP, "missing.json"), "no such file"), (ADIR, "it is a directory")]:
    case(f"gate --baseline {os.path.basename(path)}", ["gate", "--baseline", path, "--db", DB], 2,
         f"--baseline: cannot read baseline file '{path}': {rule}")

# ---- 8. DB files given to read-only commands ------------------------------------------------------------------
text_db = write("text.db", "hello, I am not a database\n")
empty_db = write("empty.db", b"")
junk_db = write("junk.db", b"SQLite format 3\x00" + bytes((i * 37 + 11) % 256 for i in range(4096)))
foreign_db = os.path.join(TMP, "foreign.db")
with sqlite3.connect(foreign_db) as c:
    c.execute("CREATE TABLE t (x)")
c.close()
read_only_cmds = [("export", lambda p: ["export", "--db", p]), ("db check", lambda p: ["db", "check", "--db", p]),
                  ("db devices", lambda p: ["db", "devices", "--db", p]),
                  ("history", lambda p: ["history", "--shape", "64x64x64", "--db", p]),
                  ("compare --between", lambda p: ["compare", "--between", p, p])]
for label, argv in read_only_cmds:
    # Missing, a directory, a device: the path is bad input (2).
    missing = os.path.join(TMP, "missing.db")
    for path, rule in [(missing, "no such file"), (ADIR, "it is a directory"), ("/dev/null", "not a regular file")]:
        case(f"{label} {os.path.basename(path)}", argv(path), 2, "cannot read tuning database", f"'{path}'", rule)
    # Exists but is not a dgtune DB: the content is at fault (1), named with the path and SQLite's or dgtune's rule.
    case(f"{label} text.db", argv(text_db), 1, text_db, "file is not a database")
    case(f"{label} junk.db", argv(junk_db), 1, junk_db, "file is not a database")
    if label == "db check":
        case(f"{label} empty.db", argv(empty_db), 1, empty_db, "no schema_version table: not a dgtune tuning database")
        case(f"{label} foreign.db", argv(foreign_db), 1, foreign_db, "not a dgtune tuning database")
    else:
        case(f"{label} empty.db", argv(empty_db), 1, empty_db, "is not a dgtune tuning database")
        case(f"{label} foreign.db", argv(foreign_db), 1, foreign_db, "is not a dgtune tuning database")
# The commands that change a DB in place never make one of an empty or foreign file: refused as the readers do.
for label, argv in [("db prune", lambda p: ["db", "prune", "--db", p]),
                    ("db migrate", lambda p: ["db", "migrate", "--db", p])]:
    case(f"{label} empty.db", argv(empty_db), 1, empty_db, "is not a dgtune tuning database (the file is empty)",
         f"{label} works on an existing one and never creates one")
    case(f"{label} foreign.db", argv(foreign_db), 1, foreign_db, "is not a dgtune tuning database")
# --dry-run opens read-only and never migrates, but an empty or foreign file is still not a DB to migrate first.
case("db prune --dry-run empty.db", ["db", "prune", "--db", empty_db, "--dry-run"], 1,
     "is not a dgtune tuning database (the file is empty)", lacks=["migrated"])
case("db prune --dry-run foreign.db", ["db", "prune", "--db", foreign_db, "--dry-run"], 1,
     "is not a dgtune tuning database (it has no schema_version table)", lacks=["migrated"])
case("db merge text inputs", ["db", "merge", text_db, junk_db, "-o", os.path.join(TMP, "m.db")], 1, text_db)
# An empty or foreign SQLite file as the first input is the file's content at fault (1), as export, prune and migrate
# answer for it (the second input is the other kind; the first is refused first).
for first, second in ((empty_db, foreign_db), (foreign_db, empty_db)):
    case(f"db merge {os.path.basename(first)} first", ["db", "merge", first, second, "-o", os.path.join(TMP, "m.db")],
         1, f"db merge: {first} is not a dgtune tuning database")
case("db merge missing input", ["db", "merge", os.path.join(TMP, "missing.db"), text_db, "-o",
                                os.path.join(TMP, "m.db")], 2, "cannot read tuning database", "missing.db")
case("compare --shapes --db dir", ["compare", "--shapes", ok_shapes, "--db", ADIR], 2, "--db", "it is a directory")
case("compare --shapes --db text", ["compare", "--shapes", ok_shapes, "--db", text_db], 1, text_db,
     "file is not a database")

# ---- 9. tuning DB fixtures for the sections below (schema.sql and the migrations above it, as dgtune makes a file) --
def make_db(path, version=None, measurements=None, winner=False):
    """A current-schema tuning DB at `path` (python3's sqlite3); version: overwrite schema_version afterwards;
    measurements: [(time_us, ...)] of one stored compare (dgtune and cuBLASLt-tuned sides), e.g. with one bad time;
    winner: one ok trial, so `export` has a winner to write (a DB without one is refused before any output)."""
    schema = open(os.path.join(SRC_DB, "schema.sql")).read()
    con = sqlite3.connect(path)
    con.executescript(schema)
    base = int(re.search(r"INSERT INTO schema_version \(version\) VALUES \((\d+)\)", schema).group(1))
    for f in sorted(glob.glob(os.path.join(SRC_DB, "migrations", "*.sql"))):
        v = int(os.path.basename(f)[:4])
        if v > base:
            con.executescript(open(f).read())
            con.execute("UPDATE schema_version SET version = ?", (v,))
    if measurements is not None or winner:
        con.execute("INSERT INTO device VALUES (1, 'hw1', 'NVIDIA H200', 90, 132, 1, 1, 1980, 'now')")
        con.execute("INSERT INTO environment VALUES (1, 'env1', 1, 1, 1, 1, 'h', '0', 'now')")
        con.execute("INSERT INTO problem (id, key, m, n, k, lda, ldb, ldd, dtype_a, dtype_b, dtype_d, scale_mode, accum,"
                    " bias, act) VALUES (1, '128x128x128_lda128_ldb128_ldd128_e4m3.e4m3.bf16_pt_promote', 128, 128, 128,"
                    " 128, 128, 128, 'e4m3', 'e4m3', 'bf16', 'per-tensor', 'promote', 'none', 'none')")
    if winner:
        con.execute("INSERT INTO config (id, key, block_m, block_n, block_k, num_stages, num_math_wg, swizzle, cluster_m,"
                    " cluster_n, raster, group_size, epilogue, split_k, sms, mainloop, promote_every) VALUES (1, ?, 128, "
                    "128, 128, 4, 2, 128, 1, 1, 'm', 8, 'direct', 1, 0, '1g', 1)", (GOOD_KEY,))
        con.execute("INSERT INTO trial (device_id, environment_id, problem_id, config_id, pci_bus_id, status, error, "
                    "registers, spill_bytes, smem_bytes, median_us, p10_us, p90_us, samples, tflops, gbps, verify_ok, "
                    "protocol, protocol_name, created_at) VALUES (1, 1, 1, 1, '', 'ok', '', 128, 0, 1000, 10.0, 9.9, "
                    "10.2, 20, 0.4, 5.0, 1, '{\"name\": \"cold-l2-v1\"}', 'cold-l2-v1', 'now')")
    if measurements is not None:
        con.execute("INSERT INTO measurement VALUES (1, 1, 1, 1, '', 'cold-l2-v2', '{\"name\": \"cold-l2-v2\"}', 4, "
                    "1980, 1485, 'now')")
        con.execute("INSERT INTO measurement_side VALUES (1, 0, 'dgtune', 'config', "
                    "'128x128x128_s4_wg2_sw128_c1x1_rm8_direct_sk1_sm0_1g_p1', '', 'db', 0, 1, 0, 0, 0, 0)")
        con.execute("INSERT INTO measurement_side VALUES (1, 1, 'cublaslt-tuned', 'provider', '', 'algo', "
                    "'cublaslt-tuned', 32, 1, 0, 0, 0, 0)")
        for rnd, t in enumerate(measurements):
            con.execute("INSERT INTO measurement_sample VALUES (1, 0, ?, 0, ?, 1980, 0)", (rnd, t))
            con.execute("INSERT INTO measurement_sample VALUES (1, 1, ?, 1, ?, 1980, 0)", (rnd, 10.0))
    if version is not None:
        con.execute("UPDATE schema_version SET version = ?", (version,))
    con.commit()
    con.close()
    return path


GOOD_DB = make_db(os.path.join(TMP, "good.db"), winner=True)
GOOD_DB2 = make_db(os.path.join(TMP, "good2.db"))
os.symlink(GOOD_DB, os.path.join(TMP, "link-to-good.db"))
os.link(GOOD_DB, os.path.join(TMP, "hard-to-good.db"))
LINK_DB, HARD_DB = os.path.join(TMP, "link-to-good.db"), os.path.join(TMP, "hard-to-good.db")
# The protocol of a real baseline (gate --record on the H200), so the only thing wrong with BASELINE_OK is the GPU.
REAL_V1 = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "fixtures",
                                      "gate-baseline-v1-h200.json")))
BASELINE_OK = write("baseline-ok.json", json.dumps({
    "schema": "dgtune-gate-baseline", "schema_version": 2, "hardware": HW, "software": SW, "kernel_hash": "h",
    "protocol": REAL_V1["protocol"], "created_at": "now",
    "shapes": [{"problem": {"m": 128, "n": 128, "k": 128}, "config": GOOD_KEY, "status": "ok", "rounds": [0, 1],
                "dgtune_us": [10.0, 10.5], "cublas_tuned_us": [11.0, 11.2]}]}))
SPACE_OK = write("space-ok.json", grid())

# ---- 10. a file a command writes is never its DB or an input (device and inode: links count) ---------------------
for fmt_ in ["table", "csv", "json", "md", "cpp"]:
    for how, target in [("the --db path", GOOD_DB), ("a symlink to it", LINK_DB), ("a hard link to it", HARD_DB)]:
        case(f"export --format {fmt_} --out {how}", ["export", "--db", GOOD_DB, "--format", fmt_, "--out", target], 2,
             "--out", "the same file as --db", "nothing was written")
    case(f"export --format {fmt_} --out $DGTUNE_DB", ["export", "--format", fmt_, "--out", GOOD_DB], 2,
         "--out", "the same file as $DGTUNE_DB", env={"DGTUNE_DB": GOOD_DB})
case("export --format db --out the DB", ["export", "--db", GOOD_DB, "--format", "db", "--out", GOOD_DB], 2,
     "the same file as --db")
case("export --format db --out a hard link", ["export", "--db", GOOD_DB, "--format", "db", "--out", HARD_DB], 2,
     "the same file as --db")
case("export --out a directory", ["export", "--db", GOOD_DB, "--out", ADIR], 2, "--out", "it is a directory")
case("export --out in a missing directory", ["export", "--db", GOOD_DB, "--out", os.path.join(TMP, "nope", "x.csv")],
     2, "--out", "does not exist")
# A kernel bundle is a directory: never the DB, never a directory holding anything but a bundle (a user's files are
# never replaced), checked before anything is compiled or a cache directory is made.
USER_DIR = os.path.join(TMP, "user-dir")
os.makedirs(USER_DIR)
write("user-dir/notes.txt", "mine")
os.makedirs(os.path.join(TMP, "foreign-bundle"))
write("foreign-bundle/manifest.json", '{"schema": "someone-elses"}')
BUNDLE_CACHE = os.path.join(TMP, "bundle-cache")  # must never be created by a refused export
for label, out, want in [
        ("the DB", GOOD_DB, "exists and is not a directory"),
        ("a directory with a user's file", USER_DIR, "exists and is not a dgtune kernel bundle (it holds notes.txt"),
        ("another tool's manifest", os.path.join(TMP, "foreign-bundle"), "its manifest.json is not a dgtune kernel"),
        ("a missing parent", os.path.join(TMP, "nope", "bundle"), "does not exist"),
        ("a symbolic link", LINK_DB, "is a symbolic link")]:
    case(f"export --format bundle --out {label}", ["export", "--db", GOOD_DB, "--format", "bundle", "--out", out,
                                                   "--cache-dir", BUNDLE_CACHE], 2, "--out", want, "nothing written")
case("export --format bundle without --out", ["export", "--db", GOOD_DB, "--format", "bundle"], 2,
     "export --format bundle needs --out DIR")
case("export --format bundle --columns", ["export", "--db", GOOD_DB, "--format", "bundle", "--out",
                                          os.path.join(TMP, "b"), "--columns", "all"], 2, "--columns applies to")
case("export --jobs without bundle", ["export", "--db", GOOD_DB, "--jobs", "2"], 2,
     "--jobs and --cache-dir apply to --format bundle only")
case("export --format bundle --jobs -1", ["export", "--db", GOOD_DB, "--format", "bundle", "--out",
                                          os.path.join(TMP, "b"), "--jobs", "-1"], 2, "--jobs")
WAL_DB = make_db(os.path.join(TMP, "with-log.db"), winner=True)
open(WAL_DB + "-wal", "wb").close()  # a log beside the DB: writing over it would corrupt the DB's next open
case("export --out the DB's -wal file", ["export", "--db", WAL_DB, "--out", WAL_DB + "-wal"], 2,
     "it is the -wal file of the tuning database")
# The side files by name as well: SQLite deletes its -wal when the DB closes, so it is usually missing, and an output
# written there would be deleted (or replayed into the DB) by the next command that opens the DB.
for side in ["-wal", "-shm", "-journal"]:
    case(f"export --out the DB's missing {side} file", ["export", "--db", GOOD_DB, "--out", GOOD_DB + side], 2,
         "--out", f"it is the {side} file of the tuning database --db")
case("export --out the DB's -wal, relative", ["export", "--db", GOOD_DB, "--out", "./adir/../good.db-wal"], 2,
     "it is the -wal file of the tuning database")
case("export --db a symlink --out its target's -wal", ["export", "--db", LINK_DB, "--out", GOOD_DB + "-wal"], 2,
     "it is the -wal file of the tuning database")
case("export --format db --out the DB's -journal", ["export", "--db", GOOD_DB, "--format", "db", "--out",
                                                    GOOD_DB + "-journal"], 2, "it is the -journal file")
case("db merge -o input B's -wal", ["db", "merge", GOOD_DB, GOOD_DB2, "-o", GOOD_DB2 + "-wal"], 2, "-o",
     "it is the -wal file of the tuning database input #2")
case("gate --junit the DB's -shm", ["gate", "--baseline", BASELINE_OK, "--db", GOOD_DB, "--junit", GOOD_DB + "-shm"],
     2, "--junit", "it is the -shm file")
case("compare --save the --db's -wal", ["compare", "--shapes", ok_shapes, "--db", GOOD_DB, "--save", GOOD_DB + "-wal"],
     2, "--save", "it is the -wal file")
for flag in ["--junit", "--markdown"]:
    for how, target in [("the DB", GOOD_DB), ("a symlink to the DB", LINK_DB), ("the baseline", BASELINE_OK),
                        ("the shapes file", ok_shapes), ("the --history DB", GOOD_DB2)]:
        case(f"gate {flag} {how}", ["gate", "--baseline", BASELINE_OK, "--shapes", ok_shapes, "--db", GOOD_DB,
                                    "--history", GOOD_DB2, flag, target], 2, flag, "the same file as")
case("gate --junit and --markdown one file",
     ["gate", "--baseline", BASELINE_OK, "--db", GOOD_DB, "--junit", os.path.join(TMP, "r.out"), "--markdown",
      os.path.join(TMP, "r.out")], 2, "--markdown", "--junit names the same file")
for how, target in [("the DB", GOOD_DB), ("a hard link to the DB", HARD_DB), ("the shapes file", ok_shapes),
                    ("$DGTUNE_DB", os.path.join(TMP, "default.db"))]:
    case(f"gate --record {how}", ["gate", "--record", target, "--shapes", ok_shapes] +
         ([] if how == "$DGTUNE_DB" else ["--db", GOOD_DB]), 2, "--record", "the same file as")
open(os.path.join(TMP, "default.db"), "wb").close()  # $DGTUNE_DB exists (empty): a record must not overwrite it
for how, target in [("the baseline", BASELINE_OK), ("the shapes file", ok_shapes), ("a directory", ADIR),
                    ("/dev/null", "/dev/null")]:
    case(f"gate --history {how}", ["gate", "--baseline", BASELINE_OK, "--shapes", ok_shapes, "--db", GOOD_DB,
                                   "--history", target], 2, "--history")
case("gate --record with --junit", ["gate", "--record", os.path.join(TMP, "r.json"), "--shapes", ok_shapes, "--junit",
                                    os.path.join(TMP, "j.xml"), "--db", GOOD_DB], 2, "go with --baseline")
for how, target in [("the --db file", GOOD_DB), ("a symlink to --db", LINK_DB), ("a hard link to --db", HARD_DB),
                    ("the shapes file", ok_shapes)]:
    case(f"compare --save {how}", ["compare", "--shapes", ok_shapes, "--db", GOOD_DB, "--save", target], 2, "--save")
for how, target in [("input A", GOOD_DB), ("input B", GOOD_DB2), ("a symlink to A", LINK_DB),
                    ("a hard link to A", HARD_DB)]:
    case(f"db merge -o {how}", ["db", "merge", GOOD_DB, GOOD_DB2, "-o", target], 2, "-o")
for flag, target in [("--shapes", ok_shapes), ("--space", SPACE_OK)]:
    case(f"sweep --db {flag} file", ["sweep", "--shapes", ok_shapes, "--space", SPACE_OK, "--db", target], 2,
         "the same file as " + flag)

# ---- 11. a DB path that is not a regular file is refused by type, never opened (a FIFO would block forever) ------
FIFO = os.path.join(TMP, "fifo.db")
os.mkfifo(FIFO)
SOCK = os.path.join(TMP, "sock.db")
_sock = socket.socket(socket.AF_UNIX)
_sock.bind(SOCK)
db_users = [("export", lambda p: ["export", "--db", p], 2),
            ("db check", lambda p: ["db", "check", "--db", p], 2),
            ("db devices", lambda p: ["db", "devices", "--db", p], 2),
            ("db prune", lambda p: ["db", "prune", "--db", p], 2),
            ("db prune --dry-run", lambda p: ["db", "prune", "--dry-run", "--db", p], 2),
            ("history", lambda p: ["history", "--shape", "128x128x128", "--db", p], 2),
            ("history --history", lambda p: ["history", "--shape", "128x128x128", "--history", p], 2),
            ("compare --between A", lambda p: ["compare", "--between", p, GOOD_DB], 2),
            ("compare --between B", lambda p: ["compare", "--between", GOOD_DB, p], 2),
            ("db merge input", lambda p: ["db", "merge", p, GOOD_DB, "-o", os.path.join(TMP, "m.db")], 2),
            ("compare --db", lambda p: ["compare", "--shapes", ok_shapes, "--db", p], 2),
            ("compare --save", lambda p: ["compare", "--shapes", ok_shapes, "--save", p], 2),
            ("sweep --db", lambda p: ["sweep", "--shapes", ok_shapes, "--db", p], 2),
            ("run --db", lambda p: ["run", *PROBLEM, "--config", GOOD_KEY, "--db", p], 2),
            ("gate --history", lambda p: ["gate", "--baseline", BASELINE_OK, "--db", GOOD_DB, "--history", p], 2)]
for label, argv, rc in db_users:
    for kind, path, words in [("a FIFO", FIFO, "FIFO"), ("a socket", SOCK, "socket"), ("/dev/null", "/dev/null", "")]:
        case(f"{label} on {kind}", argv(path), rc, words or "not a", f"'{path}'" if kind != "a socket" else "sock.db")
for label, argv in [("export", ["export"]), ("db check", ["db", "check"]), ("sweep", ["sweep", "--shapes", ok_shapes]),
                    ("history", ["history", "--shape", "1x1x1"]), ("db prune", ["db", "prune"])]:
    case(f"{label} with DGTUNE_DB a FIFO", argv, 2, "FIFO", "$DGTUNE_DB", env={"DGTUNE_DB": FIFO})
# A command that opens the DB through its session (run) names it the way the user gave it, before the GPU.
for kind, path, words in [("a FIFO", FIFO, "a FIFO"), ("a directory", ADIR, "it is a directory")]:
    case(f"run with DGTUNE_DB {kind}", ["run", *PROBLEM, "--config", GOOD_KEY], 2, f"$DGTUNE_DB '{path}'", words,
         env={"DGTUNE_DB": path})

# ---- 11b. a damaged DB (one page's bytes overwritten): refused by every command that writes it or reads it whole ----
DAMAGED_DB = make_db(os.path.join(TMP, "damaged.db"), winner=True)
with open(DAMAGED_DB, "r+b") as f:
    f.seek(8192)  # the b-tree header of page 3: the file opens, SQLite's quick_check sees the damage
    f.write(b"XXXXXXXX")
damaged_users = [
    ("sweep --db", ["sweep", "--shapes", ok_shapes, "--db", DAMAGED_DB]),
    ("run --db", ["run", *PROBLEM, "--config", GOOD_KEY, "--db", DAMAGED_DB]),
    ("db prune", ["db", "prune", "--db", DAMAGED_DB]),
    ("db prune --dry-run", ["db", "prune", "--dry-run", "--db", DAMAGED_DB]),
    ("db migrate", ["db", "migrate", "--db", DAMAGED_DB]),
    ("db merge input", ["db", "merge", GOOD_DB, DAMAGED_DB, "-o", os.path.join(TMP, "m.db")]),
    ("export", ["export", "--db", DAMAGED_DB]),
    ("export --format db", ["export", "--db", DAMAGED_DB, "--format", "db", "--out", os.path.join(TMP, "d.db")]),
    ("export --format bundle", ["export", "--db", DAMAGED_DB, "--format", "bundle", "--out", os.path.join(TMP, "b"),
                                "--cache-dir", BUNDLE_CACHE]),
    ("compare --save", ["compare", "--shapes", ok_shapes, "--db", GOOD_DB, "--save", DAMAGED_DB]),
    ("gate --history", ["gate", "--baseline", BASELINE_OK, "--db", GOOD_DB, "--history", DAMAGED_DB])]
for label, argv in damaged_users:
    case(f"{label} on a damaged DB", argv, 1, f"tuning database {DAMAGED_DB} is damaged: SQLite's quick_check reports",
         f"run `dgtune db check --db {DAMAGED_DB}`")

# ---- 12. JSON nesting is bounded, and every syntax error names file:line:column ----------------------------------
deep_texts = [("arrays", "[" * 100000 + "]" * 100000), ("objects", '{"a":' * 100000 + "1" + "}" * 100000),
              ("mixed", '[{"a":' * 50000 + "1" + "}]" * 50000), ("unclosed", "[" * 100000),
              ("in-a-key", '{"block_m": ' + "[" * 70 + "]" * 70 + "}")]
for name, text in deep_texts:
    path = write(f"deep-{name}.json", text)
    case(f"space --space deep {name}", ["space", *PROBLEM, "--space", path], 2, f"deep-{name}.json:1:",
         "JSON nesting is deeper than 64 levels")
    case(f"sweep --space deep {name}", ["sweep", "--shapes", ok_shapes, "--space", path, "--db", DB], 2,
         "JSON nesting is deeper than 64 levels")
    case(f"gate --baseline deep {name}", ["gate", "--baseline", path, "--db", DB], 2, f"deep-{name}.json:1:",
         "JSON nesting is deeper than 64 levels")
brackets_in_strings = write("space-brackets.json", grid(name="[" * 1000 + "{" * 1000))
case("space --space brackets inside a string are not nesting", ["space", *PROBLEM, "--space", brackets_in_strings,
                                                                "--show", "kept"], 0, "kept")
json_syntax = [("trailing-comma", '{"schema_version": 1,}', ":1:22: invalid JSON"),
               ("second-line", '{\n  "schema_version": 1\n  "kind": "x"\n}', ":3:8: invalid JSON"),
               ("unterminated", '{"schema_version": "1', ":1:", "invalid JSON"),
               ("truncated", BASELINE_OK and open(BASELINE_OK).read()[:60], ":1:61: invalid JSON"),
               ("bare-word", "baseline", ":1:", "invalid JSON"), ("nul", '{"a"\x00: 1}', ":1:", "invalid JSON")]
for name, text, *rules in json_syntax:
    path = write(f"syntax-{name}.json", text)
    case(f"gate --baseline {name}", ["gate", "--baseline", path, "--db", DB], 2, f"syntax-{name}.json", *rules)
    case(f"space --space {name}", ["space", *PROBLEM, "--space", path], 2, f"syntax-{name}.json", *rules)

# ---- 13. baselines: every shape goes through the rules of a shapes file; nothing found late ----------------------
def v2(**over):
    b = json.loads(open(BASELINE_OK).read())
    b.update(over)
    return json.dumps(b)


def v2_shape(**over):
    s = dict(json.loads(open(BASELINE_OK).read())["shapes"][0])
    s.update(over)
    return v2(shapes=[s])


baseline_rules = [
    ("empty-shapes", v2(shapes=[]), "shapes: [] is empty", "gates nothing"),
    ("k7", v2_shape(problem={"m": 128, "n": 128, "k": 7}), "shapes[0]: problem", "operand A: lda = 7"),
    ("m-2^40", v2_shape(problem={"m": 2 ** 40, "n": 128, "k": 128}), "M = 1099511627776 is too large"),
    ("block-fast", v2_shape(problem={"m": 128, "n": 128, "k": 128, "scale": "block", "accum": "fast"}),
     "scale mode block needs accum = promote"),
    ("ldb<k", v2_shape(problem={"m": 128, "n": 128, "k": 128, "ldb": 64}), "operand B: ldb = 64 is smaller"),
    ("lda-2^40", v2_shape(problem={"m": 128, "n": 128, "k": 128, "lda": 2 ** 40}), "operand A", "2^40 bytes"),
    ("dtype", v2_shape(problem={"m": 128, "n": 128, "k": 128, "dtype_a": "e3m4"}), "shapes[0]: problem"),
    ("status", v2_shape(status="great"), "field 'status': 'great' is not ok, verify_failed or error"),
    ("lengths", v2_shape(rounds=[0]), "rounds, dgtune_us and cublas_tuned_us must have the same length"),
    ("zero-time", v2_shape(dgtune_us=[0.0, 1.0]), "round 0: times must be positive and finite"),
    ("v1-with-schema", v2(schema_version=1), "schema_version 1 with \"schema\""),
    ("v3", v2(schema_version=3), "schema_version 3"),
    ("other-schema", v2(schema="dgtune-export"), "schema 'dgtune-export' is not a gate baseline"),
    ("unknown-field", v2(colour="red"), ": /colour: unknown field"),
    ("unknown-problem-field", v2_shape(problem={"m": 128, "n": 128, "k": 128, "ldaa": 128}),
     ": /shapes/0/problem/ldaa: unknown field"),
    ("v2-old-names", json.dumps(dict(json.loads(v2()), shapes=[{"problem": {"m": 128, "n": 128, "k": 128},
                                                               "config": GOOD_KEY, "status": "ok", "rounds": [0],
                                                               "ours_us": [1.0], "cublaslt_tuned_us": [1.0]}])),
     "missing field 'dgtune_us'"),
    ("kind", json.dumps({"schema_version": 1, "kind": "dgtune-space"}), "kind \"dgtune-space\" is not a gate baseline"),
]
for name, text, *rules in baseline_rules:
    path = write(f"rule-{name}.json", text)
    case(f"gate --baseline {name}", ["gate", "--baseline", path, "--db", DB], 2, f"rule-{name}.json", *rules)
case("gate --protocol other than the baseline's", ["gate", "--baseline", BASELINE_OK, "--protocol", "hot-graph",
                                                    "--db", DB], 2, "--protocol hot-graph", "measured under cold-l2-v2")
# A history DB apart from the tuning DB is never one of its side files; an output is never a DB not made yet.
case("gate --history the DB's -wal", ["gate", "--baseline", BASELINE_OK, "--db", DB, "--history", DB + "-wal"], 2,
     "--history", "it is the -wal file of the tuning database")
# ... but the tuning DB itself, under any spelling (here through a link to TMP), is the default history: accepted.
os.symlink(TMP, os.path.join(TMP, "self"))
case("gate --history the DB through a link", ["gate", "--baseline", BASELINE_OK, "--db", DB, "--history",
                                              os.path.join(TMP, "self", os.path.basename(DB))], 1, gpu_refusal=True)
case("gate --markdown the new history DB", ["gate", "--baseline", BASELINE_OK, "--db", DB, "--history",
                                            os.path.join(TMP, "hist.db"), "--markdown", os.path.join(TMP, "hist.db")],
     2, "--markdown", "it is the same file as --history")
for flag, bad in [("--junit", os.path.join(TMP, "nope", "j.xml")), ("--markdown", os.path.join(ADIR)),
                  ("--history", os.path.join(TMP, "text.db"))]:
    case(f"gate {flag} bad before measuring", ["gate", "--baseline", BASELINE_OK, "--db", DB, flag, bad],
         1 if flag == "--history" else 2, flag if flag != "--history" else "file is not a database")

# ---- 14. DB content: a version no dgtune writes, stored samples that are no times ---------------------------------
for v in [-1, 0]:
    path = make_db(os.path.join(TMP, f"version{v}.db"), version=v)
    case(f"db check schema_version {v}", ["db", "check", "--db", path], 1, f"schema version {v} is not a version")
    case(f"db prune schema_version {v}", ["db", "prune", "--db", path], 1, f"has schema version {v}, which no dgtune")
    case(f"export schema_version {v}", ["export", "--db", path], 1, f"version{v}.db")
    case(f"sweep --db schema_version {v}", ["sweep", "--shapes", ok_shapes, "--db", path], 1,
         f"has schema version {v}, which no dgtune")
    case(f"db merge schema_version {v}", ["db", "merge", path, GOOD_DB, "-o", os.path.join(TMP, "m.db")], 1,
         f"has schema version {v}")
# A newer schema is the file's content (1) for every command, as export answers it (db devices listed it, db merge
# called it bad input).
newer = make_db(os.path.join(TMP, "version99.db"), version=99, winner=True)
for label, argv in [("export", ["export", "--db", newer]), ("db devices", ["db", "devices", "--db", newer]),
                    ("db prune", ["db", "prune", "--db", newer])]:
    case(f"{label} schema_version 99", argv, 1, f"tuning database {newer} has schema version 99, newer than version")
case("db merge schema_version 99", ["db", "merge", newer, GOOD_DB, "-o", os.path.join(TMP, "m.db")], 1,
     f"db merge: {newer} has schema version 99, newer than this dgtune's")
# Rows no dgtune stores (a problem that breaks a rule, an ok time that is no positive finite time) are refused by
# export and merge naming the DB, the table and the row, with `db check`, which lists them (they were passed on).
for name, sql, read, rule, found in [
        ("m", "UPDATE problem SET m = -5", "problem table, key -5x128x128_", "M = -5 is invalid",
         "M = -5 is invalid"),
        ("median", "UPDATE trial SET median_us = -1", "trial table, problem 128x128x128_", "median_us = -1,",
         "trial 1: status ok with median_us = -1.0, not a positive finite time"),
        ("median-inf", "UPDATE trial SET median_us = 9e999", "trial table, problem 128x128x128_", "median_us = inf,",
         "trial 1: status ok with median_us = ")]:
    bad = make_db(os.path.join(TMP, f"corrupt-{name}.db"), winner=True)
    con = sqlite3.connect(bad)
    con.execute(sql)
    con.commit()
    con.close()
    case(f"export corrupt {name}", ["export", "--db", bad], 1, f"tuning database {bad}: {read}", rule,
         f"run `dgtune db check --db {bad}`")
    case(f"db merge corrupt {name}", ["db", "merge", GOOD_DB, bad, "-o", os.path.join(TMP, "m.db")], 1,
         f"db merge: {bad}: ", found, f"run `dgtune db check --db {bad}`")
    case(f"db check corrupt {name}", ["db", "check", "--db", bad], 1, found)
for name, t in [("inf", float("inf")), ("zero", 0.0), ("negative", -3.0), ("minus-inf", float("-inf"))]:
    bad = make_db(os.path.join(TMP, f"sample-{name}.db"), measurements=[10.0, 11.0, t, 10.5])
    okm = make_db(os.path.join(TMP, f"sample-ok-{name}.db"), measurements=[10.0, 11.0, 10.2, 10.5])
    case(f"compare --between sample {name} in A", ["compare", "--between", bad, okm], 1, f"sample-{name}.db",
         "side 'dgtune', round 2", "is not a positive finite time")
    case(f"compare --between sample {name} in B", ["compare", "--between", okm, bad], 1, f"sample-{name}.db",
         "round 2")
    case(f"db check sample {name}", ["db", "check", "--db", bad], 1, "measurement 1: side 0, round 2")
# A measuring compare's options have nothing to act on with --between (they were accepted and ignored).
for extra in (["--d", "f32"], ["--act", "relu"], ["--db", GOOD_DB], ["--device", "3"], ["--cache-dir", TMP]):
    case(f"compare --between {extra[0]}", ["compare", "--between", GOOD_DB, GOOD_DB2, *extra], 2,
         f"{extra[0]} requires --shapes or --grouped (a measuring compare), not --between")
case("compare --between without saved compares", ["compare", "--between", GOOD_DB, GOOD_DB2], 2,
     "hold none", "compare --shapes FILE --save")
case("compare --between A without saved compares", ["compare", "--between", GOOD_DB,
                                                    os.path.join(TMP, "sample-ok-inf.db")], 2, "good.db holds none")

# ---- 15. messages: a huge value is cut with its length; SQLite's codes in words ----------------------------------
MB = "1" * (1 << 20)
ARG = 100000  # one argument of a command line may hold at most 128 KiB (Linux MAX_ARG_STRLEN)
case("space --m 100 kB of digits", ["space", "--m", "1" * ARG, "--n", "16", "--k", "16"], 2, "--m",
     f"({ARG} bytes)", "is out of range")
case("space --m 100 kB of letters", ["space", "--m", "x" * ARG, "--n", "16", "--k", "16"], 2,
     f"({ARG} bytes)", "is not a decimal integer")
case("run --config 100 kB key", ["run", *PROBLEM, "--config", "x" * ARG, "--db", DB], 2, f"({ARG} bytes)")
case("sweep --budget-s 100 kB", ["sweep", "--shapes", ok_shapes, "--db", DB, "--budget-s", "9" * ARG], 2,
     f"({ARG} bytes)")
big_shapes = write("shapes-1mb.txt", MB + " 64 64\n")
case("sweep --shapes 1 MB field", ["sweep", "--shapes", big_shapes, "--db", DB], 2, "shapes-1mb.txt:1: field 'M'",
     "(1048576 bytes)")
big_name = write("shapes-1mb-name.txt", "64 64 64 name=" + "n" * (1 << 20) + "\n64 64 q\n")
case("sweep --shapes 1 MB name", ["sweep", "--shapes", big_name, "--db", DB], 2, ":2: field 'K'")
big_space = write("space-1mb.json", '{"block_m": [' + MB + grid()[len('{"block_m": [128'):])
case("space --space 1 MB number", ["space", *PROBLEM, "--space", big_space], 2, "space-1mb.json")
big_space_str = write("space-1mb-str.json", grid(raster=["q" * (1 << 20)]))
case("space --space 1 MB string", ["space", *PROBLEM, "--space", big_space_str], 2, "/raster/0", "bytes)")
big_base = write("base-1mb.json", v2_shape(status="s" * (1 << 20)))
case("gate --baseline 1 MB string", ["gate", "--baseline", big_base, "--db", DB], 2, "field 'status'", "bytes)")
case("--devices 100 kB", ["sweep", "--shapes", ok_shapes, "--db", DB, "--devices", "7" * ARG], 2, "--devices",
     "bytes)")
case("sweep --db a directory", ["sweep", "--shapes", ok_shapes, "--db", ADIR], 2, "it is a directory")

# ---- 16. the DB's D stride: a TMA-store config cannot take an ldd of 2^40 bytes or more -------------------------------
for d, ldd in [("bf16", 2 ** 39), ("f32", 2 ** 38), ("e4m3", 2 ** 40), ("bf16", 2 ** 39 + 8)]:
    case(f"run tma --d {d} --ldd {ldd}", ["run", *PROBLEM, "--d", d, "--ldd", ldd, "--config",
                                          "128x128x128_s4_wg2_sw128_c1x1_rm8_tma_sk1_sm0", "--db", DB], 2,
         "P3: TMA-store epilogue needs D's row stride below 2^40 bytes")
# ... and no operand reaches 2^48 bytes (128 rows of 2^41 + 16 bytes; an ldd near 2^63 wrapped the buffer size).
for ldd in [2 ** 40 + 8, 2 ** 63 - 1]:
    case(f"space --ldd {ldd}", ["space", *PROBLEM, "--ldd", ldd], 2,
         f"operand D: 128 rows of ldd = {ldd} elements (2 bytes each) is too large: an operand must be < 2^48 bytes")
case("space --ldd 2^40 bytes keeps no tma config", ["space", *PROBLEM, "--ldd", 2 ** 39, "--show", "kept"], 0,
     "kept", lacks=["_tma_"])
case("space --ldd 2^40 bytes names P3", ["space", *PROBLEM, "--ldd", 2 ** 39, "--show", "rejected"], 0,
     "D's row stride below 2^40 bytes")

# ---- 17. a missing GPU: the same exit for --device and --devices, and nothing created before it ---------------------
case("--devices 0,0 (listed twice: bad input whatever the machine)", ["sweep", "--shapes", ok_shapes, "--db", DB,
                                                                      "--devices", "0,0"], 2, "device 0 is listed twice")
case("--devices 0,x", ["sweep", "--shapes", ok_shapes, "--db", DB, "--devices", "0,x"], 2, "'x' is not a device ordinal")
for argv in (["--devices", "0"], ["--device", "0"], ["--devices", "all"], ["--devices", "3"], ["--device", "3"]):
    case(f"sweep {' '.join(argv)} without a GPU", ["sweep", "--shapes", ok_shapes, "--db", DB, *argv], 1,
         gpu_refusal=True)
EMPTY_DB = write("empty-file.db", b"")
V2_DB = os.path.join(TMP, "schema2.db")
with sqlite3.connect(V2_DB) as con:
    con.executescript(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "fixtures",
                                        "schema_v2.sql")).read())
con.close()
for label, path in [("an empty --db file", EMPTY_DB), ("a schema-2 DB", V2_DB), ("a new --db", DB)]:
    case(f"sweep on {label} without a GPU", ["sweep", "--shapes", ok_shapes, "--db", path], 1, gpu_refusal=True)
    case(f"sweep --in-process on {label} without a GPU", ["sweep", "--in-process", "--shapes", ok_shapes, "--db", path],
         1, gpu_refusal=True)
    case(f"run on {label} without a GPU", ["run", *PROBLEM, "--config", GOOD_KEY, "--db", path], 1, gpu_refusal=True)
case("gate --baseline without a GPU creates no ./results", ["gate", "--baseline", BASELINE_OK], 1, gpu_refusal=True,
     unset=["DGTUNE_DB"])
case("gate --record without a GPU", ["gate", "--record", os.path.join(TMP, "rec.json"), "--shapes", ok_shapes], 1,
     gpu_refusal=True, unset=["DGTUNE_DB"])
case("compare --save without a GPU creates no DB", ["compare", "--shapes", ok_shapes, "--db", DB, "--save",
                                                    os.path.join(TMP, "saved.db")], 1, gpu_refusal=True)
case("compare --save in a new folder without a GPU", ["compare", "--shapes", ok_shapes, "--db", DB, "--save",
                                                      os.path.join(TMP, "new-folder", "saved.db")], 1, gpu_refusal=True)
case("trace without a GPU creates no cache", ["trace", *PROBLEM, "--config", GOOD_KEY], 1, gpu_refusal=True)
case("sweep with a relative XDG_CACHE_HOME", ["sweep", "--shapes", ok_shapes, "--db", DB], 1, gpu_refusal=True,
     env={"XDG_CACHE_HOME": "relative-cache"}, unset=["DGTUNE_CACHE_DIR"])
case("info ignores a relative XDG_CACHE_HOME", ["info"], 0, os.path.join(TMP, ".cache", "dgtune"),
     lacks=["relative-cache"], env={"XDG_CACHE_HOME": "relative-cache"}, unset=["DGTUNE_CACHE_DIR"])
case("export prints the DB path absolute", ["export", "--db", os.path.relpath(GOOD_DB, TMP)], 0,
     f"dgtune export {GOOD_DB} device 1")

# ---- 18. a closed pipe on stdout is exit 1 (the exit-code table), never death by SIGPIPE ---------------------------
for label, argv in [("space table", ["space", "--m", "4096", "--n", "4096", "--k", "4096"]),
                    ("space json", ["space", "--m", "4096", "--n", "4096", "--k", "4096", "--format", "json"]),
                    ("space csv", ["space", "--m", "4096", "--n", "4096", "--k", "4096", "--format", "csv"]),
                    ("info", ["info"]), ("db devices", ["db", "devices", "--db", GOOD_DB]),
                    ("db check", ["db", "check", "--db", GOOD_DB])]:
    case(f"{label} into a closed pipe", argv, 1, "could not write the output", close_stdout=True)

# ---- 19. model configs (shapes --hf-config): fields that do not fit together or overflow a GEMM, repeated keys ------
LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "num_attention_heads": 32, "num_key_value_heads": 8}
DSV3 = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "moe_intermediate_size": 2048,
        "num_attention_heads": 128, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "v_head_dim": 128, "n_routed_experts": 256, "num_experts_per_tok": 8}
QMOE = {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "moe_intermediate_size": 768,
        "num_attention_heads": 32, "num_key_value_heads": 4, "num_experts": 128, "num_experts_per_tok": 8}
BIG = 2 ** 31 - 1
hf_cases = [
    ("experts-2p30.json", dict(DSV3, n_routed_experts=2 ** 30), ["--experts"],
     "n_routed_experts = 1073741824 routed experts / --ep 1 = 1073741824 local experts per GPU: the grouped kernels "
     "take at most G = 4096"),
    ("experts-2p31.json", dict(DSV3, n_routed_experts=2 ** 31), ["--experts"],
     "field 'n_routed_experts' is 2147483648, expected a non-negative integer below 2^31"),
    ("qkv-wrap.json", dict(LLAMA, num_attention_heads=BIG, num_key_value_heads=BIG, head_dim=BIG), [],
     "qkv_proj: N = (num_attention_heads + 2 x num_key_value_heads) / TP x head_dim = 13835058042397261824 is too "
     "large (GEMM dimensions must be < 2^31)"),
    ("kv-more.json", dict(LLAMA, num_key_value_heads=64), [],
     "num_attention_heads = 32 is not a multiple of num_key_value_heads = 64"),
    ("kv-12.json", dict(LLAMA, num_key_value_heads=12), [],
     "num_attention_heads = 32 is not a multiple of num_key_value_heads = 12"),
    ("topk.json", dict(DSV3, num_experts_per_tok=300), ["--experts"],
     "num_experts_per_tok = 300 is more than the 256 routed experts (n_routed_experts)"),
    ("dup.json", '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336, '
     '"num_attention_heads": 32, "hidden_size": 8192}', [], "/hidden_size: the key appears twice in one object"),
    ("mlp-only.json", dict(QMOE, mlp_only_layers="yes"), [],
     "field 'mlp_only_layers' is \"yes\", expected a list of layer indices"),
]
for name, config, extra, rule in hf_cases:
    path = write("hf-" + name, config if isinstance(config, str) else json.dumps(config))
    case(f"shapes --hf-config {name}", ["shapes", "--hf-config", path, *extra], 2, "hf-" + name + ": " + rule)

# ---- run the corpus ---------------------------------------------------------------------------------------------
BASE_ENV = dict(os.environ, DGTUNE_DB=os.path.join(TMP, "default.db"), DGTUNE_CACHE_DIR=os.path.join(TMP, "cache"),
                HOME=TMP)
HAS_GPU = subprocess.run(["sh", "-c", "nvidia-smi -L"], capture_output=True).returncode == 0


def run_case(c):
    """(exit code or None when it hung, output bytes) of one case, the process group killed after TIME_LIMIT."""
    env = dict(BASE_ENV, **c["env"])
    for name in c["unset"]:
        env.pop(name, None)
    stdout = subprocess.PIPE
    p = subprocess.Popen([BIN, *c["argv"]], cwd=TMP, env=env, stdout=stdout, stderr=subprocess.PIPE,
                         start_new_session=True)
    if c["close_stdout"]:
        p.stdout.close()  # the reader is gone: the first write gets EPIPE
    try:
        out, err = p.communicate(timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, (out or b"") + (err or b"")
    return p.returncode, (out or b"") + (err or b"")


failures = skipped = 0
for c in CASES:
    label, argv, want_rc, want = c["label"], c["argv"], c["rc"], c["want"]
    if c["gpu_refusal"] and HAS_GPU:
        skipped += 1
        print(f"skip: {label} (a GPU is present: the command would run)")
        continue
    before = snapshot()
    rc, out = run_case(c)
    after = snapshot()
    text = out.decode("utf-8", "replace")
    problems = []
    if rc is None:
        problems.append(f"still running after {TIME_LIMIT} s (killed)")
    elif rc != want_rc:
        problems.append(f"exit {rc}, want {want_rc}")
    for w in want:
        if w not in text:
            problems.append(f"output lacks {w!r}")
    for w in c["lacks"]:
        if w in text:
            problems.append(f"output has {w!r}")
    if "/src/" in text or ".cpp" in text:
        problems.append("output has a source location")
    if "no CUDA device" in text and not c["gpu_refusal"]:
        problems.append("reached the GPU before refusing the input")
    if c["gpu_refusal"] and "no CUDA device" not in text:
        problems.append("did not stop at the missing GPU")
    raw = [b for b in out if (b < 0x20 and b != 0x0A) or b == 0x7F]
    if raw:
        problems.append(f"output holds raw control bytes {sorted(set(raw))}")
    longest = max((len(line) for line in out.split(b"\n")), default=0)
    if longest > MAX_LINE:
        problems.append(f"an output line has {longest} bytes (more than {MAX_LINE})")
    try:
        out.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("output is not UTF-8")
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        problems.append(f"files created or modified: {sorted({os.path.relpath(x[0], TMP) for x in changed})}")
    if problems:
        failures += 1
        print(f"FAIL: {label}: {'; '.join(problems)}")
        shown = " ".join(repr(a) if any(ord(ch) < 32 for ch in a) else a for a in argv)
        print("    $ dgtune " + (shown if len(shown) < 300 else shown[:300] + "..."))
        for line in text.splitlines()[:6]:
            print("    " + line[:300])
    else:
        print(f"ok: {label} -> {rc}")
ran = len(CASES) - skipped
print(f"{ran - failures} of {ran} bad inputs handled as documented ({skipped} skipped: they need a machine without a "
      f"GPU)")
subprocess.run(["rm", "-rf", TMP])
sys.exit(1 if failures else 0)
