#!/usr/bin/env python3
"""Generated corpus of bad inputs for the dgtune CLI: command-line flags, shapes files, search-space
files, config keys, gate baselines and DB files given to read-only commands. No GPU is needed: every case must be
refused before a GPU is opened.

For every case it asserts
  - the exit code of the README's table: 2 for bad user input (arguments, unreadable or malformed input files, a
    rule a problem or config breaks); 1 for a DB file that exists but is damaged or not a dgtune DB (read-only
    commands: the file's content is at fault, the same exit as `dgtune db check` finding a problem);
  - that the output names the input (file[:line] or flag), the value and the rule (substrings per case);
  - no source location ("/src/", ".cpp") and no raw control byte (other than a line break) in the output;
  - no "no CUDA device": the input was checked before the GPU was touched;
  - nothing created or modified: the checksums of every file in the temporary directory (which holds the
    inputs, the --db paths, the default DB path and the cubin cache) are the same before and after.

Usage: bad_inputs.py path/to/dgtune   (prints one line per case; exit 1 when any case fails)
"""

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

BIN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="dgtune_bad_inputs_")
CASES = []  # (label, argv, want_rc, [substrings])


def case(label, argv, rc, *want):
    CASES.append((label, [str(a) for a in argv], rc, list(want)))


def write(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def snapshot():
    """path -> sha256 of every file under TMP (a created -wal, -journal or cache file shows up as a new path)."""
    out = {}
    for root, dirs, files in os.walk(TMP):
        for d in dirs:
            out[os.path.join(root, d) + "/"] = "dir"
        for f in files:
            p = os.path.join(root, f)
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
              ("compare", ["--shapes", ok_shapes, "--db", DB], "--protocol", "cold-l2,hot-graph"),
              ("compare", ["--shapes", ok_shapes, "--db", DB], "--interval", "sign,wilcoxon"),
              ("export", ["--db", DB], "--format", "table,csv,json,md,cpp,db")]
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
]
for name, text, rule in shapes_cases:
    path = write("shapes-" + name, text)
    case(f"sweep --shapes {name}", ["sweep", "--shapes", path, "--db", DB], 2, "shapes-" + name + rule)
for name, text, rule in shapes_cases[::3]:
    path = os.path.join(TMP, "shapes-" + name)
    case(f"compare --shapes {name}", ["compare", "--shapes", path, "--db", DB], 2, "shapes-" + name + rule)
for flag_cmd in (["sweep"], ["compare"], ["gate", "--record", os.path.join(TMP, "rec.json"), "--db", DB]):
    for path, rule in [(os.path.join(TMP, "missing.txt"), "no such file"), (ADIR, "it is a directory"),
                       ("/dev/zero", "it is not a regular file")]:
        case(f"{flag_cmd[0]} --shapes {os.path.basename(path)}", [*flag_cmd, "--shapes", path], 2,
             f"--shapes: cannot read shapes file '{path}': {rule}")
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
    ("not-json", "block_m = 128", "invalid JSON: parse error at line 1, column 1"),
    ("truncated", grid()[:40], "invalid JSON: parse error at line 1"),
    ("empty", "", "invalid JSON: parse error at line 1, column 1"),
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
    case(f"space --space {name}", ["space", *PROBLEM, "--space", path], 2, f"space-{name}.json: ", *rules)
for name, text, *rules in space_cases[::4]:
    path = os.path.join(TMP, f"space-{name}.json")
    case(f"sweep --space {name}", ["sweep", "--shapes", ok_shapes, "--space", path, "--db", DB], 2,
         f"space-{name}.json: ", *rules)
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
    ("notjson", "not json", "not a JSON object"),
    ("empty", "", "not a JSON object"),
    ("array", "[]", "not a JSON object"),
    ("v7", baseline(schema_version=7), "schema_version 7 (this dgtune reads version 1)"),
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
case("db merge text inputs", ["db", "merge", text_db, junk_db, "-o", os.path.join(TMP, "m.db")], 1, text_db)
case("db merge missing input", ["db", "merge", os.path.join(TMP, "missing.db"), text_db, "-o",
                                os.path.join(TMP, "m.db")], 2, "cannot read tuning database", "missing.db")
case("compare --shapes --db dir", ["compare", "--shapes", ok_shapes, "--db", ADIR], 2, "--db", "it is a directory")
case("compare --shapes --db text", ["compare", "--shapes", ok_shapes, "--db", text_db], 1, text_db,
     "file is not a database")

# ---- run the corpus ---------------------------------------------------------------------------------------------
env = dict(os.environ, DGTUNE_DB=os.path.join(TMP, "default.db"), DGTUNE_CACHE_DIR=os.path.join(TMP, "cache"),
           HOME=TMP)
failures = 0
for label, argv, want_rc, want in CASES:
    before = snapshot()
    p = subprocess.run([BIN, *argv], cwd=TMP, env=env, capture_output=True, timeout=60)
    after = snapshot()
    out = p.stdout + p.stderr
    text = out.decode("utf-8", "replace")
    problems = []
    if p.returncode != want_rc:
        problems.append(f"exit {p.returncode}, want {want_rc}")
    for w in want:
        if w not in text:
            problems.append(f"output lacks {w!r}")
    if "/src/" in text or ".cpp" in text:
        problems.append("output has a source location")
    if "no CUDA device" in text:
        problems.append("reached the GPU before refusing the input")
    raw = [b for b in out if (b < 0x20 and b != 0x0A) or b == 0x7F]
    if raw:
        problems.append(f"output holds raw control bytes {sorted(set(raw))}")
    try:
        out.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("output is not UTF-8")
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        problems.append(f"files created or modified: {[os.path.relpath(c[0], TMP) for c in changed]}")
    if problems:
        failures += 1
        print(f"FAIL: {label}: {'; '.join(problems)}")
        print("    $ dgtune " + " ".join(repr(a) if any(ord(ch) < 32 for ch in a) else a for a in argv))
        for line in text.splitlines()[:6]:
            print("    " + line)
    else:
        print(f"ok: {label} -> {p.returncode}")
print(f"{len(CASES) - failures} of {len(CASES)} bad inputs handled as documented")
subprocess.run(["rm", "-rf", TMP])
sys.exit(1 if failures else 0)
